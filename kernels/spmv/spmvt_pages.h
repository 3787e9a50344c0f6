// The transposed kernel's pages of partial and y: which pages a block has
// made ready (zeroed) for its sums, the columns it owns in y, the window of
// ready columns its streaming runs scatter into unchecked, and the span
// checks that check indices and make their pages ready (checkTouchAhead).
// Included by spmvt_merge_impl.h.
#ifndef ASCEND_LINALG_KERNELS_SPMVT_PAGES_H
#define ASCEND_LINALG_KERNELS_SPMVT_PAGES_H

#include <algorithm>
#include <cstdint>

#include "spmv_merge_common.h"

namespace al {
namespace spmvm {
namespace {  // internal linkage, as spmv_merge_common.h says

constexpr int64_t kPage = int64_t(1) << kSpmvPageShift;

// A block's page flags: bit kPagePartial, its partial's page is zeroed (and
// holds sums); bit kPageOwnY, y's page is one of the block's own columns,
// zeroed and summed into directly (OwnedColumns).
constexpr unsigned char kPagePartial = 1, kPageOwnY = 2;

// Column ownership (y := A^T x or Y := A^T X into a Y in C order, several
// blocks; plainProduct, plainProductMv): block b owns
// y's pages [pages * b / nb, pages * (b + 1) / nb), which no other block
// writes. A checked span whose columns all lie there is scattered straight
// into y instead of the block's partial, and the reduction adds the other
// blocks' partials (if any touched the page) to it; other spans go to the
// partial as before. A banded or stencil matrix's block touches mostly its
// own columns, so its partial stays almost untouched and the reduction has
// little to read: the partial's write (with its allocating read) and the
// reduction's read of it are saved. Only for streaming blocks (not
// scattered, at least kStreamMinNnz nonzeros), whatever the prefetch plan,
// so every plan gives the same sums. Each column's sum is y's part (in row
// order) and then the partials in block order: deterministic.
template <class T> struct OwnedColumns {
    T* y;
    int64_t lo, hi;  // pages
    T* target;       // where the current span's nonzeros go: y or the partial
};

// The columns a streaming block's runs may scatter into without a span
// check (runScatterRows<true>): [lo, lo + len), whose pages a span check
// found in range and made ready (zeroed) for target, the partial or y
// (OwnedColumns). Each span check takes its span's pages: added to the
// window where they touch it and go to the same target, else in its place.
// An index outside it is checked by the span check from there.
template <class T> struct ScatterWindow {
    uint64_t lo = 0, len = 0;
    T* target = nullptr;
    void take(T* tg, int64_t plo, int64_t phi, int64_t cols) {
        uint64_t a = uint64_t(plo) << kSpmvPageShift;
        uint64_t e = std::min(uint64_t(phi + 1) << kSpmvPageShift, static_cast<uint64_t>(cols));
        if (tg == target && len > 0 && a <= lo + len && e >= lo) {  // touches the window: the hull
            a = std::min(a, lo);
            e = std::max(e, lo + len);
        }
        target = tg;
        lo = a;
        len = e - a;
    }
};

// The next span of nonzeros, [*chk, min(k1, *chk + kCheckSpan)): checks its
// indices (a vectorised pass that also brings them into L1 for the scatter
// that follows) and, Touch, zeroes the partial's pages from the smallest
// index's to the largest's that are not zeroed yet. Per span rather than per
// nonzero: a banded or stencil matrix's span touches a few neighbouring
// pages, a scattered one all of them (zeroed once; *all then skips the walk).
// own: the span goes to y when its columns are the block's own (their y
// pages zeroed first), else to the partial; own->target says which.
// False on an index out of range, before any is used.
// nv: elements per partial row (1; nvec for the row-major partial of
// several vectors, rowMajorPartial). win: the span's pages and target go
// to the window (all pages once every page is ready, or with no Touch).
template <bool Touch, class T, class I>
inline bool checkTouchAhead(const I* idx, int64_t* chk, int64_t k1, UIndex<I> lim, T* part,
                            unsigned char* flags, const SpmvTilingData& t, int64_t* zeroed, int64_t nv = 1,
                            OwnedColumns<T>* own = nullptr, ScatterWindow<T>* win = nullptr) {
    const int64_t a = *chk, b = std::min(k1, a + kCheckSpan);
    UIndex<I> lo, hi;
    indexRange(idx, a, b, &lo, &hi);
    if (hi > lim) return false;
    *chk = b;
    if (b == a) return true;
    if (own != nullptr) {
        const int64_t plo = static_cast<int64_t>(uint64_t(lo) >> kSpmvPageShift);
        const int64_t phi = static_cast<int64_t>(uint64_t(hi) >> kSpmvPageShift);
        if (plo >= own->lo && phi < own->hi) {  // the span's columns are this block's own
            for (int64_t p = plo; p <= phi; ++p) {
                if (flags[p] & kPageOwnY) continue;
                const int64_t c0 = p * kPage;
                std::fill(own->y + c0 * nv, own->y + std::min(t.cols, c0 + kPage) * nv, T{});
                flags[p] |= kPageOwnY;
            }
            own->target = own->y;
            if (win != nullptr) win->take(own->y, plo, phi, t.cols);
            return true;
        }
        own->target = part;
    }
    if (Touch && *zeroed < t.pages) {
        for (uint64_t p = uint64_t(lo) >> kSpmvPageShift, pe = uint64_t(hi) >> kSpmvPageShift; p <= pe; ++p) {
            if (flags[p] & kPagePartial) continue;
            const int64_t c0 = static_cast<int64_t>(p) * kPage;
            std::fill(part + c0 * nv, part + std::min(t.cols, c0 + kPage) * nv, T{});
            flags[p] |= kPagePartial;
            ++*zeroed;
        }
    }
    if (win != nullptr) {
        if (!Touch || *zeroed == t.pages) win->take(part, 0, t.pages - 1, t.cols);  // every page is ready
        else win->take(part, static_cast<int64_t>(uint64_t(lo) >> kSpmvPageShift),
                       static_cast<int64_t>(uint64_t(hi) >> kSpmvPageShift), t.cols);
    }
    return true;
}

}  // namespace
}  // namespace spmvm
}  // namespace al

#endif
