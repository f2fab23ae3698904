"""Widgets the experiment panel is built from."""
