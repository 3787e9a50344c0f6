// SpMV on Atlas A2/A3 (arch22, dav-2201), vector cores: the operator of the
// SpMV document (seeds 003_*) with this project's split by nonzeros.
//
// NOT YET COMPILED OR RUN: no machine used so far has CANN or an NPU
// (docs/npu.md). Written to the public Ascend C API; the CPU merge-path kernels
// (kernels/spmv/spmv_kernel_merge.cpp, spmvt_kernel_merge.cpp) are the tested
// statement of the same contract, workspace layout included.
//
// Contract (kernels/spmv/spmv_kernel.h, spmv_kernel_merge.h): args {indptr,
// indices, values, X, Y, workspace} + tiling (host/spmv_tiling.h); the int32
// status word at workspace byte 0 becomes 1 on malformed structure (an index
// outside [0, cols), indptr decreasing) and nothing is read out of bounds.
// This build computes float32 values (int32 or int64 indices), the operator's
// float32 -> float32 case; for any other value type block 0 writes status 2 and
// the host reports NOT_SUPPORTED.
//
// Differences from the document's operator, on purpose:
// - work split by rows + nonzeros (merge path), not whole rows per core, so a
//   row of any length works (no UB limit on one row: rows stream in chunks);
// - the transpose accumulates into per-block partials and a second launch sums
//   them in block order: deterministic, no atomics.
#include "kernel_operator.h"

#include "ascend_linalg/al_types.h"
#include "host/spmv_tiling.h"
#include "kernels/ascendc/kernel_common.h"

using namespace AscendC;
using al::ascendc::CopyIn;
using al::ascendc::CopyOut;
using al::ascendc::Max;
using al::ascendc::Min;

namespace {

constexpr int64_t kChunk = 4096;                 // nonzeros staged per UB pass
constexpr int64_t kXInUbMax = 16384;             // x (or a partial) held in UB up to this many floats
constexpr int32_t kStatusUnsupported = 2;

struct Segment {
    int64_t r0, k0, r1, k1;  // rows [r0, r1) complete here, row r1 open; nonzeros [k0, k1)
};

// Merge-path split point of block b (see spmv_merge_common.h: same arithmetic,
// so the CPU fix-up logic and this one agree on which rows are split).
template <class I>
__aicore__ inline void MergeSplit(const GlobalTensor<I>& indptr, int64_t rows, int64_t nnzT, int64_t b, int64_t nb,
                                  int64_t* r, int64_t* k) {
    if (b == 0) { *r = 0; *k = 0; return; }
    if (b >= nb) { *r = rows; *k = nnzT; return; }
    const int64_t total = rows + nnzT;
    const int64_t d = (total / nb) * b + (total % nb) * b / nb;
    int64_t lo = 0, hi = Min(rows, d);
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo + 1) / 2;
        if (static_cast<int64_t>(indptr.GetValue(mid)) <= d - mid) lo = mid;
        else hi = mid - 1;
    }
    *r = lo;
    *k = Min(Max(d - lo, 0), nnzT);
}

template <class I>
__aicore__ inline Segment BlockSegment(const GlobalTensor<I>& indptr, int64_t rows, int64_t nnzT, int64_t b,
                                       int64_t nb) {
    Segment s;
    MergeSplit(indptr, rows, nnzT, b, nb, &s.r0, &s.k0);
    MergeSplit(indptr, rows, nnzT, b + 1, nb, &s.r1, &s.k1);
    if (s.r1 < s.r0) s.r1 = s.r0;
    if (s.k1 < s.k0) s.k1 = s.k0;
    return s;
}

__aicore__ inline int64_t Clamp(int64_t v, int64_t lo, int64_t hi) { return Min(Max(v, lo), hi); }

