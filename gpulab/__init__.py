"""gpulab: a terminal lab for learning GPU computing on a real GPU."""

__version__ = "0.2.0"
