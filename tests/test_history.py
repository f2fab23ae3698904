"""Run history that is kept: entries, the migration, compare, export/import, the CLI's verbs,
and the lessons' figures from an earlier session (CPU only, no worker: the TUI and `gpulab
run` paths are in test_history_runs.py).
"""

from __future__ import annotations

import json
import math
import sqlite3

import pytest

from gpulab import cli
from gpulab.core.devices import detect
from gpulab.experiments.inline import run_job
from gpulab.history.entries import compare, entry, render_compare, save
from gpulab.history.transfer import NotAHistory, export, parse
from gpulab.lessons.measured import Measured
from gpulab.store.database import _MIGRATIONS, Store


@pytest.fixture(scope="module")
def matmul_events(cpu_inventory, tmp_path_factory):
    """Two real quick matmul runs (as `gpulab run --json` streams them): sizes 32 and 64.

    Module-scoped, so set up before the per-test data dir: it gets a data dir of its own."""
    runs = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GPULAB_DATA_DIR", str(tmp_path_factory.mktemp("matmul-runs")))
        for seed in (1, 2):
            events: list[dict] = []
            params = {"sizes": [32, 64], "dtypes": ["fp32"], "contenders": ["numpy", "torch-cpu"]}
            params["seed"] = seed
            final = run_job("t", "matmul", params, cpu_inventory, events.append, quick=True)
            assert final == "result"
            runs.append(events)
    return runs


def _seed_calibration() -> None:
    """The CPU calibration those runs were judged against, in this test's data dir."""
    from gpulab.core import peaks as pk

    key = pk.device_key(detect(), 0, cpu=True)
    pk._write(pk.Peaks(key=key, device="CPU", cpu=True, copy_gbs=12.5, matmul_tflops={"fp32": 0.2}))


def _entry(events: list[dict], **kw) -> dict:
    final = events[-1]
    record = final["result"]["record"]
    return entry(record["experiment"], record["params"], final, source="cli", **kw)


def test_an_entry_keeps_what_the_run_was(matmul_events, cpu_inventory):
    _seed_calibration()
    e = _entry(matmul_events[0], inventory=cpu_inventory.to_dict())
    result = matmul_events[0][-1]["result"]
    assert e["status"] == "result" and e["verdict"] == "pass"
    # which headline the run wrote hangs on the machine's load (a slow pure-Python baseline
    # may be cut short): the entry keeps whichever it was, word for word
    assert e["headline"] and e["headline"] == result["headline"]
    assert e["rows"] == result["measurements"] and e["params"]["seed"] == 1
    assert e["versions"].get("numpy") and e["device"].startswith("CPU")
    assert e["started_at"] < e["finished_at"]
    # the CPU calibration cached for this host: what the rows' % of peak is against
    assert e["calibration"]["cpu"]["copy_gbs"] == 12.5 and e["calibration"]["gpu"] is None
    assert e["telemetry"]["sm_clock_mhz"] is None and e["telemetry"]["reasons"]["sm_clock_mhz"]


def test_kept_runs_survive_a_restart_and_failures_are_kept_too(matmul_events):
    ok = save(_entry(matmul_events[0]))
    final = {"type": "failed", "kind": "experiment-error", "message": "m"}
    failed = entry("blur", {"image": "nope.png"}, final, source="tui")
    bad = save(failed)
    with Store() as again:  # a new connection: what a restart sees
        kept = again.run_entries()
        assert [e["id"] for e in kept] == [ok, bad]
        assert kept[0]["rows"] == matmul_events[0][-1]["result"]["measurements"]
        assert kept[1]["status"] == "failed" and kept[1]["failure"]["message"] == "m"
        assert again.list_runs("matmul")[0].summary == kept[0]["summary"]


def test_the_migration_upgrades_a_database_with_old_runs(tmp_path):
    path = tmp_path / "old.sqlite3"
    raw = sqlite3.connect(path)
    raw.executescript(_MIGRATIONS[0])
    raw.execute(
        "INSERT INTO runs (experiment, params_json, started_at, final_type, summary_json)"
        " VALUES ('bandwidth', '{}', '2026-01-01T00:00:00+00:00', 'result', '{\"a\": 1}')"
    )
    raw.execute("PRAGMA user_version=1")
    raw.commit()
    raw.close()
    with Store(path) as s:
        assert s.pragma("user_version") == len(_MIGRATIONS)
        (old,) = s.run_entries()
        assert old["experiment"] == "bandwidth" and old["summary"] == {"a": 1}
        assert old["status"] == "result" and old["headline"] is None


