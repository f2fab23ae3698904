"""The learner's predictions, each kept beside its measurement, and how well calibrated they are.

Before an experiment runs (`gpulab run --predict`, the panel's prediction field), before a graded
check (`gpulab ex check --predict`, the exercise's field) and in a lesson's measured quiz
question, the learner may say what they expect. Each prediction is a row of the store's
`predictions` table (migration 4 in gpulab/store/database.py), written when it is made and
completed when the measurement arrives; this module only goes through the store's `_write` and
`_query`, like gpulab.exercises.progress.

What can be predicted, one quantity per prediction:

- `time`: the fastest row's median time (an experiment) or the learner's median call (a check),
  kept in milliseconds;
- `percent`: that row's or that call's percent of this device's calibrated ceiling;
- `winner`: which contender is fastest (an experiment's contender id; `you` or `library` for a
  check);
- `choice`: a measured quiz question's choice, the measurement deciding which one was right.

Calibration, the choice named: for numbers, the median of |log10(predicted / measured)| over the
last `WINDOW` measured predictions, shown as a factor ("typically 2.1x off"), since a time is
guessed by its order of magnitude and a factor treats 2x too high and 2x too low alike; the
median, so one wild guess does not swamp nine good ones. It is compared with the `WINDOW`
before: a factor smaller by `TREND_FACTOR` or more is "getting better". For names (winners and
quiz choices), the fraction right over the same windows. Too few to tell (under `TREND_MIN` in a
window) is said as such.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from gpulab.core.errors import BadInput
from gpulab.core.params import parse_plain_number, shown
from gpulab.core.results import Result
from gpulab.experiments.wording import fastest, measured
from gpulab.render.results import fmt_time
from gpulab.store.connection import StoreError
from gpulab.store.database import Store, now

TIME, PERCENT, WINNER, CHOICE = "time", "percent", "winner", "choice"
NUMBERS = (TIME, PERCENT)
EXPERIMENT, EXERCISE, QUIZ = "experiment", "exercise", "quiz"
CHECK_CONTENDERS = ("you", "library")  # what a check's `winner` can name

WINDOW = 10  # predictions per calibration window
TREND_MIN = 3  # measured predictions a window needs before a trend is said
TREND_FACTOR = 1.15  # the typical factor off must shrink by this much to be "getting better"
TREND_RIGHT = 0.1  # the fraction right must grow by this much to be "getting better"

TIME_MAX_MS = 86_400_000.0  # a day: past it a typo
PERCENT_MAX = 1000.0  # a figure beyond a ceiling is possible (a cache); ten times it is a typo
_UNITS_MS = {"ns": 1e-6, "us": 1e-3, "µs": 1e-3, "ms": 1.0, "s": 1e3}
_TIME = re.compile(r"^\s*(?P<n>[0-9.eE+-]+)\s*(?P<unit>ns|us|µs|ms|s)?\s*$")
_PERCENT = re.compile(r"^\s*(?P<n>[0-9.eE+-]+)\s*%\s*$")

HOW = "a time (2ms, 300us, 1.5s; a bare number is ms), a percent of the ceiling (40%)"


@dataclass(frozen=True)
class Guess:
    """A prediction as typed, read: its quantity and value (ms, percent, or a name)."""

    quantity: str
    value: float | str

    def shown(self) -> str:
        """The value as a person reads it: 2.5 ms, 40%, cupy."""
        return show_value(self.quantity, self.value)


def show_value(quantity: str, value: Any) -> str:
    """A predicted or measured value in words: a time in s, ms or us, a percent, a name."""
    if value is None:
        return "-"
    if quantity == TIME:
        return fmt_time(float(value) / 1e3)
    if quantity == PERCENT:
        return f"{float(value):.3g}%"
    return str(value)


def parse(text: str, names: Sequence[str] = (), *, flag: str = "prediction") -> Guess | None:
    """What `text` predicts: a time, a percent, or one of `names` (which contender wins). Empty
    text is no prediction (None); anything else unreadable is BadInput naming `flag`."""
    body = (text or "").strip()
    if not body:
        return None
    allowed = HOW + (f", or which wins: {', '.join(names)}" if names else "")
    if m := _PERCENT.match(body):
        value = _number(m["n"], flag, body, allowed)
        if not 0 < value <= PERCENT_MAX:
            raise BadInput(f"{flag} {shown(body)} is out of range; a percent above 0")
        return Guess(PERCENT, value)
    if m := _TIME.match(body):
        ms = _number(m["n"], flag, body, allowed) * _UNITS_MS[m["unit"] or "ms"]
        if not 0 < ms <= TIME_MAX_MS:
            raise BadInput(f"{flag} {shown(body)} is out of range; a time above 0")
        return Guess(TIME, ms)
    for name in names:
        if body.lower() == name.lower():
            return Guess(WINNER, name)
    raise BadInput(f"{flag} {shown(body)} is not a prediction; expected {allowed}")


def _number(text: str, flag: str, body: str, allowed: str) -> float:
    try:
        return parse_plain_number(text)
    except ValueError:
        raise BadInput(f"{flag} {shown(body)} is not a prediction; expected {allowed}") from None


@dataclass(frozen=True)
class Prediction:
    """One kept prediction: what it was about, the value predicted, and the one measured (None
    until it arrives, or when the run could not measure it: `note` says why)."""

    id: int
    kind: str  # experiment, exercise or quiz
    subject: str  # the experiment or exercise id, or "<lesson> question <n>"
    quantity: str  # time, percent, winner or choice
    predicted: float | str
    measured: float | str | None
    device: str
    note: str
    predicted_at: str
    measured_at: str | None

    @property
    def off(self) -> float | None:
        """How many times off a number was (1.0: exactly right), None for a name or no
        measurement."""
        if self.quantity not in NUMBERS or not isinstance(self.measured, int | float):
            return None
        p, m = float(self.predicted), float(self.measured)
        if p <= 0 or m <= 0:
            return None
        return 10 ** abs(math.log10(p / m))

    @property
    def right(self) -> bool | None:
        """Whether a name (a winner, a choice) was right; None for a number or no measurement."""
        if self.quantity in NUMBERS or self.measured is None:
            return None
        return str(self.predicted) == str(self.measured)

    def said(self) -> str:
        """What was predicted, in words: "you predicted 2 ms", "you predicted cupy wins"."""
        value = show_value(self.quantity, self.predicted)
        if self.quantity == CHOICE:
            return f"you chose “{value}”"
        if self.quantity == WINNER:
            return f"you predicted {value} wins"
        return f"you predicted {value}"

    def words(self) -> str:
        """ "you predicted 2 ms, measured 3.1 ms (1.55x off: you guessed low)", or why there is no
        measurement."""
        head = self.said()
        if self.measured is None:
            return f"{head}; not measured: {self.note or 'the run ended without a figure'}"
        got = show_value(self.quantity, self.measured)
        where = f" · {self.note}" if self.note else ""
        if self.quantity == CHOICE:
            return f"{head}; measured: “{got}” ({'right' if self.right else 'not this'}){where}"
        if self.quantity == WINNER:
            return f"{head}; {got} won ({'right' if self.right else 'wrong'}){where}"
        off = self.off or 1.0
        side = "high" if float(self.predicted) > float(self.measured) else "low"
        how = "within 10%" if off < 1.1 else f"{off:.3g}x off: you guessed {side}"
        return f"{head}, measured {got} ({how}){where}"

    def to_dict(self) -> dict[str, Any]:
        """The prediction as JSON-ready data, with its factor off or whether it was right."""
        return {**asdict(self), "off": self.off, "right": self.right, "words": self.words()}


def experiment_figure(quantity: str, result: Mapping[str, Any]) -> tuple[Any, str]:
    """The figure a prediction of `quantity` is measured by in an experiment's result (a
    `Result.to_dict()`): the fastest row's time, percent of its ceiling or contender (the row
    `wording.fastest` picks: the top rate, else the shortest time). (None, why) when it has none."""
    best = fastest(measured(Result.from_dict(dict(result))))
    if best is None:
        return None, "nothing was measured"
    row = f"the fastest row: {best.contender}" + (f" at {best.size}" if best.size else "")
    if quantity == TIME:
        return best.time_median_s * 1e3, row
    if quantity == PERCENT:
        if best.percent_of_peak is None:
            return None, f"the fastest row ({row}) has no percent of a calibrated ceiling here"
        return best.percent_of_peak, f"{row}, of {best.peak_name or 'its ceiling'}"
    return best.contender, row


def check_figure(quantity: str, timing: Mapping[str, Any] | None) -> tuple[Any, str]:
    """The figure a prediction of `quantity` is measured by in a check's timing block (None when
    the check failed before timing): the learner's median call, its percent of the ceiling, or
    whether it beat the library. (None, why) when the check has none."""
    if not timing or not timing.get("learner"):
        return None, "the check stopped before its timing"
    if timing.get("wrong"):
        return None, "a timed call was wrong, so it was not timed"
    if quantity == TIME:
        return float(timing["learner"]["median_s"]) * 1e3, "your median call"
    if quantity == PERCENT:
        fraction = timing.get("fraction")
        if fraction is None:
            return None, "this device has no calibrated ceiling for it"
        name = (timing.get("ceiling") or {}).get("name", "calibrated")
        return 100.0 * float(fraction), f"of the {name} ceiling"
    ratio = timing.get("vs_library")
    if ratio is None:
        return None, "this check times no library to race"
    return ("you" if ratio > 1 else "library"), f"you ran at {ratio:.2f}x the library's rate"


@dataclass(frozen=True)
class Calibration:
    """How well calibrated the learner's predictions are, over the last `WINDOW` measured ones
    and the `WINDOW` before (see the module's docstring for the choice)."""

    numbers: int  # measured number predictions, in all
    off: float | None  # typical factor off over the last window
    off_before: float | None  # and over the window before it
    names: int  # measured name predictions (winners, quiz choices), in all
    right: float | None  # fraction right over the last window
    right_before: float | None
    recent_numbers: int = 0  # how many the last window of each holds
    recent_names: int = 0

    @property
    def number_trend(self) -> str:
        """'getting better', 'getting worse', 'steady', or '' when too few to tell."""
        if self.off is None or self.off_before is None:
            return ""
        if self.off * TREND_FACTOR <= self.off_before:
            return "getting better"
        if self.off >= self.off_before * TREND_FACTOR:
            return "getting worse"
        return "steady"

    @property
    def name_trend(self) -> str:
        """The same for the fraction of names right."""
        if self.right is None or self.right_before is None:
            return ""
        if self.right >= self.right_before + TREND_RIGHT:
            return "getting better"
        if self.right <= self.right_before - TREND_RIGHT:
            return "getting worse"
        return "steady"

    def words(self) -> str:
        """One line: the typical factor off, the fraction right, and their trends."""
        parts = []
        if self.off is not None:
            text = (
                f"your last {self.recent_numbers} number predictions were typically "
                if self.recent_numbers > 1
                else "your one measured number prediction was "
            )
            text += f"{self.off:.3g}x off"
            if self.number_trend:
                text += f" ({self.off_before:.3g}x before: {self.number_trend})"
            parts.append(text)
        if self.right is not None:
            text = (
                f"{round(self.right * self.recent_names)} of your last {self.recent_names} "
                "picks were right"
                if self.recent_names > 1
                else f"your one measured pick was {'right' if self.right else 'wrong'}"
            )
            if self.name_trend:
                text += f" ({self.right_before:.0%} before: {self.name_trend})"
            parts.append(text)
        if not parts:
            return "Calibration: no measured predictions yet."
        return "Calibration: " + "; ".join(parts) + "."

    def to_dict(self) -> dict[str, Any]:
        """The calibration as JSON-ready data, with its trends and its line."""
        return {
            **asdict(self),
            "window": WINDOW,
            "number_trend": self.number_trend,
            "name_trend": self.name_trend,
            "words": self.words(),
        }


def calibration(predictions: Sequence[Prediction], window: int = WINDOW) -> Calibration:
    """The Calibration of `predictions` (oldest first); unmeasured ones count for nothing."""
    logs = [math.log10(p.off) for p in predictions if p.off is not None]
    names = [bool(p.right) for p in predictions if p.right is not None]

    def typical(xs: Sequence[float]) -> float | None:
        return 10 ** statistics.median(xs) if xs else None

    def share(xs: Sequence[bool]) -> float | None:
        return sum(xs) / len(xs) if xs else None

    last, before = logs[-window:], logs[-2 * window : -window]
    last_n, before_n = names[-window:], names[-2 * window : -window]
    enough = len(last) >= TREND_MIN and len(before) >= TREND_MIN
    enough_n = len(last_n) >= TREND_MIN and len(before_n) >= TREND_MIN
    return Calibration(
        numbers=len(logs),
        off=typical(last),
        off_before=typical(before) if enough else None,
        names=len(names),
        right=share(last_n),
        right_before=share(before_n) if enough_n else None,
        recent_numbers=len(last),
        recent_names=len(last_n),
    )


_COLUMNS = (
    "id, kind, subject, quantity, predicted, measured, device, note, predicted_at, measured_at"
)


def _row(r: Sequence[Any]) -> Prediction:
    return Prediction(
        r[0], r[1], r[2], r[3], json.loads(r[4]), json.loads(r[5]) if r[5] else None, *r[6:]
    )


class Predictions:
    """The predictions kept in the store: made, measured, listed and summed up."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def predict(self, kind: str, subject: str, guess: Guess, device: str = "") -> Prediction:
        """Keep `guess` about `subject` before it is measured; its id is 0 when the store
        could not keep it (a notice says why), so the run still goes on."""
        at = now()
        pid = 0
        with self.store._write() as db:
            cur = db.execute(
                "INSERT INTO predictions (kind, subject, quantity, predicted, device, predicted_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (kind, subject, guess.quantity, json.dumps(guess.value), device, at),
            )
            pid = int(cur.lastrowid or 0)
        return Prediction(pid, kind, subject, guess.quantity, guess.value, None, device, "", at,
                          None)  # fmt: skip

    def measure(
        self, prediction: Prediction, value: Any, *, device: str = "", note: str = ""
    ) -> Prediction:
        """Keep the measurement of `prediction` (None: the run had no such figure; `note` says
        why), and return the completed prediction."""
        done = self.completed(prediction, value, device, note)
        if prediction.id:
            with self.store._write() as db:
                db.execute(
                    "UPDATE predictions SET measured = ?, device = ?, note = ?, measured_at = ?"
                    " WHERE id = ?",
                    (
                        None if value is None else json.dumps(value),
                        done.device,
                        note,
                        done.measured_at,
                        prediction.id,
                    ),
                )
        return done

    @staticmethod
    def completed(prediction: Prediction, value: Any, device: str, note: str) -> Prediction:
        """`prediction` with its measurement (not kept: `measure` keeps it)."""
        return Prediction(
            prediction.id,
            prediction.kind,
            prediction.subject,
            prediction.quantity,
            prediction.predicted,
            value,
            device or prediction.device,
            note,
            prediction.predicted_at,
            now() if value is not None else None,
        )

    def all(self, limit: int = 1000) -> list[Prediction]:
        """The last `limit` predictions, oldest first."""
        rows = self._rows("ORDER BY id DESC LIMIT ?", (int(limit),))
        return list(reversed(rows))

    def _rows(self, tail: str, args: tuple[Any, ...]) -> list[Prediction]:
        out = []
        for r in self.store._query(f"SELECT {_COLUMNS} FROM predictions {tail}", args):
            try:
                out.append(_row(r))
            except (ValueError, TypeError) as exc:  # a damaged row: the others still count
                self.store._notice(f"prediction {r[0]} could not be read ({exc}); skipped")
        return out

    def calibration(self) -> Calibration:
        """The calibration over every kept prediction."""
        return calibration(self.all(limit=2 * WINDOW * 10))


# ---- a command's side: keep a prediction before the run, settle it after ----------------------


def keep(kind: str, subject: str, guess: Guess, say: Callable[[str], None]) -> Prediction:
    """Keep `guess` in the store under the data dir before the run; a store that cannot be used
    costs one line through `say`, and the prediction is still shown beside the measurement."""
    try:
        with Store() as st:
            return Predictions(st).predict(kind, subject, guess)
    except StoreError as exc:
        say(f"your prediction was not kept: {exc}")
        return Prediction(0, kind, subject, guess.quantity, guess.value, None, "", "", now(),
                          None)  # fmt: skip


def settle(
    pending: Prediction, value: Any, device: str, note: str, say: Callable[[str], None]
) -> tuple[Prediction, Calibration | None]:
    """Keep the measurement beside `pending`; the completed prediction and the calibration (None
    when the store cannot be read: `say` tells why)."""
    try:
        with Store() as st:
            kept = Predictions(st)
            return kept.measure(pending, value, device=device, note=note), kept.calibration()
    except StoreError as exc:
        say(f"the measurement of your prediction was not kept: {exc}")
        return Predictions.completed(pending, value, device, note), None


def report(done: Prediction, cal: Calibration | None) -> dict[str, Any]:
    """The prediction and the calibration as a command's JSON shows them."""
    return {"prediction": done.to_dict(), "calibration": cal.to_dict() if cal else None}


def report_lines(done: Prediction, cal: Calibration | None) -> list[str]:
    """The prediction beside its measurement, and the calibration, as lines for the terminal."""
    return [f"Prediction: {done.words()}"] + ([cal.words()] if cal else [])
