"""A ladder: one kernel taken from the first one a person writes to the expert's, one idea a rung.

An exercise with a `ladder/` folder has one. Its files, `NN-name.py` in order, are complete
solutions, each opening with `# rung: <its idea, one sentence>` (a rung the check refuses, for
instance one below the exercise that uses no shared memory where tiles are the point, says so
on its second line, `# expect: <the refusal>`); a rung that is one of the exercise's own files
(its reference solution) is not copied: `NN-name.ref` holds the idea line and `# file: <that
file>`. The exercise's `expert.py`, which opens the same way, is the top rung: its figure is
what gold is measured against (yardstick.py).

Each rung's speed is measured on the learner's GPU (`gpulab ex ladder NAME --measure`,
ladder_measure.py: every rung timed in alternating rounds beside the top one and the library, as
a check times the learner beside the yardstick) and
kept per device and per version of the rungs and the check, as yardstick records are
(device_records.py): its figure in the exercise's metric, and as a fraction of the top rung
timed in the same rounds. A learner's figure is placed on the nearest rung (by ratio), and the
next rung's idea is the next hint: "you are on rung 3, shared tiles; rung 4 ran 2.3x faster on
this GPU; its idea: ...". The rungs' code is never shown: the expert opens at gold, as always.

Neighbouring rungs within TIE of each other on this GPU are tied: one check cannot tell them apart,
so a figure near them is placed in their band, and the hint is the rung past it.

A memory-bound ladder (GB/s) is also timed against its roof, a device copy of the bytes the check
moves, in the same rounds: a rung at ROOF_FRACTION of it or more is marked at the roof. No rung
can beat DRAM, so the rungs at the roof form a band whose order is noise: the ladder is in order
when each rung is faster than the one below or both are at the roof, and a figure placed in the
band is told it is at this GPU's memory roof, where the band's higher ideas gain nothing more.

Reads JSON only (no torch, no CuPy): the UI process may call it.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import re
import textwrap
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpulab.exercises.device_records import DeviceRecords
from gpulab.exercises.loader import Exercise
from gpulab.exercises.yardstick import versions

SCHEMA = 2  # 2: each rung of a memory-bound ladder carries its mark against the memory roof
_RECORDS = DeviceRecords("ladders", SCHEMA)
_FILE = re.compile(r"^(\d\d)-([a-z0-9-]+)\.(py|ref)$")
_IDEA = "# rung: "
_EXPECT = "# expect: "
_POINTER = "# file: "  # in a .ref rung: the exercise's file that is the rung
# A rung at 0.9 of a device copy of the same bytes or more is at the memory roof: a copy is the
# simplest kernel that saturates DRAM, and a kernel that reads far more than it writes may beat
# it by a few percent (no read-write turnarounds on the bus) as it may trail it by a few (a row's
# tail, the launch), so within 10% nothing is left that an idea of a rung could win on this GPU.
ROOF_FRACTION = 0.9
_NEAR = 1.15  # a figure within this ratio of a rung's is on it
# Neighbouring rungs nearer each other than this are tied: one check cannot tell them apart, since
# a check's figure of its own yardstick spans 0.98 to 1.03 of it between repeats (the exercises
# bench on H100 and H200). On an H200, softmax-rows' block-per-row rung ran at 0.97 of the
# expert, and a checked expert was placed on the rung below it.
TIE = 1.05


@dataclass(frozen=True)
class Rung:
    """One step of a ladder: its place, short name, idea and file."""

    number: int  # 1 at the bottom
    name: str  # "shared-tiles"
    idea: str  # one sentence
    path: Path
    refused: str = ""  # what the check says of it, when it refuses it (a rung below the exercise)

    @property
    def title(self) -> str:
        """'rung 3, shared tiles'."""
        return f"rung {self.number}, {self.name.replace('-', ' ')}"


class LadderError(ValueError):
    """A ladder file that does not say its idea."""


def _header(path: Path) -> list[str]:
    return (path.read_text(encoding="utf-8").splitlines() + ["", "", ""])[:3]


def _pointed(ex: Exercise, entry: Path, header: list[str]) -> Path:
    """The exercise's file a `.ref` rung names on its `# file:` line."""
    name = next((ln.removeprefix(_POINTER).strip() for ln in header if ln.startswith(_POINTER)), "")
    path = (ex.folder / name).resolve()
    if not name or not path.is_file() or ex.folder.resolve() not in path.parents:
        raise LadderError(f"{entry.name}: a .ref rung names a file of its exercise: '{_POINTER}'")
    return path