// Shared state of the four kernels: arguments, tiling, UB buffers.
template <class I>
class SpmvBase {
public:
    __aicore__ inline bool Init(GM_ADDR indptr, GM_ADDR indices, GM_ADDR values, GM_ADDR x, GM_ADDR y,
                                GM_ADDR workspace, GM_ADDR tiling, TPipe* pipe) {
        al::ascendc::LoadTiling(&t_, tiling);
        ws_ = workspace;
        status_.SetGlobalBuffer(reinterpret_cast<__gm__ int32_t*>(workspace));
        if (t_.valueType != AL_R_32F) {  // this build: float32 only (file comment)
            if (GetBlockIdx() == 0) status_.SetValue(0, kStatusUnsupported);
            return false;
        }
        indptr_.SetGlobalBuffer(reinterpret_cast<__gm__ I*>(indptr));
        indices_.SetGlobalBuffer(reinterpret_cast<__gm__ I*>(indices));
        values_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(values));
        x_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(x));
        y_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(y));
        alpha_ = *reinterpret_cast<const float*>(t_.alpha);
        beta_ = *reinterpret_cast<const float*>(t_.beta);
        nnzT_ = static_cast<int64_t>(indptr_.GetValue(t_.rows));
        pipe->InitBuffer(idxQ_, 2, kChunk * sizeof(I));
        pipe->InitBuffer(valQ_, 2, kChunk * sizeof(float));
        pipe->InitBuffer(gathered_, kChunk * sizeof(float));
        pipe->InitBuffer(offsets_, kChunk * sizeof(uint32_t));
        pipe->InitBuffer(work_, kChunk * sizeof(float));
        pipe->InitBuffer(vec_, kXInUbMax * sizeof(float));
        return true;
    }

protected:
    // y := alpha*acc (+ beta*y); BETA_ZERO never reads y.
    __aicore__ inline float Epilogue(float acc, float old) const {
        const float v = alpha_ == 1.0f ? acc : alpha_ * acc;
        if (t_.betaMode == al::SPMV_BETA_ZERO) return v;
        if (t_.betaMode == al::SPMV_BETA_ONE) return v + old;
        return v + beta_ * old;
    }
    __aicore__ inline void Flag() { status_.SetValue(0, 1); }
    __aicore__ inline bool XInUb() const { return t_.cols <= kXInUbMax; }

    // Stages nonzeros [ka, kb) (kb - ka <= kChunk): indices checked against
    // cols (a bad one sets *bad and is read as column 0), offsets_[i] :=
    // (base + column * stride) * 4, the byte offsets Gather takes. Returns the
    // value tensor (dequeued); the caller frees it.
    __aicore__ inline LocalTensor<float> Stage(int64_t ka, int64_t kb, int64_t base, int64_t stride, bool* bad) {
        const uint32_t n = static_cast<uint32_t>(kb - ka);
        LocalTensor<I> idx = idxQ_.template AllocTensor<I>();
        LocalTensor<float> val = valQ_.template AllocTensor<float>();
        CopyIn(idx, indices_[ka], n);
        CopyIn(val, values_[ka], n);
        idxQ_.EnQue(idx);
        valQ_.EnQue(val);
        idx = idxQ_.template DeQue<I>();
        val = valQ_.template DeQue<float>();
        LocalTensor<uint32_t> off = offsets_.Get<uint32_t>();
        const uint64_t cols = static_cast<uint64_t>(t_.cols);
        for (uint32_t i = 0; i < n; ++i) {  // scalar: checks and offsets (int64 has no vector compare here)
            uint64_t c = static_cast<uint64_t>(static_cast<int64_t>(idx.GetValue(i)));
            if (c >= cols) { *bad = true; c = 0; }
            off.SetValue(i, static_cast<uint32_t>((base + static_cast<int64_t>(c) * stride) * 4));
        }
        idxQ_.FreeTensor(idx);
        return val;
    }

    al::SpmvTilingData t_;
    GM_ADDR ws_ = nullptr;
    GlobalTensor<I> indptr_, indices_;
    GlobalTensor<float> values_, x_, y_;
    GlobalTensor<int32_t> status_;
    float alpha_ = 1.0f, beta_ = 0.0f;
    int64_t nnzT_ = 0;
    TQue<TPosition::VECIN, 2> idxQ_, valQ_;
    TBuf<TPosition::VECCALC> gathered_, offsets_, work_, vec_;
};

