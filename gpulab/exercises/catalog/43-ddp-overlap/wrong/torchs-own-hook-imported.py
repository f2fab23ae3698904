# expect: imported, not written there
# family: library
"""Shortcut (the library's answer under the exercise's name): the file writes no hook; it imports
torch's own `allreduce_hook` (DDP's default, which is what this exercise asks for). The ranks
load the file that defines the entry function, so each loaded torch's module as the learner's.
Before the fix: pass. Now a ranked check refuses an entry function defined outside the file."""

from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook  # noqa: F401
