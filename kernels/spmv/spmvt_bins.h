// The binned transposed product (propagation blocking, Beamer, Asanovic and
// Patterson 2017): y := alpha*A^T x + beta*y, one vector, for a scattered
// matrix whose per-block partials would not fit in the
// last-level cache. The host picks it (spmvt_cpu.cpp) and launches, per chunk
// of the matrix, spmvtBin then spmvtDrain on the same blocks
// (SpmvBinTiling in host/spmv_tiling.h has the layout).
//
// Bin: block b walks its piece of the merge path in row order and appends
// each nonzero's (column & 0xffff, val * x[row]) to the bin of its column's
// 2^16-column stretch of y: staged kSpmvBinStage entries per bin in a buffer
// that stays in L1/L2, then copied out a cache line at a time with streaming
// stores into the block's pool (a linked list of kSpmvBinBlock-entry pool
// blocks per bin). So the random update traffic of the partial-sum kernel
// (a line read and written back per nonzero once the partials outgrow the
// cache) becomes a sequential write and a sequential read of 2 + sizeof(T)
// bytes per nonzero.
// Drain: block b takes a range of bins; for each, producers in block order,
// pool blocks in list order, it adds the entries into y's stretch, which
// fits in the core's L2 (512 KB of float64).
// Every column's sum starts at zero (chunk 0 zeroes y's stretch) and adds
// the products in row order: scipy's sparsetools order, so the result has
// scipy's bits, on any number of blocks and chunks. The plain product
// (alpha 1, beta 0, unit-stride y) sums in y itself; any other sums in the
// workspace's sum buffer (sumOffset), and the last chunk's drain writes each
// stretch of y from it with the epilogue (beta 0: y is never read).
// Indices are checked a span ahead (checkTouchAhead) and indptr a chunk of
// rows ahead (walkRows) before anything they imply is read; an entry only
// reaches a bin once its column is known to be below cols, so the drain's
// offsets stay inside y. Included at the end of spmvt_merge_impl.h.
#ifndef ASCEND_LINALG_KERNELS_SPMVT_BINS_H
#define ASCEND_LINALG_KERNELS_SPMVT_BINS_H

#include <cstring>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "spmv_merge_common.h"

