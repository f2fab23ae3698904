"""Screens pushed over the main screen: help, quiz, traceback, the command palette."""
