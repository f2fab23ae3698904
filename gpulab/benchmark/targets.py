"""`gpulab bench`'s targets judged from finished runs: each a dict with the figure, the goal and
pass or miss, and the report's honesty lists (rows over their ceiling, ceilings re-measured).

Separate from suite.py because this is arithmetic on result dicts alone: nothing here runs an
experiment or touches a GPU, so tests judge hand-made runs with it. The targets that need runs
of their own (matmul against torch's Timer, Monte Carlo against the tutorials' recipe) stay in
suite.py with the rest of the running.
"""

from __future__ import annotations

from typing import Any

MATMUL_CMP = "matmul: gpulab torch bf16 n=8192 vs torch.utils.benchmark.Timer"


def contender_rows(entry: dict[str, Any], contender: str) -> list[dict[str, Any]]:
    return [
        m for m in entry.get("result", {}).get("measurements", []) if m["contender"] == contender
    ]


def judge(
    name: str, target: str, value: float | None, goal: float, higher: bool = True, **kw: Any
) -> dict[str, Any]:
    """One target's row: `value` against `goal` (at least, or at most when not `higher`)."""
    if value is None:
        return {"name": name, "target": target, "status": "not run", **kw}
    passed = value >= goal if higher else value <= goal
    return {
        "name": name,
        "target": target,
        "value": value,
        "goal": goal,
        "ratio": value / goal if goal else None,
        "status": "pass" if passed else "miss",
        **kw,
    }


