"""A background thread that reads every GPU at a steady rate and hands frames to subscribers.

NVML calls block (the PCIe throughput counters alone sample for ~20 ms), so they never run on
the UI's event loop: the thread owns the NVML session, and subscribers are called on that
thread (Textual's `post_message` is thread-safe, which is how the panes receive frames).

The thread starts with the first subscriber and stops, joined, when the last one leaves or on
`stop()`. NVML is shut down only after the thread has left its last call: shutting it down under
a call in flight is a use-after-free inside libnvidia-ml (nvitop guards its exit the same way).

Failures are never silent. A read that raises is logged once per episode; when reads keep
failing (STALE_AFTER in a row) subscribers get the last good frame again, marked
`stale=Stale(since, reason)`, so the panes can say "stale since HH:MM:SS: reason" instead of
freezing on old figures; the next good frame clears it. A GPU that falls off the bus mid-session
is carried in every later frame's `lost` (since when, why). A subscriber that raises is logged
(once per subscriber) and counted in `delivery_errors`; the others still get their frames.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from gpulab.telemetry.inventory import SystemInventory, read_inventory
from gpulab.telemetry.nvml import NvmlSession
from gpulab.telemetry.snapshot import GpuSnapshot, HostProcesses, ProcessTable, read_snapshot
from gpulab.telemetry.topology import NvlinkRates
from gpulab.telemetry.values import NA

log = logging.getLogger(__name__)

MIN_INTERVAL, MAX_INTERVAL, DEFAULT_INTERVAL = 0.25, 5.0, 0.5
STALE_AFTER = 2  # failed reads in a row before subscribers are told the figures are stale
JOB_INTERVAL = 0.5  # at least 2 Hz while a job runs, whatever the idle setting
# The PCIe counters block ~20 ms each: every frame while a job runs (transfers matter then),
# every few seconds while idle (they read ~0 then), which keeps the idle UI process cheap.
PCIE_IDLE_S, PCIE_JOB_S = 5.0, 0.0


@dataclass(frozen=True)
class Stale:
    """Since when (wall clock) and why the figures shown are not new."""

    since: float
    reason: str

    def label(self) -> str:
        """'stale since HH:MM:SS: reason'."""
        return f"stale since {time.strftime('%H:%M:%S', time.localtime(self.since))}: {self.reason}"


@dataclass
class Frame:
    """One sample of every GPU, with the (cached) inventory it belongs to."""

    seq: int
    t: float
    inventory: SystemInventory
    snapshots: list[GpuSnapshot] = field(default_factory=list)
    read_s: float = 0.0  # how long the NVML calls took
    # Set on a republished frame when reads keep failing: these figures are old.
    stale: Stale | None = None
    # GPUs that were read fine and then fell off the bus (NVML index -> since when, why).
    lost: dict[int, Stale] = field(default_factory=dict)

    def snapshot(self, nvml_index: int) -> GpuSnapshot | None:
        """The snapshot of NVML GPU `nvml_index`, or None."""
        return next((s for s in self.snapshots if s.nvml_index == nvml_index), None)

    def problem(self, nvml_index: int | None = None) -> Stale | None:
        """Why the figures of GPU `nvml_index` (None: of any GPU) are not current, or None."""
        if self.stale is not None:
            return self.stale
        if nvml_index is None:
            return next(iter(self.lost.values()), None)
        return self.lost.get(nvml_index)

    def to_dict(self) -> dict[str, Any]:
        """The frame as JSON-ready data."""
        return {
            "seq": self.seq,
            "t": self.t,
            "read_s": self.read_s,
            "inventory": self.inventory.to_dict(),
            "snapshots": [s.to_dict() for s in self.snapshots],
            "stale": None if self.stale is None else vars(self.stale),
            "lost": {str(i): vars(v) for i, v in self.lost.items()},
        }


class TelemetryReader:
    """The NVML session, the cached inventory, and one `read()` -> Frame. Not thread-safe."""

    def __init__(self, nvml: Any = None, *, procs: ProcessTable | None = None) -> None:
        self.session = NvmlSession(nvml)
        self.procs = procs or HostProcesses()
        self._inventory: SystemInventory | None = None
        self._seq = 0
        self.pcie_every_s = PCIE_IDLE_S
        self._pcie: dict[int, tuple[float, Any, Any]] = {}  # nvml index -> (t, tx, rx)
        self._nvlink = NvlinkRates()
        self._read_ok: set[int] = set()  # GPUs read fine at least once
        self._lost: dict[int, Stale] = {}  # ... and lost since

    def inventory(self) -> SystemInventory:
        """The machine's inventory, read once."""
        if self._inventory is None:
            self._inventory = read_inventory(self.session)
        return self._inventory

    def read(self) -> Frame:
        """One frame: a snapshot of every GPU and how long reading took."""
        start = time.perf_counter()
        inv = self.inventory()
        snaps = [self._snapshot(g.nvml_index, inv) for g in inv.gpus]
        self._seq += 1
        now = time.time()
        for g in inv.gpus:
            gone = self.session.lost(g.nvml_index)
            if gone is None:
                self._read_ok.add(g.nvml_index)
            elif g.nvml_index in self._read_ok and g.nvml_index not in self._lost:
                self._lost[g.nvml_index] = Stale(now, gone.reason)  # lost mid-session
        return Frame(self._seq, now, inv, snaps, time.perf_counter() - start, lost=dict(self._lost))

    def _snapshot(self, i: int, inv: SystemInventory) -> GpuSnapshot:
        now = time.time()
        cached = self._pcie.get(i)
        fresh = cached is None or now - cached[0] >= self.pcie_every_s
        s = read_snapshot(self.session, i, self.procs, now, pcie_throughput=fresh)
        if fresh:
            self._pcie[i] = (now, s.pcie_tx, s.pcie_rx)
        elif cached is not None and self.session.lost(i) is None:
            s.pcie_tx, s.pcie_rx = cached[1], cached[2]
        if self.session.lost(i) is None:
            links = inv.topology.gpu(i)
            if links is not None and isinstance(links.nvlinks, int) and links.nvlinks:
                s.nvlink_tx, s.nvlink_rx = self._nvlink.read(self.session, i, now)
            else:
                why = (
                    links.nvlink_version if links and isinstance(links.nvlink_version, NA) else None
                )
                s.nvlink_tx = s.nvlink_rx = why or NA("no NVLink on this GPU")
        return s

    def close(self) -> None:
        """Close NVML and forget what was read."""
        self.session.close()
        self._inventory = None
        self._pcie.clear()
        self._nvlink.clear()
        self._read_ok.clear()
        self._lost.clear()