def rungs(ex: Exercise) -> list[Rung]:
    """The exercise's ladder, bottom first, its expert on top; [] when it has none."""
    folder = ex.folder / "ladder"
    if not folder.is_dir():
        return []
    out = []
    files = sorted(p for p in folder.iterdir() if _FILE.match(p.name))
    tops = [ex.expert_path] if ex.has_expert else []
    for i, entry in enumerate([*files, *tops], 1):
        header = _header(entry)
        if not header[0].startswith(_IDEA):
            raise LadderError(f"{entry.name}: a rung's first line is '{_IDEA}<its idea>'")
        m = _FILE.match(entry.name)
        name = m.group(2) if m else "expert"
        path = _pointed(ex, entry, header) if entry.suffix == ".ref" else entry
        refused = header[1].removeprefix(_EXPECT) if header[1].startswith(_EXPECT) else ""
        out.append(Rung(i, name, header[0].removeprefix(_IDEA).strip(), path, refused))
    return out


def having(exercises: Iterable[Exercise]) -> list[str]:
    """The ids of the exercises that have a ladder, in catalog order."""
    return [ex.id for ex in exercises if (ex.folder / "ladder").is_dir()]


def fingerprint(ex: Exercise) -> str:
    """What a ladder's figures are valid for: every rung's file and the check that times them."""
    h = hashlib.sha256()
    for path in [r.path for r in rungs(ex)] + [ex.check_path]:
        with contextlib.suppress(OSError):
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


def figures(ex: Exercise, key: str) -> dict[str, dict[str, float]]:
    """The rungs' figures on device `key`, by rung name ({"value": ..., "of_top": ...}, and for
    a memory-bound ladder "roof": the copy's GB/s, "at_roof": 1.0 or 0.0), when they were
    measured for these rungs, this check and these library versions; else {}."""
    row = _RECORDS.read(key).get(ex.id)
    if not isinstance(row, dict) or row.get("fingerprint") != fingerprint(ex):
        return {}
    if row.get("versions") != versions():
        return {}
    found = row.get("rungs")
    return found if isinstance(found, dict) else {}


def observe(
    ex: Exercise, key: str, measured: dict[str, dict[str, float]], *, metric: str
) -> dict[str, Any]:
    """Keep a measurement of the rungs on device `key` (every rung from one run of rounds:
    {name: {"value": figure, "of_top": fraction of the top rung, and "roof", "at_roof" where the
    metric is memory-bound}}); returns the row kept."""
    rows = _RECORDS.read(key)
    row = {
        "fingerprint": fingerprint(ex),
        "versions": versions(),
        "metric": metric,
        "rungs": measured,
        "updated": time.time(),
    }
    rows[ex.id] = row
    _RECORDS.write(key, rows)
    return row


def at_roof(figure: dict[str, float] | None) -> bool:
    """Whether a rung's figures mark it at the memory roof."""
    return bool((figure or {}).get("at_roof"))


def roof(measured: dict[str, dict[str, float]]) -> float | None:
    """The memory roof the rungs were timed beside (GB/s, a copy's bytes read + written), if any."""
    return next((float(f["roof"]) for f in measured.values() if f.get("roof")), None)


def ordered(order: list[str], measured: dict[str, dict[str, float]]) -> bool:
    """Whether each rung (names bottom first) ran faster than the one below it, or both are at
    the memory roof, where no idea can be faster."""
    figs = [measured[n] for n in order if n in measured]
    return all(
        a["value"] < b["value"] or (at_roof(a) and at_roof(b))
        for a, b in zip(figs, figs[1:], strict=False)
    )


def _span(band: tuple[Rung, ...]) -> str:
    if len(band) == 1:
        return f"rung {band[0].number}"
    return f"rungs {band[0].number} to {band[-1].number}"


