"""Progress and run history in one SQLite file: database.py (the tables and `Store`),
connection.py (the guarded connection: faults of the file or the disk become notices),
recover.py and pages.py (`gpulab store recover`: rebuild a damaged file from what can be read),
cli.py (`gpulab store`)."""
