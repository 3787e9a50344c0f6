// Rows of a group of 8 consecutive nonzeros without a loop per row, for the
// short-row loops of both CPU SpMV kernels (AVX2 builds, int32 indptr): a
// loop per row exits on the row's length, a branch the predictor misses when
// lengths vary, and each miss throws away the loads in flight behind it.
// Lane j's offset from rb (the row holding the group's first nonzero k)
// counts the row ends at or below nonzero k + j among the next 8 ends, by
// vector compares; where 8 or more rows end in the group (rows of 0-1
// nonzeros), among the next 16.
#ifndef ASCEND_LINALG_KERNELS_SPMV_ROW_GROUPS_H
#define ASCEND_LINALG_KERNELS_SPMV_ROW_GROUPS_H

#if defined(__AVX2__)
#include <immintrin.h>

#include <cstdint>

namespace al {
namespace spmvm {
namespace {  // internal linkage, as spmv_merge_common.h says

struct GroupRows {
    __m256i off;  // lane j: the row of nonzero k + j, less rb
    int ends;     // rows that end in the group: rb + ends holds nonzero k + 7
    bool wide;    // offsets up to 15 (else up to 7)
};

// The ends at or below k + 7 among the 8 at p.
inline int endsIn(const int32_t* p, int64_t k) {
    return __builtin_popcount(static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(
        _mm256_set1_epi32(static_cast<int32_t>(k + 8)), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)))))));
}

// The rows of nonzeros k .. k + 7, rb the row of nonzero k (or one before
// it), indptr checked (non-decreasing) on [rb, re] and rb + 8 <= re: reads
// indptr[rb + 1 .. rb + 8], and rb + 9 .. rb + 16 only when rb + 16 <= re.
// False where 16 or more rows end in the group (or 8 and the chunk has no
// next 8 ends): the caller goes one nonzero at a time.
inline bool groupRows(const int32_t* indptr, int64_t rb, int64_t re, int64_t k, GroupRows* g) {
    const int32_t* pe = indptr + rb + 1;
    int ends = endsIn(pe, k);
    // lane j holds k + j + 1: an end below it is an end at or below k + j;
    // each compare is -1 where true, the offsets minus their sum
    const __m256i kv = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int32_t>(k)), _mm256_setr_epi32(1, 2, 3, 4, 5, 6, 7, 8));
    auto below = [&](int i) __attribute__((always_inline)) { return _mm256_cmpgt_epi32(kv, _mm256_set1_epi32(pe[i])); };
    auto eight = [&](int i) __attribute__((always_inline)) {
        return _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(below(i), below(i + 1)),
                                                 _mm256_add_epi32(below(i + 2), below(i + 3))),
                                _mm256_add_epi32(_mm256_add_epi32(below(i + 4), below(i + 5)),
                                                 _mm256_add_epi32(below(i + 6), below(i + 7))));
    };
    __m256i sum = eight(0);
    g->wide = false;
    if (__builtin_expect(ends == 8, 0)) {
        const int more = rb + 16 <= re ? endsIn(pe + 8, k) : 8;
        if (more == 8) return false;
        sum = _mm256_add_epi32(sum, eight(8));
        ends += more;
        g->wide = true;
    }
    g->off = _mm256_sub_epi32(_mm256_setzero_si256(), sum);
    g->ends = ends;
    return true;
}

}  // namespace
}  // namespace spmvm
}  // namespace al

#endif
#endif
