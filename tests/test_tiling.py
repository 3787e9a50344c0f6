"""csymm tiling is a pure function: the NPU platform's choice fits the csymm
design's DAV_3510 limits for every shape class, and the CPU device runs the
same struct."""
import itertools

import numpy as np
import pytest

from ascend_linalg import _core

LEFT, RIGHT, UPPER, LOWER = 141, 142, 121, 122
KB = 1024
SIZES = [1, 2, 15, 16, 17, 100, 255, 256, 257, 1000, 1024, 4096, 12345]


@pytest.mark.parametrize("side", [LEFT, RIGHT])
def test_ascend950_tiling_fits_buffers(side):
    for m, n in itertools.product(SIZES, SIZES):
        t = _core.csymm_tiling(side, UPPER, m, n, platform="ascend950")
        p = t["platform"]
        assert (p["l0aBytes"], p["l0bBytes"], p["l0cBytes"], p["l1Bytes"], p["ubBytes"]) == (
            64 * KB, 64 * KB, 256 * KB, 512 * KB, 248 * KB)
        bm, bn, bk = t["blockM"], t["blockN"], t["blockK"]
        assert bm % 16 == 0 and bn % 16 == 0 and bk % 16 == 0  # Cube 16x16x16
        plane = 4  # float32 real or imaginary plane
        assert 2 * bm * bk * plane <= p["l0aBytes"]
        assert 2 * bk * bn * plane <= p["l0bBytes"]
        assert 2 * bm * bn * plane <= p["l0cBytes"]
        assert 8 * (bm + bn) * bk <= p["l1Bytes"]
        assert t["tilesM"] == -(-m // bm) and t["tilesN"] == -(-n // bn)
        assert 0 < t["tailM"] <= bm and 0 < t["tailN"] <= bn
        k = m if side == LEFT else n
        assert t["k"] == k and 0 < t["tailK"] <= bk
        assert 1 <= t["usedCoreNum"] <= min(p["coreNum"], t["tilesM"] * t["tilesN"])


def test_small_problems_use_fewer_cores():
    t = _core.csymm_tiling(LEFT, UPPER, 16, 16, platform="ascend950")
    assert t["usedCoreNum"] == 1
    big = _core.csymm_tiling(LEFT, LOWER, 1024, 1024, platform="ascend950")
    assert big["usedCoreNum"] == big["platform"]["coreNum"]


@pytest.mark.parametrize("alpha,beta,mode", [(1, 0, 2), (1, 1, 3), (0, 5, 1), (0, 0, 1),
                                             (2j, 1j, 0), (1, -0.0 + 1e-30j, 0)])
def test_alpha_beta_mode(alpha, beta, mode):
    assert _core.csymm_tiling(LEFT, UPPER, 8, 8, alpha=alpha, beta=beta)["alphaBetaMode"] == mode


def test_cpu_device_runs_the_same_struct_shape():
    # The CPU platform tiles every shape into a grid covering C exactly.
    for m, n in [(1, 1), (17, 300), (300, 17), (1024, 1024)]:
        t = _core.csymm_tiling(RIGHT, LOWER, m, n, platform="cpu", threads=2)
        assert (t["tilesM"] - 1) * t["blockM"] + t["tailM"] == m
        assert (t["tilesN"] - 1) * t["blockN"] + t["tailN"] == n
        # Up to blocksPerCore (4) blocks per thread, never more than tiles.
        assert 1 <= t["usedCoreNum"] <= min(2 * 4, t["tilesM"] * t["tilesN"])
    assert np.iinfo(np.int32).max >= t["blockK"] > 0


def test_cpu_small_products_run_on_one_block():
    # Below minFlopsPerCore (8 Mflop) per thread a second thread costs more
    # (waking it) than it saves; large products use several blocks per thread.
    small = _core.csymm_tiling(LEFT, UPPER, 64, 64, platform="cpu", threads=2)
    assert small["usedCoreNum"] == 1
    big = _core.csymm_tiling(LEFT, UPPER, 1024, 1024, platform="cpu", threads=2)
    assert big["usedCoreNum"] == 8
    npu = _core.csymm_tiling(LEFT, UPPER, 64, 64, platform="ascend950")
    assert npu["usedCoreNum"] == npu["tilesM"] * npu["tilesN"] <= npu["platform"]["coreNum"]


@pytest.mark.parametrize("trans", [False, True])
def test_spmv_cpu_small_products_run_on_one_block(trans):
    # Under 2^18 rows + nonzeros (times vectors) a CPU product is one block
    # whatever the thread count (waking a worker cost more than it saved in
    # solver loops); at 2^18, several: up to 4 per thread non-transposed,
    # one per thread transposed, at least 16384 rows + nonzeros each.
    below = (1 << 18) - 1
    for threads in (1, 2, 4):
        assert _core.spmv_tiling(trans, 1000, 1000, below - 1000, threads=threads)["usedCoreNum"] == 1
    at = _core.spmv_tiling(trans, 1000, 1000, (1 << 18) - 1000, threads=2)["usedCoreNum"]
    assert at == (2 if trans else 8)
    assert _core.spmv_tiling(trans, 1000, 1000, (1 << 17) - 1000, nvec=2, threads=2)["usedCoreNum"] > 1
    assert _core.spmv_tiling(trans, 1000, 1000, (1 << 17) - 1000, nvec=1, threads=2)["usedCoreNum"] == 1
    # the Ascend platform keeps one block per 16384 rows + nonzeros
    assert _core.spmv_tiling(trans, 1000, 1000, 40_000, platform="ascend", threads=8)["usedCoreNum"] == 2