// ---- non-transposed: rows of the block's segment, split rows to carry slots ----
template <class I>
class SpmvN : public SpmvBase<I> {
public:
    __aicore__ inline void Process() {
        auto& t = this->t_;
        const int64_t b = GetBlockIdx(), nb = GetBlockNum();
        if (t.cols == 0) {  // no nonzero can be valid; every row sums to 0
            if (b == 0 && this->nnzT_ > 0) this->Flag();
            for (int64_t r = t.rows * b / nb; r < t.rows * (b + 1) / nb; ++r)
                for (int64_t v = 0; v < t.nvec; ++v) WriteY(r, v, 0.0f);
            Finish();
            return;
        }
        const Segment s = BlockSegment(this->indptr_, t.rows, this->nnzT_, b, nb);
        const bool shared = s.r0 < s.r1 && s.k0 > static_cast<int64_t>(this->indptr_.GetValue(s.r0));
        bool bad = false;
        GlobalTensor<float> carry;
        carry.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(this->ws_ + t.carryOffset));
        for (int64_t v = 0; v < t.nvec; ++v) {
            const int64_t xCol0 = v * t.xColStride;
            if (this->XInUb()) LoadX(xCol0);
            const int64_t ra = s.r0 + (shared ? 1 : 0);
            if (shared) {  // head of a row begun by earlier blocks; its indptr pair is checked here
                const int64_t e = static_cast<int64_t>(this->indptr_.GetValue(s.r0 + 1));
                bad |= e < static_cast<int64_t>(this->indptr_.GetValue(s.r0));
                carry.SetValue((2 * b) * t.nvec + v, Sum(s.k0, Clamp(e, s.k0, s.k1), xCol0, &bad));
            }
            int64_t a = static_cast<int64_t>(this->indptr_.GetValue(ra));
            for (int64_t r = ra; r < s.r1; ++r) {
                const int64_t e = static_cast<int64_t>(this->indptr_.GetValue(r + 1));
                bad |= e < a;
                const int64_t ka = Clamp(a, s.k0, s.k1), kb = Clamp(e, ka, s.k1);
                WriteY(r, v, Sum(ka, kb, xCol0, &bad));
                a = e;
            }
            if (s.r1 < t.rows) {  // the open tail row
                const int64_t ka =
                    s.r1 == s.r0 ? s.k0 : Clamp(static_cast<int64_t>(this->indptr_.GetValue(s.r1)), s.k0, s.k1);
                carry.SetValue((2 * b + 1) * t.nvec + v, Sum(ka, s.k1, xCol0, &bad));
            }
        }
        if (bad) this->Flag();
        Finish();
    }

