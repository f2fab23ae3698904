"""Exercises: the learner writes code, gpulab checks it, times it and grades it.

api.py (the contract with each exercise's check.py), catalog.py (the folders), schema.py (the
rules of exercise.md's front matter), workspace.py (the learner's files), grader.py + sandbox.py
+ grading.py (one check), job.py (the check as a worker job), session.py (checks from a front
end), progress.py (the store's tables), cli.py + watch.py + report.py (`gpulab ex`), bench.py
(`gpulab bench --suite exercises`). docs/exercises.md explains
how a check works and how to write an exercise. Nothing here imports textual; torch and CuPy are
imported only by the exercises' own code, in the worker.
"""
