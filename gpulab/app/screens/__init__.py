"""Screens pushed over the main screen: help, traceback."""
