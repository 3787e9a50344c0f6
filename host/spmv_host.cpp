// alSpmv: validate -> quick returns -> tiling -> launch -> structure status.
// alSpmvResident: the same, with A's arrays kept on the device between calls.
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "ascend_linalg/al_sparse.h"
#include "context.h"
#include "fingerprint.h"
#include "kernels/spmv/spmv_kernel_merge.h"
#include "spmv_internal.h"
#include "spmv_tiling.h"
#include "spmv_tune.h"
#include "staging.h"

namespace al {
namespace {

// Merge-path kernels (work split by rows + nonzeros); the reference kernels in
// spmv_kernel_ref.cpp are their test oracle.
const KernelDesc kSpmvKernel{"spmv_merge", spmv_kernel_merge_cpu};
const KernelDesc kSpmvFixup{"spmv_fixup_merge", spmv_fixup_merge_cpu};
const KernelDesc kSpmvTKernel{"spmvt_merge", spmvt_kernel_merge_cpu};
const KernelDesc kSpmvTReduce{"spmvt_reduce_merge", spmvt_reduce_merge_cpu};
// CPU device only (launched where dev.kind() is AL_DEVICE_CPU): no Ascend C
// entry. The binned and column-split transposed kernels: spmvt_cpu.cpp.
const KernelDesc kSpmvPackRows{"spmv_pack_rows", spmv_pack_rows_cpu};  // cpu-only

// Bytes of X a block of the row packing takes at least.
constexpr int64_t kPackBytesPerBlock = int64_t(1) << 18;

// The CPU device's cached workspace (SpmvWorkspace, spmv_internal.h).
constexpr size_t kMaxCachedBytes = size_t(1) << 30;
std::mutex gWsMu;
void* gWsPtr = nullptr;
size_t gWsBytes = 0;

// Partials are scattered into at random: huge pages spare the TLB (as numpy
// advises for its own large arrays). Only the whole pages inside the buffer.
void adviseHugePages(void* p, size_t bytes) {
#ifdef MADV_HUGEPAGE
    const uintptr_t page = 4096, lo = (reinterpret_cast<uintptr_t>(p) + page - 1) & ~(page - 1);
    const uintptr_t hi = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(page - 1);
    if (bytes >= (size_t(4) << 20) && hi > lo) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);
#else
    (void)p;
    (void)bytes;
#endif
}

}  // namespace

size_t spmvTypeBytes(alDataType_t t) {
    switch (t) {
        case AL_R_32F: case AL_R_32I: return 4;
        case AL_R_64F: case AL_R_64I: case AL_C_32F: return 8;
        case AL_C_64F: return 16;
        default: return 0;  // not a compute type of this op
    }
}

SpmvWorkspace::~SpmvWorkspace() {
    if (cached_) gWsMu.unlock();
}

alStatus_t SpmvWorkspace::allocate(size_t bytes) {
    if (dev_.kind() == AL_DEVICE_CPU && bytes <= kMaxCachedBytes && gWsMu.try_lock()) {
        if (gWsBytes < bytes) {
            if (gWsPtr) dev_.free(gWsPtr);
            gWsPtr = nullptr;
            gWsBytes = 0;
            if (dev_.malloc(&gWsPtr, bytes) != AL_STATUS_SUCCESS) {
                gWsMu.unlock();
                return AL_STATUS_ALLOC_FAILED;
            }
            gWsBytes = bytes;
            adviseHugePages(gWsPtr, bytes);
        }
        cached_ = true;
        ptr_ = gWsPtr;
        return AL_STATUS_SUCCESS;
    }
    alStatus_t st = own_.allocate(bytes);
    ptr_ = own_.get();
    return st;
}

alStatus_t spmvMalformed(const alCsrDescr* A) {
    return fail(AL_STATUS_INVALID_VALUE,
                "malformed sparse structure: indptr must be non-decreasing within [0, nnz] and "
                "every index must lie in [0, " + std::to_string(A->cols) + ")");
}

