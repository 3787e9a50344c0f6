// SpMV tiling: how Y := alpha*op(A)*X + beta*Y is split over blocks.
#ifndef ASCEND_LINALG_SPMV_TILING_H
#define ASCEND_LINALG_SPMV_TILING_H

#include <cstdint>
#include <vector>

namespace al {

// SpmvTilingData::valueStore for float32 values widened to float64 compute
// (AL_R_32F is 0, which there means "stored as valueType").
constexpr int32_t kSpmvStoreF32 = 32;

enum SpmvBetaMode : int32_t {
    SPMV_BETA_GENERAL = 0,  // Y = alpha*P + beta*Y
    SPMV_BETA_ZERO = 1,     // Y = alpha*P, Y never read
    SPMV_BETA_ONE = 2,      // Y = alpha*P + Y
};

// Plain, fixed-width tiling data; sizes in elements unless named *Bytes.
struct SpmvTilingData {
    int64_t rows, cols, nnz;    // A as stored (CSR)
    int64_t nvec;               // columns of X and Y
    int64_t xRowStride, xColStride;
    int64_t yRowStride, yColStride;
    // alpha and beta as one value of the compute type, raw bytes ({re, im} for complex)
    alignas(16) unsigned char alpha[16];
    alignas(16) unsigned char beta[16];
    int32_t trans;              // 0: Y = A X (len rows); 1: Y = A^T X (len cols)
    int32_t valueType;          // alDataType_t of values, X, Y and compute
    int32_t indexType;          // alIndexType_t of indptr and indices
    int32_t betaMode;           // SpmvBetaMode
    int32_t usedCoreNum;        // blocks launched
    int32_t valueStore;         // 0: values stored as valueType; else the alDataType_t they
                                // are stored in (kSpmvStoreF32 for AL_R_32F, which is 0),
                                // widened as read (spmvWidenedValues, spmv_internal.h)
    int64_t workspaceSize;      // bytes: status word + per-block partial results
    // Workspace layout of the merge-path kernels (offsets in bytes from its start;
    // the status word always sits at byte 0, padded to 64 bytes):
    int64_t carryOffset;        // N: per block {head, tail} partial sums, nvec values each
    int64_t partOffset;         // T: per block a cols x nvec partial (column-major); 64 as the reference
    int64_t pageOffset;         // T: per block `pages` bytes, 1 where that partial page was zeroed
    int64_t pages;              // T: column pages of (1 << kSpmvPageShift) columns
    int32_t prefetchPlan;       // CPU, nvec == 1: SpmvPrefetchPlan bits (0: the kernel's own rule)
    int32_t reserved[3];        // zero; keeps the size a multiple of the 16-byte alignment (no hidden padding)
};

// How the CPU kernels (nvec == 1) prefetch in blocks whose accesses are
// scattered; a performance choice only, the sums are the same. The scattered
// target is x in A x (gathered) and the block's partial in A^T x (scattered
// into). 0 is the kernels' fixed rule: the target prefetched past
// kSpmvScatterPfMinBytes (A^T x: lower for short rows), the value and index
// streams prefetched in every large block. The host picks the plan by timing
// the first calls of each size class (spmv_host.cpp). SPMV_PF_NO_TARGET
// overrides SPMV_PF_ANY_SIZE.
enum SpmvPrefetchPlan : int32_t {
    SPMV_PF_NO_TARGET = 1,  // never prefetch the scattered target, nor a long row's (spmv_row_prefetch_force aside)
    SPMV_PF_NO_STREAMS = 2, // no value/index prefetch in scattered blocks that do not prefetch the target
    SPMV_PF_ANY_SIZE = 4,   // prefetch the target in scattered blocks whatever its size
};
constexpr int32_t kSpmvPrefetchPlans = 8;  // plans are 0 .. kSpmvPrefetchPlans - 1
// Rows + nonzeros (times vectors) under which a CPU product is one block
// (spmvPlatformCpu) and its arrays are taken to be in cache: its kernels
// issue no value/index stream prefetch and run short rows with the counted
// loops, whatever the plan (spmvInCachePlan).
constexpr int64_t kSpmvSmallWork = int64_t(1) << 18;
// Not a plan: or-ed into the plan the kernels are handed for such a product.
constexpr int32_t SPMV_PF_IN_CACHE = 8;
// Not a plan either: or-ed in (spmvArraysPlan) where the matrix's values and
// indices together fit kSpmvArraysCachedBytes: long rows then issue no
// stream prefetch of their own (longRowStreams: A x's streamPf, A^T x's
// scatterRow<true>).
constexpr int32_t SPMV_PF_ARRAYS_CACHED = 16;
// Half this host's 32 MB L3: rows of 400 sorted random columns of 1e5, A x,
// 2 threads, long rows' stream prefetch against none (ms ratio none/with):
// 8 MB of values and indices 0.96, 12 MB 0.91, 16 MB 0.98, 24 MB 1.06 and
// 1.27, 32 MB 1.28, 48 MB 1.69, 64 MB 1.68, 96 MB 1.77.
constexpr int64_t kSpmvArraysCachedBytes = int64_t(16) << 20;
// Not a plan either: or-ed in by the host (spmv_host.cpp) where the rows'
// shape is skewed (spmvRowShape: most rows far shorter than the mean, a
// power-law matrix). float64 A^T x then keeps the row loop for scattered
// chunks of over kGroupMaxAvg nonzeros a row instead of scatterFilled: the
// chunks of such a matrix that pass that mean hold a few long rows among
// rows of one, whose W copies each cost more stores than the row loop's
// well-predicted exits (thirty-ninth session: bench_spmv.py's power-law
// float64 A^T x 0.95-0.99x as fast filled, in one process, three seeds).
constexpr int32_t SPMV_PF_SKEWED_ROWS = 32;
inline int32_t spmvInCachePlan(const SpmvTilingData& t) {
    const int64_t work = (t.rows + t.nnz) * (t.nvec > 1 ? t.nvec : 1);
    return t.prefetchPlan | (work < kSpmvSmallWork ? SPMV_PF_IN_CACHE : 0);
}
// The fixed rule's bound: x (the bytes its gathers may touch) is prefetched
// in scattered blocks past this size.
constexpr int64_t kSpmvScatterPfMinBytes = int64_t(6) << 20;
// spmvInCachePlan, with SPMV_PF_ARRAYS_CACHED for values stored as V and
// indices as I.
template <class V, class I> inline int32_t spmvArraysPlan(const SpmvTilingData& t) {
    const int64_t bytes = t.nnz * static_cast<int64_t>(sizeof(V) + sizeof(I));
    return spmvInCachePlan(t) | (bytes <= kSpmvArraysCachedBytes ? SPMV_PF_ARRAYS_CACHED : 0);
}
// The bytes the gathers of x may touch: cols elements of elemBytes at stride
// xs, each its own line once the stride passes one (kernel and host agree).
inline int64_t spmvXGatherBytes(uint64_t cols, int64_t xs, int64_t elemBytes) {
    const int64_t c = static_cast<int64_t>(cols < (uint64_t(1) << 40) ? cols : (uint64_t(1) << 40));
    const int64_t step = xs * elemBytes;
    return c * (step < 64 ? step : 64);
}

// The host's prefetch-plan choice (spmv_host.cpp), for tests and benchmarks:
// one entry per size class timed so far.
struct SpmvPrefetchClass {
    uint64_t key;
    int32_t trans, valueType, valueStore, blocks;  // the class, decoded from key
    int32_t targetLog2;  // the target's bytes are in [2^(targetLog2 - 1), 2^targetLog2)
    int32_t rowShape;    // spmvRowShape (spmv_tune.h): 0 even rows, 1 skewed
    int32_t scattered;   // 1: the matrix's indices sampled as scattered (spmvScattered32/64 over all nonzeros)
    int32_t plan;        // chosen plan, or -1 while still timing candidates
    int32_t samples[kSpmvPrefetchPlans];  // calls timed per plan
    double best[kSpmvPrefetchPlans];      // fastest ns per (row + nonzero) per plan (0: none yet)
};
std::vector<SpmvPrefetchClass> spmvPrefetchClasses();
void spmvPrefetchReset();
// The candidates (up to 3) of a class of A x (or A^T x) whose target is
// targetBytes, and the plan it would keep given best[plan] (ns per row +
// nonzero, kSpmvPrefetchPlans entries): the host's own decision, for tests.
int32_t spmvPrefetchDecide(bool trans, int64_t targetBytes, const double* best, int32_t* candidates, int* n);
// plan >= 0: every call uses it (no timing); -1: choose by timing (default)
void spmvPrefetchForce(int32_t plan);
// The binned transposed product (spmvt_cpu.cpp): mode 1 runs every product
// it allows binned, 0 none, -1 (default) those past its size bound with
// scattered indices; chunkEntries > 0 sets the pool entries per chunk (0:
// the rule). For tests and benchmarks.
void spmvBinForce(int32_t mode, int64_t chunkEntries);
// Products run binned so far (a test's proof that the kernel ran).
int64_t spmvBinCalls();
// The column-split transposed product (spmvt_cpu.cpp): mode 1 runs every
// product it allows column-split, 0 none, -1 (default) by its rule. For
// tests and benchmarks; spmvSplitCalls counts the products it completed
// (not those that fell back on an unsorted row).
void spmvSplitForce(int32_t mode);
int64_t spmvSplitCalls();
// The light transposed product (kernels/spmv/spmvt_light.h), likewise: -1
// by the rule, 0 never, 1 whenever it applies; spmvLightCalls counts the
// products it completed.
void spmvLightForce(int32_t mode);
int64_t spmvLightCalls();

// Columns per page of a transposed partial: a block zeroes (and the reduction
// reads) only the pages its nonzeros touch, so banded matrices cost ~cols, not blocks*cols.
constexpr int32_t kSpmvPageShift = 10;

// Fills the layout fields and workspaceSize from the others (usedCoreNum included).
void spmvLayout(SpmvTilingData* t);

// The binned transposed product (CPU, kernels/spmv/spmvt_bins.h): y := A^T x
// of a scattered matrix whose partials would not fit in the last-level cache.
// Each block appends (column offset, product) pairs, in row order, to one bin
// per 2^kSpmvBinShift columns of y (staged kSpmvBinStage at a time in cache,
// then copied out whole with streaming stores into a pool of kSpmvBinBlock-
// entry blocks); then each block drains whole bins into y, producers in block
// order. Every column is summed from zero in row order, scipy's own order,
// and its random updates land in a 2^kSpmvBinShift-column stretch of y that
// stays in the core's cache. The matrix is taken in `chunks` passes of
// bin-then-drain so that the pool stays about 2 x cols entries. The plain
// product (alpha 1, beta 0, unit-stride y) sums straight into y; any other
// y := alpha*A^T x + beta*y sums into a cols-value buffer in the workspace,
// from which the last chunk's drain writes y with the alpha/beta epilogue.
constexpr int32_t kSpmvBinShift = 16;  // columns per bin: offsets fit in 16 bits
constexpr int64_t kSpmvBinStage = 32;  // staged entries per bin: 64 bytes of offsets
constexpr int64_t kSpmvBinBlock = 2048;  // entries per pool block (a multiple of kSpmvBinStage)
constexpr int64_t kSpmvBinMaxBins = 1024;  // cols up to 2^26
struct SpmvBinTiling {
    SpmvTilingData t;      // the product's tiling (usedCoreNum blocks)
    int64_t chunk, chunks;  // this launch's chunk; block b of chunk c takes piece c * blocks + b
    int64_t bins;          // ceil(cols / 2^kSpmvBinShift)
    int64_t poolBlocks;    // pool blocks per producer
    int64_t areaOffset, areaBytes;  // producer b's area: workspace + areaOffset + b * areaBytes
    // inside an area (bytes): int32 head, tail, staged count per bin; int32
    // next and count per pool block; the staging (uint16 offsets and values,
    // kSpmvBinStage per bin); the pool (per block kSpmvBinBlock offsets, then
    // kSpmvBinBlock values)
    int64_t headOffset, tailOffset, stagedOffset, nextOffset, countOffset;
    int64_t stageOffOffset, stageValOffset, poolOffset, poolBlockBytes;
    int64_t sumOffset;      // 0: the sums go straight into y; else where the sum buffer (cols values) starts
    int64_t workspaceSize;  // status word + blocks areas (+ the sum buffer)
};
// The layout for `chunks` passes over t's matrix (t laid out by spmvTiling);
// sumInY: the plain product, summed straight into y (t's alpha 1, beta 0,
// unit-stride y; the caller decides, as only it knows alpha's type).
SpmvBinTiling spmvBinTiling(const SpmvTilingData& t, int64_t nnz, int64_t chunks, bool sumInY);

// The column-split transposed product (CPU, kernels/spmv/spmvt_split.h):
// y := alpha*A^T x + beta*y (one vector) of a matrix of long rows. Block b
// owns y's columns [split[b], split[b + 1]) and sums the stretch of every
// row that falls there (rows sorted by column hold it contiguously), in row
// order from zero: scipy's own sums, no partials, no reduction. A row found
// unsorted sets the status word to kSpmvSplitUnsorted and the host runs the
// merge-path product instead. Up to kSpmvSplitMaxVec vectors: the sums are
// row-major (column c's nvec sums at c * nvec). The plain product (alpha 1,
// beta 0, y unit-stride for one vector, row-major for several) sums straight
// into y; any other into the workspace's sum buffer (sumOffset), and a
// second launch with epilogue = 1 writes y from it.
constexpr int32_t kSpmvSplitMaxParts = 256;
constexpr int32_t kSpmvSplitMaxVec = 16;
constexpr int32_t kSpmvSplitUnsorted = 3;
struct SpmvSplitTiling {
    SpmvTilingData t;       // the product's tiling (usedCoreNum blocks = parts)
    int64_t epilogue;       // 0: sum the stretches; 1: y := alpha*sum + beta*y over each block's columns
    int64_t sumOffset;      // 0: the sums go straight into y; else where the sum buffer (cols values) starts
    int64_t workspaceSize;  // status word (+ the sum buffer; the light product's counts and lists)
    int64_t split[kSpmvSplitMaxParts + 1];  // split[0] = 0 <= ... <= split[parts] = cols
    // The light product (kernels/spmv/spmvt_light.h), plain only: the same
    // column ownership, sums in y. light 1: each block zeroes its columns of
    // y and sorts its merge-path share's products into lists by the block
    // owning their column; light 2: each block adds the lists addressed to it
    // to y, in block order. 0: the column split above.
    int64_t light;
    int64_t countOffset;    // parts x parts int64 counts, [from * parts + to]
    int64_t listOffset;     // parts x parts lists, listBytes apart, [from * parts + to]
    int64_t listBytes;      // a list: listCap indices (the index type), then at listValOffset listCap x nvec products
    int64_t listValOffset;
    int64_t listCap;        // the most nonzeros one block's share can hold
};

// What the block split is sized against.
struct SpmvPlatform {
    uint32_t coreNum;        // blocks that run at once
    uint32_t blocksPerCore;  // non-transposed blocks per core (transposed: 1)
    int64_t minWorkPerBlock; // rows + nonzeros (times nvec) below which a block is not split off
    int64_t minParallelWork; // rows + nonzeros (times nvec) below which the product is one block
};
SpmvPlatform spmvPlatformCpu(uint32_t threads);
SpmvPlatform spmvPlatformAscend(uint32_t cores);

SpmvTilingData spmvTiling(int32_t trans, int64_t rows, int64_t cols, int64_t nnz,
                          int64_t nvec, int32_t valueType, int32_t indexType,
                          const SpmvPlatform& platform);
// The CPU platform with `coreNum` threads.
SpmvTilingData spmvTiling(int32_t trans, int64_t rows, int64_t cols, int64_t nnz,
                          int64_t nvec, int32_t valueType, int32_t indexType,
                          uint32_t coreNum);

}  // namespace al

#endif
