"""gpulab's errors, in one hierarchy: a front end tells a person's mistake from a fault by class.

    GpulabError
    ├── BadInput              a person's mistake: `gpulab: <message>` on stderr, exit 2
    │   ├── ParamError        (core.params; UnknownParam)
    │   ├── FormatError       (core.front_matter; LessonFormatError, ExerciseFormatError)
    │   ├── UnknownExperiment (experiments.registry)
    │   ├── UnknownExercise   (exercises.loader)
    │   └── NotAHistory       (history.transfer: a file `gpulab history import` cannot read)
    ├── ExperimentError       (experiments.base: the run explains itself in one line; DoesNotFit)
    ├── StoreError            (store.connection: the progress file cannot be used)
    └── Cancelled             a job was asked to stop, and stopped

str() of each is the one line a person reads. `gpulab.cli.main` is the one place that turns one
raised by any command into that line and its exit status (2 for BadInput, else 1); the errors keep the builtin
base they had (ValueError, KeyError, RuntimeError), so code that caught those still does.
"""

from __future__ import annotations

EXIT_BAD_INPUT = 2


class GpulabError(Exception):
    """Every error gpulab raises on purpose. A command that lets one through ends with
    `gpulab: <message>` on stderr and `exit_code`."""

    exit_code = 1


class BadInput(GpulabError):
    """A person's mistake: one line on stderr, exit status EXIT_BAD_INPUT, never a traceback."""

    exit_code = EXIT_BAD_INPUT


class Cancelled(GpulabError):
    """A person asked to stop: raised by `Context.check_cancelled()` in a job, and by the run of
    an NVIDIA tool (gpulab.explain.tools) whose cancel was asked for."""