def test_compare_aligns_rows_and_computes_ratios(matmul_events):
    a, b = (_entry(ev) for ev in matmul_events)
    b["rows"] = [r for r in b["rows"] if r["size"] != "32"]  # one side lacks a row
    c = compare(a, b)
    assert c["same_experiment"]
    keyed = {(r["contender"], r["size"]): r for r in c["rows"]}
    assert set(keyed) == {(x, n) for x in ("numpy", "torch-cpu") for n in ("32", "64")}
    rows_b = {(r["contender"], r["size"]): r for r in b["rows"]}
    for (who, n), r in keyed.items():
        if n == "32":
            assert r["b_time_s"] is None and r["speedup"] is None
            continue
        ra = next(x for x in a["rows"] if (x["contender"], x["size"]) == (who, n))
        assert r["speedup"] == pytest.approx(
            ra["time_median_s"] / rows_b[(who, n)]["time_median_s"]
        )
        assert r["throughput_ratio"] == pytest.approx(
            rows_b[(who, n)]["throughput"] / ra["throughput"]
        )
    text = render_compare(c)
    assert "A/B time" in text and "numpy" in text and "params differ" in text
    other = dict(b, experiment="blur")
    assert compare(a, other)["rows"] == []
    assert "different experiments" in render_compare(compare(a, other))


@pytest.mark.parametrize("fmt", ["json", "csv", "md"])
def test_export_then_import_round_trips(fmt, matmul_events, tmp_path, capsys, monkeypatch):
    ids = [save(_entry(ev)) for ev in matmul_events]
    out = tmp_path / f"history.{fmt}"
    assert cli.main(["history", "export", "--format", fmt, "--output", str(out)]) == 0
    with Store() as s:
        before = s.run_entries(ids)
    monkeypatch.setenv("GPULAB_DATA_DIR", str(tmp_path / "other-machine"))
    assert cli.main(["history", "import", str(out)]) == 0
    assert "imported 2 runs" in capsys.readouterr().out
    with Store() as s:
        after = s.run_entries()
    assert len(after) == 2
    for old, new in zip(before, after, strict=True):
        assert new["source"] == "import" and new["imported_source"] == "cli"
        for key in ("experiment", "params", "headline", "device", "host", "status", "verdict"):
            assert new[key] == old[key], key
        for key in ("started_at", "calibration", "telemetry", "summary", "versions"):
            assert new[key] == old[key], key
        assert len(new["rows"]) == len(old["rows"])
        for rn, ro in zip(new["rows"], old["rows"], strict=True):
            for k in ("contender", "size", "dtype", "unit", "runs", "extrapolated"):
                assert rn[k] == ro[k]
            for k in ("time_median_s", "throughput", "percent_of_peak"):
                assert rn[k] == ro[k] or (rn[k] is None and ro[k] is None)
    assert cli.main(["history", "compare", str(after[0]["id"]), str(after[1]["id"])]) == 0
    assert "A/B time" in capsys.readouterr().out


def test_a_run_json_stream_imports(matmul_events, tmp_path, capsys):
    stream = tmp_path / "laptop.jsonl"
    stream.write_text("".join(json.dumps(e) + "\n" for e in matmul_events[0]))
    assert cli.main(["history", "import", str(stream)]) == 0
    capsys.readouterr()
    assert cli.main(["history", "--json"]) == 0
    (listed,) = json.loads(capsys.readouterr().out)["runs"]
    assert listed["source"] == "import" and listed["experiment"] == "matmul"
    with Store() as s:
        (kept,) = s.run_entries()
    assert kept["headline"] == matmul_events[0][-1]["result"]["headline"]
    assert kept["rows"] == matmul_events[0][-1]["result"]["measurements"]
    assert kept["calibration"]["reason"] == "not in a run --json stream"


GARBAGE = {
    "binary.bin": b"\x00\x01\x02garbage\xff",
    "words.txt": b"hello, this is not a history\n",
    "other.json": b'{"name": "not gpulab"}',
    "events.jsonl": b'{"type": "progress", "job": "1", "fraction": 0.5}\n',
    "broken.jsonl": b'{"type": "result"\n',
    "empty.json": b"",
    "bad-row.json": json.dumps(
        {
            "format": "gpulab-history",
            "runs": [{"experiment": "x", "status": "result", "rows": [{"contender": "a"}]}],
        }
    ).encode(),
    "bad.csv": b"id,experiment,time_median_s\n1,matmul,not-a-number\n",
}


