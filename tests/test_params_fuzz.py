"""Fuzz every experiment's parameters, and run's numeric flags, through the CLI's validation.

Whatever a person types, `gpulab run EXPERIMENT --set NAME=VALUE` either accepts it (and then
the value is one the parameter allows) or exits 2 with exactly one line on stderr and no
traceback. The run itself is replaced (`run_headless`), so no experiment runs here.
"""

from __future__ import annotations

import contextlib
import io
import math
import string
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpulab import cli
from gpulab.core.params import Param
from gpulab.experiments.registry import all_experiments
from gpulab.runner import cli as run_cli_module

EXPERIMENTS = all_experiments()
PARAMS = [(e.id, p) for e in EXPERIMENTS.values() for p in e.params]
SETTINGS = settings(
    max_examples=80,
    deadline=None,  # the first example of a test imports the registry
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,  # the same examples on every run: a failure is reproducible
)

unicode_digits = st.text(st.characters(categories=["Nd"]), min_size=1, max_size=6)
numbers = st.one_of(
    st.integers(min_value=-(10**40), max_value=10**40).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["nan", "inf", "-inf", "NaN", "1e400", "-0", "0x10", "1_0", "1,000"]),
    st.tuples(st.integers(0, 10**6), st.sampled_from(["", "k", "M", "Gi", "B", "x", "kk"])).map(
        lambda t: f"{t[0]}{t[1]}"
    ),
)
lists = st.lists(
    st.one_of(st.just(""), st.just(" "), numbers, unicode_digits), min_size=1, max_size=5
).map(",".join)
anything = st.one_of(
    st.text(max_size=40),
    st.text(string.printable, max_size=40),
    unicode_digits,
    numbers,
    lists,
)


def run_cli(argv: list[str]) -> tuple[int, str, list[dict[str, Any]]]:
    """(exit code, stderr, what reached the run) of `gpulab ARGV`, with the run replaced."""
    import gpulab.runner.cli

    calls: list[dict[str, Any]] = []

    def fake(experiment: str, params: dict[str, Any], **kw: Any) -> int:
        calls.append({"experiment": experiment, "params": params, **kw})
        return 0

    err = io.StringIO()
    saved = gpulab.runner.cli.run_headless
    gpulab.runner.cli.run_headless = fake
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                code = cli.main(argv)
            except SystemExit as exc:  # argparse's own refusals
                code = int(exc.code or 0)
    finally:
        gpulab.runner.cli.run_headless = saved
    return code, err.getvalue(), calls


def allowed_value(p: Param, value: Any) -> bool:
    """Whether a value that passed validation is one the parameter allows."""
    if p.kind == "list":
        inner = Param(p.name, p.item, None, min=p.min, max=p.max, choices=p.choices)
        return bool(value) and all(allowed_value(inner, v) for v in value)
    if p.kind == "bool":
        return isinstance(value, bool)
    if p.kind == "choice":
        return value in p.choices
    if p.kind == "str":
        return isinstance(value, str) and value.strip() == value and value != ""
    ok_type = isinstance(value, int) if p.kind == "int" else isinstance(value, float | int)
    return (
        ok_type
        and not isinstance(value, bool)
        and math.isfinite(value)
        and (p.min is None or value >= p.min)
        and (p.max is None or value <= p.max)
    )


def check_outcome(argv: list[str]) -> list[dict[str, Any]]:
    code, err, calls = run_cli(argv)
    assert "Traceback" not in err, err
    if code == 0:
        assert err == "" and len(calls) == 1, (argv, err)
        return calls
    assert code == 2, (argv, code, err)
    assert err.endswith("\n") and err.count("\n") == 1, (argv, err)
    assert err.startswith("gpulab: "), err
    assert calls == []
    return calls


@pytest.mark.parametrize("experiment,param", PARAMS, ids=[f"{e}.{p.name}" for e, p in PARAMS])
@settings(SETTINGS, max_examples=20)  # 20 for each of ~50 parameters keeps the file fast
@given(value=anything)
def test_every_param_validates_or_exits_2_with_one_line(experiment, param, value):
    calls = check_outcome(["run", experiment, "--set", f"{param.name}={value}"])
    if calls:
        assert allowed_value(param, calls[0]["params"][param.name]), (value, calls)
        if param.kind in ("int", "float") or (param.kind == "list" and param.item != "choice"):
            assert value.isascii(), value  # no other script's digits become a number


@SETTINGS
@given(name=st.text(min_size=1, max_size=20), value=anything)
def test_unknown_names_exit_2_with_one_line(name, value):
    check_outcome(["run", "montecarlo", "--set", f"{name}={value}"])


@SETTINGS
@given(timeout=st.one_of(anything, st.none()), device=st.one_of(anything, st.just("0")))
def test_run_flags_validate_or_exit_2_with_one_line(timeout, device):
    argv = ["run", "montecarlo", f"--device={device}"]
    if timeout is not None:
        argv.append(f"--timeout={timeout}")
    calls = check_outcome(argv)
    if calls:
        assert calls[0]["device"] >= 0 and device.strip().isdigit() and device.isascii()
        assert 0 <= calls[0]["timeout"] <= run_cli_module.TIMEOUT_MAX_S
        assert timeout is None or calls[0]["timeout"] > 0


@SETTINGS
@given(period=anything)
def test_sample_period_validates_or_says_why_in_one_line(period):
    out = cli.sample_period(period)
    if isinstance(out, str):
        assert "\n" not in out and out.startswith("--sample-period")
    else:
        assert period.isascii()
        assert out is not None and cli.SAMPLE_PERIOD_MIN <= out <= cli.SAMPLE_PERIOD_MAX


@SETTINGS
@given(items=st.lists(st.integers(16, 32768).map(str), min_size=1, max_size=4), gap=st.integers())
def test_an_empty_list_item_is_always_refused(items, gap):
    at = gap % (len(items) + 1)
    text = ",".join(items[:at] + [""] + items[at:])
    code, err, _ = run_cli(["run", "matmul", "--set", f"sizes={text}"])
    assert code == 2 and err.count("\n") == 1
    assert "empty" in err or "ends with a comma" in err
