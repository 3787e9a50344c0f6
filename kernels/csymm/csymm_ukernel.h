// csymm micro-kernels: the contract every ISA variant implements, and the
// run-time dispatch. Internal to kernels/csymm (not part of the kernel entry).
//
// Micro-kernel contract (BLIS style, complex planar):
//   a: one packed MR-row micro-panel, kc steps; step p holds MR reals then MR
//      imaginaries (csymmPackPanels with w = MR). 64-byte aligned.
//   b: one packed NR-column micro-panel, kc steps; step p holds NR reals then NR
//      imaginaries (w = NR).
//   P := a * b (MR x NR complex, float32 accumulation: per step four real
//   products, Pre += ar*br - ai*bi, Pim += ar*bi + ai*br), then the fused epilogue
//   writes the top-left mv x nv corner (mv <= MR, nv <= NR) of interleaved C
//   (column-major, ldc in complex elements):
//     BETA_ZERO:    C := alpha*P          (C is never read)
//     BETA_ONE:     C := alpha*P + C
//     BETA_GENERAL: C := alpha*P + beta*C
//   Nothing outside the mv x nv corner is read or written.
#ifndef ASCEND_LINALG_KERNELS_CSYMM_UKERNEL_H
#define ASCEND_LINALG_KERNELS_CSYMM_UKERNEL_H

#include <cmath>
#include <cstdint>

namespace al {

struct CsymmTilingData;

enum CsymmUkBeta : int32_t {
    CSYMM_UK_BETA_ZERO = 0,
    CSYMM_UK_BETA_ONE = 1,
    CSYMM_UK_BETA_GENERAL = 2,
};

struct CsymmEpilogue {
    float alphaRe, alphaIm;
    float betaRe, betaIm;
    int32_t betaMode;  // CsymmUkBeta
};

using CsymmUkernelFn = void (*)(int64_t kc, const float* a, const float* b, float* c,
                                int64_t ldc, int32_t mv, int32_t nv, const CsymmEpilogue& ep);

// One micro-kernel with its register tile and the cache blocking tuned for it
// (the BLIS "context": kc keeps a B micro-panel in L1, mc*kc of A in L2, nc*kc
// of B in L3). mc is a multiple of mr, nc of nr.
struct CsymmUkernel {
    const char* name;   // op_isa_MRxNR
    int32_t mr, nr;
    int32_t mc, kc, nc;
    CsymmUkernelFn fn;
};

void csymm_ukernel_baseline_8x4(int64_t, const float*, const float*, float*, int64_t, int32_t,
                                int32_t, const CsymmEpilogue&);
void csymm_ukernel_avx2_8x6(int64_t, const float*, const float*, float*, int64_t, int32_t,
                            int32_t, const CsymmEpilogue&);
void csymm_ukernel_avx512_16x12(int64_t, const float*, const float*, float*, int64_t, int32_t,
                                int32_t, const CsymmEpilogue&);

// Every variant this binary has, best first, and whether this CPU can run it.
// `count` receives the table length.
const CsymmUkernel* csymmUkernelTable(int* count);
bool csymmUkernelSupported(const CsymmUkernel& uk);
// The best supported variant (decided once, __builtin_cpu_supports).
const CsymmUkernel& csymmUkernelSelect();

// csymm_kernel_packed_cpu with an explicit micro-kernel (tests and benchmarks
// run every supported variant through the same blocked loops).
void csymmPackedRun(const CsymmUkernel& uk, uint32_t blockIdx, uint32_t numBlocks,
                    void* const* args, const void* tiling);
// csymmPackedWorkspaceBytes / csymmPackedWorkspaceInit (csymm_kernel.h) for a
// run with an explicit micro-kernel (the layout depends on its mr, mc, kc).
int64_t csymmPackedWorkspaceBytesFor(const CsymmUkernel& uk, const CsymmTilingData& t);
void csymmPackedWorkspaceInitFor(const CsymmUkernel& uk, void* ws, const CsymmTilingData& t);

// Scalar epilogue for an accumulator tile held in memory (accRe/accIm column
// j at [j*ldAcc]); used by every variant for partial tiles. `static` so that
// each ISA translation unit keeps its own copy: an inline function compiled
// with -mavx512f must never be the one the linker picks for baseline code.
// Fused: the rounding of the vector kernels' full-tile epilogue, element by
// element (alpha and beta products as fmsub/fmadd against one rounded
// product, as their _mm*_fmsub_ps / fmaddsub_ps), so that an element of C gets
// the same bits in a partial tile as in a full one, and results do not depend
// on where the work split puts the micro-tile edges. The baseline kernel uses
// the plain form for all its tiles.
template <bool Fused>
static inline void csymmEpilogueScalar(const float* accRe, const float* accIm, int32_t ldAcc,
                                       float* c, int64_t ldc, int32_t mv, int32_t nv,
                                       const CsymmEpilogue& ep) {
    for (int32_t j = 0; j < nv; ++j) {
        float* cj = c + 2 * j * ldc;
        for (int32_t i = 0; i < mv; ++i) {
            const float pr = accRe[j * ldAcc + i], pi = accIm[j * ldAcc + i];
            float outR, outI;
            if constexpr (Fused) {
                outR = std::fma(ep.alphaRe, pr, -(ep.alphaIm * pi));
                outI = std::fma(ep.alphaRe, pi, ep.alphaIm * pr);
            } else {
                outR = ep.alphaRe * pr - ep.alphaIm * pi;
                outI = ep.alphaRe * pi + ep.alphaIm * pr;
            }
            if (ep.betaMode == CSYMM_UK_BETA_ONE) {
                outR += cj[2 * i];
                outI += cj[2 * i + 1];
            } else if (ep.betaMode == CSYMM_UK_BETA_GENERAL) {
                const float cr = cj[2 * i], ci = cj[2 * i + 1];
                if constexpr (Fused) {
                    outR += std::fma(ep.betaRe, cr, -(ep.betaIm * ci));
                    outI += std::fma(ep.betaRe, ci, ep.betaIm * cr);
                } else {
                    outR += ep.betaRe * cr - ep.betaIm * ci;
                    outI += ep.betaRe * ci + ep.betaIm * cr;
                }
            }
            cj[2 * i] = outR;
            cj[2 * i + 1] = outI;
        }
    }
}

}  // namespace al

#endif