namespace {

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
    size_t n = spmvTypeBytes(t);
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
    // Values may also be stored in a narrower type and widened as read
    // (spmvWidenedValues): float16/bfloat16 under float32 compute, and with
    // int32 indices a few more under float32/float64 compute.
    const bool widened = A->valueType != ct && spmvWidenedValues(A->valueType, ct, A->indexType);
    if (spmvTypeBytes(ct) == 0 || (A->valueType != ct && !widened) || X->type != ct || Y->type != ct)
        return fail(AL_STATUS_NOT_SUPPORTED,
                    "values, X, Y and compute must share one type of float32/64, complex64/128, int32/64 "
                    "(or values float16/bfloat16 with X, Y and compute float32; or, with int32 indices, values "
                    "int8/bool with X, Y and compute float32, values float32/int32/int64/int8/bool with X, Y "
                    "and compute float64)");
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

// One upload of a CSR matrix's arrays, immutable once made: a call that took
// it keeps it alive (shared_ptr) even if another thread replaces it meanwhile.
struct DeviceCsr {
    explicit DeviceCsr(Device& d) : dev(&d), indptr(d), indices(d), values(d) {}
    Device* dev;
    DeviceBuffer indptr, indices, values;
    int64_t rows = 0, cols = 0, nnz = 0;
    int32_t indexType = 0, valueType = 0;
    bool hasFingerprint = false;  // made by a verifying call: fp is that of its host bytes
    uint64_t fp = 0;
    size_t bytes = 0;
};

}  // namespace
}  // namespace al

struct alCsrResident {
    std::mutex mu;        // guards cur
    std::mutex uploadMu;  // one upload at a time: two threads missing together upload once
    std::shared_ptr<const al::DeviceCsr> cur;
    std::atomic<uint64_t> uploads{0};
};

namespace al {
namespace {

// *out := a device copy of A's arrays: r's current one when it matches A (and,
// with verify, A's fingerprint), else a fresh upload that replaces it. The
// stale copy is dropped before the new one is allocated, so device memory
// never holds both (a call still running on it keeps it until it returns).
alStatus_t acquireResident(alCsrResident* r, Device& dev, const alCsrDescr& A, size_t ib, size_t vb,
                           bool verify, std::shared_ptr<const DeviceCsr>* out) {
    const size_t bytes[3] = {size_t(A.rows + 1) * ib, size_t(A.nnz) * ib, size_t(A.nnz) * vb};
    const void* host[3] = {A.indptr, A.indices, A.values};
    const uint64_t fp = verify ? fingerprint(host, bytes, 3) : 0;
    auto matches = [&](const DeviceCsr& c) {
        return c.dev == &dev && c.rows == A.rows && c.cols == A.cols && c.nnz == A.nnz &&
               c.indexType == A.indexType && c.valueType == A.valueType &&
               (!verify || (c.hasFingerprint && c.fp == fp));
    };
    {
        std::lock_guard<std::mutex> g(r->mu);
        if (r->cur && matches(*r->cur)) {
            *out = r->cur;
            return AL_STATUS_SUCCESS;
        }
    }
    std::lock_guard<std::mutex> up(r->uploadMu);
    {
        std::lock_guard<std::mutex> g(r->mu);
        if (r->cur && matches(*r->cur)) {  // another thread uploaded it meanwhile
            *out = r->cur;
            return AL_STATUS_SUCCESS;
        }
        r->cur.reset();
    }
    auto c = std::make_shared<DeviceCsr>(dev);
    c->rows = A.rows;
    c->cols = A.cols;
    c->nnz = A.nnz;
    c->indexType = A.indexType;
    c->valueType = A.valueType;
    DeviceBuffer* bufs[3] = {&c->indptr, &c->indices, &c->values};
    for (int i = 0; i < 3; ++i) {
        alStatus_t st = bufs[i]->allocate(bytes[i]);
        if (st == AL_STATUS_SUCCESS) st = dev.copyToDevice(bufs[i]->get(), host[i], bytes[i]);
        if (st != AL_STATUS_SUCCESS) return st;  // c (and what it allocated) is freed here
        c->bytes += bytes[i];
    }
    c->hasFingerprint = verify;
    c->fp = fp;
    ++r->uploads;
    {
        std::lock_guard<std::mutex> g(r->mu);
        r->cur = c;
    }
    *out = std::move(c);
    return AL_STATUS_SUCCESS;
}

alStatus_t spmvImpl(alHandle_t handle, alOperation_t op, const void* alpha, const alCsrDescr* A,
                    alCsrResident* resident, bool verify, const alDnMatDescr* X, const void* beta,
                    alDnMatDescr* Y, alDataType_t ct);

}  // namespace
}  // namespace al

