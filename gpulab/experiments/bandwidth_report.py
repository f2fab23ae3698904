"""What a bandwidth run says beside its rows: the summary (the largest size's rate per
contender, the calibrated ceilings, pinned vs pageable and vs the runtime copy), the plot of
GB/s against the copy's size with this GPU's calibrated host<->device ceilings as lines, and
the explanation. Kept apart from the run (bandwidth.py), which measures.
"""

from __future__ import annotations

from typing import Any

from gpulab.core.results import Series
from gpulab.experiments import ceilings
from gpulab.experiments.roofline import ceiling_series

X_LABEL, Y_LABEL = "bytes per copy", "GB/s"


def curve_series(curves: dict[str, list[tuple[float, float]]], s: dict[str, Any]) -> list[Series]:
    """GB/s against bytes per copy, one line per contender; and for each direction whose rows
    ran, a line at the calibrated pinned-copy ceiling they were judged against (the summary's
    `h2d_pinned_peak_gbs` / `d2h_pinned_peak_gbs`: set only from a GPU's calibration, so a CPU
    run, or one without a calibration, draws none and names none)."""
    out = [
        Series(cid, [x for x, _ in pts], [y for _, y in pts], X_LABEL, Y_LABEL, True, True)
        for cid, pts in curves.items()
    ]
    for d in ("h2d", "d2h"):
        peak = s.get(f"{d}_pinned_peak_gbs")
        xs = [x for cid, pts in curves.items() if cid.startswith(d) for x, _ in pts]
        if peak and xs:
            name = f"ceiling {d} (calibrated pinned copy) {peak:.1f} GB/s"
            out.append(ceiling_series(name, peak, xs, X_LABEL, Y_LABEL))
    return out


def summary(
    curves: dict[str, list[tuple[float, float]]],
    link: dict[str, Any],
    pcie: float | None,
    p: Any,
) -> dict[str, Any]:
    """The bandwidth run's summary: the largest size's rate per contender, the PCIe link and its
    theoretical rate."""
    largest = {cid: pts[-1][1] for cid, pts in curves.items() if pts}
    out: dict[str, Any] = {"largest_size_gbs": largest, "pcie_link": link}
    if pcie:
        out["pcie_theoretical_gbs"] = pcie
    if p is not None and not p.cpu and p.copy_gbs:
        out["device_copy_peak_gbs"] = p.copy_gbs
    for d in ("h2d", "d2h"):
        ceiling = ceilings.peak(p, d) if p is not None and not p.cpu else None
        if ceiling:
            out[f"{d}_pinned_peak_gbs"] = float(ceiling)
            if pcie:
                out[f"{d}_pinned_peak_of_theoretical"] = float(ceiling) / pcie
    for d in ("h2d", "d2h"):
        pin, rt = largest.get(f"{d}-pinned"), largest.get(f"{d}-runtime")
        if pin and rt:
            out[f"{d}_pinned_vs_runtime"] = pin / rt
        pg = largest.get(f"{d}-pageable")
        if pin and pg:
            out[f"{d}_pinned_vs_pageable"] = pin / pg
    return out


def explain(s: dict[str, Any], gpu: bool) -> str:
    """The bandwidth run's explanation, in words, for a GPU or a CPU run."""
    text = (
        ""
        if gpu
        else (
            "Only the host memory copy ran here (no GPU): it shows the CPU's own memory "
            "bandwidth, and how small copies run faster from the CPU's caches. On a GPU this "
            "experiment adds the rows below. "
        )
    )
    text += (
        "Copies between the host and the GPU cross PCIe, one to two orders of magnitude "
        "slower than the GPU's own memory: compare the d2d row with the h2d rows. Pageable "
        "(ordinary) host memory can be paged out, so the driver first copies it into a "
        "pinned staging buffer and only then DMAs it: that extra CPU copy caps pageable "
        "transfers well below the link. Pinned (page-locked) memory is DMA'd directly, "
        "reaching most of the link's bandwidth, and PyTorch's pinned copy runs as fast as "
        "a bare cudaMemcpyAsync. Small copies are dominated by a fixed cost of a few "
        "microseconds per copy, so GB/s climbs with size: batch small transfers, and keep "
        "data on the device."
    )
    if gpu:
        text += (
            " The % column judges each PCIe row against this device's own measured "
            "ceiling, the calibration's pinned copy in the same direction, not the "
            "link's datasheet figure, which protocol overhead keeps every copy below."
        )
    link = s.get("pcie_link", {})
    if s.get("pcie_theoretical_gbs"):
        text += (
            f" This GPU reports a PCIe Gen{link.get('max_gen')} x{link.get('max_width')} link:"
            f" {s['pcie_theoretical_gbs']:.1f} GB/s per direction in theory"
        )
        measured = [
            f"{d.upper()} {s[f'{d}_pinned_peak_gbs']:.1f} GB/s"
            f" ({100 * s[f'{d}_pinned_peak_of_theoretical']:.0f}%)"
            for d in ("h2d", "d2h")
            if s.get(f"{d}_pinned_peak_of_theoretical")
        ]
        text += (
            "; the calibration's pinned copies reached " + " and ".join(measured) + " of it."
            if measured
            else "."
        )
    elif link.get("reason"):
        text += f" The PCIe link could not be read: {link['reason']}."
    return text
