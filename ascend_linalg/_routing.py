"""One routing decision per call: ``npu``, ``cpu`` or ``scipy``, and why.

The backend in force comes from, first to last: ``use_backend`` (context-local),
``set_backend``, ``$ASCEND_LINALG_BACKEND``, then ``auto``. ``auto`` runs on an
NPU when one is usable and otherwise on scipy, silently; asking for ``npu``
where none is usable raises :class:`BackendUnavailableError` with the reason.
"""
import contextlib
import contextvars
import logging
import os
import threading

__all__ = ["BACKENDS", "BackendUnavailableError", "get_backend", "set_backend",
           "use_backend", "route", "record", "kernel_lacking", "log"]

BACKENDS = ("auto", "npu", "cpu", "scipy")

log = logging.getLogger("ascend_linalg.dispatch")


class BackendUnavailableError(RuntimeError):
    """An explicitly requested backend cannot run here; the message says why."""


def _check(name):
    if not isinstance(name, str) or name not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(map(repr, BACKENDS))}, got {name!r}")
    return name


def _from_env():
    value = os.environ.get("ASCEND_LINALG_BACKEND", "auto").strip().lower() or "auto"
    try:
        return _check(value)
    except ValueError as exc:
        raise ValueError(f"$ASCEND_LINALG_BACKEND: {exc}") from None


_global = _from_env()
_local = contextvars.ContextVar("ascend_linalg_backend", default=None)
_npu_lock = threading.Lock()
_npu_state = None  # (usable, reason), probed once


def get_backend():
    """The backend name in force for this context (``auto``, ``npu``, ``cpu``, ``scipy``)."""
    name = _local.get()
    return _global if name is None else name


def set_backend(name):
    """Set the process-wide backend (``use_backend`` blocks still take precedence)."""
    global _global
    _global = _check(name)


class use_backend(contextlib.ContextDecorator):
    """Use backend ``name`` inside the ``with`` block (or the decorated
    function), in this thread/task only.

    A class rather than ``contextlib.contextmanager``: entering and leaving
    costs about half as much, which shows on per-call use around small products.
    One object may be entered again while it is active (the tokens stack).
    """
    __slots__ = ("_name", "_tokens")

    def __init__(self, name):
        self._name = _check(name)
        self._tokens = []

    def __enter__(self):
        self._tokens.append(_local.set(self._name))

    def __exit__(self, *exc):
        _local.reset(self._tokens.pop())
        return False

    def _recreate_cm(self):  # a decorated function gets a fresh one per call
        return use_backend(self._name)


def npu_state():
    """(usable, reason) of the Ascend runtime, probed once per process."""
    global _npu_state
    if _npu_state is None:
        with _npu_lock:
            if _npu_state is None:
                from . import _core
                info = _core.acl_info()
                _npu_state = (bool(info["usable"]), info["reason"])
    return _npu_state


def route(op):
    """Decide where ``op`` runs: returns ``'npu'``, ``'cpu'`` or ``'scipy'``."""
    name = _local.get()
    if name is None:
        name = _global
    if name == "scipy" or name == "cpu":
        return name
    usable, reason = npu_state()
    if usable:
        return "npu"
    if name == "npu":
        raise BackendUnavailableError(f"{op}: backend 'npu' requested but no NPU is usable: {reason}")
    return "scipy"


def kernel_lacking(backend, exc):
    """Why ``exc`` (a ``_core.HostError`` from ``backend``) means the device has
    no kernel for this case, or None. The NPU's kernel binary may lack an op
    (ARCH_MISMATCH from the function lookup) or a value type (NOT_SUPPORTED);
    such a call goes to scipy, as a dtype without a kernel does."""
    from . import _core
    status = exc.args[1] if len(exc.args) > 1 else None
    if backend == "npu" and status in (_core.STATUS["ARCH_MISMATCH"], _core.STATUS["NOT_SUPPORTED"]):
        return f"the npu has no kernel for it: {exc.args[0]}"
    return None


def record(op, backend, reason=None):
    """Emit the one DEBUG record of a routed call (cheap when DEBUG is off)."""
    if log.isEnabledFor(logging.DEBUG):
        if reason is None and backend == "scipy" and get_backend() == "auto":
            reason = "auto: no usable NPU (" + npu_state()[1] + ")"
        if reason:
            log.debug("%s: ran on %s (fallback: %s)", op, backend, reason)
        else:
            log.debug("%s: ran on %s", op, backend)