def clamp_interval(seconds: float) -> float:
    """`seconds` within the sampler's allowed interval."""
    return min(MAX_INTERVAL, max(MIN_INTERVAL, float(seconds)))


class Sampler:
    """subscribe(callback) -> unsubscribe; latest(); stop(). Callbacks run on the thread."""

    def __init__(
        self,
        reader: TelemetryReader | None = None,
        interval: float = DEFAULT_INTERVAL,
        *,
        manual: bool = False,
    ) -> None:
        """`manual=True`: no thread; frames come only from `sample_now()` (snapshot tests)."""
        self.reader = reader or TelemetryReader()
        self.manual = manual
        self._interval = clamp_interval(interval)
        self._subs: dict[int, Callable[[Frame], None]] = {}
        self._next_id = 0
        self._fast: set[str] = set()
        self._lock = threading.Lock()
        self._read_lock = threading.Lock()  # one NVML reader at a time
        self._wake = threading.Event()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._latest: Frame | None = None
        self._good: Frame | None = None  # the last frame that was read, not republished
        self.frames = 0
        self.failures = 0  # failed reads in a row
        self.failing: Stale | None = None  # the current run of failed reads: since, why
        self.delivery_errors = 0
        self._bad_subscribers: set[int] = set()

    # rate -----------------------------------------------------------------------------------
    @property
    def interval(self) -> float:
        """The effective period: the configured one, or faster while a job holds it."""
        return min(self._interval, JOB_INTERVAL) if self._fast else self._interval

    @property
    def busy(self) -> bool:
        """A job holds the sampler fast."""
        return bool(self._fast)

    def set_interval(self, seconds: float) -> None:
        """Sample every `seconds` (clamped), starting now."""
        self._interval = clamp_interval(seconds)
        self._wake.set()

    def hold_fast(self, key: str) -> None:
        """Sample at >= 2 Hz, PCIe counters included, until `release_fast(key)` (a job runs)."""
        self._fast.add(key)
        self.reader.pcie_every_s = PCIE_JOB_S
        self._wake.set()

    def release_fast(self, key: str) -> None:
        """Drop the fast-sampling request `key`; PCIe is read slowly again once none is left."""
        self._fast.discard(key)
        if not self._fast:
            self.reader.pcie_every_s = PCIE_IDLE_S

    # subscribers ----------------------------------------------------------------------------
    def subscribe(self, callback: Callable[[Frame], None]) -> Callable[[], None]:
        """Call `callback` with each new frame; the function that unsubscribes."""
        with self._lock:
            sid = self._next_id
            self._next_id += 1
            self._subs[sid] = callback
            latest = self._latest
            self._start_locked()
        if latest is not None:
            self._deliver(callback, latest)

        def unsubscribe() -> None:
            with self._lock:
                self._subs.pop(sid, None)
                last = not self._subs
            if last:
                self.stop()

        return unsubscribe

    def latest(self) -> Frame | None:
        """The newest frame, or None before the first."""
        return self._latest

    @property
    def running(self) -> bool:
        """True while the sampling thread is alive."""
        return self._thread is not None and self._thread.is_alive()

    def sample_now(self) -> Frame | None:
        """Read and publish one frame on the calling thread (tests). A failed read is handled
        as on the thread (logged; after STALE_AFTER, the stale frame): that frame, or the
        latest one, is returned."""
        return self._read_once()

    def _read_once(self, *, on_thread: bool = False) -> Frame | None:
        try:
            with self._read_lock:
                if on_thread and self._stopping:  # stop() closes NVML under this lock
                    return None
                frame = self.reader.read()
        except Exception as exc:  # noqa: BLE001 - a bug in a reader must not kill telemetry for the session
            self._failed(exc)
            return self._latest
        self.failures, self.failing = 0, None
        self._good = frame
        self._publish(frame)
        return frame

    def _failed(self, exc: BaseException) -> None:
        self.failures += 1
        reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        if self.failing is None or self.failing.reason != reason:
            log.error("telemetry read failed: %s", reason, exc_info=exc)
            self.failing = Stale(time.time(), reason)
            if self.failures > STALE_AFTER:  # a new reason in a failing run: say it
                self._publish_stale()
        if self.failures == STALE_AFTER:
            self._publish_stale()

    def _publish_stale(self) -> None:
        assert self.failing is not None
        good = self._good
        if good is not None:
            frame = replace(good, stale=self.failing)
        else:
            why = f"telemetry cannot be read: {self.failing.reason}"
            frame = Frame(0, self.failing.since, SystemInventory(False, why), stale=self.failing)
        self._publish(frame, count=False)

    # thread ---------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the sampling thread (again, if it stopped)."""
        with self._lock:
            self._start_locked()

    def _start_locked(self) -> None:
        if self.manual:
            return
        if self._thread is not None and self._thread.is_alive():
            return
        self._stopping = False
        self._wake.clear()
        self._thread = threading.Thread(target=self._run, name="gpulab-telemetry", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop and join the thread, then shut NVML down. Idempotent; safe from any thread."""
        with self._lock:
            thread, self._thread = self._thread, None
            self._stopping = True
            self._wake.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        with self._read_lock:
            self.reader.close()

    def _run(self) -> None:
        while not self._stopping:
            began = time.monotonic()
            self._read_once(on_thread=True)
            self._wake.clear()
            # Sleep what is left of the period; set_interval, hold_fast and stop wake us early.
            while not self._stopping:
                left = self.interval - (time.monotonic() - began)
                if left <= 0 or self._wake.wait(left) is False:
                    break
                self._wake.clear()

    def _publish(self, frame: Frame, *, count: bool = True) -> None:
        self._latest = frame
        self.frames += count
        with self._lock:
            subs = list(self._subs.values())
        for cb in subs:
            self._deliver(cb, frame)

    def _deliver(self, cb: Callable[[Frame], None], frame: Frame) -> None:
        try:
            cb(frame)
        except Exception:  # one broken subscriber must not starve the others: log, count
            self.delivery_errors += 1
            if id(cb) not in self._bad_subscribers:
                self._bad_subscribers.add(id(cb))
                log.exception("a telemetry subscriber failed (%r); the others go on", cb)


_shared: Sampler | None = None
_shared_lock = threading.Lock()


def shared_sampler() -> Sampler:
    """The process's sampler on the real NVML: both panes share it unless given their own."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Sampler()
        return _shared
