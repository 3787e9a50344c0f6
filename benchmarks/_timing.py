"""Interleaved, repeated timing with medians: the only way to compare speeds on
a shared, noisy machine. Every candidate runs in the same process and round."""
import statistics
import time


def interleaved(candidates, repeats=15, min_time=0.02, samples=None):
    """candidates: {name: zero-arg callable}. Returns {name: median seconds per call}.

    Each round times every candidate once (in rotating order) for at least
    ``min_time`` seconds of calls. ``samples``, a dict if given, receives
    each candidate's per-round seconds per call (for ``paired_ratio``).
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
    per_round = {name: [] for name in candidates}
    names = list(candidates)
    for r in range(repeats):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            fn, n = candidates[name], loops[name]
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            per_round[name].append((time.perf_counter() - t0) / n)
    if samples is not None:
        samples.update(per_round)
    return {name: statistics.median(v) for name, v in per_round.items()}


def paired_ratio(samples, num, den):
    """Median over rounds of samples[num][i] / samples[den][i]: each ratio
    compares two calls made within one round, so a slowdown that lasts
    longer than a round (another tenant's burst) cancels out of it, where
    it would move one candidate's median and not the other's."""
    return statistics.median(a / b for a, b in zip(samples[num], samples[den]))
