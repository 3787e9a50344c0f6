// csymm packing: copies a block of an operand into planar micro-panels the
// micro-kernels stream (BLIS packm, OpenBLAS symm_*copy). Structure lives here:
// a symmetric operand is read from its stored triangle only and mirrored while
// packing, so the micro-kernel is a plain complex GEMM.
#ifndef ASCEND_LINALG_KERNELS_CSYMM_PACK_H
#define ASCEND_LINALG_KERNELS_CSYMM_PACK_H

#include <cstdint>

namespace al {

enum CsymmOperandKind : int32_t {
    CSYMM_OPERAND_GENERAL = 0,    // X(r, p) = base[r*rs + p*cs]
    CSYMM_OPERAND_SYM_UPPER = 1,  // X(r, p) = base[min(r,p) + max(r,p)*ld] (upper stored)
    CSYMM_OPERAND_SYM_LOWER = 2,  // X(r, p) = base[max(r,p) + min(r,p)*ld] (lower stored)
};

// A logical matrix X(r, p) over interleaved complex64 storage (strides and ld
// in complex elements). For the left operand r is the row of C, for the right
// operand r is the column of C; p is always the summation index.
struct CsymmOperand {
    const float* base;
    int64_t rs, cs;  // GENERAL only
    int64_t ld;      // SYM only
    int32_t kind;    // CsymmOperandKind
};

// Packs X(r0 .. r0+rows-1, p0 .. p0+kc-1) into ceil(rows/w) micro-panels of w
// rows: panel q starts at dst + q*kc*2*w; its step p holds w reals then w
// imaginaries. Rows past `rows` in the last panel are zero. Reads exactly the
// elements of X in range (for SYM: the stored triangle only). Writes
// ceil(rows/w)*kc*2*w floats.
void csymmPackPanels(float* dst, const CsymmOperand& X, int64_t r0, int64_t rows,
                     int64_t p0, int64_t kc, int32_t w);

// The strided-rectangle step of csymmPackPanels, vectorised for AVX2
// (csymm_pack_avx2.cpp, compiled with -mavx2 where the build has AL_CPU_DISPATCH;
// called only when __builtin_cpu_supports("avx2")). For r < rv (rv <= w) and
// p in [pa, pb): panel[(p-p0)*2w + r] = re X(rb+r, p), panel[... + w + r] = im,
// with X(rb+r, p) = base[(rb+r)*rs + p*cs] (complex elements). Handles rs == 1
// or cs == 1 and returns true; any other stride: returns false, writes nothing.
bool csymmPackRectAvx2(float* panel, int32_t w, const float* base, int64_t rs, int64_t cs,
                       int64_t rb, int32_t rv, int64_t pa, int64_t pb, int64_t p0);

// Whether csymmPackPanels uses the AVX2 step in this process (decided once).
// ASCEND_LINALG_CSYMM_PACK=scalar in the environment forces the portable packer (tests
// compare the two).
bool csymmPackVectorised();

}  // namespace al

#endif
