// The CPU SpMV kernels' prefetch plan per size class, chosen by timing
// (spmv_tune.cpp); alSpmv (spmv_host.cpp) asks for a plan and reports the
// call's time.
#ifndef ASCEND_LINALG_HOST_SPMV_TUNE_H
#define ASCEND_LINALG_HOST_SPMV_TUNE_H

#include <cstdint>

#include "spmv_tiling.h"

namespace al {

// The CPU kernels' prefetch plan for one vector (SpmvPrefetchPlan), chosen
// by timing. Where a product's accesses are scattered (x's gathers in A x,
// the partials' updates in A^T x), whether prefetching that target, and the
// value and index streams, pays depends on the machine and on how much of
// the last-level cache its other work leaves: random 1e6 x 1e6 float64 A x
// (x of 8 MB), 2 threads, ran 12.3 ms with the fixed rule and 9.4 with
// neither prefetch on one host, where another had measured the x prefetch
// saving a quarter of the time; random 5e5 x 5e5 float32 A^T x (partials of
// 4 MB in all), 2 threads, ran 4.9-6.1 ms with the rule (no partial
// prefetch) and 3.8-4.9 prefetching the partials on the same host, where
// another had measured the prefetch losing there (docs/performance.md,
// sixteenth and seventeenth sessions). So, as FFTW's planner does, the first
// calls of each size class (operation, value and index types, blocks, the
// target's bytes to a power of two, the rows' shape: spmvRowShape) try the candidate plans in turn,
// kTuneSamples calls each after one untimed call, and the class keeps the
// one with the fastest call per row + nonzero (the rule unless another is
// kTuneMargin faster). Results never depend on it:
// the plans change only which prefetches are issued, never the sums.
// ASCEND_LINALG_SPMV_PREFETCH: "rule" (plan 0, no timing), a plan number 0-7,
// or unset / "auto".
// Rows + nonzeros from which calls are timed; smaller calls keep the rule.
// The products from here to 2^20 were not timed until the thirty-ninth
// session, and the rule does not prefetch their partials (under
// kScatterPfMinBytes): random n x n matrices of 1-9 nonzeros a row, float32
// A^T x, one thread, scipy's time over ours, n = 5e4, 1e5, 1.6e5: 0.62,
// 0.63, 0.60 under the rule, 1.26, 1.19, 1.14 timed (plan 4); two threads
// 1.43, 2.19, 1.80 timed. From 2^18 on a product is more than one block
// (kSpmvSmallWork), where the plans differ at all.
constexpr int64_t kTuneMinWork = kSpmvSmallWork;

// How a matrix's nonzeros sit in its rows, for the size class: 1 ("skewed")
// where the median of 64 rows sampled evenly has under a quarter of the mean
// row's nonzeros (most rows short, most nonzeros in a few long rows: a
// power-law matrix), else 0 ("even"). The best plan differs between the
// two: in one process, the benchmark's random 1e6 x 1e6 float32 A^T x (10 a
// row) and its power-law matrix (87% of rows with one nonzero, half the
// nonzeros in rows of over 2048) fell in one class, and the power-law
// product ran the random one's plan 0 at 6.6-6.9 ms where plan 3 took 5.4-5.7
// (docs/performance.md, thirty-second session). 64 reads of indptr a call;
// a malformed indptr gives some shape (the kernels then reject it).
int32_t spmvRowShape(const void* indptr, bool index64, int64_t rows, int64_t nnz);
// A call's size class: operation, value and index types, blocks, the bytes
// its scattered accesses land in to a power of two (targetBytes > 0), the
// rows' shape (spmvRowShape), and whether the matrix's indices are
// scattered: the kernels' own sample (spmvScattered32/64, 64 nonzeros over
// the whole matrix), which decides per block whether the plan's scattered
// prefetches apply at all. Without it a stencil matrix and a random one of
// the same size fell in one class; on the stencil the plans differ only in
// prefetches it never issues, so its calls chose one by noise, and the
// random matrix then ran that plan: in bench_spmv.py --quick (a 500^2
// Poisson matrix, then a random 250,000 x 250,000 one with 2.5e6 nonzeros,
// float32 A^T x, 2 threads) the random product ran plan 0 at 3.5 ms and
// scipy's speed in four runs of five, where its own class picks plan 4 at
// 2.0 (docs/performance.md, thirty-ninth session). spmvPrefetchClasses
// decodes the key.
uint64_t tuneKey(const SpmvTilingData& t, int64_t blocks, bool trans, int64_t targetBytes, int32_t rowShape,
                 bool scattered);
// The plan for this call; *timed: whether to time it (a candidate still short
// of samples) and report its time to tuneRecord.
int32_t tunePick(uint64_t key, bool trans, int64_t targetBytes, bool* timed);
void tuneRecord(uint64_t key, bool trans, int64_t targetBytes, int32_t plan, double nsPerWork);

}  // namespace al

#endif
