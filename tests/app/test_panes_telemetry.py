"""The GPU info pane and the memory gauge, mounted in a small app of their own, on the fake NVML.

Frames come from `sample_now()` on a manual sampler (deterministic for snapshots) or from the
real sampler thread (for the tests of its lifecycle); tests wait for messages, never for time.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest
from textual.app import App, ComposeResult
from textual.containers import Horizontal
from textual.widgets import OptionList

from gpulab.app import messages
from gpulab.app.app import WIDGETS_CSS
from gpulab.app.panes.gpu_info import GpuInfoPane
from gpulab.app.panes.memory_gauge import MemoryGauge
from gpulab.testing.fake_nvml import GiB, MiB, fake_sampler, worker_inventory

SIZE = (110, 32)


class PanesApp(App):
    CSS_PATH = WIDGETS_CSS  # the lab's rules for its own widgets
    CSS = """
    Horizontal > * { width: 1fr; border: round $accent; }
    """

    def __init__(
        self,
        variant: str = "full",
        *,
        manual: bool = True,
        worker: bool = True,
        inventory: dict | None = None,
    ):
        super().__init__()
        self.sampler, self.fake = fake_sampler(variant, manual=manual)
        self.worker = worker
        self.inventory = inventory
        self.selected: list[messages.GpuChosen] = []

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield GpuInfoPane(sampler=self.sampler, id="gpu-info")
            yield MemoryGauge(sampler=self.sampler, id="memory-gauge")

    def on_mount(self) -> None:
        if self.worker:
            inventory = self.inventory or worker_inventory(self.fake)
            handshake = {"pid": 4242, "inventory": inventory}
            self.query_one(GpuInfoPane).set_worker_info(handshake)
            self.query_one(MemoryGauge).set_worker_pid(4242)

    def on_gpu_chosen(self, message: messages.GpuChosen) -> None:
        self.selected.append(message)

    @property
    def chosen(self) -> list[messages.GpuChosen]:
        """What a person selected (not the pane's own initial selection)."""
        return [m for m in self.selected if not m.initial]


async def _until(pilot, predicate, tries: int = 200) -> None:
    """Let the app process messages until `predicate()` holds (no fixed sleep)."""
    for _ in range(tries):
        if predicate():
            return
        await pilot.pause()
    raise AssertionError("condition never held")


def _plain(widget) -> str:
    rendered = widget.render()
    return getattr(rendered, "plain", str(rendered))


def _details(app) -> str:
    table = app.query_one(GpuInfoPane).details_renderable
    from rich.console import Console

    console = Console(width=200, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(table)
    return console.export_text()


async def _sample(app, pilot, n: int = 1) -> None:
    for _ in range(n):
        before = app.query_one(MemoryGauge).model.updates
        app.sampler.sample_now()
        await _until(pilot, lambda b=before: app.query_one(MemoryGauge).model.updates > b)
    await pilot.pause()


async def _sample_failing(app, pilot) -> None:
    """One read that raises (the sampler publishes a stale frame once they persist)."""
    app.sampler.sample_now()
    await pilot.pause()
    await pilot.pause()


def _clock(t: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t))


# Pilot tests --------------------------------------------------------------------------------


async def test_full_driver_shows_the_figures_and_the_worker_layers():
    app = PanesApp("full")
    async with app.run_test(size=SIZE) as pilot:
        await _sample(app, pilot)
        gauge = app.query_one(MemoryGauge)
        gauge.add_reading(
            {
                "type": "memory",
                "pid": 4242,
                "reading": {"torch_allocated": 700 * MiB, "torch_reserved": 800 * MiB},
            }
        )
        await pilot.pause()
        text = _details(app)
        assert "Hopper" in text and "132" in text and "3.35 TB/s" in text
        assert "torch 2.9.0+cu130" in text and "CuPy 13.6.0" in text
        g = _plain(gauge)
        assert "1.5/80.0 GiB" in g and "CUDA context" in g and "224 MiB" in g
    assert not app.sampler.running


async def test_four_nvlink_gpus_show_their_links_numa_and_live_traffic():
    app = PanesApp("nvlink-4")
    async with app.run_test(size=(120, 40)) as pilot:
        await _sample(app, pilot)
        pane = app.query_one(GpuInfoPane)
        text = _details(app)
        assert "NVL   ·········· measuring: needs a second reading" in text
        rows = [line.split() for line in text.splitlines() if line[:2] in ("▶0", " 1", " 2", " 3")]
        assert rows[0] == ["▶0", "X", "NV18", "NV18", "NV18", "0"]
        assert rows[3] == ["3", "NV18", "NV18", "NV18", "X", "1"]
        assert "NVLink 4.0, 18 links a GPU via NVSwitch" in text
        assert "NUMA 0: CPUs 0-47 · NUMA 1: CPUs 48-95" in text
        assert "NVLink      18 links, NVLink 4.0 to NVSwitch · 450 GB/s each way peak" in text
        app.fake.nvlink_traffic(2.0, {0: (90e9, 45e9)})
        pane._live_at = 0.0
        await _sample(app, pilot)
        text = _details(app)
        assert "↑ 90 ↓ 45 of 450 GB/s theoretical" in text
        # A p2p run in this session measured the links: the traffic is read against that
        run = SimpleNamespace(experiment="p2p", result={"summary": {"peer_gbs_max": 391.4}})
        pane.runs = (SimpleNamespace(experiment="allreduce", result={}), run)
        await pilot.pause()
        text = _details(app)
        assert "↑ 90 ↓ 45 of 391 GB/s measured" in text
        assert "GPU 0: 391 GB/s each way, measured (450 theoretical)" in text


async def test_one_gpu_or_no_nvlink_is_one_line():
    for variant, line in (
        ("full", "Links one GPU here: no GPU-to-GPU links · NUMA 0"),
        ("pcie-2", "Links no NVLink: PCIe between the 2 GPUs, through one PCIe switch"),
    ):
        app = PanesApp(variant)
        async with app.run_test(size=(120, 40)) as pilot:
            await _sample(app, pilot, 2)
            text = _details(app)
            assert line in text and "NVL " not in text, text
            assert "NV18" not in text


async def test_gauge_rises_during_an_allocation_and_falls_back():
    app = PanesApp("full")
    async with app.run_test(size=SIZE) as pilot:
        gauge = app.query_one(MemoryGauge)
        await _sample(app, pilot)
        gauge.job_started()
        assert app.sampler.interval <= 0.5  # >= 2 Hz while a job runs
        app.fake.set_process_memory(0, 4242, 5 * GiB)
        await _sample(app, pilot)
        assert "5.5/80.0 GiB" in _plain(gauge)
        app.fake.set_process_memory(0, 4242, GiB)
        await _sample(app, pilot)
        gauge.job_finished()
        await pilot.pause()
        g = _plain(gauge)
        assert "1.5/80.0 GiB" in g and "last run peak 5.5 GiB" in g and "▲" in g


async def test_two_gpus_are_listed_and_selectable_by_keys_and_mouse():
    app = PanesApp("two-gpus")
    async with app.run_test(size=SIZE) as pilot:
        await _sample(app, pilot)
        options = app.query_one("#gpu-list", OptionList)
        assert options.option_count == 2
        assert "A100" in str(options.get_option_at_index(1).prompt)
        # The worker's CUDA device 0 starts selected (quietly: nothing a person did).
        assert [(m.index, m.nvml_index, m.initial) for m in app.selected] == [(0, 0, True)]
        options.focus()
        await pilot.press("down", "enter")
        await _until(pilot, lambda: app.chosen)
        assert (app.chosen[-1].index, app.chosen[-1].nvml_index) == (1, 1)
        await _until(pilot, lambda: "Ampere" in _details(app))
        await pilot.click("#gpu-list", offset=(4, 0))
        await _until(pilot, lambda: len(app.chosen) == 2)
        assert app.chosen[-1].nvml_index == 0
        assert str(options.get_option_at_index(0).prompt).startswith("▶")


def _only_second_gpu_visible(fake) -> dict:
    """The worker's inventory under CUDA_VISIBLE_DEVICES=1: NVML's GPU 1 is its CUDA 0."""
    inv = worker_inventory(fake)
    inv["devices"] = [{**inv["devices"][1], "index": 0}]
    return inv


async def test_the_workers_cuda_0_starts_selected_and_a_hidden_gpu_is_refused():
    app = PanesApp("two-gpus")
    app.inventory = _only_second_gpu_visible(app.fake)
    async with app.run_test(size=SIZE) as pilot:
        await _sample(app, pilot)
        await _until(pilot, lambda: app.selected)
        pane = app.query_one(GpuInfoPane)
        options = app.query_one("#gpu-list", OptionList)
        # CUDA 0 is NVML 1 (matched by UUID): the marker and the initial selection say so.
        assert [(m.index, m.nvml_index, m.initial) for m in app.selected] == [(0, 1, True)]
        assert pane.selected_nvml == 1
        prompts = [str(options.get_option_at_index(i).prompt) for i in range(2)]
        assert prompts[0].startswith("  nvml:0 H100") and prompts[1].startswith("▶ cuda:0 A100")
        assert options.highlighted == 1
        # NVML 0 is hidden from CUDA: choosing it is refused with the reason, in one line.
        options.focus()
        await pilot.press("up", "enter")
        await _until(pilot, lambda: app._notifications)
        note = list(app._notifications)[-1]
        assert "\n" not in note.message
        assert "nvml:0" in note.message and "CUDA_VISIBLE_DEVICES" in note.message
        assert note.severity == "warning"
        assert app.chosen == [] and pane.selected_nvml == 1
        assert str(options.get_option_at_index(1).prompt).startswith("▶")


async def test_no_library_explains_cpu_mode():
    app = PanesApp("no-library")
    async with app.run_test(size=SIZE) as pilot:
        await _sample(app, pilot)
        status = app.query_one("#gpu-status").render()
        assert "CPU mode" in str(status) and "nvidia-ml-py" in str(status)
        assert not app.query_one("#gpu-list").display
        assert "N/A (CPU mode" in _plain(app.query_one(MemoryGauge))


async def test_gpu_lost_and_not_supported_read_na_with_reasons():
    for variant, words in (("gpu-lost", "GPU lost"), ("not-supported", "not supported")):
        app = PanesApp(variant)
        async with app.run_test(size=SIZE) as pilot:
            await _sample(app, pilot)
            assert f"N/A ({words}" in _details(app)


async def test_mig_says_why_fields_are_missing():
    app = PanesApp("mig")
    async with app.run_test(size=SIZE) as pilot:
        await _sample(app, pilot)
        text = _details(app)
        assert "2 instances" in text and "while MIG is on" in text
        assert "while MIG is on" in _plain(app.query_one(MemoryGauge))


async def test_the_sampler_thread_stops_when_the_app_exits():
    app = PanesApp("full", manual=False)
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, lambda: app.query_one(MemoryGauge).model.frame is not None)
        assert app.sampler.running and app.fake.initialised
    assert not app.sampler.running
    assert not app.fake.initialised  # NVML shut down after the thread was joined


