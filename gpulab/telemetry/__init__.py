"""NVML inventory and snapshots, sampled off the event loop. Headless: no textual here.

    from gpulab.telemetry.sampler import shared_sampler
    unsubscribe = shared_sampler().subscribe(on_frame)   # on_frame(Frame) runs on the thread

Every reading is a value or an `NA(reason)`; see values.py. Tests inject the fake NVML,
`gpulab.testing.fake_nvml`.
"""
