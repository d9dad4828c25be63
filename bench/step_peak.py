"""The peak of one step's own allocations, as the benchmarks under bench/ measure every row: the
largest running sum of the step's allocations and frees (the profiler's CPU allocation events, as
acprof's recorder reads them), in bytes above what was alive when the step began."""


def step_peak(step) -> int:
    from acprof.eager.recorder import what_the_profiler_saw

    live = peak = 0
    for event in what_the_profiler_saw(step).events:
        live += event["delta_bytes"]
        peak = max(peak, live)
    return peak
