// ascend_linalg dense BLAS: the aclblasCsymm contract (csymm design, section 3.3).
#ifndef ASCEND_LINALG_AL_BLAS_H
#define ASCEND_LINALG_AL_BLAS_H

#include "ascend_linalg/al_types.h"

#ifdef __cplusplus
extern "C" {
#endif

// C := alpha*A*B + beta*C (LEFT, A m x m) or alpha*B*A + beta*C (RIGHT, A n x n).
// All matrices column-major; A symmetric, only the `uplo` triangle is read.
// Validation order (first failure wins):
//   handle -> side -> uplo -> m/n -> alpha/beta -> lda -> ldb -> ldc -> A/B -> C.
// Then m == 0 || n == 0 returns SUCCESS; alpha == 0 && beta == 1 returns without
// launching; alpha == 0 only scales C; beta == 0 never reads C.
// Difference from the design: C == NULL is rejected whenever m, n > 0 (the
// design only rejects it when beta != 0) since C is always written.
alStatus_t alCsymm(alHandle_t handle, alSideMode_t side, alFillMode_t uplo,
                   int64_t m, int64_t n, const alComplex* alpha,
                   const alComplex* A, int64_t lda, const alComplex* B, int64_t ldb,
                   const alComplex* beta, alComplex* C, int64_t ldc);

// Extension: alCsymm with B row-major, B(i, j) at B[i*ldb + j] (ldb >= max(1, n);
// validated in the same order, ldb against n). Lets a row-major (C-ordered) B be
// used where it lies. Devices that do not share host memory (the NPU) return
// AL_STATUS_NOT_SUPPORTED after validation and the quick returns.
alStatus_t alCsymmRowMajorB(alHandle_t handle, alSideMode_t side, alFillMode_t uplo,
                            int64_t m, int64_t n, const alComplex* alpha,
                            const alComplex* A, int64_t lda, const alComplex* B, int64_t ldb,
                            const alComplex* beta, alComplex* C, int64_t ldc);

#ifdef __cplusplus
}
#endif
#endif
