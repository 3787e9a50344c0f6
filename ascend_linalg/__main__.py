"""``python -m ascend_linalg``: devices, build facts, routing, and a self-check."""
import sys

from . import show_config
from ._selfcheck import check


def main():
    show_config()
    print("self-check (each usable backend against scipy):")
    failures = check()
    print("self-check: " + ("OK" if failures == 0 else f"{failures} FAILED"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