namespace al {
namespace spmvm {
namespace {

// 64 bytes from src (staging, in cache) to dst (64-byte aligned) with
// streaming stores where the ISA has them: the pool is written once and read
// once by the drain, so its lines should not evict the staging buffers or
// pay a read for ownership first.
inline void streamLine(void* dst, const void* src) {
#if defined(__AVX__)
    const __m256i a = _mm256_load_si256(static_cast<const __m256i*>(src));
    const __m256i b = _mm256_load_si256(static_cast<const __m256i*>(src) + 1);
    _mm256_stream_si256(static_cast<__m256i*>(dst), a);
    _mm256_stream_si256(static_cast<__m256i*>(dst) + 1, b);
#elif defined(__SSE2__)
    for (int i = 0; i < 4; ++i)
        _mm_stream_si128(static_cast<__m128i*>(dst) + i, _mm_load_si128(static_cast<const __m128i*>(src) + i));
#else
    std::memcpy(dst, src, 64);
#endif
}
inline void streamFence() {
#if defined(__SSE2__)
    _mm_sfence();
#endif
}

// A producer's area (SpmvBinTiling's offsets).
template <class T> struct BinArea {
    int32_t *head, *tail, *staged, *next, *count;
    uint16_t* stageOff;
    T* stageVal;
    char* pool;
    int64_t blockBytes;
    BinArea(void* ws, const SpmvBinTiling& bt, int64_t b) {
        char* a = static_cast<char*>(ws) + bt.areaOffset + b * bt.areaBytes;
        head = reinterpret_cast<int32_t*>(a + bt.headOffset);
        tail = reinterpret_cast<int32_t*>(a + bt.tailOffset);
        staged = reinterpret_cast<int32_t*>(a + bt.stagedOffset);
        next = reinterpret_cast<int32_t*>(a + bt.nextOffset);
        count = reinterpret_cast<int32_t*>(a + bt.countOffset);
        stageOff = reinterpret_cast<uint16_t*>(a + bt.stageOffOffset);
        stageVal = reinterpret_cast<T*>(a + bt.stageValOffset);
        pool = a + bt.poolOffset;
        blockBytes = bt.poolBlockBytes;
    }
    uint16_t* offsets(int32_t blk) const { return reinterpret_cast<uint16_t*>(pool + blk * blockBytes); }
    T* values(int32_t blk) const {
        return reinterpret_cast<T*>(pool + blk * blockBytes + 2 * kSpmvBinBlock);
    }
};

template <class T, class I, class V>
void binT(uint32_t b, uint32_t nb, void* const* args, const SpmvBinTiling& bt) {
    const SpmvTilingData& t = bt.t;
    const I* indptr = static_cast<const I*>(args[0]);
    const I* idx = static_cast<const I*>(args[1]);
    const V* val = static_cast<const V*>(args[2]);
    const T* x = static_cast<const T*>(args[3]);
    void* ws = args[5];
    const BinArea<T> ar(ws, bt, b);
    const int64_t bins = bt.bins;
    std::fill(ar.head, ar.head + bins, -1);
    std::fill(ar.tail, ar.tail + bins, -1);
    std::fill(ar.staged, ar.staged + bins, 0);
    int32_t used = 0;
    const int64_t rows = t.rows, nnzT = static_cast<int64_t>(indptr[rows]);
    const uint32_t pieces = static_cast<uint32_t>(bt.chunks) * nb;
    const Segment s = blockSegment(indptr, rows, nnzT, static_cast<uint32_t>(bt.chunk) * nb + b, pieces);
    if (t.cols == 0) {  // the host never bins such a product; no index can be valid
        if (s.k1 > s.k0) flagError(ws);
        return;
    }
    const UIndex<I> lim = indexLimit<I>(static_cast<uint64_t>(t.cols));
    // bin q's tail block, a new one linked in when there is none or it is full
    auto block = [&](int64_t q) -> int32_t {
        int32_t blk = ar.tail[q];
        if (blk >= 0 && ar.count[blk] < kSpmvBinBlock) return blk;
        if (used >= bt.poolBlocks) return -1;  // cannot happen (spmvBinTiling's bound); never written past
        const int32_t nbk = used++;
        ar.next[nbk] = -1;
        ar.count[nbk] = 0;
        if (blk >= 0) ar.next[blk] = nbk;
        else ar.head[q] = nbk;
        ar.tail[q] = nbk;
        return nbk;
    };
    constexpr int64_t S = kSpmvBinStage;
    constexpr int kValLines = static_cast<int>(S * sizeof(T) / 64);
    static_assert(S * 2 == 64 && S * sizeof(T) % 64 == 0 && kSpmvBinBlock % S == 0, "whole lines");
    // bin q's full staging buffer into its tail block
    auto flush = [&](int64_t q) {
        const int32_t blk = block(q);
        if (blk < 0) return false;
        const int32_t n = ar.count[blk];
        streamLine(ar.offsets(blk) + n, ar.stageOff + q * S);
        char* dv = reinterpret_cast<char*>(ar.values(blk) + n);
        const char* sv = reinterpret_cast<const char*>(ar.stageVal + q * S);
        for (int l = 0; l < kValLines; ++l) streamLine(dv + 64 * l, sv + 64 * l);
        ar.count[blk] = n + static_cast<int32_t>(S);
        ar.staged[q] = 0;
        return true;
    };
    int64_t chk = s.k0, zeroed = 0;
    auto row = [&](int64_t r, int64_t ka, int64_t kb) __attribute__((always_inline)) {
        const T xr = x[r * t.xRowStride];
        while (ka < kb) {
            if (ka >= chk && !checkTouchAhead<false>(idx, &chk, s.k1, lim, static_cast<T*>(nullptr), nullptr, t,
                                                     &zeroed))
                return false;
            const int64_t e = std::min(kb, chk);
            for (int64_t k = ka; k < e; ++k) {
                const uint64_t c = static_cast<UIndex<I>>(idx[k]);
                const int64_t q = static_cast<int64_t>(c >> kSpmvBinShift);
                T p = mul(widen<T>(val[k]), xr);
                keepScalar(p);
                int32_t n = ar.staged[q];
                ar.stageOff[q * S + n] = static_cast<uint16_t>(c);
                ar.stageVal[q * S + n] = p;
                if (++n == S) {
                    if (!flush(q)) return false;
                } else {
                    ar.staged[q] = n;
                }
            }
            ka = e;
        }
        return true;
    };
    int bad = walkRows(indptr, s, rows, row, [](int64_t, int64_t, int64_t) { return 0; });
    // the partly filled staging buffers, plainly
    for (int64_t q = 0; q < bins && !bad; ++q) {
        int32_t n = ar.staged[q];
        while (n > 0) {
            const int32_t blk = block(q);
            if (blk < 0) {
                bad = 1;
                break;
            }
            const int32_t m = std::min<int32_t>(n, static_cast<int32_t>(kSpmvBinBlock) - ar.count[blk]);
            const int32_t from = ar.staged[q] - n;
            std::memcpy(ar.offsets(blk) + ar.count[blk], ar.stageOff + q * S + from, size_t(m) * 2);
            std::memcpy(ar.values(blk) + ar.count[blk], ar.stageVal + q * S + from, size_t(m) * sizeof(T));
            ar.count[blk] += m;
            n -= m;
        }
        ar.staged[q] = 0;
    }
    streamFence();  // the drain (another thread, after the launch's join) reads the pool
    if (bad) flagError(ws);
}

template <class T>
void drainT(uint32_t b, uint32_t nb, void* const* args, const SpmvBinTiling& bt) {
    T* y = static_cast<T*>(args[4]);
    void* ws = args[5];
    const int64_t cols = bt.t.cols, bins = bt.bins;
    const int64_t q0 = bins * b / nb, q1 = bins * (b + 1) / nb;
    // where the sums go: y (the plain product) or the sum buffer
    T* const sum = bt.sumOffset ? reinterpret_cast<T*>(static_cast<char*>(ws) + bt.sumOffset) : y;
    const bool last = bt.chunk == bt.chunks - 1;
    for (int64_t q = q0; q < q1; ++q) {
        const int64_t c0 = q << kSpmvBinShift, n = std::min(cols - c0, int64_t(1) << kSpmvBinShift);
        T* yq = sum + c0;
        if (bt.chunk == 0) std::fill(yq, yq + n, T{});
        for (uint32_t p = 0; p < nb; ++p) {
            const BinArea<T> ar(ws, bt, p);
            for (int32_t blk = ar.head[q]; blk >= 0; blk = ar.next[blk]) {
                const uint16_t* o = ar.offsets(blk);
                const T* v = ar.values(blk);
                const int32_t m = ar.count[blk];
                for (int32_t i = 0; i < m; ++i) yq[o[i]] = add(yq[o[i]], v[i]);
            }
        }
        if (bt.sumOffset && last) {  // the stretch is summed: y from it, with alpha and beta
            const T alpha = fromBytes<T>(bt.t.alpha), beta = fromBytes<T>(bt.t.beta);
            const int64_t ys = bt.t.yRowStride;
            for (int64_t c = 0; c < n; ++c) epilogue(bt.t.betaMode, alpha, beta, yq[c], y + (c0 + c) * ys);
        }
    }
}

inline void spmvtBinEntry(uint32_t b, uint32_t nb, void* const* args, const void* tiling) {
    const auto& bt = *static_cast<const SpmvBinTiling*>(tiling);
    withStoredTypes(bt.t.valueType, bt.t.valueStore, bt.t.indexType, [&](auto v, auto i, auto s) {
        binT<typename decltype(v)::type, typename decltype(i)::type, typename decltype(s)::type>(b, nb, args, bt);
    });
}
inline void spmvtDrainEntry(uint32_t b, uint32_t nb, void* const* args, const void* tiling) {
    const auto& bt = *static_cast<const SpmvBinTiling*>(tiling);
    withTypes(bt.t.valueType, bt.t.indexType, [&](auto v, auto) { drainT<typename decltype(v)::type>(b, nb, args, bt); });
}

}  // namespace
}  // namespace spmvm
}  // namespace al

#endif
