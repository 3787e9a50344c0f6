// Merge-path SpMV kernels for the CPU. Same entry contract as spmv_kernel.h
// (args = {indptr, indices, values, X, Y, workspace}; int32 status word at the
// workspace start set to 1 on malformed structure; never an out-of-bounds read),
// with the workspace laid out as SpmvTilingData's carry/part/page fields say.
// The host must have checked indptr[0] == 0 and 0 <= indptr[rows] <= nnz.
//
// Work is split by rows + nonzeros (merge path, Merrill & Garland 2016): block b
// takes the b-th equal share of the path, found by binary search over indptr,
// so a dense row or a run of empty rows cannot stall a block.
#ifndef ASCEND_LINALG_KERNELS_SPMV_KERNEL_MERGE_H
#define ASCEND_LINALG_KERNELS_SPMV_KERNEL_MERGE_H

#include <cstdint>

#include "spmv_arith.h"

namespace al {

// Non-transposed, two launches. spmv_kernel_merge_cpu (usedCoreNum blocks):
// rows completed inside a block are written with the alpha/beta epilogue; a
// row begun by an earlier block (shared head) and the row left open at the
// block's end (tail) go to the block's carry slots. spmv_fixup_merge_cpu
// (launch 1 block) sums each split row's parts in block order and writes it.
void spmv_kernel_merge_cpu(uint32_t blockIdx, uint32_t numBlocks, void* const* args, const void* tiling);
void spmv_fixup_merge_cpu(uint32_t blockIdx, uint32_t numBlocks, void* const* args, const void* tiling);

// Transposed, two launches, no atomics. spmvt_kernel_merge_cpu (usedCoreNum
// blocks) scatters its share into its own partial, zeroing a page of it on
// first touch; spmvt_reduce_merge_cpu (any block count) sums the touched pages
// over column ranges in block order (deterministic) and applies alpha/beta.
void spmvt_kernel_merge_cpu(uint32_t blockIdx, uint32_t numBlocks, void* const* args, const void* tiling);
void spmvt_reduce_merge_cpu(uint32_t blockIdx, uint32_t numBlocks, void* const* args, const void* tiling);
// The binned transposed product (spmvt_bins.h; CPU only), per chunk of the
// matrix: spmvt_bin_cpu then spmvt_drain_cpu, the same blocks, tiling a
// SpmvBinTiling (host/spmv_tiling.h).
void spmvt_bin_cpu(uint32_t blockIdx, uint32_t numBlocks, void* const* args, const void* tiling);
void spmvt_drain_cpu(uint32_t blockIdx, uint32_t numBlocks, void* const* args, const void* tiling);
// The column-split transposed product (spmvt_split.h; CPU only): one launch
// per phase, tiling a SpmvSplitTiling (host/spmv_tiling.h).
void spmvt_split_cpu(uint32_t blockIdx, uint32_t numBlocks, void* const* args, const void* tiling);

// X's rows packed row-major for the non-transposed kernel on the CPU, which
// reads a row of X per nonzero, at random: args = {X, dst}; rows [0, cols)
// split over the blocks; dst[r * nvec + v] := X[r * xRowStride + v *
// xColStride], elements of valueType. The host launches it when X's rows are
// strided (Fortran order, a column slice), so the copy runs on every core
// rather than in numpy's single thread before the call.
void spmv_pack_rows_cpu(uint32_t blockIdx, uint32_t numBlocks, void* const* args, const void* tiling);

// Instruction set the float32/float64 dot products were compiled for here.
const char* spmvMergeIsa();

// Test hook: dst[i] := the baseline build's float32 value of 16-bit value
// src[i] (store AL_R_16F or AL_R_16BF), read through its dot product (one
// nonzero against x = 1.0 from +0.0), as on a CPU without AVX2/F16C.
void spmvWidenBaseline(int32_t store, const uint16_t* src, float* dst, int64_t n);
// n float16 values (their bits) to float32, exactly (F16C where the CPU has
// it): the float16 x of the mixed-precision modes, which numpy widens slowly.
void spmvWidenF16(const uint16_t* src, float* dst, int64_t n);
const char* spmvWidenF16Isa();
// Test hook: whether the row loops would treat nonzeros [lo, hi) as scattered
// (x, or the transposed partial, prefetched per nonzero) rather than
// streaming; stride is x's element stride. A performance choice only.
bool spmvScattered32(const int32_t* idx, int64_t lo, int64_t hi, int64_t stride);
bool spmvScattered64(const int64_t* idx, int64_t lo, int64_t hi, int64_t stride);
// Test and benchmark hook: x prefetched inside long rows (the AVX2 dot
// products of A x): -1 by their rule (the default), 0 never, 1 in every row
// long enough to look ahead in. A performance choice only.
void spmvRowPrefetchForce(int32_t mode);

namespace spmvm {
// Per-ISA checked dot products for float32/float64 (index int32/int64):
// sum val[k] * x[idx[k] * xs] over [ka, kb); an index outside [0, cols) sets
// *bad and contributes nothing read out of bounds. cols > 0.
template <class T, class I, class V = T> struct DotEntry {
    T (*dot)(const V* val, const I* idx, int64_t ka, int64_t kb, const T* x, int64_t xs, uint64_t cols, int* bad);
    // nvec == 1: full rows [ra, rb) (nonzeros clamped to [kLo, kHi]) with the
    // epilogue into y[r * ys]; returns nonzero on malformed structure.
    int (*rows)(const I* indptr, const I* idx, const V* val, const T* x, int64_t xs, T* y, int64_t ys,
                int64_t ra, int64_t rb, int64_t kLo, int64_t kHi, uint64_t cols, T alpha, T beta, int32_t mode,
                int32_t plan);
};
struct DotTable {
    DotEntry<float, int32_t> f32i32;
    DotEntry<float, int64_t> f32i64;
    DotEntry<double, int32_t> f64i32;
    DotEntry<double, int64_t> f64i64;
    // float16/bfloat16 values widened to float32 as read (scalar sums; the
    // AVX2 build converts float16 with F16C, so it needs that flag too)
    DotEntry<float, int32_t, Half> h16i32;
    DotEntry<float, int64_t, Half> h16i64;
    DotEntry<float, int32_t, BHalf> b16i32;
    DotEntry<float, int64_t, BHalf> b16i64;
    void (*widenF16)(const Half* src, float* dst, int64_t n);  // exact float16 -> float32
    const char* isa;
};
const DotTable& dotBaseline();
const DotTable* dotAvx2();  // nullptr when not compiled in

// The transposed kernel's two launches, per ISA build.
struct SpmvtTable {
    void (*scatter)(uint32_t blockIdx, uint32_t numBlocks, void* const* args, const void* tiling);
    void (*reduce)(uint32_t blockIdx, uint32_t numBlocks, void* const* args, const void* tiling);
    void (*bin)(uint32_t blockIdx, uint32_t numBlocks, void* const* args, const void* tiling);
    void (*drain)(uint32_t blockIdx, uint32_t numBlocks, void* const* args, const void* tiling);
    void (*split)(uint32_t blockIdx, uint32_t numBlocks, void* const* args, const void* tiling);
    const char* isa;
};
const SpmvtTable* spmvtAvx2();  // nullptr when not compiled in
}  // namespace spmvm

}  // namespace al

#endif
