"""`gpulab bench`: suite.py (every benchmarked experiment, after a fresh calibration),
targets.py and claims.py (the targets, judged from finished runs), markdown.py (the report),
cli.py (the command). Named apart from the repository's `bench/` folder of scripts and results."""