async def test_idle_frames_do_not_repaint_an_unchanged_gauge():
    app = PanesApp("full")
    async with app.run_test(size=SIZE) as pilot:
        await _sample(app, pilot, 2)
        gauge = app.query_one(MemoryGauge)
        before = gauge.repaints
        await _sample(app, pilot, 3)
        assert gauge.repaints == before


# figures that are not current ---------------------------------------------------------------


async def test_gpu_lost_mid_run_is_marked_stale_in_both_panes_and_notified():
    app = PanesApp("full")
    async with app.run_test(size=SIZE) as pilot:
        await _sample(app, pilot)
        gauge, info = app.query_one(MemoryGauge), app.query_one(GpuInfoPane)
        gauge.job_started()
        app.fake.set_process_memory(0, 4242, 5 * GiB)
        await _sample(app, pilot)
        assert gauge.stale_text == "" and not app.query_one("#gpu-stale").display
        app.fake.lose_gpu(0)
        await _sample(app, pilot)
        lost = app.sampler.latest().lost[0]
        want = f"stale since {_clock(lost.since)}: GPU lost"
        # the info pane: a red line above the list, for that GPU
        marker = str(app.query_one("#gpu-stale").render())
        assert app.query_one("#gpu-stale").display
        assert marker.startswith(f"⚠ GPU cuda:0 {want}") and "\n" not in marker
        # the gauge: its first line, above the N/A figures and the history
        assert _plain(gauge).startswith(f"⚠ {want}")
        assert "last run peak" not in _plain(gauge) and "run peak 5.5 GiB" in _plain(gauge)
        # one notification, said once however many frames follow
        await _sample(app, pilot, 2)
        said = [n for n in app._notifications if want in n.message]
        assert len(said) == 1 and said[0].severity == "error"
        assert info.problem(0) == lost


