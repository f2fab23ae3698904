"""The panes of the main screen (listed in `gpulab.app.pane_table`), a pane's pieces beside it."""
