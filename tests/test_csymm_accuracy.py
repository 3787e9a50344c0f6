"""csymm precision suite (design section 6): one test per row of
tests/data/csymm_cases.csv (written by tools/gen_csymm_cases.py), run on the
project's kernel through ``ascend_linalg.linalg.blas.csymm``: on the CPU device,
or on the NPU with ``$ASCEND_LINALG_TEST_DEVICE=npu`` (tools/validate_npu.py).
``$ASCEND_LINALG_ACCURACY_EVERY=k`` keeps every k-th row only (a quick sample).

Acceptance rule, design 6.1, per real and per imaginary component (float32):
  element passes   |actual - golden| <= atol + rtol * |golden|,
                   atol = 2^-16, rtol = 2^-10
  case passes      >= 99% of the components pass, and
                   max |actual - golden| <= max_abs_error_limit.
The design gives the limit as "1e-2 or 32 * ULP". We read it as
  max(1e-2, 32 * ulp_f32(max |golden|)),
the ULP being float32's spacing at the largest golden component of the case:
1e-2 absolute for O(1) data, and 32 float32 ULPs of the result's scale where the
data is large (alpha = 1e6, extreme values), where a fixed 1e-2 would ask for
more than float32 can represent.

golden: the referenced triangle of A symmetrised in complex128,
alpha*A@B (LEFT) or alpha*B@A (RIGHT), plus beta*C; alpha == 0 reads neither A
nor B and beta == 0 never reads C (BLAS semantics; those inputs are then filled
with NaN on purpose). Rows with NaN/Inf inputs (expect = nonfinite) must give
the NaN and Inf masks of scipy's csymm on the same input, and the finite part
must pass the rule above.
"""
import csv
import os

import numpy as np
import pytest
from scipy.linalg.blas import csymm as scipy_csymm

import ascend_linalg
from ascend_linalg.linalg.blas import csymm
from ascend_linalg.testing import dispatch_records, kernel_device

CASES_CSV = os.path.join(os.path.dirname(__file__), "data", "csymm_cases.csv")
ATOL = 2.0 ** -16
RTOL = 2.0 ** -10
MATCHED_RATIO = 0.99
MAX_ABS_FLOOR = 1e-2
MAX_ABS_ULPS = 32


def _known_bug(row):
    """Reason a row is expected to fail (strict xfail: a fix turns it into an
    XPASS failure, so remove the rule then), or None."""
    # (none open; the empty-B bug was fixed in _core: numpy's zero strides of
    # a (0, n) / (m, 0) array were rejected as ldb = 0 / non-unit row stride)
    return None


def _load():
    with open(CASES_CSV, newline="") as f:
        rows = list(csv.DictReader(f))
    every = int(os.environ.get("ASCEND_LINALG_ACCURACY_EVERY", "1") or 1)
    rows = rows[::max(every, 1)]
    params = []
    for row in rows:
        marks = []
        if row["slow"] == "1":
            marks.append(pytest.mark.slow)
        reason = _known_bug(row)
        if reason:
            marks.append(pytest.mark.xfail(strict=True, reason=reason))
        params.append(pytest.param(row, id=row["name"], marks=marks))
    return params


def _layout(values, pad, order):
    """``values`` as a strided view into a larger array of the given order: a
    Fortran array gets ``pad`` extra rows (ld = rows + pad), a C array ``pad``
    extra columns."""
    rows, cols = values.shape
    if values.size == 0:  # what a caller passes: numpy's own empty array
        return np.zeros(values.shape, dtype=np.complex64, order=order)
    if order == "F":
        big = np.full((rows + pad, max(cols, 1)), np.nan + 0j, dtype=np.complex64, order="F")
    else:
        big = np.full((max(rows, 1), cols + pad), np.nan + 0j, dtype=np.complex64, order="C")
    view = big[:rows, :cols]
    view[...] = values
    return view


def _random(rng, shape, dist):
    if dist == "normal":
        re, im = rng.standard_normal(shape), rng.standard_normal(shape)
    elif dist == "zeros":
        re = im = np.zeros(shape)
    elif dist == "alternating":
        i, j = np.indices(shape)
        re, im = (-1.0) ** (i + j), -((-1.0) ** i)
    elif dist == "extreme_mixed":
        # log-uniform magnitudes in [1e-18, 1e18] with random signs: every
        # product stays within float32 (1e-36 .. 1e36), sums of <= 100 too.
        def part():
            return rng.choice([-1.0, 1.0], shape) * 10.0 ** rng.uniform(-18, 18, shape)
        re, im = part(), part()
    else:  # uniform, extreme (scaled by the caller), and the NaN/Inf injections
        re, im = rng.uniform(-1, 1, shape), rng.uniform(-1, 1, shape)
    return (re + 1j * im).astype(np.complex128)


def _inject(rng, x, value, referenced=None):
    """Put ``value`` into the real part of one entry and the imaginary part of
    another (only where ``referenced`` is True, when given)."""
    cand = np.argwhere(referenced if referenced is not None else np.ones(x.shape, bool))
    if len(cand) == 0:
        return
    for part, idx in zip(("re", "im"), rng.choice(len(cand), size=min(2, len(cand)), replace=False)):
        i, j = cand[idx]
        x[i, j] = complex(value, x[i, j].imag) if part == "re" else complex(x[i, j].real, value)


