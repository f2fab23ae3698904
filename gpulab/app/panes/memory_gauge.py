"""The live memory gauge (#memory-gauge): the device bar, the worker's layers, a history.

It joins two streams: NVML frames from the telemetry sampler thread (device used/total and
per-process memory) and the worker's allocator readings from runner `memory` events. The lab's
state reaches it as attributes the main screen sets (`handshake`: the worker's pid;
`memory_reading`; `job_running`; `gauge_gpu`: the GPU to follow). The arithmetic lives headless
in `gpulab.telemetry.gauge`.

Idle cost: frames arrive at the sampler's rate, but the widget repaints only when the text it
would show has changed, so a quiet GPU costs a comparison, not a render.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on
from textual.message import Message
from textual.reactive import var
from textual.widget import Widget

from gpulab.app.panes.stale import WATCH_S, StaleWatch, marker
from gpulab.telemetry.gauge import Layers, MemoryModel
from gpulab.telemetry.sampler import Frame, Sampler, shared_sampler
from gpulab.telemetry.values import NA, nbytes

LABEL = 18


class MemoryGauge(Widget):
    """The device's memory bar, the worker's allocator layers and a history of both."""

    handshake: var[dict[str, Any] | None] = var(None)
    """The worker's hello: its pid is the worker's layer."""
    memory_reading: var[dict[str, Any] | None] = var(None, always_update=True)
    """The worker's latest allocator reading."""
    job_running: var[bool] = var(False)
    """A run or a check is in progress: sample fast and track its peak."""
    gauge_gpu: var[tuple[int, str] | None] = var(None)
    """(NVML index, label) of the GPU to follow."""

    class FrameArrived(Message, bubble=False):
        """A telemetry frame, posted from the sampler's thread."""

        def __init__(self, frame: Frame) -> None:
            self.frame = frame
            super().__init__()

        def can_replace(self, message: Message) -> bool:
            """A newer frame replaces one still queued: only the latest matters."""
            return isinstance(message, MemoryGauge.FrameArrived)

    def __init__(
        self, *, sampler: Sampler | None = None, history_s: float = 180.0, **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self._sampler = sampler
        self.model = MemoryModel(history_s=history_s)
        self._unsubscribe: Any = None
        self._text = Text("Memory: waiting for the first sample")
        self._key: Any = None
        self.repaints = 0
        self.label = ""
        self.stale = StaleWatch()

    @property
    def sampler(self) -> Sampler:
        """The telemetry sampler (the shared one unless a test gave one)."""
        if self._sampler is None:
            self._sampler = shared_sampler()
        return self._sampler

    # the app's interface --------------------------------------------------------------------
    def set_worker_pid(self, pid: int | None) -> None:
        """Follow worker `pid` (None: no worker) to mark its memory as the lab's."""
        self.model.worker_pid = int(pid) if pid else None
        self._update()

    def add_reading(self, reading: dict[str, Any]) -> None:
        """Take the worker's allocator reading (a runner `memory` event)."""
        self.model.add_reading(reading)
        self._update()

    def job_started(self) -> None:
        """A job started: sample at least twice a second until it ends."""
        self.model.job_started()
        self.sampler.hold_fast(f"gauge-{id(self)}")  # >= 2 Hz while a job runs
        self._update()

    def job_finished(self) -> None:
        """The job ended: the sampler may slow down again."""
        self.model.job_finished()
        self.sampler.release_fast(f"gauge-{id(self)}")
        self._update()

    def select_gpu(self, nvml_index: int, label: str = "") -> None:
        """Follow another GPU (the one chosen in the GPU info pane). `label` (the GPU's
        CUDA name, "cuda:1") replaces "Device" on the bar when NVML lists several GPUs."""
        self.label = label
        if nvml_index != self.model.nvml_index:
            self.model.nvml_index = nvml_index
            self.model.history.clear()
            self.model.run_peak = None
            if self.model.frame is not None:  # show the new GPU now, not at the next frame
                self.model.add_frame(self.model.frame)
        self._key = None
        self._update()

    # the lab's state, as the screen hands it down ---------------------------------------------
    def watch_handshake(self, handshake: dict[str, Any] | None) -> None:
        self.set_worker_pid((handshake or {}).get("pid"))

    def watch_memory_reading(self, reading: dict[str, Any] | None) -> None:
        if reading is not None:
            self.add_reading(reading)

    def watch_job_running(self, running: bool) -> None:
        if running:
            self.job_started()
        else:
            self.job_finished()

    def watch_gauge_gpu(self, gpu: tuple[int, str] | None) -> None:
        if gpu is not None:
            self.select_gpu(*gpu)

    # frames ---------------------------------------------------------------------------------
    def on_mount(self) -> None:
        """Subscribe to the sampler and start the watchdog for a silent sampler."""
        self.stale.saw_frame()
        self._unsubscribe = self.sampler.subscribe(self._from_thread)
        if not self.sampler.manual:
            self.set_interval(WATCH_S, self._watchdog, name="telemetry watchdog")

    def _watchdog(self) -> None:
        if self.stale.check(self.sampler):
            self._update()

    @property
    def stale_text(self) -> str:
        """ "⚠ stale since HH:MM:SS: why" when this GPU's figures are not current, else ""."""
        why = self.stale.problem(self.model.frame, self.model.nvml_index)
        return "" if why is None else marker(why)

    def on_unmount(self) -> None:
        """Unsubscribe and drop any fast-sampling hold."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self.sampler.release_fast(f"gauge-{id(self)}")

    def _from_thread(self, frame: Frame) -> None:
        self.post_message(self.FrameArrived(frame))

    @on(FrameArrived)
    def _frame(self, message: FrameArrived) -> None:
        self.stale.saw_frame()
        if message.frame.stale is not None:  # the last good frame again: no new history point
            self.model.frame = message.frame
        else:
            self.model.add_frame(message.frame)
        self._update()

    def on_resize(self) -> None:
        """Redraw for the new width."""
        self._key = None
        self._update()

    # drawing --------------------------------------------------------------------------------
    def _update(self) -> None:
        width = max(20, self.size.width or 40)
        layers = self.model.layers()
        spark, peak_col = self.model.spark(max(1, width - 1))
        stale = self.stale_text
        key = (width, layers, spark, peak_col, self.model.worker_pid, self.model.job_running, stale)
        if key == self._key:
            return
        self._key = key
        self._text = self._draw(width, layers, spark, peak_col, stale)
        self.repaints += 1
        self.refresh(layout=True)

    def render(self) -> Text:
        """The gauge's text as last built."""
        return self._text

    def _draw(
        self, width: int, ly: Layers, spark: str, peak_col: int | None, stale: str = ""
    ) -> Text:
        out = Text(no_wrap=False, overflow="fold")
        if stale:
            out.append(stale + "\n", style="bold red")
        frame = self.model.frame
        several = frame is not None and len(frame.inventory.gpus) > 1
        out.append_text(_bar_line(width, ly, self.label if several and self.label else "Device"))
        pid = self.model.worker_pid
        who = f"Worker {pid}" if pid else "Worker"
        # In CPU mode every layer is N/A for one reason: say it once, not six times.
        said: set[str] = set()
        if isinstance(ly.device_used, NA):
            said.add(ly.device_used.reason)
        _row(out, who, ly.worker_nvml, "bold", said)
        _row(out, "  CUDA context", ly.cuda_context, said=said)
        _row(out, "  torch reserved", ly.torch_reserved, said=said)
        _row(out, "  torch allocated", ly.torch_allocated, said=said)
        _row(out, "  CuPy pool", ly.cupy_pool, said=said)
        _row(out, "Other processes", ly.other_processes, said=said)
        span = _minutes(self.model.history_s)
        peak = self.model.run_peak
        if peak is not None:
            label = "run peak" if self.model.job_running else "last run peak"
            head = f"History {span}  {label} {nbytes(peak[1])} ▲"
        else:
            head = f"History {span}"
        if not isinstance(ly.torch_peak, NA):
            head += f"  torch peak {nbytes(ly.torch_peak)}"
        out.append(head + "\n", style="dim")
        out.append(spark or " ", style="cyan")
        if peak_col is not None:
            out.append("\n" + " " * peak_col + "▲", style="bold yellow")
        return out


def _bar_line(width: int, ly: Layers, head: str = "Device") -> Text:
    line = Text()
    head = f"{head} "
    line.append(head, style="bold")
    if isinstance(ly.device_used, NA) or isinstance(ly.device_total, NA) or not ly.device_total:
        why = ly.device_used if isinstance(ly.device_used, NA) else ly.device_total
        line.append(str(why) + "\n", style="dim")
        return line
    frac = max(0.0, min(1.0, ly.device_used / ly.device_total))
    figures = f" {ly.device_used / 2**30:.1f}/{ly.device_total / 2**30:.1f} GiB {frac:4.0%}"
    bar_w = max(4, width - len(head) - len(figures))
    filled = round(frac * bar_w)
    color = "green" if frac < 0.7 else "yellow" if frac < 0.9 else "red"
    line.append("█" * filled, style=color)
    line.append("░" * (bar_w - filled), style="grey37")
    line.append(figures + "\n")
    if ly.source == "worker":
        line.append("  (from the worker: NVML is not available)\n", style="dim")
    return line


def _row(
    out: Text, label: str, value: int | NA, style: str = "", said: set[str] | None = None
) -> None:
    out.append(f"{label:<{LABEL}}", style=style)
    if isinstance(value, NA):
        if said is not None and value.reason in said:
            out.append("N/A (↑)\n", style="dim")
            return
        if said is not None:
            said.add(value.reason)
        out.append(f"N/A ({value.reason})\n", style="dim")
    else:
        out.append(f"{nbytes(value):>9}\n", style=style)


def _minutes(seconds: float) -> str:
    return f"({seconds / 60:.0f} min)" if seconds >= 60 else f"({seconds:.0f} s)"
