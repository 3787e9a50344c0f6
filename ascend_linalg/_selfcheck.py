"""Self-check: run both ops on every usable backend and compare with scipy."""
import numpy as np
import scipy.sparse as scipy_sparse
from scipy.linalg import blas as scipy_blas

from . import devices, use_backend
from .linalg.blas import csymm
from .sparse import csr_matrix
from .testing import dispatch_records


def _csymm_cases(rng):
    for side in (0, 1):
        for lower in (0, 1):
            m, n = 37, 23
            k = n if side else m
            a = (rng.standard_normal((k, k)) + 1j * rng.standard_normal((k, k))).astype(np.complex64)
            b = (rng.standard_normal((m, n)) + 1j * rng.standard_normal((m, n))).astype(np.complex64)
            c = (rng.standard_normal((m, n)) + 1j * rng.standard_normal((m, n))).astype(np.complex64)
            yield f"csymm side={side} lower={lower}", dict(
                alpha=0.5 - 1j, a=a, b=b, beta=2 + 0.5j, c=c, side=side, lower=lower)


def check(verbose=True):
    """Returns the number of failed checks; prints one line per check."""
    rng = np.random.default_rng(0)
    failures = 0
    backends = [d["name"] for d in devices() if d["usable"]]
    S = scipy_sparse.random(300, 200, density=0.05, format="csr", random_state=rng, dtype=np.float64)
    A = csr_matrix(S)
    x = rng.standard_normal(200)
    xt = rng.standard_normal(300)
    for backend in backends:
        with use_backend(backend), dispatch_records() as recs:
            results = []
            for name, kw in _csymm_cases(rng):
                got = csymm(**kw)
                want = scipy_blas.csymm(**kw)
                ok = np.allclose(got, want, rtol=1e-4, atol=1e-4)
                results.append((name, ok))
            results.append(("csr @ x", np.allclose(A @ x, S @ x)))
            results.append(("csr.T @ x", np.allclose(A.T @ xt, S.T @ xt)))
        ran = sorted({r[1] for r in recs})
        for name, ok in results:
            failures += not ok
            if verbose:
                print(f"  [{'PASS' if ok else 'FAIL'}] {backend:<5} {name:<24} ran on: {', '.join(ran)}")
        if ran != [backend]:
            failures += 1
            if verbose:
                print(f"  [FAIL] {backend}: expected every call on {backend}, dispatch log says {ran}")
    return failures
