"""The Textual app. The only package that imports textual; it never imports torch or CuPy."""

from gpulab.app import textual_fixes  # noqa: F401 - first: every widget gets the fixes
from gpulab.app.app import GpuLabApp

__all__ = ["GpuLabApp"]
