// csymm tiling: pure functions, no device, no allocation (unit-tested directly).
#include "csymm_tiling.h"

#include <algorithm>

#include "ascend_linalg/al_types.h"

namespace al {

namespace {
constexpr uint64_t kComplexBytes = 8;    // complex64
constexpr uint64_t kPlaneBytes = 4;      // one float32 plane element
constexpr int64_t kMinTile = 16;

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t roundUp(int64_t a, int64_t b) { return ceilDiv(a, b) * b; }
int64_t roundDown(int64_t a, int64_t b) { return std::max<int64_t>(b, a / b * b); }
}  // namespace

CsymmPlatform csymmPlatformAscend950() {
    // DAV_3510 (design 3.3.4 / 3.4.5): Cube 16x16x16, L0A/L0B 64 KB, L0C 256 KB,
    // L1 512 KB, UB 248 KB. The core count is queried at run time on hardware;
    // 32 cube cores is the planning default.
    return CsymmPlatform{32, 16, 16, 16, 64u << 10, 64u << 10, 256u << 10, 512u << 10, 248u << 10};
}

CsymmPlatform csymmPlatformAscend(uint32_t cores) {
    CsymmPlatform p = csymmPlatformAscend950();
    if (cores > 0) p.coreNum = cores;
    return p;
}

CsymmPlatform csymmPlatformCpu(uint32_t threads) {
    // L0A/L0B ~ the L1 data cache share of one micro-panel step; L0C ~ registers
    // plus the C tile kept hot in L2; L1 ~ L2 for packed panels; UB ~ L1d.
    // minFlopsPerCore 8 Mflop: about 150 us of one core's work (a 64^3
    // product measured 2x slower on two threads than on one). blocksPerCore 4.
    return CsymmPlatform{std::max(threads, 1u), 16, 16, 16, 32u << 10, 32u << 10,
                         256u << 10, 1024u << 10, 48u << 10, uint64_t(8) << 20, 4};
}

CsymmTilingData csymmTiling(int32_t side, int32_t uplo, int64_t m, int64_t n,
                            int64_t lda, int64_t ldb, int64_t ldc,
                            float alphaRe, float alphaIm, float betaRe, float betaIm,
                            const CsymmPlatform& p) {
    CsymmTilingData t{};
    t.m = m;
    t.n = n;
    t.k = (side == AL_SIDE_LEFT) ? m : n;
    t.lda = lda;
    t.ldb = ldb;
    t.ldc = ldc;
    t.alphaReal = alphaRe;
    t.alphaImag = alphaIm;
    t.betaReal = betaRe;
    t.betaImag = betaIm;
    t.side = side;
    t.uplo = uplo;
    const bool alphaZero = alphaRe == 0.0f && alphaIm == 0.0f;
    const bool betaZero = betaRe == 0.0f && betaIm == 0.0f;
    const bool betaOne = betaRe == 1.0f && betaIm == 0.0f;
    t.alphaBetaMode = alphaZero ? CSYMM_AB_ALPHA_ZERO
                      : betaZero ? CSYMM_AB_BETA_ZERO
                      : betaOne ? CSYMM_AB_BETA_ONE
                                : CSYMM_AB_GENERAL;

    // Output tile: the largest aligned square whose planar real+imag float32
    // accumulators fit L0C, shrunk until the tile grid gives every core work.
    int64_t tile = kMinTile;
    while ((tile * 2) * (tile * 2) * 2 * kPlaneBytes <= p.l0cBytes) tile *= 2;
    int64_t cores = std::max<uint32_t>(p.coreNum, 1);
    if (p.minFlopsPerCore > 0) {
        const double flops = 8.0 * double(m) * double(n) * double(t.k);
        cores = std::max<int64_t>(1, std::min<int64_t>(cores, static_cast<int64_t>(flops / double(p.minFlopsPerCore))));
    }
    while (tile > kMinTile && ceilDiv(std::max<int64_t>(m, 1), tile) *
                                      ceilDiv(std::max<int64_t>(n, 1), tile) < cores) {
        tile /= 2;
    }
    int64_t bm = std::min(tile, roundUp(std::max<int64_t>(m, 1), p.alignM));
    int64_t bn = std::min(tile, roundUp(std::max<int64_t>(n, 1), p.alignN));
    // K step: planar A (bm x bk) and B (bk x bn) fragments must each fit L0A/L0B,
    // and both packed complex panels must fit L1.
    int64_t bk = roundDown(static_cast<int64_t>(p.l0aBytes / (2 * kPlaneBytes * bm)), p.alignK);
    bk = std::min(bk, roundDown(static_cast<int64_t>(p.l0bBytes / (2 * kPlaneBytes * bn)), p.alignK));
    bk = std::min(bk, roundDown(static_cast<int64_t>(p.l1Bytes / (kComplexBytes * (bm + bn))), p.alignK));
    bk = std::min(bk, roundUp(std::max<int64_t>(t.k, 1), p.alignK));
    t.blockM = static_cast<int32_t>(bm);
    t.blockN = static_cast<int32_t>(bn);
    t.blockK = static_cast<int32_t>(bk);
    t.tilesM = static_cast<int32_t>(ceilDiv(m, bm));
    t.tilesN = static_cast<int32_t>(ceilDiv(n, bn));
    t.tailM = static_cast<int32_t>(m - (t.tilesM > 0 ? (t.tilesM - 1) * bm : 0));
    t.tailN = static_cast<int32_t>(n - (t.tilesN > 0 ? (t.tilesN - 1) * bn : 0));
    int64_t kSteps = ceilDiv(t.k, bk);
    t.tailK = static_cast<int32_t>(t.k - (kSteps > 0 ? (kSteps - 1) * bk : 0));
    int64_t tiles = static_cast<int64_t>(t.tilesM) * t.tilesN;
    const int64_t maxBlocks = cores * std::max<uint32_t>(p.blocksPerCore, 1);
    t.usedCoreNum = static_cast<int32_t>(std::max<int64_t>(1, std::min<int64_t>(tiles, maxBlocks)));
    t.workspaceSize = (m > 0 && n > 0)
                          ? csymmWorkspaceLayout(m, n, t.k, bm, bn, t.usedCoreNum).bytes
                          : 0;
    return t;
}

}  // namespace al
