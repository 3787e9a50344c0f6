// The light transposed product: Y := A^T X (plain: alpha 1, beta 0; y
// unit-stride for one vector, row-major for up to kSpmvSplitMaxVec), for a
// matrix with far fewer nonzeros than columns (the host picks it:
// spmvt_cpu.cpp). There the merge path's cost is its partials, not the
// matrix: every block zeroes a whole-length partial and the reduction reads
// them all, several times the bytes of y, where the matrix is a fraction of
// them.
// Block b owns y's columns [split[b], split[b + 1]) (as the column split's
// blocks do) and takes its merge-path share of rows + nonzeros.
// Launch 1 (light 1): the block zeroes its own columns of y and, for each
// nonzero of its share, checks the index, forms the products val * x[row]
// (one per vector, rounded as scipy rounds them) and appends the column and
// products to the list addressed to the column's owner: one list per
// (block, owner) pair, in nonzero order. No block writes another's
// columns; an index outside [0, cols) or an indptr that decreases or leaves
// the share flags the structure as malformed (status 1) before anything is
// added to y.
// Launch 2 (light 2): each block adds to its columns the lists addressed to
// it, from block 0 on. The shares are consecutive stretches of the nonzeros,
// so each column sums its products from zero in CSR nonzero order: scipy's
// own sums, whatever the block count, with no partial and no reduction.
// Y is written once (zeroed) plus the scattered updates; the lists hold
// each nonzero once. A run of empty rows costs a compare per row (eight at
// a time). Included at the end of spmvt_merge_impl.h.
#ifndef ASCEND_LINALG_KERNELS_SPMVT_LIGHT_H
#define ASCEND_LINALG_KERNELS_SPMVT_LIGHT_H

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "spmv_merge_common.h"

