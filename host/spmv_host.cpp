// alSpmv: validate -> quick returns -> tiling -> launch -> structure status.
#include <cstring>
#include <string>

#include "ascend_linalg/al_sparse.h"
#include "context.h"
#include "kernels/spmv/spmv_kernel.h"
#include "spmv_tiling.h"

namespace al {
namespace {

const KernelDesc kSpmvKernel{"spmv_ref", spmv_kernel_ref_cpu};
const KernelDesc kSpmvTKernel{"spmvt_ref", spmvt_kernel_ref_cpu};
const KernelDesc kSpmvTReduce{"spmvt_reduce_ref", spmvt_reduce_ref_cpu};

size_t typeBytes(alDataType_t t) {
    switch (t) {
        case AL_R_32F: case AL_R_32I: return 4;
        case AL_R_64F: case AL_R_64I: case AL_C_32F: return 8;
        case AL_C_64F: return 16;
        default: return 0;  // not a compute type of this op
    }
}

bool bytesEqual(const void* v, const void* w, size_t n) { return std::memcmp(v, w, n) == 0; }

// beta compared bit-wise against 0 and 1 of its type (-0.0 counts as general).
int32_t betaMode(const void* beta, alDataType_t t) {
    unsigned char zero[16] = {0}, one[16] = {0};
    switch (t) {
        case AL_R_32F: case AL_C_32F: { float f = 1.0f; std::memcpy(one, &f, 4); break; }
        case AL_R_64F: case AL_C_64F: { double d = 1.0; std::memcpy(one, &d, 8); break; }
        case AL_R_32I: { int32_t i = 1; std::memcpy(one, &i, 4); break; }
        case AL_R_64I: { int64_t i = 1; std::memcpy(one, &i, 8); break; }
        default: break;
    }
    size_t n = typeBytes(t);
    if (bytesEqual(beta, zero, n)) return SPMV_BETA_ZERO;
    if (bytesEqual(beta, one, n)) return SPMV_BETA_ONE;
    return SPMV_BETA_GENERAL;
}

alStatus_t validate(alHandle_t h, alOperation_t op, const void* alpha, const alCsrDescr* A,
                    const alDnMatDescr* X, const void* beta, const alDnMatDescr* Y,
                    alDataType_t ct) {
    if (!h) return fail(AL_STATUS_HANDLE_IS_NULLPTR, "handle is NULL");
    if (op != AL_OP_N && op != AL_OP_T)
        return fail(AL_STATUS_INVALID_ENUM, "op must be AL_OP_N or AL_OP_T, got " + std::to_string(op));
    if (!A || !X || !Y) return fail(AL_STATUS_INVALID_VALUE, "matrix or vector descriptor is NULL");
    if (A->indexType != AL_INDEX_32I && A->indexType != AL_INDEX_64I)
        return fail(AL_STATUS_INVALID_ENUM, "index type must be AL_INDEX_32I or AL_INDEX_64I");
    if (typeBytes(ct) == 0 || A->valueType != ct || X->type != ct || Y->type != ct)
        return fail(AL_STATUS_NOT_SUPPORTED,
                    "values, X, Y and compute must share one type of float32/64, complex64/128, int32/64");
    if (A->rows < 0 || A->cols < 0 || A->nnz < 0)
        return fail(AL_STATUS_INVALID_VALUE, "rows, cols and nnz must be >= 0");
    const int64_t xLen = op == AL_OP_N ? A->cols : A->rows;
    const int64_t yLen = op == AL_OP_N ? A->rows : A->cols;
    if (X->len != xLen || Y->len != yLen)
        return fail(AL_STATUS_INVALID_VALUE, "dimension mismatch: op(A) is " + std::to_string(yLen) + " x " +
                                                 std::to_string(xLen) + ", X has " + std::to_string(X->len) +
                                                 " rows, Y has " + std::to_string(Y->len));
    if (X->nvec != Y->nvec || X->nvec < 0)
        return fail(AL_STATUS_INVALID_VALUE, "X and Y must have the same number of columns");
    if (X->rowStride < 0 || X->colStride < 0 || Y->rowStride < 0 || Y->colStride < 0)
        return fail(AL_STATUS_INVALID_VALUE, "strides must be >= 0");
    if (!alpha || !beta) return fail(AL_STATUS_INVALID_VALUE, alpha ? "beta is NULL" : "alpha is NULL");
    if (!A->indptr) return fail(AL_STATUS_INVALID_VALUE, "indptr is NULL");
    if (A->nnz > 0 && (!A->indices || !A->values)) return fail(AL_STATUS_INVALID_VALUE, "indices or values is NULL");
    if (yLen > 0 && Y->nvec > 0 && !Y->data) return fail(AL_STATUS_INVALID_VALUE, "Y is NULL");
    if (xLen > 0 && X->nvec > 0 && !X->data) return fail(AL_STATUS_INVALID_VALUE, "X is NULL");
    return AL_STATUS_SUCCESS;
}

}  // namespace
}  // namespace al