private:
    // x's column v (strided by xRowStride) whole into UB, for Gather.
    __aicore__ inline void LoadX(int64_t xCol0) {
        LocalTensor<float> xl = this->vec_.template Get<float>();
        const auto& t = this->t_;
        if (t.xRowStride == 1) {
            CopyIn(xl, this->x_[xCol0], static_cast<uint32_t>(t.cols));
        } else {
            for (int64_t c = 0; c < t.cols; ++c) xl.SetValue(c, this->x_.GetValue(xCol0 + c * t.xRowStride));
        }
        PipeBarrier<PIPE_ALL>();
    }

    // sum over nonzeros [ka, kb) of values[k] * x[indices[k]], in chunks.
    __aicore__ inline float Sum(int64_t ka, int64_t kb, int64_t xCol0, bool* bad) {
        float acc = 0.0f;
        for (int64_t c0 = ka; c0 < kb; c0 += kChunk) {
            const int64_t c1 = Min(kb, c0 + kChunk);
            const uint32_t n = static_cast<uint32_t>(c1 - c0);
            // offsets into the UB copy of x (contiguous) or into GM x (strided)
            LocalTensor<float> val = this->XInUb() ? this->Stage(c0, c1, 0, 1, bad)
                                                   : this->Stage(c0, c1, xCol0, this->t_.xRowStride, bad);
            LocalTensor<float> g = this->gathered_.template Get<float>();
            LocalTensor<uint32_t> off = this->offsets_.template Get<uint32_t>();
            if (this->XInUb()) {
                Gather(g, this->vec_.template Get<float>(), off, 0u, n);
            } else {  // x too large for UB: scalar reads from GM
                for (uint32_t i = 0; i < n; ++i) g.SetValue(i, this->x_.GetValue(off.GetValue(i) / 4));
            }
            PipeBarrier<PIPE_V>();
            Mul(g, g, val, n);
            LocalTensor<float> w = this->work_.template Get<float>();
            ReduceSum<float>(g, g, w, n);  // float accumulation, as the operator document fixes it
            PipeBarrier<PIPE_ALL>();
            acc += g.GetValue(0);
            this->valQ_.FreeTensor(val);
        }
        return acc;
    }

    __aicore__ inline void WriteY(int64_t r, int64_t v, float acc) {
        const auto& t = this->t_;
        const int64_t at = r * t.yRowStride + v * t.yColStride;
        const float old = t.betaMode == al::SPMV_BETA_ZERO ? 0.0f : this->y_.GetValue(at);
        this->y_.SetValue(at, this->Epilogue(acc, old));
    }

    // Scalar stores went through the data cache: write them back to GM.
    __aicore__ inline void Finish() {
        DataCacheCleanAndInvalid<float, CacheLine::ENTIRE_DATA_CACHE>(this->y_);
    }
};

// ---- non-transposed fix-up (1 block): split rows summed in block order -------------
template <class I>
class SpmvFixup : public SpmvBase<I> {
public:
    __aicore__ inline void Process() {
        auto& t = this->t_;
        if (GetBlockIdx() != 0 || t.cols == 0) return;
        const int64_t nb = t.usedCoreNum;
        GlobalTensor<float> carry;
        carry.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(this->ws_ + t.carryOffset));
        for (int64_t v = 0; v < t.nvec; ++v) {
            int64_t carryRow = -1;
            float acc = 0.0f;
            for (int64_t b = 0; b < nb; ++b) {
                const Segment s = BlockSegment(this->indptr_, t.rows, this->nnzT_, b, nb);
                if (s.r0 < s.r1) {
                    const bool shared = s.k0 > static_cast<int64_t>(this->indptr_.GetValue(s.r0));
                    if (shared) {
                        const float head = carry.GetValue((2 * b) * t.nvec + v);
                        const int64_t at = s.r0 * t.yRowStride + v * t.yColStride;
                        const float old = t.betaMode == al::SPMV_BETA_ZERO ? 0.0f : this->y_.GetValue(at);
                        this->y_.SetValue(at, this->Epilogue(carryRow == s.r0 ? acc + head : head, old));
                    }
                    carryRow = -1;
                }
                if (s.r1 < t.rows) {
                    const float tail = carry.GetValue((2 * b + 1) * t.nvec + v);
                    acc = carryRow == s.r1 ? acc + tail : tail;
                    carryRow = s.r1;
                }
            }
        }
        DataCacheCleanAndInvalid<float, CacheLine::ENTIRE_DATA_CACHE>(this->y_);
    }
};

