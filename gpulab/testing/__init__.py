"""Test doubles shared by the tests (never imported by the app at run time)."""
