// ascend_linalg sparse: y := alpha*op(A)*X + beta*Y for CSR A (aclsparseSpMV semantics).
#ifndef ASCEND_LINALG_AL_SPARSE_H
#define ASCEND_LINALG_AL_SPARSE_H

#include "ascend_linalg/al_types.h"

#ifdef __cplusplus
extern "C" {
#endif

// A plain CSR description: rows x cols, row r holds indices/values
// [indptr[r], indptr[r+1]). indptr has rows+1 entries, indices/values nnz entries.
typedef struct {
    int64_t rows, cols, nnz;
    const void* indptr;
    const void* indices;
    const void* values;
    alIndexType_t indexType;   // type of both indptr and indices
    alDataType_t valueType;
} alCsrDescr;

// A dense block of `nvec` vectors of length `len`: element (i, v) lives at
// data[i*rowStride + v*colStride] (strides in elements, may be any sign-free layout).
typedef struct {
    int64_t len, nvec;
    int64_t rowStride, colStride;
    void* data;
    alDataType_t type;
} alDnMatDescr;

// Y := alpha*op(A)*X + beta*Y, op = N (A) or T (A^T, no conjugation).
// X has op(A).cols rows, Y op(A).rows rows, both `nvec` columns.
// alpha/beta point to one scalar of `computeType` (complex: {re, im}).
// beta == 0 never reads Y. Malformed structure (indptr not non-decreasing from 0,
// indptr[rows] > nnz, an index outside [0, cols)) -> INVALID_VALUE, never an
// out-of-bounds read; Y may then hold partial results.
// Validation order: handle -> op -> types -> sizes -> pointers -> structure.
alStatus_t alSpmv(alHandle_t handle, alOperation_t op, const void* alpha,
                  const alCsrDescr* A, const alDnMatDescr* X, const void* beta,
                  alDnMatDescr* Y, alDataType_t computeType);

#ifdef __cplusplus
}
#endif
#endif
