// SpMV kernels for the CPU (and the fake ACL runtime). Entry contract:
//   args = {indptr, indices, values, X, Y, workspace}; tiling = SpmvTilingData.
//   trans == 0: Y[r] := alpha * sum_k values[k] * X[indices[k]] + beta*Y[r]
//   trans == 1: Y[c] := alpha * sum_{r,k: indices[k]==c} values[k]*X[r] + beta*Y[c]
//   Every index is checked before it is used: an index outside [0, cols), or an
//   indptr that decreases / leaves [0, nnz], sets the int32 status word at the
//   start of the workspace to 1 and that entry is skipped (never read OOB).
// Kernels never validate arguments: the host did.
#ifndef ASCEND_LINALG_KERNELS_SPMV_KERNEL_H
#define ASCEND_LINALG_KERNELS_SPMV_KERNEL_H

#include <cstdint>

namespace al {

// Reference kernels: rows split evenly over blocks.
// Non-transposed: one launch, block b owns a contiguous row range of Y.
void spmv_kernel_ref_cpu(uint32_t blockIdx, uint32_t numBlocks,
                         void* const* args, const void* tiling);
// Transposed: block b accumulates its row range's contribution into its own
// slice of the workspace (cols x nvec partials); then spmv_reduce_ref_cpu
// (launched with the same block count) sums the partials over column ranges
// in block order (deterministic) and applies alpha/beta.
void spmvt_kernel_ref_cpu(uint32_t blockIdx, uint32_t numBlocks,
                          void* const* args, const void* tiling);
void spmvt_reduce_ref_cpu(uint32_t blockIdx, uint32_t numBlocks,
                          void* const* args, const void* tiling);

}  // namespace al

#endif