@pytest.mark.parametrize("name", sorted(GARBAGE))
def test_importing_garbage_exits_2_with_one_line(name, tmp_path, capsys):
    path = tmp_path / name
    path.write_bytes(GARBAGE[name])
    assert cli.main(["history", "import", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gpulab: ") and err.count("\n") == 1, err
    with Store() as s:
        assert s.run_entries() == []  # nothing half-imported


def test_parse_names_the_problem():
    with pytest.raises(NotAHistory, match="no experiment name"):
        parse(export([{"status": "result"}], "json"), "f.json")
    with pytest.raises(NotAHistory, match="no result event"):
        parse('{"type": "accepted", "job": "1"}\n', "run.jsonl")


def test_unknown_ids_exit_2(capsys):
    assert cli.main(["history", "show", "99"]) == 2
    assert cli.main(["history", "compare", "1", "2"]) == 2
    assert cli.main(["history", "export", "7"]) == 2
    assert capsys.readouterr().err.count("no run") == 3


def test_show_and_list(matmul_events, capsys):
    run_id = save(_entry(matmul_events[0]))
    assert cli.main(["history"]) == 0
    listing = capsys.readouterr().out
    assert f"{run_id} " in listing and matmul_events[0][-1]["result"]["headline"] in listing
    assert cli.main(["history", "show", str(run_id)]) == 0
    shown = capsys.readouterr().out
    assert "calibration:" in shown and "during the run: not known" in shown
    assert shown.rstrip().endswith(matmul_events[0][-1]["result"]["headline"])


def test_lessons_use_a_bandwidth_run_kept_by_an_earlier_session():
    gbs = 11.5
    final = {
        "type": "result",
        "result": {
            "record": {"experiment": "bandwidth", "params": {"max_size": 2**30}},
            "summary": {"largest_size_gbs": {"h2d-pageable": gbs}},
        },
    }
    save(entry("bandwidth", {"max_size": 2**30}, final, source="tui"))
    with Store() as later:  # what the lessons pane reads when this session has no run
        runs = later.list_runs("bandwidth", limit=20)
    measured = Measured.collect(runs=runs)
    assert measured.values["h2d_pageable_gbs"] == gbs
    assert math.isclose(float(measured("h2d_pageable_gbs").split()[0]), gbs)


def test_the_cli_keeps_runs_but_not_typos(capsys):
    from gpulab.history.entries import no_telemetry
    from gpulab.runner.cli import keep

    tele = no_telemetry("test")
    bad = {"type": "failed", "kind": "bad-params", "message": "parameter 'device': 64"}
    assert keep("montecarlo", {}, bad, None, 64, tele, 0.0, False) is None
    cancelled = {"type": "cancelled", "how": "cooperative", "message": "interrupted"}
    run_id = keep("montecarlo", {"samples": 1000}, cancelled, None, 0, tele, 0.0, False)
    assert capsys.readouterr().err == ""  # kept quietly: only a result says where it went
    with Store() as s:
        (kept,) = s.run_entries()
    assert kept["id"] == run_id and kept["status"] == "cancelled"
    assert kept["failure"] == {"kind": "cooperative", "message": "interrupted"}


def test_a_store_that_takes_no_writes_is_one_line(matmul_events, tmp_path):
    from gpulab.store.connection import StoreError

    path = tmp_path / "ro.sqlite3"
    Store(path).close()
    with Store(path, read_only=True) as ro, pytest.raises(StoreError, match="read-only"):
        save(_entry(matmul_events[0]), ro)


def test_import_into_a_read_only_history_exits_1_with_one_line(
    matmul_events, tmp_path, capsys, monkeypatch
):
    import gpulab.store.database

    stream = tmp_path / "run.jsonl"
    stream.write_text(json.dumps(matmul_events[0][-1]) + "\n")
    Store().close()  # the file exists; this gpulab may only read it (a read-only data dir)

    class ReadOnly(Store):
        def __init__(self, path=None, **kw):
            super().__init__(path, read_only=True)

    monkeypatch.setattr(gpulab.store.database, "Store", ReadOnly)
    assert cli.main(["history", "import", str(stream)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("gpulab: nothing more was imported: progress is read-only"), err
    assert err.count("\n") == 1
