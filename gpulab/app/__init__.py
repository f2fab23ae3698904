"""The Textual app. The only package that imports textual; it never imports torch or CuPy."""

from gpulab.app.app import GpuLabApp

__all__ = ["GpuLabApp"]
