"""Helpers for tests of code that uses ascend_linalg."""
import logging
import os
from contextlib import contextmanager

__all__ = ["dispatch_records", "fake_acl_path", "kernel_device"]


def kernel_device():
    """The project device on which tests that check the kernels run them:
    ``$ASCEND_LINALG_TEST_DEVICE``, ``cpu`` (default) or ``npu`` (what
    ``tools/validate_npu.py`` sets to run those tests on an Ascend device)."""
    value = os.environ.get("ASCEND_LINALG_TEST_DEVICE", "cpu").strip().lower() or "cpu"
    if value not in ("cpu", "npu"):
        raise ValueError(f"$ASCEND_LINALG_TEST_DEVICE must be 'cpu' or 'npu', got {value!r}")
    return value


def fake_acl_path():
    """Path of the fake Ascend runtime (``libascendcl.so``) built with the package.

    Point ``ASCEND_LINALG_ACL_LIB`` at it before the process imports
    ascend_linalg and the whole NPU path runs on the CPU (docs/npu.md).
    """
    from . import _core
    here = os.path.dirname(os.path.abspath(__file__))
    core_dir = os.path.dirname(os.path.abspath(_core.__file__))
    candidates = [
        os.path.join(here, "_fake_acl", "libascendcl.so"),              # installed
        os.path.join(core_dir, "_fake_acl", "libascendcl.so"),
        os.path.join(os.path.dirname(core_dir), "fake_acl", "libascendcl.so"),  # meson build tree
    ]
    for path in candidates:
        if os.path.isfile(path):
            return path
    raise FileNotFoundError("fake ACL runtime not built; looked in: " + ", ".join(candidates))


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