async def test_failing_reads_mark_the_figures_stale_until_they_recover():
    app = PanesApp("full")
    async with app.run_test(size=SIZE) as pilot:
        await _sample(app, pilot)
        gauge = app.query_one(MemoryGauge)
        good = app.sampler.reader.read

        def broken():
            raise RuntimeError("nvmlDeviceGetFoo exploded")

        app.sampler.reader.read = broken
        await _sample_failing(app, pilot)  # one failure: not yet said (a blip)
        assert gauge.stale_text == "" and not app._notifications
        await _sample_failing(app, pilot)
        since = app.sampler.failing.since
        want = f"⚠ stale since {_clock(since)}: RuntimeError: nvmlDeviceGetFoo exploded"
        assert str(app.query_one("#gpu-stale").render()) == want
        assert _plain(gauge).startswith(want)
        assert "1.5/80.0 GiB" in _plain(gauge)  # the last good figures, marked
        assert [n.message for n in app._notifications] == [want]
        app.sampler.reader.read = good
        await _sample(app, pilot)
        assert gauge.stale_text == "" and not app.query_one("#gpu-stale").display
        assert "current again" in list(app._notifications)[-1].message


async def test_a_quiet_sampler_thread_is_noticed(monkeypatch):
    import gpulab.app.panes.gpu_info as info_mod
    import gpulab.app.panes.memory_gauge as gauge_mod
    import gpulab.app.panes.stale as stale_mod

    for mod in (info_mod, gauge_mod):
        monkeypatch.setattr(mod, "WATCH_S", 0.1)
    monkeypatch.setattr(stale_mod, "QUIET_MIN_S", 0.5)
    app = PanesApp("full", manual=False)
    app.sampler.set_interval(0.25)
    async with app.run_test(size=SIZE) as pilot:
        gauge = app.query_one(MemoryGauge)
        await _until(pilot, lambda: gauge.model.frame is not None)
        assert gauge.stale_text == ""
        # The thread dies without a word (as a bug outside its try would end it).
        app.sampler._stopping = True
        app.sampler._wake.set()
        await _until(pilot, lambda: not app.sampler.running)
        await _until(pilot, lambda: gauge.stale_text, tries=2000)
        assert "the telemetry thread stopped" in gauge.stale_text
        await _until(pilot, lambda: app.query_one("#gpu-stale").display, tries=2000)
        assert "the telemetry thread stopped" in str(app.query_one("#gpu-stale").render())


