"""benchmarks/_timing.py: the interleaved rounds and the paired ratio the
benchmarks report."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks"))
from _timing import interleaved, paired_ratio  # noqa: E402


def test_interleaved_hands_back_every_rounds_time():
    calls = {"a": 0, "b": 0}

    def a():
        calls["a"] += 1

    def b():
        calls["b"] += 1
    samples = {}
    med = interleaved({"a": a, "b": b}, repeats=5, min_time=0.0, samples=samples)
    assert sorted(samples) == ["a", "b"]
    assert len(samples["a"]) == 5 and len(samples["b"]) == 5
    assert all(t >= 0 for t in samples["a"] + samples["b"])
    # a warm-up call, one to find the calls per round (one: min_time 0), then one a round
    assert calls["a"] == 7 and calls["b"] == 7
    assert med["a"] == sorted(samples["a"])[2]


def test_paired_ratio_is_the_median_of_each_rounds_ratio():
    # round 2 is slow for both (a tenant's burst): it moves the medians of
    # the times, not the rounds' ratios
    s = {"scipy": [2.0, 2.2, 9.0, 2.0, 2.1], "ours": [1.0, 1.0, 4.5, 1.1, 1.0]}
    assert paired_ratio(s, "scipy", "ours") == pytest.approx(2.0)
    assert paired_ratio(s, "ours", "scipy") == pytest.approx(0.5)
    assert paired_ratio({"a": [3.0], "b": [1.5]}, "a", "b") == 2.0
