"""Telemetry through the fake NVML's driver variants: inventory, snapshots, sampler, gauge math."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from gpulab.telemetry.cli import info_json, info_lines
from gpulab.telemetry.gauge import MemoryModel
from gpulab.telemetry.inventory import arch_name, read_inventory
from gpulab.telemetry.nvml import NvmlSession
from gpulab.telemetry.sampler import MAX_INTERVAL, MIN_INTERVAL, Sampler, TelemetryReader
from gpulab.telemetry.snapshot import decode_throttle, read_snapshot
from gpulab.telemetry.values import NA
from gpulab.testing.fake_nvml import VARIANTS, FakeNvml, GiB, MiB, fake_sampler, worker_inventory


def _read(variant: str):
    fake = FakeNvml(variant)
    reader = TelemetryReader(fake, procs=fake.procs)
    frame = reader.read()
    inv = frame.inventory.with_worker(worker_inventory(fake))
    return fake, inv, frame


def _walk(value, path="$"):
    """Every leaf: (path, value). NA dicts are leaves."""
    if isinstance(value, dict) and set(value) == {"na"}:
        yield path, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _walk(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _walk(v, f"{path}[{i}]")
    else:
        yield path, value


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_field_is_a_value_or_na_with_a_reason(variant):
    _, inv, frame = _read(variant)
    data = {"inventory": inv.to_dict(), "snapshots": [s.to_dict() for s in frame.snapshots]}
    for path, leaf in _walk(data):
        if (
            path.endswith(("pid_note", "worker_gpu_reason"))
            or path.endswith(".reason")
            and inv.available
        ):
            continue  # explanations, empty when there is nothing to explain
        assert leaf is not None and leaf != "", f"{variant}: blank at {path}"
        if isinstance(leaf, dict):
            assert leaf["na"].strip(), f"{variant}: N/A without a reason at {path}"
    if inv.available:
        assert len(frame.snapshots) == len(inv.gpus) >= 1
    else:
        assert "CPU mode" in inv.reason and "nvidia-ml-py" in inv.reason


def test_full_driver_reads_the_figures():
    _, inv, frame = _read("full")
    g = inv.gpus[0]
    assert (g.name, g.compute_capability, g.architecture) == (
        "NVIDIA H100 80GB HBM3",
        "9.0",
        "Hopper",
    )
    assert g.sm_count == 132 and g.l2_cache == 50 * MiB and g.cuda_index == 0
    assert g.memory_bandwidth == pytest.approx(3.352e12, rel=1e-3)  # 2 x 2619 MHz x 5120 bit / 8
    assert g.pcie_bandwidth == pytest.approx(63.0e9, rel=1e-2)  # gen 5 x16
    assert g.power_limit_w == 700.0
    assert isinstance(g.mig_mode, NA) and "no MIG" in g.mig_mode.reason
    s = frame.snapshots[0]
    assert s.memory_reserved == 512 * MiB  # only the v2 call says this
    assert s.memory_in_use == 1 * GiB + 512 * MiB
    assert s.throttle == ["idle"] and s.power_w == 72.5 and s.pcie_tx == 1.2e6
    assert [(p.pid, p.name, p.used_memory) for p in s.processes] == [(4242, "python3", GiB)]
    assert inv.worker_versions["torch"] == "2.9.0+cu130"


def test_not_supported_fields_say_so_and_v1_memory_still_works():
    _, inv, frame = _read("not-supported")
    s = frame.snapshots[0]
    for name in ("gpu_util", "power_w", "temperature_c", "pcie_tx", "throttle", "processes"):
        value = getattr(s, name)
        assert isinstance(value, NA) and "not supported" in value.reason, name
    assert isinstance(s.memory_reserved, NA) and "v2" in s.memory_reserved.reason
    assert s.memory_total == 80 * GiB and isinstance(s.memory_used, int)
    assert isinstance(inv.gpus[0].memory_bandwidth, NA)  # no bus width: no made-up figure


def test_unsupported_calls_are_asked_once():
    fake = FakeNvml("not-supported")
    session = NvmlSession(fake)
    assert session.open()
    read_snapshot(session, 0, fake.procs)
    before = fake.calls
    read_snapshot(session, 0, fake.procs)
    second = fake.calls - before
    read_snapshot(session, 0, fake.procs)
    assert fake.calls - before == 2 * second
    # The second read skipped every call the driver refused the first time.
    assert second < 10


def test_old_driver_falls_back_to_throttle_reasons():
    _, inv, frame = _read("old-driver")
    assert inv.gpus[0].architecture == "Turing"
    assert inv.gpus[0].memory_bandwidth == pytest.approx(320e9, rel=1e-3)
    assert frame.snapshots[0].throttle == ["idle"]


@pytest.mark.parametrize(
    "variant,words", [("no-library", "libnvidia-ml"), ("no-driver", "not loaded")]
)
def test_no_nvml_explains_cpu_mode(variant, words):
    _, inv, frame = _read(variant)
    assert not inv.available and inv.gpus == [] and frame.snapshots == []
    assert words in inv.reason and "pip install nvidia-ml-py" in inv.reason
    assert info_lines(inv, frame.snapshots)[0].startswith("NVML: CPU mode")


def test_missing_binding_is_explained(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml -> ImportError
    inv = read_inventory(NvmlSession())
    assert not inv.available and "binding is missing" in inv.reason


def test_gpu_lost_at_start_and_mid_session():
    _, inv, frame = _read("gpu-lost")
    assert isinstance(inv.gpus[0].name, NA) and "lost" in inv.gpus[0].name.reason
    assert all(
        isinstance(v, NA) and "lost" in v.reason
        for k, v in vars(frame.snapshots[0]).items()
        if k not in ("nvml_index", "t", "pid_note")
    )
    fake = FakeNvml("full")
    reader = TelemetryReader(fake, procs=fake.procs)
    assert reader.read().snapshots[0].temperature_c == 34
    fake.lose_gpu(0)
    s = reader.read().snapshots[0]
    assert isinstance(s.temperature_c, NA) and "lost" in s.temperature_c.reason
    assert isinstance(s.processes, NA)


def test_two_gpus_join_the_worker_by_uuid_not_position():
    fake = FakeNvml("two-gpus")
    worker = worker_inventory(fake)
    # CUDA's default order (fastest first) can differ from NVML's PCI order.
    worker["devices"].reverse()
    for i, d in enumerate(worker["devices"]):
        d["index"] = i
    inv = TelemetryReader(fake, procs=fake.procs).read().inventory.with_worker(worker)
    a100 = inv.gpu(1)
    assert a100.name == "NVIDIA A100-SXM4-40GB" and a100.cuda_index == 0 and a100.sm_count == 108
    assert inv.gpu(0).cuda_index == 1 and inv.gpu(0).architecture == "Hopper"


def test_gpu_hidden_from_the_worker_reads_na():
    fake = FakeNvml("two-gpus")
    worker = worker_inventory(fake)
    worker["devices"] = worker["devices"][:1]
    inv = TelemetryReader(fake, procs=fake.procs).read().inventory.with_worker(worker)
    assert (
        isinstance(inv.gpu(1).sm_count, NA) and "CUDA_VISIBLE_DEVICES" in inv.gpu(1).sm_count.reason
    )


def test_mig_mode_lists_instances_and_explains_missing_fields():
    _, inv, frame = _read("mig")
    g = inv.gpus[0]
    assert g.mig_mode == "on" and [i["slot"] for i in g.mig_instances] == [0, 1]
    s = frame.snapshots[0]
    assert isinstance(s.gpu_util, NA) and "MIG" in s.gpu_util.reason
    assert isinstance(s.processes, NA) and "MIG" in s.processes.reason


def test_container_pid_namespace_is_flagged():
    _, _, frame = _read("container")
    s = frame.snapshots[0]
    assert s.pid_note is not None and "PID namespace" in s.pid_note.reason
    assert all(isinstance(p.name, NA) for p in s.processes)


def test_arch_names_and_throttle_words():
    assert arch_name("9.0") == "Hopper" and arch_name("8.9") == "Ada Lovelace"
    assert arch_name("8.6") == "Ampere" and arch_name("", 10) == "Blackwell"
    assert isinstance(arch_name(""), NA)
    assert decode_throttle(0) == ["none"]
    assert decode_throttle(0x4 | 0x40) == ["power cap", "thermal limit (hardware)"]
    assert decode_throttle(0x10000)[-1].startswith("other")


def test_info_report_text_and_json():
    _, inv, frame = _read("two-gpus")
    text = "\n".join(info_lines(inv, frame.snapshots))
    assert (
        "GPU 1 (NVML index)" in text and "3352 GB/s" in text and "N/A (this GPU has no MIG)" in text
    )
    data = info_json(inv, frame.snapshots)
    assert len(data["snapshots"]) == 2 and data["inventory"]["gpus"][1]["sm_count"] == 108


# sampler ---------------------------------------------------------------------------------------


def _collect(sampler: Sampler, n: int, timeout: float = 10.0) -> list[float]:
    times: list[float] = []
    done = threading.Event()

    def on_frame(frame):
        times.append(time.monotonic())
        if len(times) >= n:
            done.set()

    unsubscribe = sampler.subscribe(on_frame)
    try:
        assert done.wait(timeout), f"only {len(times)} frames"
    finally:
        unsubscribe()
    return times


def test_sampler_rate_follows_the_interval_and_stops():
    sampler, fake = fake_sampler("full", interval=0.25)
    times = _collect(sampler, 5)
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert min(gaps) >= 0.2, gaps  # never faster than asked
    assert sorted(gaps)[len(gaps) // 2] < 1.0, gaps  # and not stalled
    # The last subscriber left: the thread is joined and NVML shut down after it.
    assert not sampler.running and not fake.initialised


def test_interval_is_clamped_and_jobs_hold_two_hertz():
    sampler, _ = fake_sampler("full", manual=True)
    sampler.set_interval(0.01)
    assert sampler.interval == MIN_INTERVAL
    sampler.set_interval(60)
    assert sampler.interval == MAX_INTERVAL
    sampler.hold_fast("job")
    assert sampler.interval <= 0.5
    sampler.release_fast("job")
    assert sampler.interval == MAX_INTERVAL


def test_a_failing_subscriber_does_not_stop_the_others(caplog):
    sampler, _ = fake_sampler("full", interval=0.25)

    def broken(frame):
        raise RuntimeError("subscriber bug")

    off = sampler.subscribe(broken)
    try:
        # three frames here: the first may be the latest one, handed to this subscriber alone
        # when it joins, so the broken one has seen at least two by the third
        assert len(_collect(sampler, 3)) >= 3
    finally:
        off()
        sampler.stop()
    assert not sampler.running
    # not swallowed: counted, and logged once (not once per frame)
    assert sampler.delivery_errors >= 2
    logged = [r for r in caplog.records if "subscriber failed" in r.getMessage()]
    assert len(logged) == 1 and "subscriber bug" in logged[0].exc_text


def test_sampler_survives_a_reader_crash():
    sampler, fake = fake_sampler("full", interval=0.25)
    real_read = sampler.reader.read
    calls = {"n": 0}

    def flaky():
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("bug in a reader")
        return real_read()

    sampler.reader.read = flaky
    assert len(_collect(sampler, 1)) == 1 and calls["n"] >= 2


def test_persistent_read_failures_republish_the_last_frame_marked_stale(caplog):
    from gpulab.telemetry.sampler import STALE_AFTER

    sampler, _ = fake_sampler("full", manual=True)
    seen = []
    sampler.subscribe(seen.append)
    good = sampler.sample_now()
    real_read = sampler.reader.read
    sampler.reader.read = lambda: (_ for _ in ()).throw(OSError("driver went away"))
    before = time.time()
    for _ in range(STALE_AFTER + 2):
        sampler.sample_now()
    stale = [f for f in seen if f.stale is not None]
    assert len(stale) == 1  # said once per episode, when it has lasted STALE_AFTER reads
    assert stale[0].snapshots == good.snapshots and stale[0].seq == good.seq
    assert stale[0].stale.reason == "OSError: driver went away"
    assert before <= stale[0].stale.since <= time.time()
    assert "stale since" in stale[0].stale.label() and stale[0].problem(0) is stale[0].stale
    assert sampler.frames == 1  # a republished frame is not a new sample
    assert len([r for r in caplog.records if "telemetry read failed" in r.getMessage()]) == 1
    sampler.reader.read = real_read
    back = sampler.sample_now()
    assert back.stale is None and sampler.failing is None and seen[-1] is back


def test_failing_from_the_start_still_tells_subscribers():
    sampler, _ = fake_sampler("full", manual=True)
    seen = []
    sampler.subscribe(seen.append)
    sampler.reader.read = lambda: (_ for _ in ()).throw(RuntimeError("no"))
    sampler.sample_now()
    sampler.sample_now()
    assert len(seen) == 1 and seen[0].stale is not None
    assert not seen[0].inventory.available and "RuntimeError: no" in seen[0].inventory.reason


def test_a_gpu_lost_mid_session_is_carried_with_since_and_why():
    fake = FakeNvml("two-gpus")
    reader = TelemetryReader(fake, procs=fake.procs)
    assert reader.read().lost == {}
    fake.lose_gpu(1)
    before = time.time()
    frame = reader.read()
    assert list(frame.lost) == [1] and "GPU lost" in frame.lost[1].reason
    assert frame.lost[1].since >= before and frame.problem(1) is frame.lost[1]
    assert frame.problem(0) is None
    assert reader.read().lost[1] == frame.lost[1]  # since the first time, not every frame
    # lost before it was ever read: N/A with the reason, but nothing went stale
    fake = FakeNvml("gpu-lost")
    assert TelemetryReader(fake, procs=fake.procs).read().lost == {}


# gauge arithmetic ------------------------------------------------------------------------------


def _frame(variant="full", **worker_mem):
    sampler, fake = fake_sampler(variant, manual=True)
    for pid, nbytes in worker_mem.items():
        fake.set_process_memory(0, int(pid[1:]), nbytes)
    return sampler, fake


def test_gauge_layers_join_nvml_and_the_allocator():
    sampler, fake = _frame()
    model = MemoryModel()
    model.worker_pid = 4242
    model.add_frame(sampler.sample_now())
    model.add_reading(
        {
            "reading": {
                "torch_reserved": 600 * MiB,
                "torch_allocated": 500 * MiB,
                "cupy_total": 100 * MiB,
            }
        }
    )
    ly = model.layers()
    assert ly.worker_nvml == GiB
    assert ly.cuda_context == GiB - 700 * MiB  # NVML's process memory minus the allocators
    assert ly.other_processes == 0 and ly.device_total == 80 * GiB
    fake.gpus[0].processes[999] = 2 * GiB
    model.add_frame(sampler.sample_now())
    assert model.layers().other_processes == 2 * GiB


def test_gauge_peak_and_history_follow_a_run():
    sampler, fake = _frame()
    model = MemoryModel(history_s=60)
    model.add_frame(sampler.sample_now())
    model.job_started()
    fake.set_process_memory(0, 4242, 5 * GiB)
    model.add_frame(sampler.sample_now())
    fake.set_process_memory(0, 4242, GiB)
    model.add_frame(sampler.sample_now())
    model.job_finished()
    assert model.run_peak[1] == 5 * GiB + 512 * MiB
    spark, col = model.spark(30)
    assert len(spark) == 30 and col is not None and spark.strip()


def test_gauge_without_nvml_uses_the_worker_and_says_why():
    sampler, _ = fake_sampler("no-library", manual=True)
    model = MemoryModel()
    model.add_frame(sampler.sample_now())
    model.add_reading({"device_total": 16 * GiB, "device_free": 12 * GiB, "t": time.time()})
    ly = model.layers()
    assert ly.device_used == 4 * GiB and ly.source == "worker"
    assert isinstance(ly.worker_nvml, NA) and "libnvidia-ml" in ly.worker_nvml.reason
    assert isinstance(ly.cupy_pool, NA) and model.history


def test_gauge_in_a_container_does_not_guess_the_worker():
    sampler, _ = fake_sampler("container", manual=True)
    model = MemoryModel()
    model.worker_pid = 77
    model.add_frame(sampler.sample_now())
    ly = model.layers()
    assert isinstance(ly.worker_nvml, NA) and "PID namespace" in ly.worker_nvml.reason
    assert isinstance(ly.cuda_context, NA) and isinstance(ly.other_processes, NA)


# topology -----------------------------------------------------------------------------------


def test_four_gpus_on_nvswitch_read_as_nv18_between_every_pair_with_their_numa_nodes():
    fake, inv, frame = _read("nvlink-4")
    topo = inv.topology
    assert [topo.pair(0, j) for j in range(4)] == ["X", "NV18", "NV18", "NV18"]
    assert topo.pair(3, 2) == "NV18" and topo.nvlink
    g = topo.gpu(2)
    assert (g.nvlinks, g.nvlink_version, g.nvlink_to) == (18, "4.0", "switch")
    assert g.nvlink_max == 18 * 25e9  # 25 GB/s a link each way, NVLink 4
    assert (g.numa_node, g.cpus) == (1, "48-95")
    assert topo.summary() == "NVLink 4.0, 18 links a GPU via NVSwitch"
    # each pair's PCIe path is still read where NVLink does not join them
    fake.gpus[3].nvlinks = []
    topo = TelemetryReader(fake, procs=fake.procs).inventory().topology
    assert topo.pair(0, 3) == "SYS" and topo.pair(2, 3) == "NODE"
    assert "the link between CPU sockets" in topo.why["0-3"]


def test_direct_links_are_counted_per_peer():
    fake = FakeNvml("nvlink-4")
    a, b, c = fake.gpus[:3]
    a.nvlinks = [(b.bus_id, 0)] * 6 + [(c.bus_id, 0)] * 4
    b.nvlinks = [(a.bus_id, 0)] * 6
    c.nvlinks = [(a.bus_id, 0)] * 4
    fake.gpus = [a, b, c]
    topo = TelemetryReader(fake, procs=fake.procs).inventory().topology
    assert (topo.pair(0, 1), topo.pair(0, 2)) == ("NV6", "NV4")
    assert topo.pair(1, 2) == "SYS"  # no link between 1 and 2, no switch: the sockets
    assert topo.gpu(0).nvlink_to == "gpu" and topo.gpu(0).nvlink_peers == {1: 6, 2: 4}


def test_pcie_only_and_one_gpu_say_so_in_a_line():
    _, inv, frame = _read("pcie-2")
    assert inv.topology.pairs == {"0-1": "PIX"} and not inv.topology.nvlink
    assert inv.topology.summary() == "no NVLink: PCIe between the 2 GPUs, through one PCIe switch"
    assert "not supported" in inv.topology.gpu(0).nvlink_version.reason
    assert frame.snapshots[0].nvlink_tx.reason.startswith("no NVLink")
    _, inv, _ = _read("full")
    assert inv.topology.summary() == "one GPU here: no GPU-to-GPU links"


def test_nvlink_traffic_is_a_rate_between_two_readings_of_the_counters():
    fake = FakeNvml("nvlink-4")
    reader = TelemetryReader(fake, procs=fake.procs)
    first = reader.read().snapshots[0]
    assert "needs a second reading" in first.nvlink_tx.reason
    fake.nvlink_traffic(0.5, {0: (200e9, 50e9), 1: (10e9, 10e9)})
    snaps = reader.read().snapshots
    assert snaps[0].nvlink_tx == pytest.approx(200e9, rel=1e-3)
    assert snaps[0].nvlink_rx == pytest.approx(50e9, rel=1e-3)
    assert snaps[1].nvlink_tx == pytest.approx(10e9, rel=1e-3)  # the same clock moved for both
    assert snaps[2].nvlink_tx == 0.0  # a GPU with NVLink and no traffic reads 0, not N/A


def test_cpu_affinity_masks_read_as_cpu_lists():
    from gpulab.telemetry.topology import cpu_list

    assert cpu_list([0b1011]) == "0-1,3"
    assert cpu_list([2**64 - 1, 1]) == "0-64"
    assert cpu_list([0, 1 << 63]) == "127"
    assert cpu_list([0]) == ""


def test_info_carries_the_links_in_text_and_json():
    _, inv, frame = _read("nvlink-4")
    text = "\n".join(info_lines(inv, frame.snapshots))
    assert "Links: NVLink 4.0, 18 links a GPU via NVSwitch" in text
    assert "GPU 2: 18 NVLinks 4.0, 450 GB/s each way (theoretical); NUMA node 1, CPUs 48-95" in text
    data = info_json(inv, frame.snapshots)
    topo = data["inventory"]["topology"]
    assert topo["pairs"]["0-3"] == "NV18" and topo["gpus"][0]["numa_node"] == 0
    assert data["snapshots"][0]["nvlink_tx"] == {"na": "measuring: needs a second reading"}
