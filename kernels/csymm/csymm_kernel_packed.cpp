// Packed csymm kernel for the CPU: BLIS five-loop blocking over this block's
// share of C, symmetric structure absorbed by packing (csymm_pack.h), a
// run-time selected register micro-kernel (csymm_ukernel.h) with the alpha/beta
// epilogue fused into its store.
//
// side x uplo reduce to one product C = alpha * L * R + beta * C:
//   LEFT:  L = sym(A) (m x m), R = B (m x n)
//   RIGHT: L = B (m x n),      R = sym(A) (n x n)
// The right operand is packed transposed (X_R(j, p) = R(p, j)), so one packer
// and one micro-kernel serve all four cases.
//
// Work split: the tilesM x tilesN grid of the tiling is cut into gm x gn
// rectangles of whole tiles (gm * gn == numBlocks), one per block, so each block
// packs its B panel once and streams all its rows against it. When numBlocks
// does not factor onto the grid, block b takes tiles b, b + numBlocks, ...
//
// Beta is applied on the first K block (the only one that may read C; with
// beta == 0 C is only written); later K blocks accumulate with beta == 1.
#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "../../host/csymm_tiling.h"
#include "ascend_linalg/al_types.h"
#include "csymm_kernel.h"
#include "csymm_pack.h"
#include "csymm_ukernel.h"

