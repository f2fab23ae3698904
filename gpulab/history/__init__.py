"""Kept runs: entries.py (what one finished run was, compared with another), transfer.py
(export to and import from JSON, CSV and Markdown), cli.py (`gpulab history`)."""
