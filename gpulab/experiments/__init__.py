"""Experiments: pure compute behind a small Context; see base.py and registry.py."""
