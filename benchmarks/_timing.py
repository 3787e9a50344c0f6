"""Interleaved, repeated timing with medians: the only way to compare speeds on
a shared, noisy machine. Every candidate runs in the same process and round."""
import statistics
import time


def interleaved(candidates, repeats=15, min_time=0.02):
    """candidates: {name: zero-arg callable}. Returns {name: median seconds per call}.

    Each round times every candidate once (in rotating order) for at least
    ``min_time`` seconds of calls.
    """
    loops = {}
    for name, fn in candidates.items():
        fn()  # warm up (and build caches)
        n, t = 1, 0.0
        while True:
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            t = time.perf_counter() - t0
            if t >= min_time:
                break
            n *= 2
        loops[name] = n
    samples = {name: [] for name in candidates}
    names = list(candidates)
    for r in range(repeats):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            fn, n = candidates[name], loops[name]
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            samples[name].append((time.perf_counter() - t0) / n)
    return {name: statistics.median(v) for name, v in samples.items()}
