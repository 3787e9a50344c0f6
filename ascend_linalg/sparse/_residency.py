"""Device residency of sparse matrices on the ``npu`` backend (docs/npu.md).

A CSR/CSC matrix multiplied on the NPU keeps a device copy of its
``indptr``/``indices``/``data`` between calls, so an iterative solver uploads
its matrix once and then moves only ``x`` down and ``y`` back per product.
A changed matrix is never answered from a stale copy:

``checked`` (default)
    Before every reuse the host layer fingerprints the host arrays (a 64-bit
    hash of their bytes, computed in C++ without the GIL) and re-uploads when
    it differs from the copy's, so any change counts, including numpy writes
    straight into ``A.data``.
``trusted``
    No fingerprint. The copy is dropped when the matrix changes through its
    own methods (every in-place scipy method of the project's classes reports
    itself) and whenever ``data``, ``indices``, ``indptr`` or the shape is no
    longer what it was: the copy is keyed on those very array objects (weak
    references) and the shape, so assigning any of them counts. Writes into the arrays by any other
    route (numpy, another matrix sharing them) are the caller's promise not
    to make. Matrices of scipy's own classes (no hooks) are always checked.
``off``
    Every call uploads its operands, as without residency.

Chosen by ``$ASCEND_LINALG_RESIDENCY`` or :func:`ascend_linalg.set_residency`
(process-wide). A copy lives as long as its matrix: it is freed when the
matrix is garbage-collected, when it goes stale, and at interpreter exit.
"""
import itertools
import os
import threading
import weakref

from .. import _core

__all__ = ["MODES", "get_residency", "set_residency", "changed", "track", "resident_for", "clear",
           "evict_others", "info"]

MODES = ("checked", "trusted", "off")


def _check(mode):
    if not isinstance(mode, str) or mode not in MODES:
        raise ValueError(f"residency must be one of {', '.join(map(repr, MODES))}, got {mode!r}")
    return mode


def _from_env():
    value = os.environ.get("ASCEND_LINALG_RESIDENCY", "checked").strip().lower() or "checked"
    try:
        return _check(value)
    except ValueError as exc:
        raise ValueError(f"$ASCEND_LINALG_RESIDENCY: {exc}") from None


_mode = _from_env()
# Re-entrant: a matrix's finalizer may run (garbage collection) inside a
# locked region of this thread.
_lock = threading.RLock()
_entries = {}                      # id(matrix) -> _Entry; removed when the matrix dies
_versions = itertools.count(1)     # fresh, never repeated version numbers


def get_residency():
    """The residency mode in force: ``checked``, ``trusted`` or ``off``."""
    return _mode


def set_residency(mode):
    """Set the residency mode (process-wide); ``off`` also frees every device copy."""
    global _mode
    _mode = _check(mode)
    if _mode == "off":
        clear()


class _Entry:
    __slots__ = ("resident", "version", "sources", "key", "finalizer", "__weakref__")

    def __init__(self, version, sources, key):
        self.resident = _core.CsrResidency()
        self.version = version
        self.sources = sources     # weak references to the matrix's own arrays
        self.key = key
        self.finalizer = None

    def current(self, version, sources, key):
        return (self.version == version and self.key == key
                and all(r() is s for r, s in zip(self.sources, sources)))


def _drop(entry):
    entry.finalizer.detach()       # releases its reference: the device copy goes now


def _forget(key, entry):
    """The matrix died: forget its entry (the device copy is freed with it)."""
    with _lock:
        if _entries.get(key) is entry:
            del _entries[key]


def changed(A):
    """Called after every in-place method of a project class: a tracked matrix
    (one used on the npu) gets a new version, and any device copy is dropped.
    Assignments of its arrays or shape need no call: entries are keyed on them."""
    d = A.__dict__
    if "_al_version" in d:
        d["_al_version"] = next(_versions)
    if _entries:
        with _lock:
            entry = _entries.pop(id(A), None)
        if entry is not None:
            _drop(entry)


def track(A):
    """A's version, making A tracked first: read it *before* the arrays of an
    npu call are taken (see :func:`resident_for`)."""
    d = A.__dict__
    v = d.get("_al_version")
    if v is None:
        v = d["_al_version"] = next(_versions)
    return v


def resident_for(A, version, sources, dtype, index_dtype, hooked):
    """``(CsrResidency, verify)`` for matrix ``A`` on the npu, or ``(None, False)``.

    ``version`` is what :func:`track` returned before the caller read A's
    arrays ``sources`` (data, indices, indptr: the very objects the call's
    arrays were made from): a change made meanwhile leaves the entry stale for
    the next call. ``hooked``: A's class reports its changes (:func:`changed`);
    if not, the copy is always checked.
    """
    mode = _mode
    if mode == "off":
        return None, False
    key = (dtype, index_dtype, A.shape)
    ident = id(A)
    with _lock:
        entry = _entries.get(ident)
        if entry is not None and not entry.current(version, sources, key):
            del _entries[ident]
            _drop(entry)
            entry = None
        if entry is None:
            try:
                refs = tuple(weakref.ref(s) for s in sources)
            except TypeError:       # not ndarrays: nothing to key on
                return None, False
            entry = _Entry(version, refs, key)
            entry.finalizer = weakref.finalize(A, _forget, ident, entry)
            entry.finalizer.atexit = False   # clear() frees them at exit, in order
            _entries[ident] = entry
    return entry.resident, mode == "checked" or not hooked


def evict_others(A):
    """Free every device copy except A's (device memory ran out); True if any was freed."""
    with _lock:
        others = [(k, e) for k, e in _entries.items() if k != id(A)]
        for k, _ in others:
            del _entries[k]
    for _, e in others:
        _drop(e)
    return bool(others)


def clear():
    """Free every device copy (``off``, interpreter exit)."""
    with _lock:
        entries = list(_entries.values())
        _entries.clear()
    for e in entries:
        _drop(e)


def info():
    """``{"matrices": n, "device_bytes": b, "uploads": u}`` over the live device copies."""
    with _lock:
        entries = list(_entries.values())
    return {"matrices": len(entries),
            "device_bytes": sum(e.resident.device_bytes for e in entries),
            "uploads": sum(e.resident.uploads for e in entries)}
