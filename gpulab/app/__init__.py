"""The Textual app. The only package that imports textual; it never imports torch or CuPy.

The app is `gpulab.app.app.GpuLabApp`. Importing the package first applies the documented
workarounds of `textual_fixes` (every widget gets them).
"""

from gpulab.app import textual_fixes  # noqa: F401 - first: every widget gets the fixes