@dataclass(frozen=True)
class Placement:
    """Where a figure sits on a measured ladder."""

    rung: Rung  # the nearest rung; in a band, the band's lowest
    above: Rung | None  # the next rung up (past the band), None on the top one
    speedup: float | None  # how much faster the next rung ran than the learner's figure
    ratio: float  # the learner's figure over `rung`'s
    band: tuple[Rung, ...] = ()  # the rungs the nearest is indistinguishable from, itself too
    roofed: bool = True  # the band is at the memory roof (else its rungs are tied: see TIE)

    def sentence(self, metric: str = "") -> str:
        """'You are on rung 3, shared tiles; rung 4 ran 2.3x faster on this GPU; its idea: ...',
        or, in the roof band, that the ideas above its lowest rung gain nothing more here."""
        near = "near" if abs(math.log(self.ratio)) > math.log(_NEAR) else "on"
        head = f"You are {near} {self.rung.title}"
        if self.band and self.roofed:
            head = self._at_roof()
        elif self.band:
            head = self._tied(near)
        elif self.above is None:
            return head + ": the top of the ladder, what gold is measured against."
        if self.above is None:
            return head + "."
        if self.speedup is None:
            return head + f"; the next rung's idea: {self.above.idea}."
        return (
            head + f"; {self.above.title.split(',')[0]} ran {self.speedup:.1f}x faster than"
            f" yours on this GPU; its idea: {self.above.idea}."
        )

    def _tied(self, near: str) -> str:
        top = ", the top" if self.above is None else ""
        return (
            f"You are {near} {_span(self.band)}{top}, which ran within {TIE - 1:.0%} of each other"
            f" on this GPU: the ideas above rung {self.band[0].number} gain too little here to"
            " tell apart"
        )

    def _at_roof(self) -> str:
        low, top = self.band[0], ", the top" if self.above is None else ""
        if self.ratio < 1 / _NEAR:  # below the band: its lowest rung's idea reaches the roof
            reach = f"{_span(self.band)}{top and top + ','} reach"
            return (
                f"You are below this GPU's memory roof, which {reach}: rung {low.number} ran"
                f" {1 / self.ratio:.1f}x faster than yours; its idea: {low.idea}"
            )
        head = f"You are at this GPU's memory roof, with {_span(self.band)}{top}: DRAM is saturated"
        if len(self.band) == 1:
            return head
        return (
            head + f", so the ideas above rung {low.number} gain nothing more here; they pay off"
            " on a GPU that needs more bytes in flight to fill its memory"
        )


def place(
    ladder: list[Rung],
    measured: dict[str, dict[str, float]],
    *,
    value: float | None = None,
    of_top: float | None = None,
) -> Placement | None:
    """The rung nearest (by ratio) a learner's figure: `of_top` (a fraction of the top rung,
    which a check measures beside the learner when the expert is its yardstick) where given,
    else `value` (in the exercise's metric). None without a figure or a measured rung."""
    use, mine = ("of_top", of_top) if of_top else ("value", value)
    if not mine or mine <= 0:
        return None
    known = [(r, float(measured[r.name][use])) for r in ladder if measured.get(r.name, {}).get(use)]
    if not known:
        return None
    rung, figure = min(known, key=lambda rf: abs(math.log(mine / rf[1])))
    band, roofed = _band(ladder, measured, rung), True
    if not band:
        band, roofed = _tie(ladder, measured, rung, use), False
    if band:
        rung, figure = band[0], float(measured[band[0].name][use])
    top = band[-1] if band else rung
    above = next((r for r in ladder if r.number == top.number + 1), None)
    up = measured.get(above.name, {}).get(use) if above is not None else None
    speedup = float(up) / mine if up else None
    return Placement(rung, above, speedup, mine / figure, band, roofed)


def _band(
    ladder: list[Rung], measured: dict[str, dict[str, float]], rung: Rung
) -> tuple[Rung, ...]:
    """The unbroken run of rungs at the memory roof that holds `rung`; () when it is below."""
    run: list[Rung] = []
    for r in ladder:
        if at_roof(measured.get(r.name)):
            run.append(r)
        elif rung in run:
            break
        else:
            run = []
    return tuple(run) if rung in run else ()