// ---- transposed scatter: the block's nonzeros into its own partial ------------------
// Partial b: cols x nvec floats at partOffset + b*cols*nvec*4; page flags at
// pageOffset + b*pages (1 = this page was zeroed and may hold sums).
template <class I>
class SpmvT : public SpmvBase<I> {
public:
    __aicore__ inline void Process() {
        auto& t = this->t_;
        const int64_t b = GetBlockIdx(), nb = GetBlockNum();
        part_.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(this->ws_ + t.partOffset) + b * t.cols * t.nvec);
        flags_.SetGlobalBuffer(reinterpret_cast<__gm__ uint8_t*>(this->ws_ + t.pageOffset) + b * t.pages);
        for (int64_t p = 0; p < t.pages; ++p) flags_.SetValue(p, 0);
        const Segment s = BlockSegment(this->indptr_, t.rows, this->nnzT_, b, nb);
        if (t.cols == 0) {
            if (s.k1 > s.k0) this->Flag();
            Finish();
            return;
        }
        const int64_t rEnd = s.r1 < t.rows ? s.r1 + 1 : s.r1;  // the open tail row too
        const bool inUb = t.cols * t.nvec <= kXInUbMax;          // whole partial in UB
        LocalTensor<float> acc = this->vec_.template Get<float>();
        if (inUb) Duplicate(acc, 0.0f, static_cast<uint32_t>(al::ascendc::AlignUp<float>(t.cols * t.nvec)));
        bool bad = false;
        for (int64_t r = s.r0; r < rEnd; ++r) {
            const int64_t a = r == s.r0 ? s.k0 : static_cast<int64_t>(this->indptr_.GetValue(r));
            int64_t e = s.k1;
            if (r < s.r1) {
                e = static_cast<int64_t>(this->indptr_.GetValue(r + 1));
                bad |= e < static_cast<int64_t>(this->indptr_.GetValue(r));
            }
            const int64_t ka = Clamp(a, s.k0, s.k1), kb = Clamp(e, ka, s.k1);
            for (int64_t c0 = ka; c0 < kb; c0 += kChunk) {
                const int64_t c1 = Min(kb, c0 + kChunk);
                LocalTensor<float> val = this->Stage(c0, c1, 0, 1, &bad);  // offsets: column * 4
                LocalTensor<uint32_t> off = this->offsets_.template Get<uint32_t>();
                for (int64_t v = 0; v < t.nvec; ++v) {
                    const float xr = this->x_.GetValue(r * t.xRowStride + v * t.xColStride);
                    for (int64_t i = 0; i < c1 - c0; ++i) {  // scatter-add: scalar (no vector scatter here)
                        const int64_t col = static_cast<int64_t>(off.GetValue(i)) / 4;
                        const int64_t at = col + v * t.cols;
                        const float add = val.GetValue(i) * xr;
                        if (inUb) {
                            acc.SetValue(at, acc.GetValue(at) + add);
                        } else {
                            Touch(col);
                            part_.SetValue(at, part_.GetValue(at) + add);
                        }
                    }
                }
                this->valQ_.FreeTensor(val);
            }
        }
        if (inUb) {  // the whole partial is touched
            PipeBarrier<PIPE_ALL>();
            CopyOut(part_, acc, static_cast<uint32_t>(t.cols * t.nvec));
            for (int64_t p = 0; p < t.pages; ++p) flags_.SetValue(p, 1);
        }
        if (bad) this->Flag();
        Finish();
    }

private:
    // Zero a page of the partial the first time this block touches it.
    __aicore__ inline void Touch(int64_t col) {
        const int64_t p = col >> al::kSpmvPageShift;
        if (flags_.GetValue(p)) return;
        const auto& t = this->t_;
        const int64_t c0 = p << al::kSpmvPageShift, n = Min(int64_t(1) << al::kSpmvPageShift, t.cols - c0);
        for (int64_t v = 0; v < t.nvec; ++v)
            for (int64_t c = 0; c < n; ++c) part_.SetValue(c0 + c + v * t.cols, 0.0f);
        flags_.SetValue(p, 1);
    }
    __aicore__ inline void Finish() {
        DataCacheCleanAndInvalid<float, CacheLine::ENTIRE_DATA_CACHE>(part_);
        DataCacheCleanAndInvalid<uint8_t, CacheLine::ENTIRE_DATA_CACHE>(flags_);
    }

    GlobalTensor<float> part_;
    GlobalTensor<uint8_t> flags_;
};

