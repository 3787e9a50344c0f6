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
// CPU device only (launched where dev.kind() is AL_DEVICE_CPU): no Ascend C entry.
const KernelDesc kSpmvPackRows{"spmv_pack_rows", spmv_pack_rows_cpu};  // cpu-only
const KernelDesc kSpmvTBin{"spmvt_bin", spmvt_bin_cpu};        // cpu-only
const KernelDesc kSpmvTDrain{"spmvt_drain", spmvt_drain_cpu};  // cpu-only
const KernelDesc kSpmvTSplit{"spmvt_split", spmvt_split_cpu};  // cpu-only

// The binned transposed product (kernels/spmv/spmvt_bins.h) on the CPU, for
// y := alpha*A^T x + beta*y (one vector, any stride) of a scattered
// matrix whose blocks' partials together pass kSpmvBinMinBytes. There the
// partial-sum kernel's random updates miss the last-level cache (32 MB here,
// shared with the matrix's stream); binning turns them into sequential
// traffic. Random n x n matrices, 10 nonzeros a row, 2 threads, standalone
// C++ (the partial kernel's loop against the binned one, medians of 11), ms:
//   float64 n = 1e6 (partials 16 MB): 17.2-19.6 / 25.7-39.4 (binning loses);
//   1.5e6 (24 MB): 48.4 / 39.3; 2e6 (32 MB): 81.4 / 52.0; 4e6: 210 / 110;
//   float32 n = 2e6 (16 MB): 28.5 / 44.6 (loses); 3e6 (24 MB): 73.5 / 62.2;
//   4e6 (32 MB): 165 / 89.9.
// Its sums are scipy's (row order from zero), unlike the partials'; a
// product with fewer bytes keeps the partial kernel.
constexpr int64_t kSpmvBinMinBytes = int64_t(20) << 20;
// Pool entries per chunk of the matrix, all blocks together: about twice
// cols (the drain's pass over y per chunk then costs well under the bins'
// own traffic), at least 2^22.
constexpr int64_t kSpmvBinChunkMin = int64_t(1) << 22;
std::atomic<int32_t> gBinForce{-1};        // -1: by size and sampling; 0: never; 1: whenever allowed
std::atomic<int64_t> gBinChunkEntries{0};  // > 0: pool entries per chunk (tests); 0: the rule
std::atomic<int64_t> gBinCalls{0};         // products run binned

// The column-split transposed product (kernels/spmv/spmvt_split.h) on the
// CPU, for y := alpha*A^T x + beta*y (one vector, two blocks or more) of a
// matrix of long rows whose blocks' partials together would be large: rows
// averaging kSpmvSplitMinAvg nonzeros or more, partials past
// kSpmvSplitMinBytes (the bound past which scattered targets are taken to
// have left the cache, kSpmvScatterPfMinBytes). There
// each block's partial outgrows its share of the cache, and the split keeps
// one y (each block its share of it) and no reduction. Its cost grows with
// the row count: a block reads a stretch of each row and skips the rest,
// which streams worse than the merge path's contiguous share of the matrix,
// and searches each row. Random sorted rows, 2 threads, through Python,
// ms split / merge path (scipy): 1e6 columns float64 (partials 16 MB),
// rows of 512: 6.29 / 8.28 (9.67), of 5000: 4.59 / 11.2 (9.04); float32
// (8 MB), rows of 256: 4.56 / 4.09 (6.84), of 512: 4.54 / 4.19 (7.12), of
// 2000: 3.64 / 5.01 (7.03); 5e5 columns float32 (4 MB), rows of 1000:
// 3.90 / 3.33 (6.53), of 5000 (bench_spmv_long_rows.py): 9.58 / 9.89
// (18.91); 2e5 columns float64 (3.2 MB), rows of 5000: 11.06 / 10.08
// (19.45). docs/performance.md (twenty-sixth session) has the rest.
constexpr int64_t kSpmvSplitMinAvg = 512;
constexpr int64_t kSpmvSplitMinBytes = kSpmvScatterPfMinBytes;
std::atomic<int32_t> gSplitForce{-1};  // -1: by the rule; 0: never; 1: whenever allowed
std::atomic<int64_t> gSplitCalls{0};   // products run column-split (not fallen back)


