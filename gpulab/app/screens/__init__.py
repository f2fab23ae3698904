"""Screens pushed over the main screen: help, quiz, traceback, the exercise dialogs, and the
palette's window (`modal.Palette`; its commands are `gpulab.app.commands`)."""
