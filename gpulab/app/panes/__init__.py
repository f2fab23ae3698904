"""The four panes of the main screen; each module is owned by the engineer of that pane."""
