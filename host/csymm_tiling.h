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

// CsymmTilingData::cpuFlags: what only the CPU kernels (csymm_kernel.h) read.
enum CsymmCpuFlags : int32_t {
    CSYMM_CPU_SHARED_PACK = 1,  // args[3] is csymm_kernel_packed's shared-L workspace
    CSYMM_CPU_B_ROW_MAJOR = 2,  // B(i, j) at B[i*ldb + j] (alCsymmRowMajorB)
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
    // Real flops (8mnk) a core must get before another core is used: on the
    // CPU, waking a pool thread costs tens of microseconds, more than a small
    // product takes. 0: no minimum (the NPU's cores start with the launch).
    uint64_t minFlopsPerCore = 0;
    // Blocks launched per core (at most one per tile). On the CPU several: the
    // pool hands blocks out as threads come free, so a core that another
    // process (another BLAS's spinning threads, say) holds for a while costs
    // its share of small blocks, not the whole product.
    uint32_t blocksPerCore = 1;
};

CsymmPlatform csymmPlatformAscend950();            // DAV_3510 limits from the design
CsymmPlatform csymmPlatformAscend(uint32_t cores); // the same, with the device's core count
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
    int32_t cpuFlags;           // CPU kernels only (CsymmCpuFlags; set by the host, 0 from csymmTiling)
    int64_t workspaceSize;      // bytes of device workspace the Ascend C kernel needs (layout below)
};

// Functions the Ascend C kernels call too (they include this header after
// kernel_operator.h, which defines __aicore__).
#ifdef __aicore__
#define AL_TILING_FN __aicore__ inline
#else
#define AL_TILING_FN inline
#endif

// Device workspace of the Ascend C kernel (kernels/csymm/arch35), which the
// host allocates on devices with their own memory and passes as the fourth
// GM_ADDR (the CPU kernels ignore it). C = L * R with L m x k and R k x n
// (LEFT: L = sym(A), R = B; RIGHT: L = B, R = sym(A)); in planar float32:
//   Cr = [Lr | -Li] * [Rr ; Ri],   Ci = [Lr | Li] * [Ri ; Rr]
// two real products of depth 2k. Offsets in float elements from the end of
// the Matmul API's system area (kCsymmSysWorkspaceBytes), column-major:
//   l1 = [Lr | -Li], l2 = [Lr | Li]   (m x 2k each)
//   r1 = [Rr ; Ri],  r2 = [Ri ; Rr]   (2k x n each)
//   acc: per block the real and imaginary blockM x blockN result tiles.
constexpr int64_t kCsymmSysWorkspaceBytes = int64_t(16) << 20;
struct CsymmWorkspaceLayout {
    int64_t l1, l2, r1, r2, acc;  // float offsets
    int64_t bytes;                // total, system area included
};
AL_TILING_FN CsymmWorkspaceLayout csymmWorkspaceLayout(int64_t m, int64_t n, int64_t k, int64_t blockM,
                                                      int64_t blockN, int64_t blocks) {
    CsymmWorkspaceLayout w;
    w.l1 = 0;
    w.l2 = w.l1 + m * 2 * k;
    w.r1 = w.l2 + m * 2 * k;
    w.r2 = w.r1 + 2 * k * n;
    w.acc = w.r2 + 2 * k * n;
    w.bytes = kCsymmSysWorkspaceBytes + (w.acc + blocks * 2 * blockM * blockN) * 4;
    return w;
}

// Fill every field from the (already validated) problem. Never fails.
// workspaceSize is csymmWorkspaceLayout(...).bytes (0 when m or n is 0).
CsymmTilingData csymmTiling(int32_t side, int32_t uplo, int64_t m, int64_t n,
                            int64_t lda, int64_t ldb, int64_t ldc,
                            float alphaRe, float alphaIm, float betaRe, float betaIm,
                            const CsymmPlatform& platform);

}  // namespace al

#endif