def montecarlo_targets(mc: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Monte Carlo targets from the montecarlo runs that finished (at least one)."""
    out: list[dict[str, Any]] = []
    biggest = max(mc, key=lambda r: r["result"]["summary"].get("samples", 0))
    fused = contender_rows(biggest, "cupy-fused")
    torch_rows = contender_rows(biggest, "torch")
    f = fused[0]["throughput"] if fused else None
    t = torch_rows[0]["throughput"] if torch_rows else None
    out.append(
        judge("montecarlo: cupy-fused G samples/s", ">= 600", f, 600.0, samples=biggest["params"])
    )
    out.append(
        judge(
            "montecarlo: cupy-fused / torch recipe",
            ">= 10x",
            f / t if f and t else None,
            10.0,
            fused_gs=f,
            torch_gs=t,
        )
    )
    for who in ("cupy-fused", "torch"):
        mem = {
            r["result"]["summary"]["samples"]: contender_rows(r, who)[0]["extra"].get(
                "device_bytes"
            )
            for r in mc
            if contender_rows(r, who)
        }
        vals = [v for v in mem.values() if v is not None]
        flat = None if len(vals) < 2 else max(vals) / max(1, min(vals))
        out.append(
            judge(
                f"montecarlo: {who} device memory, largest / smallest samples",
                "<= 1.0x (flat)",
                flat,
                1.0,
                higher=False,
                bytes_by_samples={str(k): v for k, v in mem.items()},
            )
        )
    return out


def blur_targets(bl: list[dict[str, Any]], peaks: Any) -> list[dict[str, Any]]:
    """The blur targets from the blur runs that finished (at least one)."""
    out: list[dict[str, Any]] = []
    s = bl[0]["result"]["summary"]
    out.append(
        judge(
            "blur: our kernel speedup over torch conv2d",
            ">= 3x",
            s.get("kernel_vs_torch"),
            3.0,
            times_ms=s.get("times_ms"),
            size=s.get("size"),
        )
    )
    ours = contender_rows(bl[0], "cupy-kernel")
    frac = None
    if ours and peaks is not None and peaks.copy_gbs and not peaks.cpu:
        frac = ours[0]["throughput"] / peaks.copy_gbs
    out.append(
        judge(
            "blur: our kernel GB/s / device copy GB/s",
            ">= 0.5",
            frac,
            0.5,
            kernel_gbs=ours[0]["throughput"] if ours else None,
            copy_gbs=None if peaks is None else peaks.copy_gbs,
            bytes="image read once + written once",
        )
    )
    return out


def finished(runs: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """(experiment id, summary) of each run that produced a result."""
    return [
        (r["experiment"], r["result"].get("summary", {})) for r in runs if r["status"] == "result"
    ]


def syllabus_comparisons(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The syllabus targets, each a ratio of two contenders timed in the same experiment run."""
    out: list[dict[str, Any]] = []
    for exp, s in finished(runs):
        if exp == "reduction" and "ours_vs_torch_sum" in s:
            out.append(
                judge(
                    "reduction: our kernel GB/s / torch.sum GB/s",
                    ">= 0.8",
                    s["ours_vs_torch_sum"],
                    0.8,
                    gbs=s.get("gbs"),
                    n=s.get("n"),
                )
            )
        if exp == "allreduce" and "allreduce_of_peer" in s:
            out.append(
                judge(
                    f"all-reduce: busbw at {s.get('largest_bytes', 0) / 2**30:.3g} GiB / the "
                    "peer copy's GB/s",
                    ">= 0.8",
                    s["allreduce_of_peer"],
                    0.8,
                    ranks=s.get("ranks"),
                    busbw_gbs=(s.get("busbw_gbs") or {}).get("all-reduce"),
                    peer_copy_gbs=s.get("peer_copy_gbs"),
                )
            )
        eff = s.get("efficiency") or {} if exp == "ddp-scaling" else {}
        at_two = eff.get("2", eff.get(2))  # int keys in a run, strings once it went through JSON
        if at_two is not None:
            out.append(
                judge(
                    "ddp-scaling: efficiency at 2 ranks (samples/s over 2x one rank's)",
                    ">= 0.9",
                    at_two,
                    0.9,
                )
            )
        if exp == "streams-overlap" and s.get("saved_of_ideal") is not None:
            out.append(
                judge(
                    "streams-overlap: share of the ideal overlap's saving the side stream got",
                    ">= 0.7",
                    s["saved_of_ideal"],
                    0.7,
                    speedup=s.get("speedup"),
                    ideal_speedup=s.get("ideal_speedup"),
                    median_s=s.get("median_s"),
                )
            )
        if exp == "cuda-graphs" and "speedup" in s:
            out.append(
                judge(
                    f"cuda-graphs: eager step time / graph replay's ({s.get('kernels')} kernels)",
                    ">= 2x",
                    s["speedup"],
                    2.0,
                    step_s=s.get("step_s"),
                    saved_per_kernel_us=s.get("saved_per_kernel_us"),
                )
            )
        if exp == "bandwidth":
            for d, what in (("h2d", "host to device"), ("d2h", "device to host")):
                key = f"{d}_pinned_vs_runtime"
                if key in s:
                    out.append(
                        judge(
                            f"bandwidth: pinned {what} GB/s / plain cudaMemcpyAsync GB/s",
                            ">= 0.9",
                            s[key],
                            0.9,
                            largest_size_gbs=s.get("largest_size_gbs"),
                        )
                    )
    return out


def over_ceiling(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every row above 100% of its ceiling, with its stated reason ('' when it has none)."""
    out = []
    for r in runs:
        for m in r.get("result", {}).get("measurements", []):
            pct = m.get("percent_of_peak")
            if pct is not None and pct > 100.0:
                out.append(
                    {
                        "experiment": r["experiment"],
                        "contender": m["contender"],
                        "size": m["size"],
                        "dtype": m.get("dtype", ""),
                        "percent_of_peak": pct,
                        "reason": m.get("extra", {}).get("ceiling_note", ""),
                    }
                )
    return out


def ceilings_changed(first: dict[str, Any], final: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Figures that differ between two calibrations (to_dict form): {figure: {was, now}}."""

    def flat(p: dict[str, Any]) -> dict[str, float]:
        out = {k: p.get(k) for k in ("copy_gbs", "h2d_pinned_gbs", "d2h_pinned_gbs")}
        out.update({f"matmul:{d}": v for d, v in (p.get("matmul_tflops") or {}).items()})
        return {k: float(v) for k, v in out.items() if v}

    a, b = flat(first), flat(final)
    return {
        k: {"was": a[k], "now": b[k]}
        for k in sorted(set(a) & set(b))
        if abs(a[k] - b[k]) > 1e-9 * max(abs(b[k]), 1.0)
    }
