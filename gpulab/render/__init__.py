"""Terminal renderings shared by the CLI and the TUI: text plots, half-block images.

Nothing here imports textual, torch or CuPy.
"""