extern "C" alStatus_t alSpmv(alHandle_t handle, alOperation_t op, const void* alpha,
                             const alCsrDescr* A, const alDnMatDescr* X, const void* beta,
                             alDnMatDescr* Y, alDataType_t ct) {
    return al::spmvImpl(handle, op, alpha, A, nullptr, false, X, beta, Y, ct);
}

extern "C" alStatus_t alSpmvResident(alHandle_t handle, alOperation_t op, const void* alpha,
                                     const alCsrDescr* A, alCsrResident_t resident, int verify,
                                     const alDnMatDescr* X, const void* beta, alDnMatDescr* Y,
                                     alDataType_t ct) {
    if (!resident) {
        al::clearLastError();
        return al::fail(AL_STATUS_INVALID_VALUE, "resident is NULL");
    }
    return al::spmvImpl(handle, op, alpha, A, resident, verify != 0, X, beta, Y, ct);
}

extern "C" alStatus_t alCsrResidentCreate(alCsrResident_t* resident) {
    al::clearLastError();
    if (!resident) return al::fail(AL_STATUS_INVALID_VALUE, "resident is NULL");
    *resident = new alCsrResident;
    return AL_STATUS_SUCCESS;
}

extern "C" alStatus_t alCsrResidentDestroy(alCsrResident_t resident) {
    delete resident;  // frees the device copy unless a running call still holds it
    return AL_STATUS_SUCCESS;
}

extern "C" alStatus_t alCsrResidentGetInfo(alCsrResident_t resident, alCsrResidentInfo* info) {
    al::clearLastError();
    if (!resident || !info) return al::fail(AL_STATUS_INVALID_VALUE, "resident or info is NULL");
    info->uploads = resident->uploads.load();
    std::lock_guard<std::mutex> g(resident->mu);
    info->deviceBytes = resident->cur ? resident->cur->bytes : 0;
    return AL_STATUS_SUCCESS;
}