namespace al {

namespace {

// Best first. Cache blocks: kc so that a B micro-panel (kc*nr*8 bytes) sits in
// a 32 KB L1 beside the streamed A; mc*kc*8 bytes of A in a 512 KB L2 (measured
// on Zen for AVX2: kc=256, mc=128 is the best of kc 128..512 x mc 64..256).
// The x86 variants exist only where the build compiled their translation units
// with their -m flags and said so (AL_CPU_DISPATCH, kernels/meson.build).
const CsymmUkernel kUkernels[] = {
#if defined(AL_CPU_DISPATCH) && (defined(__x86_64__) || defined(__i386__))
    {"csymm_ukernel_avx512_16x12", 16, 12, 144, 192, 1536, csymm_ukernel_avx512_16x12},
    {"csymm_ukernel_avx2_8x6", 8, 6, 128, 256, 1536, csymm_ukernel_avx2_8x6},
#endif
    {"csymm_ukernel_baseline_8x4", 8, 4, 64, 256, 1536, csymm_ukernel_baseline_8x4},
};

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Per-thread packing buffers, grown on demand and kept across launches (the
// pool's workers persist). 64-byte aligned for the micro-kernels' vector loads.
struct PackBuffer {
    float* data = nullptr;
    size_t floats = 0;
    ~PackBuffer() { std::free(data); }
    float* reserve(size_t n) {
        if (n <= floats) return data;
        std::free(data);
        data = static_cast<float*>(std::aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64));
        floats = data ? n : 0;
        return data;
    }
};
thread_local PackBuffer tlsPackL, tlsPackR;

struct Rect {
    int64_t i0, i1, j0, j1;  // rows [i0, i1), columns [j0, j1) of C
};

struct Problem {
    CsymmOperand L, R;
    float* C;
    int64_t ldc, k;
    CsymmEpilogue first;  // epilogue of the first K block
};

// C := beta * C over a rectangle (alpha == 0); beta == 0 writes zeros unread.
void scaleRect(const CsymmTilingData& t, float* C, const Rect& r) {
    const bool zero = t.betaReal == 0.0f && t.betaImag == 0.0f;
    for (int64_t j = r.j0; j < r.j1; ++j) {
        float* c = C + 2 * (r.i0 + j * t.ldc);
        if (zero) {
            std::memset(c, 0, sizeof(float) * 2 * (r.i1 - r.i0));
            continue;
        }
        for (int64_t i = 0; i < r.i1 - r.i0; ++i) {
            const float cr = c[2 * i], ci = c[2 * i + 1];
            c[2 * i] = t.betaReal * cr - t.betaImag * ci;
            c[2 * i + 1] = t.betaReal * ci + t.betaImag * cr;
        }
    }
}

// The five loops over one rectangle of C. mc/kc/nc are the variant's cache
// blocks, evened out so that no loop ends with a sliver.
void gemmRect(const CsymmUkernel& uk, const Problem& pb, const Rect& r, float* packL,
              float* packR, int64_t mc, int64_t kc, int64_t nc) {
    const int32_t mr = uk.mr, nr = uk.nr;
    for (int64_t jc = r.j0; jc < r.j1; jc += nc) {
        const int64_t ncur = std::min(nc, r.j1 - jc);
        for (int64_t pc = 0; pc < pb.k; pc += kc) {
            const int64_t kcur = std::min(kc, pb.k - pc);
            CsymmEpilogue ep = pb.first;
            if (pc > 0) ep.betaMode = CSYMM_UK_BETA_ONE;
            csymmPackPanels(packR, pb.R, jc, ncur, pc, kcur, nr);
            for (int64_t ic = r.i0; ic < r.i1; ic += mc) {
                const int64_t mcur = std::min(mc, r.i1 - ic);
                csymmPackPanels(packL, pb.L, ic, mcur, pc, kcur, mr);
                for (int64_t jr = 0; jr < ncur; jr += nr) {
                    const float* b = packR + (jr / nr) * kcur * 2 * nr;
                    const int32_t nv = static_cast<int32_t>(std::min<int64_t>(nr, ncur - jr));
                    for (int64_t ir = 0; ir < mcur; ir += mr) {
                        const int32_t mv = static_cast<int32_t>(std::min<int64_t>(mr, mcur - ir));
                        uk.fn(kcur, packL + (ir / mr) * kcur * 2 * mr, b,
                              pb.C + 2 * ((ic + ir) + (jc + jr) * pb.ldc), pb.ldc, mv, nv, ep);
                    }
                }
            }
        }
    }
}

// Evened block size: the fewest blocks of at most `cap`, each a multiple of `unit`.
int64_t evenBlock(int64_t extent, int64_t cap, int64_t unit) {
    const int64_t blocks = ceilDiv(std::max<int64_t>(extent, 1), cap);
    return std::min(cap, ceilDiv(ceilDiv(extent, blocks), unit) * unit);
}

void runRect(const CsymmUkernel& uk, const CsymmTilingData& t, const Problem& pb, const Rect& r) {
    if (r.i0 >= r.i1 || r.j0 >= r.j1) return;
    if (t.alphaBetaMode == CSYMM_AB_ALPHA_ZERO) {
        scaleRect(t, pb.C, r);
        return;
    }
    const int64_t mc = evenBlock(r.i1 - r.i0, uk.mc, uk.mr);
    const int64_t nc = evenBlock(r.j1 - r.j0, uk.nc, uk.nr);
    const int64_t kc = evenBlock(pb.k, uk.kc, 4);
    float* packL = tlsPackL.reserve(static_cast<size_t>(ceilDiv(mc, uk.mr) * uk.mr * kc * 2));
    float* packR = tlsPackR.reserve(static_cast<size_t>(ceilDiv(nc, uk.nr) * uk.nr * kc * 2));
    if (!packL || !packR) {
        // Out of memory: one micro-panel of each operand on the stack (slow, correct).
        alignas(64) float smallL[16 * 64 * 2], smallR[12 * 64 * 2];
        gemmRect(uk, pb, r, smallL, smallR, uk.mr, 64, uk.nr);
        return;
    }
    gemmRect(uk, pb, r, packL, packR, mc, kc, nc);
}

}  // namespace

const CsymmUkernel* csymmUkernelTable(int* count) {
    *count = static_cast<int>(sizeof(kUkernels) / sizeof(kUkernels[0]));
    return kUkernels;
}

bool csymmUkernelSupported(const CsymmUkernel& uk) {
#if defined(AL_CPU_DISPATCH) && (defined(__x86_64__) || defined(__i386__))
    __builtin_cpu_init();
    if (uk.fn == csymm_ukernel_avx512_16x12) return __builtin_cpu_supports("avx512f");
    if (uk.fn == csymm_ukernel_avx2_8x6)
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
    return uk.fn == csymm_ukernel_baseline_8x4;
}

const CsymmUkernel& csymmUkernelSelect() {
    static const CsymmUkernel* chosen = [] {
        int n = 0;
        const CsymmUkernel* table = csymmUkernelTable(&n);
        for (int i = 0; i < n; ++i)
            if (csymmUkernelSupported(table[i])) return &table[i];
        return &table[n - 1];
    }();
    return *chosen;
}

void csymmPackedRun(const CsymmUkernel& uk, uint32_t blockIdx, uint32_t numBlocks,
                    void* const* args, const void* tiling) {
    const auto& t = *static_cast<const CsymmTilingData*>(tiling);
    const float* A = static_cast<const float*>(args[0]);
    const float* B = static_cast<const float*>(args[1]);
    Problem pb{};
    pb.C = static_cast<float*>(args[2]);
    pb.ldc = t.ldc;
    pb.k = t.k;
    const CsymmOperand symA{A, 0, 0, t.lda,
                            t.uplo == AL_FILL_UPPER ? CSYMM_OPERAND_SYM_UPPER : CSYMM_OPERAND_SYM_LOWER};
    if (t.side == AL_SIDE_LEFT) {
        pb.L = symA;
        pb.R = CsymmOperand{B, t.ldb, 1, 0, CSYMM_OPERAND_GENERAL};  // X_R(j, p) = B(p, j)
    } else {
        pb.L = CsymmOperand{B, 1, t.ldb, 0, CSYMM_OPERAND_GENERAL};  // X_L(i, p) = B(i, p)
        pb.R = symA;                                                 // sym(A)^T == sym(A)
    }
    pb.first = CsymmEpilogue{t.alphaReal, t.alphaImag, t.betaReal, t.betaImag,
                             t.alphaBetaMode == CSYMM_AB_BETA_ZERO  ? CSYMM_UK_BETA_ZERO
                             : t.alphaBetaMode == CSYMM_AB_BETA_ONE ? CSYMM_UK_BETA_ONE
                                                                    : CSYMM_UK_BETA_GENERAL};

    // gm x gn split of the tile grid with the smallest largest rectangle;
    // ties go to more column groups (each block then packs less of B).
    const int64_t tilesM = t.tilesM, tilesN = t.tilesN;
    int64_t gm = 0, gn = 0, best = -1;
    for (int64_t g = numBlocks; g >= 1; --g) {
        if (numBlocks % g != 0 || g > tilesN || numBlocks / g > tilesM) continue;
        const int64_t cost = ceilDiv(tilesM, numBlocks / g) * ceilDiv(tilesN, g);
        if (best < 0 || cost < best) {
            best = cost;
            gn = g;
            gm = numBlocks / g;
        }
    }
    if (best >= 0) {
        const int64_t bi = blockIdx / gn, bj = blockIdx % gn;
        const Rect r{tilesM * bi / gm * t.blockM, std::min<int64_t>(tilesM * (bi + 1) / gm * t.blockM, t.m),
                     tilesN * bj / gn * t.blockN, std::min<int64_t>(tilesN * (bj + 1) / gn * t.blockN, t.n)};
        runRect(uk, t, pb, r);
        return;
    }
    for (int64_t tile = blockIdx; tile < tilesM * tilesN; tile += numBlocks) {
        const int64_t i0 = (tile / tilesN) * t.blockM, j0 = (tile % tilesN) * t.blockN;
        runRect(uk, t, pb, Rect{i0, std::min<int64_t>(i0 + t.blockM, t.m), j0,
                                std::min<int64_t>(j0 + t.blockN, t.n)});
    }
}

void csymm_kernel_packed_cpu(uint32_t blockIdx, uint32_t numBlocks, void* const* args,
                             const void* tiling) {
    csymmPackedRun(csymmUkernelSelect(), blockIdx, numBlocks, args, tiling);
}

}  // namespace al
