"""Headless building blocks: params, results, timing, devices, peaks. No textual, no torch at import."""
