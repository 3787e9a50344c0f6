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
// Types: X, Y and computeType one of float32/64, complex64/128, int32/64; the
// values of that type too, or stored narrower and widened exactly as read:
// float16/bfloat16 under float32 compute; and, on the CPU device with int32
// indices, int8/bool (AL_R_8I, AL_B_8) under float32 or float64 compute and
// float32/int32/int64 under float64 (else NOT_SUPPORTED).
// beta == 0 never reads Y. Malformed structure (indptr not non-decreasing from 0,
// indptr[rows] > nnz, an index outside [0, cols)) -> INVALID_VALUE, never an
// out-of-bounds read, also for an empty Y (no rows or no columns); Y may then
// hold partial results.
// Validation order: handle -> op -> types -> sizes -> pointers -> structure.
alStatus_t alSpmv(alHandle_t handle, alOperation_t op, const void* alpha,
                  const alCsrDescr* A, const alDnMatDescr* X, const void* beta,
                  alDnMatDescr* Y, alDataType_t computeType);

// A device-resident copy of one CSR matrix (indptr, indices, values), kept
// between calls so that a matrix used for many products (an iterative solver)
// is uploaded once. Owned by the caller; destroy it before the handle it was
// used with. Thread-safe: calls on several threads may share one.
typedef struct alCsrResident* alCsrResident_t;
alStatus_t alCsrResidentCreate(alCsrResident_t* resident);
alStatus_t alCsrResidentDestroy(alCsrResident_t resident);  // frees its device memory

// alSpmv, with A's arrays read from `resident`'s device copy when that copy was
// made on this handle's device from a matrix of the same rows, cols, nnz and
// types and, when `verify` is nonzero, the same fingerprint of A's host bytes
// (host/fingerprint.h, computed on every call). Otherwise A is uploaded into
// `resident` first, replacing what it held. With `verify == 0` the caller
// guarantees that A's host arrays hold what they held at the last upload.
// On a device that reads host memory (the CPU) `resident` is not used.
alStatus_t alSpmvResident(alHandle_t handle, alOperation_t op, const void* alpha,
                          const alCsrDescr* A, alCsrResident_t resident, int verify,
                          const alDnMatDescr* X, const void* beta,
                          alDnMatDescr* Y, alDataType_t computeType);

typedef struct {
    uint64_t uploads;      // times A was uploaded into it
    uint64_t deviceBytes;  // device memory it holds now
} alCsrResidentInfo;
alStatus_t alCsrResidentGetInfo(alCsrResident_t resident, alCsrResidentInfo* info);

#ifdef __cplusplus
}
#endif
#endif
