// Transposed merge-path SpMV: Y := alpha*A^T*X + beta*Y without atomics.
// Scatter: block b takes its share of rows + nonzeros (rows may be split freely:
// there is no per-row result) and accumulates into its own cols x nvec partial.
// A page of the partial is zeroed when the block first touches it, so a banded
// matrix costs about cols in zeroing and reduction, not blocks * cols.
// Reduce: column pages split over blocks; each column sums the touched partials
// in block order (deterministic), then the alpha/beta epilogue.
#include <cstring>
#include <vector>

#include "spmv_kernel_merge.h"
#include "spmv_merge_common.h"

namespace al {
namespace spmvm {
namespace {

constexpr int64_t kPage = int64_t(1) << kSpmvPageShift;

template <class T> T* partial(void* ws, const SpmvTilingData& t, int64_t b) {
    return reinterpret_cast<T*>(static_cast<char*>(ws) + t.partOffset) + b * t.cols * t.nvec;
}
inline unsigned char* pageFlags(void* ws, const SpmvTilingData& t, int64_t b) {
    return static_cast<unsigned char*>(ws) + t.pageOffset + b * t.pages;
}

template <class T>
inline void touch(T* part, unsigned char* flags, const SpmvTilingData& t, uint64_t c) {
    const uint64_t p = c >> kSpmvPageShift;
    if (__builtin_expect(!flags[p], 0)) {
        const int64_t c0 = static_cast<int64_t>(p) * kPage;
        const int64_t n = std::min(kPage, t.cols - c0);
        for (int64_t v = 0; v < t.nvec; ++v) std::fill(part + c0 + v * t.cols, part + c0 + v * t.cols + n, T{});
        flags[p] = 1;
    }
}

template <class T, class I>
void spmvT(uint32_t b, uint32_t nb, void* const* args, const SpmvTilingData& t) {
    const I* indptr = static_cast<const I*>(args[0]);
    const I* idx = static_cast<const I*>(args[1]);
    const T* val = static_cast<const T*>(args[2]);
    const T* x = static_cast<const T*>(args[3]);
    void* ws = args[5];
    T* part = partial<T>(ws, t, b);
    unsigned char* flags = pageFlags(ws, t, b);
    std::memset(flags, 0, static_cast<size_t>(t.pages));
    const int64_t rows = t.rows, nnzT = static_cast<int64_t>(indptr[rows]);
    const Segment s = blockSegment(indptr, rows, nnzT, b, nb);
    if (t.cols == 0) {
        if (s.k1 > s.k0) flagError(ws);
        return;
    }
    const uint64_t cols = static_cast<uint64_t>(t.cols);
    const int64_t rEnd = s.r1 < rows ? s.r1 + 1 : s.r1;  // the open tail row too
    int bad = 0;
    const bool pref = t.nvec == 1 && scattered(idx, s.k0, s.k1, 1);
    int64_t pf = s.k0;  // next nonzero whose partial element is prefetched
    for (int64_t r = s.r0; r < rEnd; ++r) {
        int64_t a = r == s.r0 ? s.k0 : static_cast<int64_t>(indptr[r]);
        int64_t e = s.k1;
        if (r < s.r1) {  // this block checks the pair (r, r+1)
            e = static_cast<int64_t>(indptr[r + 1]);
            bad |= e < static_cast<int64_t>(indptr[r]);
        }
        const int64_t ka = clampK(a, s.k0, s.k1), kb = clampK(e, ka, s.k1);
        if (ka == kb) continue;
        if (t.nvec == 1) {
            const T xr = x[r * t.xRowStride];
            if (pref)
                for (const int64_t pe = std::min(kb + kPrefetch, s.k1); pf < pe; ++pf)
                    __builtin_prefetch(part + inRange(idx[pf], cols), 1);  // unchecked yet: clamp
            for (int64_t k = ka; k < kb; ++k) {
                const uint64_t c = static_cast<uint64_t>(static_cast<int64_t>(idx[k]));
                if (__builtin_expect(c >= cols, 0)) { bad = 1; continue; }
                touch(part, flags, t, c);
                part[c] = add(part[c], mul(val[k], xr));
            }
        } else {
            const T* xrow = x + r * t.xRowStride;
            for (int64_t k = ka; k < kb; ++k) {
                const uint64_t c = static_cast<uint64_t>(static_cast<int64_t>(idx[k]));
                if (__builtin_expect(c >= cols, 0)) { bad = 1; continue; }
                touch(part, flags, t, c);
                T* pc = part + c;
                for (int64_t v = 0; v < t.nvec; ++v)
                    pc[v * t.cols] = add(pc[v * t.cols], mul(val[k], xrow[v * t.xColStride]));
            }
        }
    }
    if (bad) flagError(ws);
}

// Columns [c0, c1) of vector v: y = alpha * (0 + p0 + p1 ...) (+ beta * y).
// N > 0 fixes the partial count (a loop the compiler vectorises); N < 0: n.
template <class T, int32_t Mode, int N>
void reduceRange(const T* const* src, int n, int64_t c0, int64_t c1, T alpha, T beta, T* y, int64_t ys) {
    const int cnt = N >= 0 ? N : n;
    const T* s0 = cnt > 0 ? src[0] : nullptr;
    const T* s1 = cnt > 1 ? src[1] : nullptr;
    for (int64_t c = c0; c < c1; ++c) {
        T acc{};  // 0 + p0 + p1 ...: the reference's order, -0.0 partials included
        if (N == 1) acc = add(acc, s0[c]);
        else if (N == 2) acc = add(add(acc, s0[c]), s1[c]);
        else if (N < 0) for (int i = 0; i < cnt; ++i) acc = add(acc, src[i][c]);
        epilogue(Mode, alpha, beta, acc, y + c * ys);
    }
}
template <class T, int32_t Mode>
void reduceRangeN(const T* const* src, int n, int64_t c0, int64_t c1, T alpha, T beta, T* y, int64_t ys) {
    switch (n) {
        case 0: return reduceRange<T, Mode, 0>(src, n, c0, c1, alpha, beta, y, ys);
        case 1: return reduceRange<T, Mode, 1>(src, n, c0, c1, alpha, beta, y, ys);
        case 2: return reduceRange<T, Mode, 2>(src, n, c0, c1, alpha, beta, y, ys);
        default: return reduceRange<T, Mode, -1>(src, n, c0, c1, alpha, beta, y, ys);
    }
}

template <class T>
void reduceT(uint32_t b, uint32_t nb, void* const* args, const SpmvTilingData& t) {
    void* ws = args[5];
    T* y = static_cast<T*>(args[4]);
    const T alpha = fromBytes<T>(t.alpha), beta = fromBytes<T>(t.beta);
    const int64_t blocks = t.usedCoreNum;
    const int64_t p0 = t.pages * b / nb, p1 = t.pages * (b + 1) / nb;
    std::vector<const T*> src(static_cast<size_t>(blocks));
    for (int64_t p = p0; p < p1; ++p) {
        const int64_t c0 = p * kPage, c1 = std::min(t.cols, c0 + kPage);
        for (int64_t v = 0; v < t.nvec; ++v) {
            int n = 0;
            for (int64_t q = 0; q < blocks; ++q)
                if (pageFlags(ws, t, q)[p]) src[size_t(n++)] = partial<T>(ws, t, q) + v * t.cols;
            T* yv = y + v * t.yColStride;
            switch (t.betaMode) {
                case SPMV_BETA_ZERO: reduceRangeN<T, SPMV_BETA_ZERO>(src.data(), n, c0, c1, alpha, beta, yv, t.yRowStride); break;
                case SPMV_BETA_ONE: reduceRangeN<T, SPMV_BETA_ONE>(src.data(), n, c0, c1, alpha, beta, yv, t.yRowStride); break;
                default: reduceRangeN<T, SPMV_BETA_GENERAL>(src.data(), n, c0, c1, alpha, beta, yv, t.yRowStride); break;
            }
        }
    }
}

}  // namespace
}  // namespace spmvm

void spmvt_kernel_merge_cpu(uint32_t b, uint32_t nb, void* const* args, const void* tiling) {
    const auto& t = *static_cast<const SpmvTilingData*>(tiling);
    withTypes(t.valueType, t.indexType, [&](auto v, auto i) {
        spmvm::spmvT<typename decltype(v)::type, typename decltype(i)::type>(b, nb, args, t);
    });
}

void spmvt_reduce_merge_cpu(uint32_t b, uint32_t nb, void* const* args, const void* tiling) {
    const auto& t = *static_cast<const SpmvTilingData*>(tiling);
    withTypes(t.valueType, t.indexType, [&](auto v, auto) {
        spmvm::reduceT<typename decltype(v)::type>(b, nb, args, t);
    });
}

}  // namespace al
