"""benchmarks/bench_spmv.py's ``goal_summary``: the count of large cells that
reached the issue's 2.0x goal in a run, and for each that did not, which of
its floors (the streaming roof, the scatter yardstick) lies below the goal.
The note's claims about the goal are read off these lines."""
import os
import sys
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks"))
with warnings.catch_warnings():  # the module sets a filter for its own runs: kept out of the test session
    from bench_spmv import GOAL, goal_summary  # noqa: E402


def summary(cells):
    lines = []
    met = goal_summary(cells, out=lines.append)
    return met, lines


def test_cells_at_or_above_the_goal_count_and_are_not_listed():
    met, lines = summary([("a float32 N", 2.0, 2.5, None), ("b float64 T", 2.31, 2.9, 2.4)])
    assert GOAL == 2.0
    assert met == 2
    assert lines == ["goal 2.0x scipy: 2 of 2 large cells reached it"]


def test_each_cell_below_says_which_floor_is_below_the_goal():
    cells = [
        ("banded float64 N", 1.74, 1.72, None),       # roof below
        ("random float64 T", 1.43, 2.6, 1.87),         # scatter yardstick below
        ("power-law float64 T", 1.7, 1.9, 1.75),       # both below
        ("power-law float32 N", 1.95, 2.3, None),      # floors above: the kernel's own shortfall
        ("poisson float32 N", 2.09, 2.38, None),       # met
    ]
    met, lines = summary(cells)
    assert met == 1
    assert lines[0] == "goal 2.0x scipy: 1 of 5 large cells reached it"
    assert len(lines) == 5
    by = {line.split("  (")[0].split()[0] + " " + line.split()[1]: line for line in lines[1:]}
    assert by["banded float64"].endswith("(roof 1.72; below 2.0: roof)")
    assert by["random float64"].endswith("(roof 2.60, scat 1.87; below 2.0: scat)")
    assert by["power-law float64"].endswith("(roof 1.90, scat 1.75; below 2.0: roof and scat)")
    assert by["power-law float32"].endswith("(roof 2.30; floors above the goal)")
    assert " 1.74  " in by["banded float64"] and " 1.95  " in by["power-law float32"]