namespace al {
namespace spmvm {
namespace {

template <class T, class I>
struct LightList {
    I* col;
    T* val;
};
template <class T, class I>
inline LightList<T, I> lightList(void* ws, const SpmvSplitTiling& st, int64_t from, int64_t to) {
    char* base = static_cast<char*>(ws) + st.listOffset + (from * st.t.usedCoreNum + to) * st.listBytes;
    return {reinterpret_cast<I*>(base), reinterpret_cast<T*>(base + st.listValOffset)};
}
inline int64_t* lightCounts(void* ws, const SpmvSplitTiling& st) {
    return reinterpret_cast<int64_t*>(static_cast<char*>(ws) + st.countOffset);
}

// Nonzeros a span of rows takes at most (lightBucket): its row ids fit in
// 4 KiB of stack.
constexpr int64_t kLightSpan = 512;

// W: the vectors, known at compile time (0: t.nvec, at run time). Two: at
// most two blocks, whose owner and list cursors stay in registers.
template <int W, bool Two, class T, class I, class V>
void lightBucket(uint32_t b, uint32_t nb, void* const* args, const SpmvSplitTiling& st) {
    const SpmvTilingData& t = st.t;
    const I* indptr = static_cast<const I*>(args[0]);
    const I* idx = static_cast<const I*>(args[1]);
    const V* val = static_cast<const V*>(args[2]);
    const T* x = static_cast<const T*>(args[3]);
    T* y = static_cast<T*>(args[4]);
    void* ws = args[5];
    const int64_t nv = W > 0 ? W : t.nvec, xs = t.xRowStride, xcs = t.xColStride;
    std::fill(y + st.split[b] * nv, y + st.split[b + 1] * nv, T{});
    const int64_t rows = t.rows, nnzT = static_cast<int64_t>(indptr[rows]);
    const Segment s = blockSegment(indptr, rows, nnzT, b, nb);
    int64_t* counts = lightCounts(ws, st) + int64_t(b) * nb;
    for (uint32_t d = 0; d < nb; ++d) counts[d] = 0;
    if (s.k1 - s.k0 > st.listCap) {  // only a malformed indptr splits so unevenly
        flagError(ws);
        return;
    }
    const uint64_t cols = static_cast<uint64_t>(t.cols);
    // Where each product goes: its owner's list (a guess by even shares,
    // then the split's bounds), at the owner's count.
    int64_t n[kSpmvSplitMaxParts] = {};
    LightList<T, I> lists[kSpmvSplitMaxParts];
    for (uint32_t d = 0; d < nb; ++d) lists[d] = lightList<T, I>(ws, st, b, d);
    const double perCol = static_cast<double>(nb) / static_cast<double>(t.cols);
    const int64_t split1 = st.split[1];
    int64_t n0 = 0, n1 = 0;  // Two: the counts
    auto append = [&](uint64_t c, I ci, T a, const T* xr) __attribute__((always_inline)) {
        I* col;
        T* p;
        if constexpr (Two) {
            // (arithmetic, not a select: a random owner would mispredict a branch)
            const int64_t hi = static_cast<int64_t>(c) >= split1;
            const int64_t m = n0 + hi * (n1 - n0);
            n0 += 1 - hi;
            n1 += hi;
            col = lists[hi].col + m;
            p = lists[hi].val + m * nv;
        } else {
            int64_t d = std::min<int64_t>(static_cast<int64_t>(static_cast<double>(c) * perCol), nb - 1);
            while (d > 0 && static_cast<int64_t>(c) < st.split[d]) --d;
            while (d + 1 < nb && static_cast<int64_t>(c) >= st.split[d + 1]) ++d;
            const int64_t m = n[d]++;
            col = lists[d].col + m;
            p = lists[d].val + m * nv;
        }
        *col = ci;
        for (int64_t j = 0; j < nv; ++j) p[j] = mul(a, xr[j * xcs]);
    };
    // The rows [r0, r1) and the tail row r1's nonzeros up to k1, a span at a
    // time: each row's id stored at its nonzeros (eight copies at its start
    // and every eighth after, so that the next row's overwrite the excess:
    // no branch on the row's length), then one loop over the span's
    // nonzeros. Every indptr entry of the rows is checked (non-decreasing,
    // within [k0, k1]); a run of eight empty rows is passed with one compare
    // of eight entries.
    alignas(64) int64_t rid[kLightSpan + 8];
    int64_t r = s.r0, a = s.k0;  // row r's nonzeros from a
    bool bad = false;
    while (!bad && (r < s.r1 || a < s.k1)) {
        const int64_t base = a;
        int64_t q = r, qa = a;
        for (; q < s.r1; ++q) {
            if (q + 8 <= s.r1 && static_cast<int64_t>(indptr[q + 8]) == qa) {
                bool same = true;
                for (int i = 1; i < 8; ++i) same &= static_cast<int64_t>(indptr[q + i]) == qa;
                if (same) {
                    q += 7;
                    continue;
                }
            }
            const int64_t e = static_cast<int64_t>(indptr[q + 1]);
            if (e < qa || e > s.k1) {
                bad = true;
                break;
            }
            if (e - base > kLightSpan) break;
            for (int64_t j = qa; j == qa || j < e; j += 8)
                for (int i = 0; i < 8; ++i) rid[j - base + i] = q;
            qa = e;
        }
        if (bad) break;
        if (q == s.r1 && qa < s.k1 && s.k1 - base <= kLightSpan) {  // the tail row
            if (q >= rows) {
                bad = true;
                break;
            }
            for (int64_t j = qa; j < s.k1; j += 8)
                for (int i = 0; i < 8; ++i) rid[j - base + i] = q;
            qa = s.k1;
        }
        if (qa == base && q < rows && (q < s.r1 || base < s.k1)) {
            // row q alone holds more than a span: its own loop
            const int64_t e = q < s.r1 ? static_cast<int64_t>(indptr[q + 1]) : s.k1;  // (checked above)
            const T* xr = x + q * xs;
            for (int64_t k = base; k < e; ++k) {
                const uint64_t c = static_cast<uint64_t>(static_cast<UIndex<I>>(idx[k]));
                if (c >= cols) {
                    bad = true;
                    break;
                }
                append(c, idx[k], widen<T>(val[k]), xr);
            }
            a = e;
            r = q + 1;
            continue;
        }
        if (qa == base && q >= rows && base < s.k1) {  // nonzeros past the last row
            bad = true;
            break;
        }
        for (int64_t k = base; k < qa; ++k) {
            const uint64_t c = static_cast<uint64_t>(static_cast<UIndex<I>>(idx[k]));
            if (c >= cols) {
                bad = true;
                break;
            }
            append(c, idx[k], widen<T>(val[k]), x + rid[k - base] * xs);
        }
        a = qa;
        r = q;
    }
    if (bad) {
        flagError(ws);
        return;
    }
    if constexpr (Two) {
        n[0] = n0;
        n[1] = n1;
    }
    for (uint32_t d = 0; d < nb; ++d) counts[d] = n[d];
}

template <int W, class T, class I>
inline void lightApplyW(const LightList<T, I>& l, int64_t m, T* y, int64_t nv) {
    const int64_t w = W > 0 ? W : nv;
    for (int64_t i = 0; i < m; ++i) {
        if (i + kPrefetch < m)
            __builtin_prefetch(y + static_cast<int64_t>(static_cast<UIndex<I>>(l.col[i + kPrefetch])) * w, 1);
        T* p = y + static_cast<int64_t>(static_cast<UIndex<I>>(l.col[i])) * w;
        const T* v = l.val + i * w;
        for (int64_t j = 0; j < w; ++j) p[j] = add(p[j], v[j]);
    }
}

template <class T, class I>
void lightApply(uint32_t b, uint32_t nb, void* const* args, const SpmvSplitTiling& st) {
    T* y = static_cast<T*>(args[4]);
    void* ws = args[5];
    const int64_t nv = st.t.nvec;
    const int64_t* counts = lightCounts(ws, st);
    for (uint32_t q = 0; q < nb; ++q) {  // block order: CSR nonzero order
        const LightList<T, I> l = lightList<T, I>(ws, st, q, b);
        const int64_t m = counts[int64_t(q) * nb + b];
        switch (nv) {
            case 1: lightApplyW<1>(l, m, y, nv); break;
            case 2: lightApplyW<2>(l, m, y, nv); break;
            case 4: lightApplyW<4>(l, m, y, nv); break;
            case 8: lightApplyW<8>(l, m, y, nv); break;
            default: lightApplyW<0>(l, m, y, nv);
        }
    }
}

template <class T, class I, class V>
void lightT(uint32_t b, uint32_t nb, void* const* args, const SpmvSplitTiling& st) {
    if (st.light != 1) return lightApply<T, I>(b, nb, args, st);
    auto run = [&](auto two) {
        constexpr bool Two = decltype(two)::value;
        switch (st.t.nvec) {
            case 1: return lightBucket<1, Two, T, I, V>(b, nb, args, st);
            case 2: return lightBucket<2, Two, T, I, V>(b, nb, args, st);
            case 4: return lightBucket<4, Two, T, I, V>(b, nb, args, st);
            case 8: return lightBucket<8, Two, T, I, V>(b, nb, args, st);
            default: return lightBucket<0, Two, T, I, V>(b, nb, args, st);
        }
    };
    if (nb <= 2) run(std::true_type{});
    else run(std::false_type{});
}

}  // namespace
}  // namespace spmvm
}  // namespace al

#endif
