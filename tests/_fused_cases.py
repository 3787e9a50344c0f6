"""The fused ``spmv`` cases (alpha, beta, y) the transposed kernels' tests share,
and the result each must give: scipy's sum ``s``, then ``alpha * s + beta * y``
with the kernels' complex product, bit for bit."""
import numpy as np

FUSED = [
    dict(alpha=2),
    dict(alpha=-3, beta=1, y="full"),
    dict(alpha=1, beta=2, y="full"),
    dict(alpha=5, beta=-2, y="strided"),
    dict(alpha=1, beta=0, y="strided"),
    dict(alpha=2, beta=0, y="nan"),  # beta 0: y is never read, its NaN must not show
]


def textbook_mul(a, v):
    """a * v with the kernels' complex product, (ar vr - ai vi, ar vi + ai vr), each
    operation rounded (numpy's own complex multiply may fuse them); real types as numpy."""
    if not np.iscomplexobj(v):
        return a * v
    out = np.empty_like(v)
    with np.errstate(invalid="ignore", over="ignore"):
        out.real = a.real * v.real - a.imag * v.imag
        out.imag = a.real * v.imag + a.imag * v.real
    return out


def fused_case(rng, kw, dtype, s, vector):
    """(alpha, beta, y, expect) for case ``kw`` of FUSED given scipy's sum ``s``;
    ``vector(rng, n, dtype)`` makes y's random values."""
    n = s.shape[0]
    alpha, beta = np.asarray(kw["alpha"], dtype)[()], np.asarray(kw.get("beta", 0), dtype)[()]
    if np.issubdtype(dtype, np.complexfloating):  # a complex alpha exercises the complex epilogue
        alpha = alpha * np.asarray(1 - 0.5j, dtype)
    y = None
    if kw.get("y") == "full":
        y = vector(rng, n, dtype)
    elif kw.get("y") == "strided":
        y = vector(rng, 3 * n, dtype)[::3]
    elif kw.get("y") == "nan":
        y = np.full(n, np.nan if not np.issubdtype(dtype, np.integer) else 7, dtype)
    expect = s if alpha == 1 else textbook_mul(alpha, s)
    if y is not None and beta != 0:
        expect = expect + (y if beta == 1 else textbook_mul(beta, y))
    return alpha, beta, y, expect