def _tie(
    ladder: list[Rung], measured: dict[str, dict[str, float]], rung: Rung, use: str
) -> tuple[Rung, ...]:
    """The unbroken run of neighbouring rungs, each within TIE of the next, that holds `rung`;
    () when its neighbours are farther."""
    figs = {r.name: measured.get(r.name, {}).get(use) for r in ladder}
    run: list[Rung] = []
    for r in ladder:
        last = figs.get(run[-1].name) if run else None
        mine = figs[r.name]
        if run and last and mine and max(last, mine) / min(last, mine) < TIE:
            run.append(r)
        elif rung in run:
            break
        else:
            run = [r]
    return tuple(run) if rung in run and len(run) > 1 else ()


def hint(ladder: list[Rung], p: Placement | None) -> str:
    """The next hint a ladder gives: the next rung's idea (the first rung above the shared-memory
    refusals, without a placement)."""
    if p is not None:
        return p.sentence()
    first = next((r for r in ladder if not r.refused), None)
    return f"The ladder's first rung that passes: {first.idea}." if first else ""


def for_check(ex: Exercise, timing: dict[str, Any] | None, key: str) -> str:
    """The ladder's sentence after a graded check on device `key` ("" when the exercise has no
    ladder or it was not measured there): the check's own figure against the expert timed beside
    it, where the expert is the yardstick, else its figure."""
    if not timing or not (ex.folder / "ladder").is_dir():
        return ""
    measured = figures(ex, key)
    if not measured:
        return ""
    yard = timing.get("yardstick") or {}
    of_top = (
        (timing.get("of_yardstick") or {}).get("figure") if yard.get("label") == "expert" else None
    )
    value = (timing.get("learner") or {}).get("value")
    p = place(rungs(ex), measured, value=value, of_top=of_top)
    return p.sentence() if p is not None else ""


def lines(
    ex: Exercise,
    key: str,
    *,
    value: float | None = None,
    of_top: float | None = None,
    width: int = 100,
) -> list[str]:
    """The ladder drawn for a person: each rung, its figure on this device when measured, the
    learner's place on it, and what to try next."""
    ladder = rungs(ex)
    if not ladder:
        return [f"{ex.id} has no ladder"]
    measured = figures(ex, key)
    p = place(ladder, measured, value=value, of_top=of_top)
    unit = ex.metric or ""
    out = [f"The ladder of {ex.id}: {len(ladder)} rungs, one idea each (top: the expert)"]
    ceiling = roof(measured)
    tag = " at roof" if ceiling else ""  # a column only where a roof was timed
    for r in reversed(ladder):
        fig = measured.get(r.name, {})
        shown = (
            f"{fig['value']:>7.3g} {unit} ({fig.get('of_top', 0):.2f} of top)"
            + (tag if at_roof(fig) else " " * len(tag))
            if fig.get("value")
            else "not measured here".rjust(len(unit) + 22 + len(tag))
        )
        mark = "->" if p is not None and (p.rung == r or r in p.band) else "  "
        note = f" (refused: {r.refused})" if r.refused else ""
        head = f"{mark} {r.number:>2} {r.name:<20} {shown}  "
        room = max(20, width - len(head))
        text = r.idea + note
        out.append(head + (text if len(text) <= room else text[: room - 3] + "..."))
    if ceiling:
        out += textwrap.wrap(
            f"Memory roof: a device copy of the same bytes ran at {ceiling:.4g} {unit} (read +"
            f" written) in the same rounds; a rung at {ROOF_FRACTION:.0%} of it or more is at"
            " the roof: DRAM is saturated there, so the rungs at the roof are not ordered by speed.",
            width,
        )
    if not measured:
        out += textwrap.wrap(
            "Not measured on this GPU yet: the rungs' speeds are timed once per GPU"
            f" (gpulab ex ladder {ex.id} --measure), then your figure is placed on the ladder.",
            width,
        )
    out += textwrap.wrap(hint(ladder, p), width)
    return out
