"""Helpers for tests of code that uses ascend_linalg."""
import logging
from contextlib import contextmanager

__all__ = ["dispatch_records"]


@contextmanager
def dispatch_records():
    """Collect the ``ascend_linalg.dispatch`` records emitted inside the block.

    Yields a list that fills with ``(op, backend, reason)`` tuples.
    """
    records = []

    class _Handler(logging.Handler):
        def emit(self, record):
            op, rest = record.args[0], record.args[1:]
            records.append((op, rest[0], rest[1] if len(rest) > 1 else None))

    log = logging.getLogger("ascend_linalg.dispatch")
    handler = _Handler(level=logging.DEBUG)
    old_level = log.level
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)
    try:
        yield records
    finally:
        log.removeHandler(handler)
        log.setLevel(old_level)
