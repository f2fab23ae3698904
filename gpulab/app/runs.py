"""What the panel knows about one run: its events folded into state the widgets redraw from.

Plain data (no textual), so a finished run can be reopened from the session's history and
redrawn exactly as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpulab.core import events as ev

MAX_LOG_LINES = 2000


def row_key(row: dict[str, Any]) -> str:
    """The key of a measurement row: contender, size and dtype."""
    return f"{row.get('contender', '')}|{row.get('size', '')}|{row.get('dtype', '')}"


def expected_rows(params: dict[str, Any]) -> int:
    """Rows each contender should produce: sizes x dtypes when the params sweep them, else 1."""
    n = 1
    for name in ("sizes", "dtypes"):
        value = params.get(name)
        if isinstance(value, list | tuple) and value:
            n *= len(value)
    return n


@dataclass
class RunState:
    """One run as the experiments pane shows it, built up from the runner's events."""

    number: int
    experiment: str
    params: dict[str, Any]
    job_id: str = ""
    status: str = "submitting"  # submitting, running, result, failed, cancelled
    fraction: float = 0.0
    message: str = ""
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    result: dict[str, Any] | None = None
    final: dict[str, Any] | None = None
    log: list[str] = field(default_factory=list)
    started: float = 0.0
    ended: float = 0.0
    kept_id: int | None = None  # its id in the kept history, once stored (or reopened from it)
    # The learner's prediction (gpulab.history.predictions.Prediction), completed when the run
    # ends, and the calibration's line then
    prediction: Any = None
    calibration: str = ""

    @property
    def finished(self) -> bool:
        """Whether the run has its final event (result, failed or cancelled)."""
        return self.status in (ev.RESULT, ev.FAILED, ev.CANCELLED)

    def apply(self, event: dict[str, Any]) -> None:
        """Fold one runner event into the run's status, progress, rows, logs and result."""
        kind = event.get("type")
        if kind == ev.ACCEPTED:
            self.status = "running"
            self.started = float(event.get("t") or self.started)
        elif kind == ev.PROGRESS:
            self.fraction = float(event.get("fraction") or 0.0)
            self.message = str(event.get("message", ""))
        elif kind == ev.MEASUREMENT:
            row = event.get("row") or {}
            self.rows[row_key(row)] = row
        elif kind == ev.LOG:
            self.add_log(str(event.get("line", "")))
        elif kind == ev.RESULT:
            self.result = event.get("result") or {}
            for row in self.result.get("measurements", []):
                self.rows[row_key(row)] = row
            self.fraction = 1.0
            self._end(event)
        elif kind == ev.FAILED:
            self.add_log(f"failed ({event.get('kind', '')}): {event.get('message', '')}")
            self._end(event)
        elif kind == ev.CANCELLED:
            self.add_log(f"cancelled ({event.get('how', '')})")
            self._end(event)

    def _end(self, event: dict[str, Any]) -> None:
        self.status = str(event["type"])
        self.final = event
        # Event times, not the clock at redraw: a reopened run reads the same as it did live.
        self.ended = float(event.get("t") or 0.0)

    def add_log(self, line: str) -> None:
        """Keep a log line (the last MAX_LOG_LINES)."""
        self.log.append(line)
        if len(self.log) > MAX_LOG_LINES:
            del self.log[: len(self.log) - MAX_LOG_LINES]

    def verdict(self, row: dict[str, Any]) -> str:
        """pass / FAIL once the result is in; the same matching rule as the CLI's table."""
        if not self.result:
            return "…"
        verdicts = self.result.get("verdicts", [])
        exact = [
            v
            for v in verdicts
            if v["contender"] == row.get("contender")
            and v.get("size", "") in ("", row.get("size", ""))
            and v.get("dtype", "") in ("", row.get("dtype", ""))
        ]
        if not exact:
            return "-"
        return "pass" if all(v.get("passed") for v in exact) else "FAIL"

    def title(self) -> str:
        """ "#N experiment (params)" (or "kept #id" for a run read back from the history)."""
        shown = ", ".join(f"{k}={_short(v)}" for k, v in self.params.items())
        number = f"#{self.number}" if self.number else f"kept #{self.kept_id}"
        return f"{number} {self.experiment} ({shown})"


def _short(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(map(str, value))
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
