"""A background thread that reads every GPU at a steady rate and hands frames to subscribers.

NVML calls block (the PCIe throughput counters alone sample for ~20 ms), so they never run on
the UI's event loop: the thread owns the NVML session, and subscribers are called on that
thread (Textual's `post_message` is thread-safe, which is how the panes receive frames).

The thread starts with the first subscriber and stops, joined, when the last one leaves or on
`stop()`. NVML is shut down only after the thread has left its last call: shutting it down under
a call in flight is a use-after-free inside libnvidia-ml (nvitop guards its exit the same way).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gpulab.telemetry.inventory import SystemInventory, read_inventory
from gpulab.telemetry.nvml import NvmlSession
from gpulab.telemetry.snapshot import GpuSnapshot, HostProcesses, ProcessTable, read_snapshot

log = logging.getLogger(__name__)

MIN_INTERVAL, MAX_INTERVAL, DEFAULT_INTERVAL = 0.25, 5.0, 0.5
JOB_INTERVAL = 0.5  # at least 2 Hz while a job runs, whatever the idle setting
# The PCIe counters block ~20 ms each: every frame while a job runs (transfers matter then),
# every few seconds while idle (they read ~0 then), which keeps the idle UI process cheap.
PCIE_IDLE_S, PCIE_JOB_S = 5.0, 0.0


@dataclass
class Frame:
    """One sample of every GPU, with the (cached) inventory it belongs to."""

    seq: int
    t: float
    inventory: SystemInventory
    snapshots: list[GpuSnapshot] = field(default_factory=list)
    read_s: float = 0.0  # how long the NVML calls took

    def snapshot(self, nvml_index: int) -> GpuSnapshot | None:
        return next((s for s in self.snapshots if s.nvml_index == nvml_index), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "t": self.t,
            "read_s": self.read_s,
            "inventory": self.inventory.to_dict(),
            "snapshots": [s.to_dict() for s in self.snapshots],
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

    def inventory(self) -> SystemInventory:
        if self._inventory is None:
            self._inventory = read_inventory(self.session)
        return self._inventory

    def read(self) -> Frame:
        start = time.perf_counter()
        inv = self.inventory()
        snaps = [self._snapshot(g.nvml_index) for g in inv.gpus]
        self._seq += 1
        return Frame(self._seq, time.time(), inv, snaps, time.perf_counter() - start)

    def _snapshot(self, i: int) -> GpuSnapshot:
        now = time.time()
        cached = self._pcie.get(i)
        fresh = cached is None or now - cached[0] >= self.pcie_every_s
        s = read_snapshot(self.session, i, self.procs, now, pcie_throughput=fresh)
        if fresh:
            self._pcie[i] = (now, s.pcie_tx, s.pcie_rx)
        elif cached is not None and self.session.lost(i) is None:
            s.pcie_tx, s.pcie_rx = cached[1], cached[2]
        return s

    def close(self) -> None:
        self.session.close()
        self._inventory = None
        self._pcie.clear()


def clamp_interval(seconds: float) -> float:
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
        self.frames = 0

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
        self._interval = clamp_interval(seconds)
        self._wake.set()

    def hold_fast(self, key: str) -> None:
        """Sample at >= 2 Hz, PCIe counters included, until `release_fast(key)` (a job runs)."""
        self._fast.add(key)
        self.reader.pcie_every_s = PCIE_JOB_S
        self._wake.set()

    def release_fast(self, key: str) -> None:
        self._fast.discard(key)
        if not self._fast:
            self.reader.pcie_every_s = PCIE_IDLE_S

    # subscribers ----------------------------------------------------------------------------
    def subscribe(self, callback: Callable[[Frame], None]) -> Callable[[], None]:
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
        return self._latest

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def sample_now(self) -> Frame:
        """Read and publish one frame on the calling thread (tests, `gpulab info`)."""
        with self._read_lock:
            frame = self.reader.read()
        self._publish(frame)
        return frame

    # thread ---------------------------------------------------------------------------------
    def start(self) -> None:
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
            try:
                with self._read_lock:
                    if self._stopping:
                        break
                    frame = self.reader.read()
            except Exception:  # a bug in a reader must not kill telemetry for the session
                log.exception("telemetry read failed")
            else:
                self._publish(frame)
            self._wake.clear()
            # Sleep what is left of the period; set_interval, hold_fast and stop wake us early.
            while not self._stopping:
                left = self.interval - (time.monotonic() - began)
                if left <= 0 or self._wake.wait(left) is False:
                    break
                self._wake.clear()

    def _publish(self, frame: Frame) -> None:
        self._latest = frame
        self.frames += 1
        with self._lock:
            subs = list(self._subs.values())
        for cb in subs:
            self._deliver(cb, frame)

    @staticmethod
    def _deliver(cb: Callable[[Frame], None], frame: Frame) -> None:
        with contextlib.suppress(Exception):
            cb(frame)


_shared: Sampler | None = None
_shared_lock = threading.Lock()


def shared_sampler() -> Sampler:
    """The process's sampler on the real NVML: both panes share it unless given their own."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = Sampler()
        return _shared