extern "C" alStatus_t alSpmv(alHandle_t handle, alOperation_t op, const void* alpha,
                             const alCsrDescr* A, const alDnMatDescr* X, const void* beta,
                             alDnMatDescr* Y, alDataType_t ct) {
    using namespace al;
    clearLastError();
    alStatus_t st = validate(handle, op, alpha, A, X, beta, Y, ct);
    if (st != AL_STATUS_SUCCESS) return st;
    const int64_t yLen = op == AL_OP_N ? A->rows : A->cols;
    if (yLen == 0 || Y->nvec == 0) return AL_STATUS_SUCCESS;
    // indptr[0] and indptr[rows] bound every row span the kernel will take.
    {
        int64_t first, last;
        if (A->indexType == AL_INDEX_64I) {
            first = static_cast<const int64_t*>(A->indptr)[0];
            last = static_cast<const int64_t*>(A->indptr)[A->rows];
        } else {
            first = static_cast<const int32_t*>(A->indptr)[0];
            last = static_cast<const int32_t*>(A->indptr)[A->rows];
        }
        if (first != 0) return fail(AL_STATUS_INVALID_VALUE, "indptr[0] must be 0, got " + std::to_string(first));
        if (last < 0 || last > A->nnz)
            return fail(AL_STATUS_INVALID_VALUE, "indptr[-1] = " + std::to_string(last) +
                                                     " is outside [0, nnz = " + std::to_string(A->nnz) + "]");
    }
    Device& dev = *handle->device;
    if (!dev.sharesHostMemory()) return fail(AL_STATUS_NOT_SUPPORTED, "SpMV on this device is not built yet");
    SpmvTilingData t = spmvTiling(op == AL_OP_T, A->rows, A->cols, A->nnz, X->nvec, ct, A->indexType,
                                  dev.coreNum());
    t.xRowStride = X->rowStride;
    t.xColStride = X->colStride;
    t.yRowStride = Y->rowStride;
    t.yColStride = Y->colStride;
    t.betaMode = betaMode(beta, ct);
    std::memcpy(t.alpha, alpha, typeBytes(ct));
    std::memcpy(t.beta, beta, typeBytes(ct));

    DeviceBuffer ws(dev);
    if (ws.allocate(static_cast<size_t>(t.workspaceSize)) != AL_STATUS_SUCCESS)
        return fail(AL_STATUS_ALLOC_FAILED, "cannot allocate " + std::to_string(t.workspaceSize) + " bytes of workspace");
    std::memset(ws.get(), 0, 64);
    void* args[6] = {const_cast<void*>(A->indptr), const_cast<void*>(A->indices), const_cast<void*>(A->values),
                     X->data, Y->data, ws.get()};
    const uint32_t blocks = static_cast<uint32_t>(t.usedCoreNum);
    if (op == AL_OP_N) {
        st = dev.launch(kSpmvKernel, blocks, args, 6, &t, sizeof(t));
    } else {
        st = dev.launch(kSpmvTKernel, blocks, args, 6, &t, sizeof(t));
        if (st == AL_STATUS_SUCCESS) st = dev.launch(kSpmvTReduce, blocks, args, 6, &t, sizeof(t));
    }
    if (st != AL_STATUS_SUCCESS) return st;
    int32_t bad;
    std::memcpy(&bad, ws.get(), sizeof(bad));
    if (bad)
        return fail(AL_STATUS_INVALID_VALUE,
                    "malformed sparse structure: indptr must be non-decreasing within [0, nnz] and "
                    "every index must lie in [0, " + std::to_string(A->cols) + ")");
    return AL_STATUS_SUCCESS;
}
