"""JSON-serialisable results: what an experiment measured, verified and produced.

Everything here survives `json.dumps(x.to_dict())` and `Cls.from_dict(...)`, because results
cross a process boundary (worker -> client) and land in files (`--json`, bench/results/).
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import Any


def json_safe(value: Any) -> Any:
    """`value` as plain JSON: NaN and inf (which JSON has not) become None, tuples lists,
    dataclasses dicts, NumPy and torch scalars numbers; every consumer parses the output. The one
    JSON-cleaning function: results, the runner's frames, the bench and the CLI's documents."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return json_safe(dataclasses.asdict(value))
    if hasattr(value, "item") and callable(value.item):  # numpy / torch scalars
        return json_safe(value.item())
    return value


class _Serial:
    def to_dict(self) -> dict[str, Any]:
        # self is the dataclass that inherits this (mypy sees only the plain base class)
        return json_safe(dataclasses.asdict(self))  # type: ignore[call-overload]  # as said

    @classmethod
    def from_dict(cls, data: dict[str, Any]):
        names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]  # as above
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass
class Measurement(_Serial):
    """One row of a results table: a contender timed at one size and dtype."""

    contender: str
    size: str
    time_median_s: float
    time_min_s: float
    time_max_s: float
    runs: int
    dtype: str = ""
    throughput: float | None = None
    unit: str = ""
    percent_of_peak: float | None = None
    peak_name: str = ""
    cold_s: float | None = None
    extrapolated: bool = False
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class Verdict(_Serial):
    """Correctness of one contender's output against a reference."""

    contender: str
    error: float
    tolerance: float
    passed: bool
    metric: str = "max abs error"
    reference: str = ""
    size: str = ""
    dtype: str = ""

    @classmethod
    def check(cls, contender: str, error: float, tolerance: float, **kw: Any) -> Verdict:
        """A verdict that passes when `error` is finite and at most `tolerance`."""
        ok = math.isfinite(error) and error <= tolerance
        return cls(contender=contender, error=float(error), tolerance=tolerance, passed=ok, **kw)


@dataclass
class Series(_Serial):
    """Points for a plot (x vs y, one line per series name).

    `lo` and `hi`, when given, hold each point's spread (the bounds of the 95% interval of the
    median y, gpulab.core.interval), drawn as a bar through the point. `model` marks a series a
    model predicts rather than one measured: drawn as a plain line, not as points."""

    name: str
    x: list[float]
    y: list[float]
    x_label: str = ""
    y_label: str = ""
    log_x: bool = False
    log_y: bool = False
    lo: list[float] = field(default_factory=list)
    hi: list[float] = field(default_factory=list)
    model: bool = False


@dataclass
class Artifact(_Serial):
    """A file the run produced (an image, a profile table). `path` is absolute on the worker's host."""

    name: str
    kind: str  # "image", "text", "table"
    path: str = ""
    text: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class RunRecord(_Serial):
    """What ran, where, with what, and when."""

    experiment: str
    params: dict[str, Any]
    device: str = ""
    backend_versions: dict[str, str] = field(default_factory=dict)
    started_at: float = field(default_factory=time.time)
    finished_at: float | None = None
    gpulab_version: str = ""


# A result's summary key: why the worker that ran the job must not take another (something the
# job's code started still runs in it); the worker retires after sending the result
RETIRE_WORKER = "retire_worker"


@dataclass
class Result(_Serial):
    """The whole outcome of one run."""

    record: RunRecord
    measurements: list[Measurement] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    series: list[Series] = field(default_factory=list)
    artifacts: list[Artifact] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)  # contender -> why it did not run
    explanation: str = ""  # "what you just saw"
    lesson: str = ""
    # The one-line answer (the experiment decides: pi and its error, a speedup, a % of peak),
    # computed from this run's rows; shown above the results and printed last by the CLI.
    headline: str = ""

    @property
    def passed(self) -> bool:
        """True when every correctness verdict passed."""
        return all(v.passed for v in self.verdicts)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        """A Result read back from its `to_dict` data."""
        return cls(
            record=RunRecord.from_dict(data["record"]),
            measurements=[Measurement.from_dict(m) for m in data.get("measurements", [])],
            verdicts=[Verdict.from_dict(v) for v in data.get("verdicts", [])],
            series=[Series.from_dict(s) for s in data.get("series", [])],
            artifacts=[Artifact.from_dict(a) for a in data.get("artifacts", [])],
            summary=dict(data.get("summary", {})),
            unavailable=dict(data.get("unavailable", {})),
            explanation=data.get("explanation", ""),
            lesson=data.get("lesson", ""),
            headline=str(data.get("headline") or ""),
        )
