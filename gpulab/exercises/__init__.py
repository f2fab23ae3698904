"""Exercises: the learner writes code, gpulab checks it, times it and grades it.

By role. The catalog: `catalog/` (the exercises' data: one folder each), `loader.py` (finds and
loads those folders), `exercise_format.py` (the rules of exercise.md's front matter), `api.py`
(the contract with each exercise's check.py). One check: `run_check.py` (the check's order),
`speed.py` (its timing, every timed call checked, and the grade), `sandbox.py`, `own_work.py`,
`refuse.py`, `kernel_checks.py`, `compare.py`, `ranked.py` and `counting.py` (what a check uses),
`job.py` (the check as the worker's hidden `exercise-check` job). The learner's side:
`workspace.py` (their files), `progress.py` (the store's tables), `report.py` (words for a
verdict). `gpulab ex` itself lives in `gpulab.ex`, above the runner. docs/exercises.md explains
how a check works and how to write an exercise. Nothing here imports textual or the runner;
torch and CuPy are imported only by the exercises' own code, in the worker.
"""
