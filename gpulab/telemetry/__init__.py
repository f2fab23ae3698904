"""NVML inventory and snapshots, sampled off the event loop. Headless: no textual here."""