def _inputs(row):
    side, uplo, m, n = (int(row[k]) for k in ("side", "uplo", "m", "n"))
    ka = m if side == 0 else n
    dist = row["dist"]
    rng = np.random.default_rng(int(row["seed"]))
    a = _random(rng, (ka, ka), dist)
    b = _random(rng, (m, n), dist)
    c = _random(rng, (m, n), dist)
    if dist == "extreme":
        a *= 1e18
        b *= 1e-18
    ref_mask = np.triu(np.ones((ka, ka), bool)) if uplo == 0 else np.tril(np.ones((ka, ka), bool))
    if dist in ("unref_nan", "unref_inf"):
        a[~ref_mask] = np.nan if dist == "unref_nan" else np.inf
    elif dist[:4] in ("nan_", "inf_"):
        value = np.nan if dist.startswith("nan") else np.inf
        target = {"a": a, "b": b, "c": c}[dist[-1]]
        _inject(rng, target, value, ref_mask if dist[-1] == "a" else None)
        if dist == "inf_a" or dist == "inf_b":
            # negative infinities as well, so that opposite signs meet in sums
            _inject(rng, target, -np.inf, ref_mask if dist[-1] == "a" else None)
    alpha = complex(float(row["alpha_re"]), float(row["alpha_im"]))
    beta = complex(float(row["beta_re"]), float(row["beta_im"]))
    if alpha == 0 and dist[:4] not in ("nan_", "inf_"):
        a[...] = b[...] = np.nan  # alpha == 0: A and B must not be read
    if beta == 0 and dist[:4] not in ("nan_", "inf_"):
        c[...] = np.nan  # beta == 0: C must not be read
    order = row["order"]
    pads = (int(row["lda_pad"]), int(row["ldb_pad"]), int(row["ldc_pad"]))
    # Round to complex64 first so that golden and kernel see the same numbers.
    a, b, c = (_layout(x.astype(np.complex64), p, order) for x, p in zip((a, b, c), pads))
    return side, uplo, alpha, beta, a, b, c, ref_mask


def _golden(side, uplo, alpha, beta, a, b, c):
    a = np.asarray(a, dtype=np.complex128)
    tri = np.triu(a) if uplo == 0 else np.tril(a)  # np.where-based: NaN elsewhere never leaks
    sym = tri + (np.triu(tri, 1).T if uplo == 0 else np.tril(tri, -1).T)
    b = np.asarray(b, dtype=np.complex128)
    out = np.zeros(b.shape, dtype=np.complex128)
    if alpha != 0:
        out += alpha * (sym @ b if side == 0 else b @ sym)
    if beta != 0:
        out += beta * np.asarray(c, dtype=np.complex128)
    return out


def _check_tolerance(actual, golden, where=None):
    """Design 6.1 on the real and imaginary components; ``where``: optional
    (real mask, imaginary mask) of the components to check."""
    act = np.concatenate([actual.real.ravel(), actual.imag.ravel()]).astype(np.float64)
    gold = np.concatenate([golden.real.ravel(), golden.imag.ravel()])
    if where is not None:
        keep = np.concatenate([where[0].ravel(), where[1].ravel()])
        act, gold = act[keep], gold[keep]
    if gold.size == 0:
        return
    err = np.abs(act - gold)
    ok = err <= ATOL + RTOL * np.abs(gold)
    ratio = ok.mean()
    scale = np.float32(min(np.abs(gold).max(), np.finfo(np.float32).max))
    limit = max(MAX_ABS_FLOOR, MAX_ABS_ULPS * float(np.spacing(scale)))
    worst = int(np.argmax(err))
    msg = (f"matched {ratio:.4f} (need {MATCHED_RATIO}), max abs error {err.max():.3g} "
           f"(limit {limit:.3g}) at component {worst}: actual {act[worst]!r} golden {gold[worst]!r}")
    assert ratio >= MATCHED_RATIO and err.max() <= limit, msg


def _masks(z):
    return {"nan.re": np.isnan(z.real), "nan.im": np.isnan(z.imag),
            "inf.re": np.isinf(z.real), "inf.im": np.isinf(z.imag)}


@pytest.mark.parametrize("row", _load())
def test_csymm_case(row):
    side, uplo, alpha, beta, a, b, c, _ = _inputs(row)
    c0 = c.copy()
    # An explicit empty c is refused by scipy's own wrapper (and so by ours,
    # which hands that form to it); empty problems are run with c omitted.
    c_arg = c if c.size else None
    device = kernel_device()
    with ascend_linalg.use_backend(device), dispatch_records() as records:
        actual = csymm(alpha, a, b, beta=beta, c=c_arg, side=side, lower=uplo, overwrite_c=1)
    calls = [r for r in records if r[0] == "csymm"]
    assert calls == [("csymm", device, None)], f"kernel did not run: {calls}"
    m, n = int(row["m"]), int(row["n"])
    assert actual.shape == (m, n) and actual.dtype == np.complex64
    with np.errstate(invalid="ignore", over="ignore"):  # Inf inputs: inf - inf in the golden
        golden = _golden(side, uplo, alpha, beta, a, b, c0)
    if row["expect"] == "tol":
        assert np.isfinite(actual).all(), "NaN/Inf in the result of a finite case"
        _check_tolerance(actual, golden)
        return
    expected = scipy_csymm(alpha, a, b, beta=beta, c=c0.copy(), side=side, lower=uplo)
    got, want = _masks(actual), _masks(expected)
    for key in got:
        bad = np.argwhere(got[key] != want[key])
        assert len(bad) == 0, (f"{key} mask differs from scipy at {len(bad)} entries, first {tuple(bad[0])}: "
                               f"ours {actual[tuple(bad[0])]!r} scipy {expected[tuple(bad[0])]!r}")
    finite = np.isfinite(actual.real) & np.isfinite(golden.real)
    finite_im = np.isfinite(actual.imag) & np.isfinite(golden.imag)
    _check_tolerance(actual, golden, where=(finite, finite_im))
