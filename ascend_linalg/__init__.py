"""ascend_linalg: a scipy-compatible drop-in backend.

``csymm`` (``ascend_linalg.linalg.blas``) and CSR/CSC times dense vector
(``ascend_linalg.sparse``) run through this library's host/kernel layer on an
Ascend NPU when one is usable, on its native CPU device when asked, and
otherwise on scipy itself.

Backend selection: ``$ASCEND_LINALG_BACKEND``, :func:`set_backend`,
:func:`use_backend` (context-local), one of ``auto`` (default), ``npu``,
``cpu``, ``scipy``. Every routed call logs one DEBUG record on the logger
``ascend_linalg.dispatch``. On the NPU a sparse matrix stays on the device
between products (:func:`set_residency`, ``$ASCEND_LINALG_RESIDENCY``).
"""
import atexit as _atexit

from . import _core
from ._routing import (BACKENDS, BackendUnavailableError, get_backend, set_backend,
                       use_backend)
from .sparse._residency import get_residency, set_residency

__version__ = _core.__version__

__all__ = ["BACKENDS", "BackendUnavailableError", "get_backend", "set_backend",
           "use_backend", "devices", "show_config", "get_num_threads",
           "set_num_threads", "get_residency", "set_residency", "result_cache_info",
           "set_result_cache_limit", "release_result_cache", "__version__"]


def devices():
    """What this process can run on: a list of dicts, one per device kind.

    Each has ``name`` (``npu``, ``cpu``, ``scipy``), ``usable`` and ``detail``
    (for an unusable NPU: exactly why).
    """
    from ._routing import npu_state
    acl = _core.acl_info()
    usable, reason = npu_state()
    npu_detail = (f"{acl['device_count']} device(s), SoC {acl['soc']}, runtime {acl['library']}"
                  if usable else reason)
    return [
        {"name": "npu", "usable": usable, "detail": npu_detail},
        {"name": "cpu", "usable": True,
         "detail": f"{_core.cpu_num_threads()} threads, isa {_core.cpu_isa()}"},
        {"name": "scipy", "usable": True, "detail": "scipy's own BLAS / sparsetools"},
    ]


def show_config(file=None):
    """Print build and runtime facts: versions, devices, backend in force."""
    import platform
    import sys

    import numpy
    import scipy

    from ._routing import route
    out = file or sys.stdout
    print(f"ascend_linalg {__version__}", file=out)
    print(f"  python {platform.python_version()}, numpy {numpy.__version__}, "
          f"scipy {scipy.__version__}, {platform.machine()}", file=out)
    print(f"  backend: {get_backend()} (csymm and SpMV run on: {route('show_config')})", file=out)
    print(f"  residency of sparse matrices on the npu: {get_residency()}", file=out)
    rc = _core.result_cache_info()
    print(f"  result cache: {'on' if rc['enabled'] else 'off'}, {rc['limit_bytes'] >> 20} MiB idle at most, "
          f"for results of {rc['min_result_bytes'] >> 20} MiB or more", file=out)
    print("  devices:", file=out)
    for d in devices():
        mark = "yes" if d["usable"] else "no "
        print(f"    {d['name']:<6} usable={mark} {d['detail']}", file=out)
    acl = _core.acl_info()
    print("  ACL runtime search order: " + ", ".join(acl["searched"]), file=out)


def get_num_threads():
    """Worker threads of the CPU device."""
    return _core.cpu_num_threads()


def set_num_threads(n):
    """Set the CPU device's worker threads (default: ``$ASCEND_LINALG_NUM_THREADS``,
    else ``$OMP_NUM_THREADS``, else the CPUs this process may use)."""
    _core.cpu_set_num_threads(int(n))


def result_cache_info():
    """The cache of memory behind large product results, as a dict.

    A CPU-device product whose new result takes ``min_result_bytes`` (32 MiB)
    or more gets its memory from this cache, and the memory returns to it
    when the result is freed, so the next such product does not pay the page
    faults of a fresh mapping. Keys: ``enabled``, ``limit_bytes`` (most bytes
    kept idle), ``min_result_bytes``, ``max_idle_blocks``, ``idle_blocks``,
    ``idle_bytes``, ``live_blocks`` (held by live arrays), ``hits`` and
    ``misses`` (results served from an idle block, or newly mapped).
    """
    return _core.result_cache_info()


def set_result_cache_limit(nbytes):
    """Keep at most ``nbytes`` of freed result memory idle (default 1 GiB, or
    ``$ASCEND_LINALG_RESULT_CACHE_MB`` MiB); 0 turns the cache off. Idle blocks
    past the new limit are handed back to the system at once."""
    nbytes = int(nbytes)
    if nbytes < 0:
        raise ValueError(f"set_result_cache_limit: nbytes must be >= 0, got {nbytes}")
    _core.result_cache_set_limit(nbytes)


def release_result_cache():
    """Hand every idle block of the result cache back to the system; returns
    the bytes released. Live results are untouched."""
    return _core.result_cache_release()


def _at_exit():
    """Interpreter exit: free the device copies of resident matrices, release
    the Ascend runtime (aclFinalize only if our aclInit initialised it;
    docs/npu.md), then join the CPU pool."""
    from .sparse import _residency
    _residency.clear()
    _core.npu_shutdown()
    _core.cpu_shutdown()


_atexit.register(_at_exit)
