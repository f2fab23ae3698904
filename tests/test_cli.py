"""The CLI through a subprocess, as a person would use it."""

import json
import math
import subprocess
import sys

import pytest


def gpulab(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gpulab", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_version():
    out = gpulab("--version")
    assert out.returncode == 0
    assert out.stdout.startswith("gpulab ")


def test_list_json_has_montecarlo_with_params():
    out = gpulab("list", "--json")
    assert out.returncode == 0, out.stderr
    exps = {e["id"]: e for e in json.loads(out.stdout)["experiments"]}
    assert "montecarlo" in exps
    assert "samples" in [p["name"] for p in exps["montecarlo"]["params"]]


def test_info_json_explains_cpu_mode():
    out = gpulab("info", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["backends"]["numpy"]["available"]
    if not data["devices"]:
        assert data["gpu_reason"]


def test_run_montecarlo_json_estimates_pi():
    out = gpulab("run", "montecarlo", "--set", "samples=1e7", "--json")
    assert out.returncode == 0, out.stderr
    everything = [json.loads(line) for line in out.stdout.splitlines()]
    # The runner's own events (the worker getting ready) are JSON lines too, with no job.
    assert any(e["job"] == "" and e["type"] == "log" for e in everything)
    events = [e for e in everything if e["job"]]
    assert events[0]["type"] == "accepted"
    assert any(e["type"] == "progress" for e in events)
    assert any(e["type"] == "measurement" for e in events)
    final = events[-1]
    assert final["type"] == "result"
    summary = final["result"]["summary"]
    assert abs(summary["estimate"] - math.pi) <= 4 * summary["standard_error"]
    assert final["result"]["verdicts"] and all(v["passed"] for v in final["result"]["verdicts"])


def test_run_table_is_readable():
    out = gpulab("run", "montecarlo", "--set", "samples=1e5")
    assert out.returncode == 0, out.stderr
    assert "contender" in out.stdout and "numpy" in out.stdout


@pytest.mark.parametrize(
    "args,needle",
    [
        (["run", "no-such-thing"], "unknown experiment"),
        (["run", "montecarlo", "--set", "colour=red"], "unknown parameter 'colour'"),
        (["run", "montecarlo", "--set", "samples=1e13"], "parameter 'samples'"),
        (["run", "montecarlo", "--set", "samples=lots"], "'lots'"),
        (["run", "montecarlo", "--set", "samples"], "NAME=VALUE"),
        (["frobnicate"], "invalid choice"),
        (["run", "vector-add", "--set", "n=1000", "--device", "64"], "parameter 'device': 64"),
    ],
)
def test_bad_input_exits_2_with_one_line(args, needle):
    out = gpulab(*args)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert needle in lines[0]
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize(
    "args,env,needle",
    [
        (["--sample-period", "9"], {}, "--sample-period 9 is out of range"),
        (["--sample-period", "0.1"], {}, "--sample-period 0.1 is out of range"),
        (["--sample-period", "soon"], {}, "--sample-period 'soon' is not a number"),
        (["--sample-period", "9", "list"], {}, "--sample-period 9 is out of range"),
        ([], {"GPULAB_SAMPLE_PERIOD": "60"}, "GPULAB_SAMPLE_PERIOD 60 is out of range"),
    ],
)
def test_bad_sample_period_exits_2_naming_flag_value_and_range(args, env, needle):
    import os

    out = subprocess.run(
        [sys.executable, "-m", "gpulab", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
        stdin=subprocess.DEVNULL,
    )
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert needle in lines[0] and "0.25 to 5 seconds" in lines[0]
    assert "Traceback" not in out.stderr


def test_sample_period_reaches_the_app(monkeypatch):
    import gpulab.app.app
    from gpulab import cli
    from gpulab.telemetry.sampler import MAX_INTERVAL, MIN_INTERVAL

    assert (cli.SAMPLE_PERIOD_MIN, cli.SAMPLE_PERIOD_MAX) == (MIN_INTERVAL, MAX_INTERVAL)
    made = []

    class App:
        return_code = 0

        def __init__(self, **kw):
            made.append(kw)

        def run(self):
            pass

    monkeypatch.setattr(gpulab.app.app, "GpuLabApp", App)
    monkeypatch.delenv("GPULAB_SAMPLE_PERIOD", raising=False)
    assert cli.main(["--sample-period", "1.5"]) == 0
    assert cli.main([]) == 0
    monkeypatch.setenv("GPULAB_SAMPLE_PERIOD", "4")
    assert cli.main([]) == 0
    assert cli.main(["--sample-period", "0.25"]) == 0  # the flag wins over the environment
    assert [kw["sample_period"] for kw in made] == [1.5, None, 4.0, 0.25]