// ---- transposed reduce: per column, touched partials summed in block order ------
template <class I>
class SpmvTReduce : public SpmvBase<I> {
public:
    __aicore__ inline void Process() {
        auto& t = this->t_;
        if (t.cols == 0) return;
        const int64_t b = GetBlockIdx(), nb = GetBlockNum(), parts = t.usedCoreNum;
        const int64_t p0 = t.pages * b / nb, p1 = t.pages * (b + 1) / nb;  // this block's column pages
        GlobalTensor<float> part;
        part.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(this->ws_ + t.partOffset));
        GlobalTensor<uint8_t> flags;
        flags.SetGlobalBuffer(reinterpret_cast<__gm__ uint8_t*>(this->ws_ + t.pageOffset));
        LocalTensor<float> sum = this->gathered_.template Get<float>(), in = this->work_.template Get<float>();
        for (int64_t p = p0; p < p1; ++p) {
            const int64_t c0 = p << al::kSpmvPageShift;
            const uint32_t n = static_cast<uint32_t>(Min(int64_t(1) << al::kSpmvPageShift, t.cols - c0));
            for (int64_t v = 0; v < t.nvec; ++v) {
                Duplicate(sum, 0.0f, n);
                for (int64_t q = 0; q < parts; ++q) {  // block order: deterministic
                    if (!flags.GetValue(q * t.pages + p)) continue;
                    CopyIn(in, part[q * t.cols * t.nvec + v * t.cols + c0], n);
                    PipeBarrier<PIPE_ALL>();
                    Add(sum, sum, in, n);
                    PipeBarrier<PIPE_V>();
                }
                PipeBarrier<PIPE_ALL>();
                for (uint32_t i = 0; i < n; ++i) {
                    const int64_t at = (c0 + i) * t.yRowStride + v * t.yColStride;
                    const float old = t.betaMode == al::SPMV_BETA_ZERO ? 0.0f : this->y_.GetValue(at);
                    this->y_.SetValue(at, this->Epilogue(sum.GetValue(i), old));
                }
            }
        }
        DataCacheCleanAndInvalid<float, CacheLine::ENTIRE_DATA_CACHE>(this->y_);
    }
};

// One entry per kernel name the host looks up (host/spmv_host.cpp KernelDesc),
// dispatching on the index type in the tiling.
template <template <class> class K>
__aicore__ inline void Run(GM_ADDR indptr, GM_ADDR indices, GM_ADDR values, GM_ADDR x, GM_ADDR y, GM_ADDR ws,
                           GM_ADDR tiling) {
    const int32_t indexType = reinterpret_cast<const __gm__ al::SpmvTilingData*>(tiling)->indexType;
    TPipe pipe;
    if (indexType == AL_INDEX_64I) {
        K<int64_t> k;
        if (k.Init(indptr, indices, values, x, y, ws, tiling, &pipe)) k.Process();
    } else {
        K<int32_t> k;
        if (k.Init(indptr, indices, values, x, y, ws, tiling, &pipe)) k.Process();
    }
}

}  // namespace

#define AL_SPMV_ENTRY(name, K)                                                                                 \
    extern "C" __global__ __aicore__ void name(GM_ADDR indptr, GM_ADDR indices, GM_ADDR values, GM_ADDR x,     \
                                               GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {                 \
        KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);                                                        \
        Run<K>(indptr, indices, values, x, y, workspace, tiling);                                              \
    }

AL_SPMV_ENTRY(spmv_merge, SpmvN)
AL_SPMV_ENTRY(spmv_fixup_merge, SpmvFixup)
AL_SPMV_ENTRY(spmvt_merge, SpmvT)
AL_SPMV_ENTRY(spmvt_reduce_merge, SpmvTReduce)
