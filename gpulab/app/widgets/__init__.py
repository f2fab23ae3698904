"""Widgets the panes are built from: the experiment panel's (form, race, plots, images, history)
and the exercises pane's (code editor, verdict, explain card)."""