namespace al {
namespace {

// indptr non-decreasing (from indptr[0] = 0 to indptr[rows] = last <= nnz,
// checked before) and every index of the first `last` in [0, cols): what the
// kernels check as they run, for a product that runs none (an empty Y).
template <class I> bool structureOk(const alCsrDescr* A, int64_t last) {
    const I* p = static_cast<const I*>(A->indptr);
    const I* idx = static_cast<const I*>(A->indices);
    for (int64_t i = 0; i < A->rows; ++i)
        if (p[i + 1] < p[i]) return false;
    for (int64_t k = 0; k < last; ++k)
        if (idx[k] < 0 || idx[k] >= A->cols) return false;
    return true;
}

alStatus_t spmvImpl(alHandle_t handle, alOperation_t op, const void* alpha, const alCsrDescr* A,
                    alCsrResident* resident, bool verify, const alDnMatDescr* X, const void* beta,
                    alDnMatDescr* Y, alDataType_t ct) {
    clearLastError();
    alStatus_t st = validate(handle, op, alpha, A, X, beta, Y, ct);
    if (st != AL_STATUS_SUCCESS) return st;
    const int64_t yLen = op == AL_OP_N ? A->rows : A->cols;
    // indptr[0] and indptr[rows] bound every row span the kernel will take.
    int64_t nnzT;
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
        nnzT = last;
    }
    if (yLen == 0 || Y->nvec == 0) {
        // No kernel runs, so none checks as it reads: the structure is checked
        // here, and a malformed matrix fails whatever the product's shape.
        const bool ok = A->indexType == AL_INDEX_64I ? structureOk<int64_t>(A, nnzT) : structureOk<int32_t>(A, nnzT);
        return ok ? AL_STATUS_SUCCESS : spmvMalformed(A);
    }
    Device& dev = *handle->device;
    const bool widened = A->valueType != ct;  // values widened as read (validate: spmvWidenedValues)
    if (widened && !dev.sharesHostMemory())
        return fail(AL_STATUS_NOT_SUPPORTED, "the device's SpMV kernels read values of the compute type; "
                                             "values of another type are widened on the CPU device only");
    // Asked before anything is staged or uploaded: a kernel (or value type) the
    // device lacks costs no transfers.
    const KernelDesc* const used[2] = {op == AL_OP_N ? &kSpmvKernel : &kSpmvTKernel,
                                       op == AL_OP_N ? &kSpmvFixup : &kSpmvTReduce};
    for (const KernelDesc* k : used)
        if ((st = dev.supports(*k, ct)) != AL_STATUS_SUCCESS) return st;
    // A device with its own memory works on device copies (staging.h) of the
    // structure, X and Y (uploaded when read, beta != 0, or when it has gaps the
    // copy back must preserve); Y returns only on success.
    // With a resident, A's arrays come from (or go once into) its device copy.
    Staging stage(dev);
    std::shared_ptr<const DeviceCsr> kept;
    alCsrDescr devA;
    alDnMatDescr devX, devY;
    if (!dev.sharesHostMemory()) {
        const size_t ib = A->indexType == AL_INDEX_64I ? 8 : 4, vb = spmvTypeBytes(ct);
        devA = *A;
        devX = *X;
        devY = *Y;
        void *p0, *p1, *p2, *px, *py;
        const size_t yBytes = Staging::extent2(Y->len, Y->nvec, Y->rowStride, Y->colStride, vb);
        const bool readY = betaMode(beta, ct) != SPMV_BETA_ZERO || yBytes != size_t(Y->len * Y->nvec) * vb;
        if (resident) {
            if ((st = acquireResident(resident, dev, *A, ib, vb, verify, &kept)) != AL_STATUS_SUCCESS) return st;
            p0 = kept->indptr.get();
            p1 = kept->indices.get();
            p2 = kept->values.get();
        } else if ((st = stage.stage(A->indptr, size_t(A->rows + 1) * ib, true, false, &p0)) != AL_STATUS_SUCCESS ||
                   (st = stage.stage(A->indices, size_t(A->nnz) * ib, true, false, &p1)) != AL_STATUS_SUCCESS ||
                   (st = stage.stage(A->values, size_t(A->nnz) * vb, true, false, &p2)) != AL_STATUS_SUCCESS) {
            return st;
        }
        if ((st = stage.stage(X->data, Staging::extent2(X->len, X->nvec, X->rowStride, X->colStride, vb), true,
                              false, &px)) != AL_STATUS_SUCCESS ||
            (st = stage.stage(Y->data, yBytes, readY, true, &py)) != AL_STATUS_SUCCESS)
            return st;
        devA.indptr = p0;
        devA.indices = p1;
        devA.values = p2;
        devX.data = px;
        devY.data = py;
        A = &devA;
        X = &devX;
        Y = &devY;
    }
    const SpmvPlatform platform = dev.kind() == AL_DEVICE_NPU ? spmvPlatformAscend(dev.coreNum())
                                                               : spmvPlatformCpu(dev.coreNum());
    SpmvTilingData t = spmvTiling(op == AL_OP_T, A->rows, A->cols, A->nnz, X->nvec, ct, A->indexType, platform);
    t.xRowStride = X->rowStride;
    t.xColStride = X->colStride;
    t.yRowStride = Y->rowStride;
    t.yColStride = Y->colStride;
    t.betaMode = betaMode(beta, ct);
    t.valueStore = !widened ? 0 : A->valueType == AL_R_32F ? kSpmvStoreF32 : A->valueType;
    std::memcpy(t.alpha, alpha, spmvTypeBytes(ct));
    std::memcpy(t.beta, beta, spmvTypeBytes(ct));