# snapshots ----------------------------------------------------------------------------------


def _snap_app(variant: str) -> PanesApp:
    return PanesApp(variant)


async def _prepare(pilot) -> None:
    app = pilot.app
    await _sample(app, pilot)
    app.query_one(MemoryGauge).add_reading(
        {
            "type": "memory",
            "pid": 4242,
            "reading": {"torch_allocated": 700 * MiB, "torch_reserved": 800 * MiB},
        }
    )
    await pilot.pause()


@pytest.mark.parametrize(
    "variant", ["full", "not-supported", "no-library", "gpu-lost", "two-gpus", "mig"]
)
def test_snapshot(snap_compare, variant):
    assert snap_compare(_snap_app(variant), terminal_size=SIZE, run_before=_prepare)


async def _prepare_links(pilot) -> None:
    """Two frames with NVLink traffic between them: the live rate needs two readings."""
    app = pilot.app
    await _sample(app, pilot)
    app.fake.nvlink_traffic(1.0, {0: (160e9, 155e9)})
    app.query_one(GpuInfoPane)._live_at = 0.0  # the repaint period is the pane's, not the test's
    await _sample(app, pilot)


@pytest.mark.parametrize("variant", ["nvlink-4", "pcie-2"])
def test_snapshot_links(snap_compare, variant):
    """Four H200s joined by NVSwitch: the NV18 matrix, the NUMA nodes and their CPUs, GPU 0's
    NVLink traffic against its links' figure; two PCIe GPUs: the one line that says so."""
    assert snap_compare(_snap_app(variant), terminal_size=(120, 40), run_before=_prepare_links)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_snapshot_gpu_at_a_glance(snap_compare, size):
    """Utilization, memory, power, SM clock, temperature, PCIe and the processes: all visible
    without scrolling in a half-screen pane at 80x24 and 120x40."""
    assert snap_compare(_snap_app("full"), terminal_size=size, run_before=_prepare)
