// csymm tiling: a pure function of the problem and a platform description,
// producing the plain struct every device's kernel reads (design 3.3.3-3.3.4).
#ifndef ASCEND_LINALG_CSYMM_TILING_H
#define ASCEND_LINALG_CSYMM_TILING_H

#include <cstdint>

namespace al {

// alpha/beta fast paths of the fused epilogue (design 3.3.3 alphaBetaMode).
enum CsymmAlphaBetaMode : int32_t {
    CSYMM_AB_GENERAL = 0,     // C = alpha*P + beta*C
    CSYMM_AB_ALPHA_ZERO = 1,  // C = beta*C (no product; beta == 0 writes zeros)
    CSYMM_AB_BETA_ZERO = 2,   // C = alpha*P, C never read
    CSYMM_AB_BETA_ONE = 3,    // C = alpha*P + C
};

// What a tiling is sized against. Byte sizes of the on-chip buffers a tile must
// fit in; on the CPU they are the cache levels the packed panels live in.
struct CsymmPlatform {
    uint32_t coreNum;        // blocks that run at once (cube cores / threads)
    uint32_t alignM;         // blockM/blockN/blockK granularity (Cube: 16)
    uint32_t alignN;
    uint32_t alignK;
    uint64_t l0aBytes;       // A fragment of one multiply step
    uint64_t l0bBytes;       // B fragment of one multiply step
    uint64_t l0cBytes;       // accumulators of one output tile (real+imag planes)
    uint64_t l1Bytes;        // packed A and B panels of one K step
    uint64_t ubBytes;        // epilogue / mirror buffer
};

CsymmPlatform csymmPlatformAscend950();            // DAV_3510 limits from the design
CsymmPlatform csymmPlatformCpu(uint32_t threads);  // this machine's caches

// Plain, fixed-width tiling data (design 3.3.4). Column-major, element units.
struct CsymmTilingData {
    int64_t m, n, k;            // C is m x n; k = (side == LEFT ? m : n)
    int64_t lda, ldb, ldc;      // leading dimensions
    float alphaReal, alphaImag;
    float betaReal, betaImag;
    int32_t side;               // AL_SIDE_LEFT / AL_SIDE_RIGHT
    int32_t uplo;               // AL_FILL_UPPER / AL_FILL_LOWER
    int32_t alphaBetaMode;      // CsymmAlphaBetaMode
    int32_t blockM, blockN, blockK;  // output tile blockM x blockN, K step blockK
    int32_t tilesM, tilesN;     // tile grid over C: ceil(m/blockM) x ceil(n/blockN)
    int32_t tailM, tailN, tailK;     // extent of the last tile in each dimension
    int32_t usedCoreNum;        // blocks launched (<= platform coreNum, <= tiles)
    int32_t reserved;
    int64_t workspaceSize;      // bytes of device workspace the kernel needs
};

// Fill every field from the (already validated) problem. Never fails.
CsymmTilingData csymmTiling(int32_t side, int32_t uplo, int64_t m, int64_t n,
                            int64_t lda, int64_t ldb, int64_t ldc,
                            float alphaRe, float alphaIm, float betaRe, float betaIm,
                            const CsymmPlatform& platform);

}  // namespace al

#endif