    // The non-transposed kernel reads a row of X per nonzero, at random; on the
    // CPU, X's rows that are not contiguous (Fortran order, a column slice)
    // are first packed row-major into the workspace, by every thread. The
    // transposed kernel reads X's rows in order and gathers them itself.
    const bool packX = op == AL_OP_N && dev.kind() == AL_DEVICE_CPU && X->nvec > 1 && X->colStride != 1 &&
                       X->len > 0;
    const int64_t packOffset = (t.workspaceSize + 63) / 64 * 64;
    int64_t wsBytes = t.workspaceSize;
    const bool plainT = t.betaMode == SPMV_BETA_ZERO && betaMode(alpha, ct) == SPMV_BETA_ONE && t.yRowStride == 1;
    // plain: y takes the sums as they come (row-major for several vectors)
    const bool plainRowMajor = t.betaMode == SPMV_BETA_ZERO && betaMode(alpha, ct) == SPMV_BETA_ONE &&
                               (t.nvec == 1 ? t.yRowStride == 1 : t.yRowStride == t.nvec && t.yColStride == 1);
    // the CPU device: its arrays are the caller's (no staging)
    void* in[5] = {const_cast<void*>(A->indptr), const_cast<void*>(A->indices), const_cast<void*>(A->values),
                   X->data, Y->data};
    if (op == AL_OP_T) {
        if (const int lightBlocks = spmvtLightBlocks(dev, t, A, nnzT, plainRowMajor)) {
            if ((st = spmvtRunLight(dev, t, A, nnzT, in, lightBlocks)) != AL_STATUS_SUCCESS) return st;
            return stage.commit();
        }
    }
    if (op == AL_OP_T && spmvtUseSplit(dev, t, A, nnzT)) {
        bool unsorted;
        if ((st = spmvtRunSplit(dev, t, A, nnzT, in, plainRowMajor, &unsorted)) != AL_STATUS_SUCCESS) return st;
        if (!unsorted) return stage.commit();
    }
    const bool binned = op == AL_OP_T && spmvtUseBins(dev, t, A, nnzT);
    SpmvBinTiling bt{};
    if (binned) {
        bt = spmvtBinPlan(t, A, nnzT, plainT);
        wsBytes = bt.workspaceSize;
    }
    if (packX && (__builtin_mul_overflow(X->len, X->nvec, &wsBytes) ||
                  __builtin_mul_overflow(wsBytes, static_cast<int64_t>(spmvTypeBytes(ct)), &wsBytes) ||
                  __builtin_add_overflow(wsBytes, packOffset, &wsBytes)))
        return fail(AL_STATUS_ALLOC_FAILED, "X of " + std::to_string(X->len) + " x " + std::to_string(X->nvec) +
                                                " elements is too large to pack");
    SpmvWorkspace ws(dev);
    if (ws.allocate(static_cast<size_t>(wsBytes)) != AL_STATUS_SUCCESS)
        return fail(AL_STATUS_ALLOC_FAILED, "cannot allocate " + std::to_string(wsBytes) +
                                                " bytes of workspace: " + lastErrorCStr());
    static const unsigned char kZeroStatus[64] = {};
    if ((st = dev.copyToDevice(ws.get(), kZeroStatus, sizeof(kZeroStatus))) != AL_STATUS_SUCCESS) return st;
    void* args[6] = {const_cast<void*>(A->indptr), const_cast<void*>(A->indices), const_cast<void*>(A->values),
                     X->data, Y->data, ws.get()};
    const uint32_t blocks = static_cast<uint32_t>(t.usedCoreNum);
    if (packX) {
        void* packed = static_cast<char*>(ws.get()) + packOffset;
        void* packArgs[2] = {X->data, packed};
        const int64_t share = wsBytes - packOffset;
        const uint32_t packBlocks = static_cast<uint32_t>(
            std::max<int64_t>(1, std::min<int64_t>(dev.coreNum(), share / kPackBytesPerBlock)));
        if ((st = dev.launch(kSpmvPackRows, packBlocks, packArgs, 2, &t, sizeof(t))) != AL_STATUS_SUCCESS) return st;
        args[3] = packed;
        t.xRowStride = X->nvec;
        t.xColStride = 1;
    }
    // the prefetch plan (see tunePick): CPU, one vector, large calls
    const int64_t work = A->rows + A->nnz;
    const bool tune = dev.kind() == AL_DEVICE_CPU && t.nvec == 1 && work >= kTuneMinWork && A->cols > 0 && !binned;
    bool timed = false;
    uint64_t key = 0;
    int64_t targetBytes = 0;
    if (tune) {
        // the bytes the scattered accesses land in, as the kernels count them:
        // x's gathers (A x), all blocks' partials together (A^T x)
        const int64_t eb = static_cast<int64_t>(spmvTypeBytes(ct));
        targetBytes = op == AL_OP_N
                          ? spmvXGatherBytes(static_cast<uint64_t>(A->cols), std::max<int64_t>(t.xRowStride, 1), eb)
                          : spmvXGatherBytes(static_cast<uint64_t>(A->cols), 1, eb) * static_cast<int64_t>(blocks);
        // scattered as the kernels sample it: x's stride in A x, the partials' 1 in A^T x
        const int64_t stride = op == AL_OP_N ? std::max<int64_t>(t.xRowStride, 1) : 1;
        const bool scattered =
            A->indexType == AL_INDEX_64I ? spmvScattered64(static_cast<const int64_t*>(A->indices), 0, nnzT, stride)
                                         : spmvScattered32(static_cast<const int32_t*>(A->indices), 0, nnzT, stride);
        const int32_t rowShape = spmvRowShape(A->indptr, A->indexType == AL_INDEX_64I, A->rows, A->nnz);
        key = tuneKey(t, blocks, op == AL_OP_T, targetBytes, rowShape, scattered);
        t.prefetchPlan = tunePick(key, op == AL_OP_T, targetBytes, &timed) | (rowShape ? SPMV_PF_SKEWED_ROWS : 0);
    }
    const auto t0 = std::chrono::steady_clock::now();
    if (op == AL_OP_N) {
        st = dev.launch(kSpmvKernel, blocks, args, 6, &t, sizeof(t));
        // Rows split across blocks: one block sums their parts in block order.
        if (st == AL_STATUS_SUCCESS && blocks > 1) st = dev.launch(kSpmvFixup, 1, args, 6, &t, sizeof(t));
    } else if (binned) {
        st = spmvtRunBins(dev, &bt, args);
    } else {
        st = dev.launch(kSpmvTKernel, blocks, args, 6, &t, sizeof(t));
        if (st == AL_STATUS_SUCCESS) st = dev.launch(kSpmvTReduce, blocks, args, 6, &t, sizeof(t));
    }
    if (timed && st == AL_STATUS_SUCCESS) {
        const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
        tuneRecord(key, op == AL_OP_T, targetBytes, t.prefetchPlan & (kSpmvPrefetchPlans - 1),
                   ns / static_cast<double>(work));
    }
    if (st != AL_STATUS_SUCCESS) return st;
    int32_t bad;
    if ((st = dev.copyToHost(&bad, ws.get(), sizeof(bad))) != AL_STATUS_SUCCESS) return st;
    // 2: a device kernel build that lacks this value type (the arch22 Ascend C
    // kernels compute float32 only); the CPU kernels never set it.
    if (bad == 2)
        return fail(AL_STATUS_NOT_SUPPORTED, "the device's SpMV kernels do not compute value type " +
                                                 std::to_string(ct) + " (the Ascend C build computes float32)");
    if (bad) return spmvMalformed(A);
    return stage.commit();
}

}  // namespace
}  // namespace al