// Bytes of X a block of the row packing takes at least.
constexpr int64_t kPackBytesPerBlock = int64_t(1) << 18;

size_t typeBytes(alDataType_t t) {
    switch (t) {
        case AL_R_32F: case AL_R_32I: return 4;
        case AL_R_64F: case AL_R_64I: case AL_C_32F: return 8;
        case AL_C_64F: return 16;
        default: return 0;  // not a compute type of this op
    }
}

// The CPU device's SpMV workspace, kept between calls: the transposed partials
// are blocks * cols values, and a fresh allocation per call pays page faults and
// the OS zeroing them every time. One call at a time holds it (try_lock); a
// concurrent call, or one needing more than kMaxCachedBytes, allocates its own.
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

class Workspace {
public:
    explicit Workspace(Device& d) : dev_(d), own_(d) {}
    ~Workspace() {
        if (cached_) gWsMu.unlock();
    }
    alStatus_t allocate(size_t bytes) {
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
    void* get() const { return ptr_; }

private:
    Device& dev_;
    DeviceBuffer own_;
    bool cached_ = false;
    void* ptr_ = nullptr;
};

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
    // Values may also be float16/bfloat16 under float32 compute (widened as read).
    const bool halfValues = (A->valueType == AL_R_16F || A->valueType == AL_R_16BF) && ct == AL_R_32F;
    if (typeBytes(ct) == 0 || (A->valueType != ct && !halfValues) || X->type != ct || Y->type != ct)
        return fail(AL_STATUS_NOT_SUPPORTED,
                    "values, X, Y and compute must share one type of float32/64, complex64/128, int32/64 "
                    "(or values float16/bfloat16 with X, Y and compute float32)");
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
// The error for a structure the kernels flagged.
alStatus_t malformed(const alCsrDescr* A) {
    return fail(AL_STATUS_INVALID_VALUE,
                "malformed sparse structure: indptr must be non-decreasing within [0, nnz] and "
                "every index must lie in [0, " + std::to_string(A->cols) + ")");
}

// Whether y := alpha*A^T x + beta*y runs binned (kSpmvBinMinBytes): the
// CPU device, one vector, at most kSpmvBinMaxBins bins; then past the size
// bound with scattered indices (sampled as the kernels do), or whenever
// forced (spmvBinForce).
bool useBins(Device& dev, const SpmvTilingData& t, const alCsrDescr* A, int64_t nnzT) {
    const int32_t force = gBinForce.load();
    if (force == 0 || dev.kind() != AL_DEVICE_CPU || t.nvec != 1 || A->cols <= 0 || nnzT <= 0 ||
        ((A->cols + (int64_t(1) << kSpmvBinShift) - 1) >> kSpmvBinShift) > kSpmvBinMaxBins)
        return false;
    if (force == 1) return true;
    const int64_t eb = static_cast<int64_t>(typeBytes(static_cast<alDataType_t>(t.valueType)));
    const int64_t bytes = A->cols * eb * t.usedCoreNum;
    if (bytes <= kSpmvBinMinBytes) return false;
    return A->indexType == AL_INDEX_64I ? spmvScattered64(static_cast<const int64_t*>(A->indices), 0, nnzT, 1)
                                        : spmvScattered32(static_cast<const int32_t*>(A->indices), 0, nnzT, 1);
}

// Whether y := alpha*A^T x + beta*y runs column-split: the CPU device, one
// vector, 2 to kSpmvSplitMaxParts blocks; then long rows and large partials
// (kSpmvSplitMinAvg, kSpmvSplitMinBytes), or whenever forced (spmvSplitForce).
// Binning forced on (spmvBinForce) takes precedence over the rule.
bool useSplit(Device& dev, const SpmvTilingData& t, const alCsrDescr* A, int64_t nnzT) {
    const int32_t force = gSplitForce.load();
    if (force == 0 || (force < 0 && gBinForce.load() == 1) || dev.kind() != AL_DEVICE_CPU ||
        t.nvec != 1 || t.usedCoreNum < 2 || t.usedCoreNum > kSpmvSplitMaxParts || A->cols <= 0 || A->rows <= 0 ||
        nnzT <= 0)
        return false;
    if (force == 1) return true;
    const int64_t eb = static_cast<int64_t>(typeBytes(static_cast<alDataType_t>(t.valueType)));
    const int64_t cols = std::min<int64_t>(A->cols, int64_t(1) << 40);  // no overflow below
    return nnzT / A->rows >= kSpmvSplitMinAvg && cols * eb * t.usedCoreNum > kSpmvSplitMinBytes;
}

// y's columns for the column-split product's blocks: ranges of about equal
// nonzeros, estimated from up to 64 rows spread over the matrix, each
// sampled at up to 32 evenly spaced nonzeros (weighted by the row's length).
// A performance choice only: any split gives the same sums. Rows whose
// indptr is malformed are skipped (the kernel flags them); indices are
// clamped into [0, cols).
template <class I>
void splitColumns(const alCsrDescr* A, int64_t nnzT, int parts, int64_t* split) {
    const I* indptr = static_cast<const I*>(A->indptr);
    const I* idx = static_cast<const I*>(A->indices);
    const int64_t rows = A->rows, cols = A->cols;
    constexpr int64_t kRows = 64, kPerRow = 32;
    std::vector<std::pair<int64_t, double>> sample;
    sample.reserve(kRows * kPerRow);
    const int64_t nr = std::min(rows, kRows);
    double total = 0;
    for (int64_t i = 0; i < nr; ++i) {
        const int64_t r = i * rows / nr;
        const int64_t ka = static_cast<int64_t>(indptr[r]), kb = static_cast<int64_t>(indptr[r + 1]);
        if (ka < 0 || kb <= ka || kb > nnzT) continue;
        const int64_t m = std::min(kb - ka, kPerRow);
        const double w = static_cast<double>(kb - ka) / static_cast<double>(m);
        for (int64_t j = 0; j < m; ++j) {
            const int64_t c = static_cast<int64_t>(idx[ka + ((2 * j + 1) * (kb - ka)) / (2 * m)]);
            sample.emplace_back(std::min(std::max<int64_t>(c, 0), cols - 1), w);
        }
        total += static_cast<double>(kb - ka);
    }
    std::sort(sample.begin(), sample.end());
    split[0] = 0;
    split[parts] = cols;
    size_t j = 0;
    double acc = 0;
    for (int b = 1; b < parts; ++b) {
        const double want = total * b / parts;
        while (j < sample.size() && acc + sample[j].second <= want) acc += sample[j++].second;
        int64_t c = sample.empty() ? cols * b / parts : j < sample.size() ? sample[j].first : cols;
        c = (c + 15) / 16 * 16;  // whole lines of y per block (16 values: 64 bytes of float32 or more)
        split[b] = std::min(std::max(c, split[b - 1]), cols);
    }
}

// The column-split product (useSplit). *unsorted: a row was found unsorted
// and nothing was computed; the caller runs the merge-path product.
alStatus_t runSplit(Device& dev, const SpmvTilingData& t, const alCsrDescr* A, int64_t nnzT, void* const* in,
                    bool plain, bool* unsorted) {
    *unsorted = false;
    SpmvSplitTiling st{};
    st.t = t;
    const int parts = t.usedCoreNum;
    if (A->indexType == AL_INDEX_64I) splitColumns<int64_t>(A, nnzT, parts, st.split);
    else splitColumns<int32_t>(A, nnzT, parts, st.split);
    st.workspaceSize = 64;
    if (!plain) {
        st.sumOffset = 64;
        st.workspaceSize += (A->cols * static_cast<int64_t>(typeBytes(static_cast<alDataType_t>(t.valueType))) + 63) /
                            64 * 64;
    }
    Workspace ws(dev);
    if (ws.allocate(static_cast<size_t>(st.workspaceSize)) != AL_STATUS_SUCCESS)
        return fail(AL_STATUS_ALLOC_FAILED, "cannot allocate " + std::to_string(st.workspaceSize) +
                                                " bytes of workspace: " + lastErrorCStr());
    std::memset(ws.get(), 0, 64);
    void* args[6] = {in[0], in[1], in[2], in[3], in[4], ws.get()};
    alStatus_t s = dev.launch(kSpmvTSplit, static_cast<uint32_t>(parts), args, 6, &st, sizeof(st));
    if (s != AL_STATUS_SUCCESS) return s;
    int32_t flag;
    std::memcpy(&flag, ws.get(), sizeof(flag));
    if (flag == kSpmvSplitUnsorted) {
        *unsorted = true;
        return AL_STATUS_SUCCESS;
    }
    if (flag) return malformed(A);
    if (!plain) {
        st.epilogue = 1;
        if ((s = dev.launch(kSpmvTSplit, static_cast<uint32_t>(parts), args, 6, &st, sizeof(st))) != AL_STATUS_SUCCESS)
            return s;
    }
    gSplitCalls.fetch_add(1);
    return AL_STATUS_SUCCESS;
}

alStatus_t spmvImpl(alHandle_t handle, alOperation_t op, const void* alpha, const alCsrDescr* A,
                    alCsrResident* resident, bool verify, const alDnMatDescr* X, const void* beta,
                    alDnMatDescr* Y, alDataType_t ct) {
    clearLastError();
    alStatus_t st = validate(handle, op, alpha, A, X, beta, Y, ct);
    if (st != AL_STATUS_SUCCESS) return st;
    const int64_t yLen = op == AL_OP_N ? A->rows : A->cols;
    if (yLen == 0 || Y->nvec == 0) return AL_STATUS_SUCCESS;
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
    Device& dev = *handle->device;
    const bool halfValues = A->valueType != ct;  // float16/bfloat16 values (validate)
    if (halfValues && !dev.sharesHostMemory())
        return fail(AL_STATUS_NOT_SUPPORTED, "the device's SpMV kernels read values of the compute type; "
                                             "float16/bfloat16 values are widened on the CPU device only");
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
        const size_t ib = A->indexType == AL_INDEX_64I ? 8 : 4, vb = typeBytes(ct);
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
    t.valueStore = halfValues ? A->valueType : 0;
    std::memcpy(t.alpha, alpha, typeBytes(ct));
    std::memcpy(t.beta, beta, typeBytes(ct));

    // The non-transposed kernel reads a row of X per nonzero, at random; on the
    // CPU, X's rows that are not contiguous (Fortran order, a column slice)
    // are first packed row-major into the workspace, by every thread. The
    // transposed kernel reads X's rows in order and gathers them itself.
    const bool packX = op == AL_OP_N && dev.kind() == AL_DEVICE_CPU && X->nvec > 1 && X->colStride != 1 &&
                       X->len > 0;
    const int64_t packOffset = (t.workspaceSize + 63) / 64 * 64;
    int64_t wsBytes = t.workspaceSize;
    const bool plainT = t.betaMode == SPMV_BETA_ZERO && betaMode(alpha, ct) == SPMV_BETA_ONE && t.yRowStride == 1;
    if (op == AL_OP_T && useSplit(dev, t, A, nnzT)) {
        // the CPU device: its arrays are the caller's (no staging)
        bool unsorted;
        void* in[5] = {const_cast<void*>(A->indptr), const_cast<void*>(A->indices), const_cast<void*>(A->values),
                       X->data, Y->data};
        if ((st = runSplit(dev, t, A, nnzT, in, plainT, &unsorted)) != AL_STATUS_SUCCESS) return st;
        if (!unsorted) return stage.commit();
    }
    const bool binned = op == AL_OP_T && useBins(dev, t, A, nnzT);
    SpmvBinTiling bt{};
    if (binned) {
        const int64_t forced = gBinChunkEntries.load();
        const int64_t per = forced > 0 ? forced : std::max<int64_t>(2 * A->cols, kSpmvBinChunkMin);
        // the plain product sums straight into y (alpha 1, beta 0, unit stride)
        bt = spmvBinTiling(t, nnzT, std::max<int64_t>(1, (nnzT + per - 1) / per), plainT);
        wsBytes = bt.workspaceSize;
    }
    if (packX && (__builtin_mul_overflow(X->len, X->nvec, &wsBytes) ||
                  __builtin_mul_overflow(wsBytes, static_cast<int64_t>(typeBytes(ct)), &wsBytes) ||
                  __builtin_add_overflow(wsBytes, packOffset, &wsBytes)))
        return fail(AL_STATUS_ALLOC_FAILED, "X of " + std::to_string(X->len) + " x " + std::to_string(X->nvec) +
                                                " elements is too large to pack");
    Workspace ws(dev);
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
        const int64_t eb = static_cast<int64_t>(typeBytes(ct));
        targetBytes = op == AL_OP_N
                          ? spmvXGatherBytes(static_cast<uint64_t>(A->cols), std::max<int64_t>(t.xRowStride, 1), eb)
                          : spmvXGatherBytes(static_cast<uint64_t>(A->cols), 1, eb) * static_cast<int64_t>(blocks);
        key = tuneKey(t, blocks, op == AL_OP_T, targetBytes);
        t.prefetchPlan = tunePick(key, op == AL_OP_T, targetBytes, &timed);
    }
    const auto t0 = std::chrono::steady_clock::now();
    if (op == AL_OP_N) {
        st = dev.launch(kSpmvKernel, blocks, args, 6, &t, sizeof(t));
        // Rows split across blocks: one block sums their parts in block order.
        if (st == AL_STATUS_SUCCESS && blocks > 1) st = dev.launch(kSpmvFixup, 1, args, 6, &t, sizeof(t));
    } else if (binned) {
        // Per chunk: bin, stop on malformed structure, drain.
        for (bt.chunk = 0; bt.chunk < bt.chunks && st == AL_STATUS_SUCCESS; ++bt.chunk) {
            if ((st = dev.launch(kSpmvTBin, blocks, args, 6, &bt, sizeof(bt))) != AL_STATUS_SUCCESS) break;
            int32_t flagged;
            if ((st = dev.copyToHost(&flagged, ws.get(), sizeof(flagged))) != AL_STATUS_SUCCESS || flagged) break;
            st = dev.launch(kSpmvTDrain, blocks, args, 6, &bt, sizeof(bt));
        }
        if (st == AL_STATUS_SUCCESS) gBinCalls.fetch_add(1);
    } else {
        st = dev.launch(kSpmvTKernel, blocks, args, 6, &t, sizeof(t));
        if (st == AL_STATUS_SUCCESS) st = dev.launch(kSpmvTReduce, blocks, args, 6, &t, sizeof(t));
    }
    if (timed && st == AL_STATUS_SUCCESS) {
        const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
        tuneRecord(key, op == AL_OP_T, targetBytes, t.prefetchPlan, ns / static_cast<double>(work));
    }
    if (st != AL_STATUS_SUCCESS) return st;
    int32_t bad;
    if ((st = dev.copyToHost(&bad, ws.get(), sizeof(bad))) != AL_STATUS_SUCCESS) return st;
    // 2: a device kernel build that lacks this value type (the arch22 Ascend C
    // kernels compute float32 only); the CPU kernels never set it.
    if (bad == 2)
        return fail(AL_STATUS_NOT_SUPPORTED, "the device's SpMV kernels do not compute value type " +
                                                 std::to_string(ct) + " (the Ascend C build computes float32)");
    if (bad) return malformed(A);
    return stage.commit();
}

}  // namespace

void spmvBinForce(int32_t mode, int64_t chunkEntries) {
    gBinForce.store(mode == 0 || mode == 1 ? mode : -1);
    gBinChunkEntries.store(chunkEntries > 0 ? chunkEntries : 0);
}
int64_t spmvBinCalls() { return gBinCalls.load(); }
void spmvSplitForce(int32_t mode) { gSplitForce.store(mode == 0 || mode == 1 ? mode : -1); }
int64_t spmvSplitCalls() { return gSplitCalls.load(); }

}  // namespace al
