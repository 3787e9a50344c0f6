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

}  // namespace al

#endif
