// The CPU device's transposed products beyond the merge path: binned
// (kernels/spmv/spmvt_bins.h) and column-split (kernels/spmv/spmvt_split.h),
// their rules and their test hooks. spmv_host.cpp chooses among them.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "kernels/spmv/spmv_kernel_merge.h"
#include "spmv_internal.h"
#include "spmv_tiling.h"

namespace al {
namespace {

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
// CPU, for y := alpha*A^T x + beta*y (up to kSpmvSplitMaxVec vectors, two
// blocks or more) of a
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
// The bound was 512 on that host (AVX2, 16 MB of L3). On the Zen 5 host
// (1 MB of L2 a core, 32 MB of L3) the merge path won from 512 to 1000,
// its partials cached: `bench_spmv_long_rows.py --grid`, 2 threads, ms
// split / merge (scipy), 6250 x 512 float32 3.07 / 1.68 (2.43), float64
// 3.72 / 2.12 (3.75); 3200 x 1000 float32 2.34 / 1.76 (3.10), float64
// 3.09 / 2.20 (2.64); 1600 x 2000 float32 1.87 / 2.06 (2.66); and
// bench_spmv.py's power-law matrix's 10,816 rows of 64 or more (mean 833,
// median 199) float32 6.29 / 5.61 (7.62). Past 1000 the split won or tied
// (docs/performance.md, thirty-fourth session): 1024 keeps the float64
// rows of 512-1000 that it won on the AVX2 host on the merge path.
constexpr int64_t kSpmvSplitMinAvg = 1024;
// Several vectors (up to kSpmvSplitMaxVec): a row's searches are paid once
// for all its vectors, and the merge path's partials are nvec times larger,
// so shorter rows split. Random sorted rows out of 1e6 columns (1.6e6
// nonzeros), 2 threads, A^T X with X in C order, through Python,
// interleaved medians of 5, ms split / merge (scipy), float32 / float64:
// rows of 64, 2 vectors 3.24 / 2.66 (7.21), 6.23 / 6.80 (14.82); 8 vectors
// 9.33 / 11.23 (29.92), 20.09 / 19.79 (43.42); rows of 100, 2 vectors 3.84
// / 3.39 (17.02), 5.86 / 7.99 (16.65); 4 vectors 5.76 / 7.85 (21.00), 7.97
// / 11.95 (25.41); 16 vectors 21.66 / 20.57 (46.15), 38.91 / 36.74 (78.60);
// rows of 128, 2 vectors 2.89 / 2.90 (10.67), 5.44 / 7.01 (15.03); 4
// vectors 5.22 / 7.51 (19.03), 10.56 / 11.91 (27.86); 8 vectors 9.03 /
// 11.43 (27.87), 20.15 / 19.37 (44.12); rows of 32 and less: the merge
// path by 3-100% (docs/performance.md, forty-first session).
constexpr int64_t kSpmvSplitMinAvgMv = 96;
constexpr int64_t kSpmvSplitMinBytes = kSpmvScatterPfMinBytes;
std::atomic<int32_t> gSplitForce{-1};  // -1: by the rule; 0: never; 1: whenever allowed
std::atomic<int64_t> gSplitCalls{0};   // products run column-split (not fallen back)

// The light transposed product (kernels/spmv/spmvt_light.h) on the CPU, for
// the plain Y := A^T X (up to kSpmvSplitMaxVec vectors) of a matrix with
// far fewer nonzeros than columns: nnzT * kSpmvLightMinRatio <= cols
// (kSpmvLightMinRatioMv for several vectors; one vector that the merge path
// takes in one block, summing straight into y, kSpmvLightMinRatioOne). There
// the merge path's partials (each block zeroes a whole-length one, the
// reduction reads them all) cost several times y's bytes, while the light
// product writes y once and its lists hold each nonzero once. Random
// matrices of 1e6 columns, 2 threads, through Python, interleaved medians
// of 5, ms light / merge (scipy), float32, float64:
//   1e6 rows, one vector, cols / 8 nonzeros: 1.47 / 1.74 (1.63), 1.44 /
//   2.21 (2.00); cols / 4: 2.01 / 2.00 (3.53), 2.55 / 3.15 (5.12); cols / 2
//   float32 2.62 / 2.17 (5.38);
//   4 vectors, cols / 4: 4.27 / 5.60 (9.24), 8.33 / 9.14 (11.37); cols / 2:
//   6.47 / 7.73 (12.76), 7.63 / 9.25 (16.13);
//   1e5 rows, 4 vectors, cols / 4: 1.29 / 2.82 (2.55), 3.52 / 6.75 (6.05);
//   8 vectors, cols / 2: 7.44 / 6.71 (10.50), 17.80 / 15.45 (19.81);
//   1e4 rows, one vector (the merge path in one block), cols / 8: 0.35 /
//   0.20 (0.22), 0.79 / 0.33 (0.32).
// (docs/performance.md, forty-second session.)
constexpr int64_t kSpmvLightMinRatio = 8;     // one vector
constexpr int64_t kSpmvLightMinRatioMv = 4;   // several
constexpr double kSpmvLightMaxListBytes = double(int64_t(64) << 20);
// One vector that the merge path takes in one block (straight into y):
// light from kSpmvLightMinRatioOne columns a nonzero, and only for a y of
// kSpmvLightLargeY bytes or kSpmvLightManyRows rows, which the light
// product's two blocks zero or walk in parallel. 1e6 columns, ms light /
// merge (scipy), interleaved medians of 9: 1e4 rows, cols / 512 nonzeros,
// float32 (4 MB) 0.096 / 0.077 (0.071), float64 (8 MB) 0.104 / 0.126
// (0.123), complex128 0.193 / 0.308 (0.291); cols / 32 0.122 / 0.121
// (0.104), 0.150 / 0.168 (0.155), 0.272 / 0.419 (0.454); 1e5 rows, cols /
// 512, float32 0.097 / 0.152 (0.130); cols / 8 (beyond the bound) float64
// 0.415 / 0.381 (0.876).
constexpr int64_t kSpmvLightMinRatioOne = 32;
constexpr int64_t kSpmvLightLargeY = int64_t(8) << 20;
constexpr int64_t kSpmvLightManyRows = 65536;
std::atomic<int32_t> gLightForce{-1};  // -1: by the rule; 0: never; 1: whenever allowed
std::atomic<int64_t> gLightCalls{0};   // products run light

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

// The column-split and light launches' workspace: `bytes` of it, its status
// word zeroed; args := in (indptr, indices, values, x, y) and the workspace.
alStatus_t splitWorkspace(SpmvWorkspace* ws, int64_t bytes, void* const* in, void** args) {
    if (ws->allocate(static_cast<size_t>(bytes)) != AL_STATUS_SUCCESS)
        return fail(AL_STATUS_ALLOC_FAILED,
                    "cannot allocate " + std::to_string(bytes) + " bytes of workspace: " + lastErrorCStr());
    std::memset(ws->get(), 0, 64);
    for (int i = 0; i < 5; ++i) args[i] = in[i];
    args[5] = ws->get();
    return AL_STATUS_SUCCESS;
}

}  // namespace

// Whether y := alpha*A^T x + beta*y runs binned (kSpmvBinMinBytes): the
// CPU device, one vector, at most kSpmvBinMaxBins bins; then past the size
// bound with scattered indices (sampled as the kernels do), or whenever
// forced (spmvBinForce).
bool spmvtUseBins(Device& dev, const SpmvTilingData& t, const alCsrDescr* A, int64_t nnzT) {
    const int32_t force = gBinForce.load();
    if (force == 0 || dev.kind() != AL_DEVICE_CPU || t.nvec != 1 || A->cols <= 0 || nnzT <= 0 ||
        ((A->cols + (int64_t(1) << kSpmvBinShift) - 1) >> kSpmvBinShift) > kSpmvBinMaxBins)
        return false;
    if (force == 1) return true;
    const int64_t eb = static_cast<int64_t>(spmvTypeBytes(static_cast<alDataType_t>(t.valueType)));
    const int64_t bytes = A->cols * eb * t.usedCoreNum;
    if (bytes <= kSpmvBinMinBytes) return false;
    return A->indexType == AL_INDEX_64I ? spmvScattered64(static_cast<const int64_t*>(A->indices), 0, nnzT, 1)
                                        : spmvScattered32(static_cast<const int32_t*>(A->indices), 0, nnzT, 1);
}

// Whether the rows that hold nonzeros average minAvg or more: at most
// nnzT / minAvg of them. Counted a stretch of rows at a
// time, stopping once there are too many, so a matrix of mostly non-empty
// short rows (the common case) reads a few thousand entries of indptr; a
// mostly empty one reads all of it, once, as the product itself does. A
// performance choice only: a malformed indptr counts some row or other.
template <class I>
bool longNonEmptyRows(const I* indptr, int64_t rows, int64_t nnzT, int64_t minAvg) {
    const int64_t most = nnzT / minAvg;
    if (most == 0) return false;
    constexpr int64_t kStretch = 4096;
    int64_t seen = 0;
    for (int64_t r0 = 0; r0 < rows; r0 += kStretch) {
        const int64_t r1 = std::min(rows, r0 + kStretch);
        int64_t n = 0;
        for (int64_t r = r0; r < r1; ++r) n += indptr[r + 1] != indptr[r];  // vectorised
        if ((seen += n) > most) return false;
    }
    return true;
}

// Whether Y := alpha*A^T X + beta*Y runs column-split: the CPU device, 1 to
// kSpmvSplitMaxVec vectors, 2 to kSpmvSplitMaxParts blocks; then large
// partials (kSpmvSplitMinBytes, all vectors) and long rows: rows averaging
// kSpmvSplitMinAvg or more (kSpmvSplitMinAvgMv for several vectors),
// counting only the rows that hold nonzeros (longNonEmptyRows); or
// whenever forced (spmvSplitForce). Binning forced on (spmvBinForce) takes
// precedence over the rule.
// Empty rows cost either kernel little (the split skips each with one
// compare; the merge path's row walk too, and its chunks of runs leave them
// out), so long rows among many empty ones take the path they would take
// alone. Rows of random sorted columns out of 1e6, spread over 1e6 rows, 2
// threads, float32 / float64 A^T x through Python, interleaved medians of
// 7, ms split / merge (scipy): 3200 rows of 1000 4.69 / 4.42 (6.14), 5.59 /
// 5.82 (7.81); 1600 of 2000 3.39 / 4.35 (5.95), 4.57 / 5.91 (7.12); 640 of
// 5000 3.41 / 4.30 (4.87), 4.20 / 6.52 (6.65); by the old rule's average
// over all rows (3 to 5) they took the merge path
// (bench_spmv_long_rows.py --grid --among 1000000; docs/performance.md,
// forty-first session).
bool spmvtUseSplit(Device& dev, const SpmvTilingData& t, const alCsrDescr* A, int64_t nnzT) {
    const int32_t force = gSplitForce.load();
    if (force == 0 || (force < 0 && gBinForce.load() == 1) || dev.kind() != AL_DEVICE_CPU ||
        t.nvec < 1 || t.nvec > kSpmvSplitMaxVec || t.usedCoreNum < 2 || t.usedCoreNum > kSpmvSplitMaxParts ||
        A->cols <= 0 || A->cols > (int64_t(1) << 40) || A->rows <= 0 || nnzT <= 0)
        return false;  // (no overflow below or in the sum buffer's size)
    if (force == 1) return true;
    const int64_t eb = static_cast<int64_t>(spmvTypeBytes(static_cast<alDataType_t>(t.valueType)));
    if (A->cols * eb * t.nvec * t.usedCoreNum <= kSpmvSplitMinBytes) return false;
    const int64_t minAvg = t.nvec > 1 ? kSpmvSplitMinAvgMv : kSpmvSplitMinAvg;
    if (nnzT / A->rows >= minAvg) return true;
    return A->indexType == AL_INDEX_64I
               ? longNonEmptyRows(static_cast<const int64_t*>(A->indptr), A->rows, nnzT, minAvg)
               : longNonEmptyRows(static_cast<const int32_t*>(A->indptr), A->rows, nnzT, minAvg);
}

// The column-split product (spmvtUseSplit). *unsorted: a row was found unsorted
// and nothing was computed; the caller runs the merge-path product.
alStatus_t spmvtRunSplit(Device& dev, const SpmvTilingData& t, const alCsrDescr* A, int64_t nnzT,
                         void* const* in, bool plain, bool* unsorted) {
    *unsorted = false;
    SpmvSplitTiling st{};
    st.t = t;
    const int parts = t.usedCoreNum;
    if (A->indexType == AL_INDEX_64I) splitColumns<int64_t>(A, nnzT, parts, st.split);
    else splitColumns<int32_t>(A, nnzT, parts, st.split);
    st.workspaceSize = 64;
    if (!plain) {
        st.sumOffset = 64;
        st.workspaceSize += (A->cols * t.nvec * static_cast<int64_t>(spmvTypeBytes(static_cast<alDataType_t>(t.valueType))) +
                             63) / 64 * 64;
    }
    SpmvWorkspace ws(dev);
    void* args[6];
    if (const alStatus_t a = splitWorkspace(&ws, st.workspaceSize, in, args); a != AL_STATUS_SUCCESS) return a;
    alStatus_t s = dev.launch(kSpmvTSplit, static_cast<uint32_t>(parts), args, 6, &st, sizeof(st));
    if (s != AL_STATUS_SUCCESS) return s;
    int32_t flag;
    std::memcpy(&flag, ws.get(), sizeof(flag));
    if (flag == kSpmvSplitUnsorted) {
        *unsorted = true;
        return AL_STATUS_SUCCESS;
    }
    if (flag) return spmvMalformed(A);
    if (!plain) {
        st.epilogue = 1;
        if ((s = dev.launch(kSpmvTSplit, static_cast<uint32_t>(parts), args, 6, &st, sizeof(st))) != AL_STATUS_SUCCESS)
            return s;
    }
    gSplitCalls.fetch_add(1);
    return AL_STATUS_SUCCESS;
}

// The light product's blocks (0: not light): the CPU device, the plain
// product, 1 to kSpmvSplitMaxVec vectors, lists that fit (the room reserved
// for them, all blocks together, at most kSpmvLightMaxListBytes or y's
// bytes, whichever is more); then the rule (kSpmvLightMinRatio) or
// whenever forced (spmvLightForce). One block for a small product (rows +
// nonzeros + columns under kSpmvSmallWork, times the vectors), else one
// per thread.
int spmvtLightBlocks(Device& dev, const SpmvTilingData& t, const alCsrDescr* A, int64_t nnzT, bool plain) {
    const int32_t force = gLightForce.load();
    if (force == 0 || !plain || dev.kind() != AL_DEVICE_CPU || t.nvec < 1 || t.nvec > kSpmvSplitMaxVec ||
        A->cols <= 0 || A->cols > (int64_t(1) << 40) || A->rows <= 0 || nnzT <= 0)
        return 0;
    if (force < 0 && nnzT > A->cols / (t.nvec > 1 ? kSpmvLightMinRatioMv : kSpmvLightMinRatio)) return 0;
    const int64_t work = (A->rows + nnzT + A->cols) * t.nvec;
    const int nb = work < kSpmvSmallWork ? 1 : static_cast<int>(std::min<uint32_t>(std::max(dev.coreNum(), 1u), kSpmvSplitMaxParts));
    const double eb = static_cast<double>(spmvTypeBytes(static_cast<alDataType_t>(t.valueType)));
    // One vector that the merge path takes in one block: it sums straight
    // into y, and the light product gains only its blocks' parallel zeroing
    // of a large y or walk of many rows, where very light.
    if (force < 0 && t.nvec == 1 && t.usedCoreNum < 2 &&
        (nb < 2 || nnzT > A->cols / kSpmvLightMinRatioOne ||
         (A->cols * static_cast<int64_t>(eb) < kSpmvLightLargeY && A->rows < kSpmvLightManyRows)))
        return 0;
    const double ib = A->indexType == AL_INDEX_64I ? 8 : 4;
    // (nb x nb lists, each room for the most nonzeros a share holds: spmvtRunLight)
    const double cap = std::min(static_cast<double>(nnzT), static_cast<double>((A->rows + nnzT) / nb + 1));
    const double lists = static_cast<double>(nb) * nb * cap * (ib + eb * t.nvec);
    const double yBytes = static_cast<double>(A->cols) * t.nvec * eb;
    if (lists > std::max(yBytes, kSpmvLightMaxListBytes)) return 0;
    return nb;
}

alStatus_t spmvtRunLight(Device& dev, const SpmvTilingData& t, const alCsrDescr* A, int64_t nnzT,
                         void* const* in, int blocks) {
    SpmvSplitTiling st{};
    st.t = t;
    st.t.usedCoreNum = blocks;
    const int64_t nb = blocks, cols = A->cols, nv = t.nvec;
    for (int64_t b = 0; b <= nb; ++b)  // even shares, whole lines of y (16 values)
        st.split[b] = std::min(cols, (cols * b / nb + 15) / 16 * 16);
    st.split[nb] = cols;
    auto up = [](int64_t v) { return (v + 63) / 64 * 64; };
    const int64_t eb = static_cast<int64_t>(spmvTypeBytes(static_cast<alDataType_t>(t.valueType)));
    const int64_t ib = A->indexType == AL_INDEX_64I ? 8 : 4;
    // a share of the merge path (rows + nonzeros cut at multiples of
    // (rows + nnzT) / nb) holds at most this many nonzeros
    st.listCap = std::min(nnzT, (A->rows + nnzT) / nb + 1);
    st.listValOffset = up(st.listCap * ib);
    st.listBytes = st.listValOffset + up(st.listCap * nv * eb);
    st.countOffset = 64;
    st.listOffset = up(64 + nb * nb * 8);
    st.workspaceSize = st.listOffset + nb * nb * st.listBytes;
    SpmvWorkspace ws(dev);
    void* args[6];
    if (const alStatus_t a = splitWorkspace(&ws, st.workspaceSize, in, args); a != AL_STATUS_SUCCESS) return a;
    st.light = 1;
    alStatus_t s = dev.launch(kSpmvTSplit, static_cast<uint32_t>(nb), args, 6, &st, sizeof(st));
    if (s != AL_STATUS_SUCCESS) return s;
    int32_t flag;
    std::memcpy(&flag, ws.get(), sizeof(flag));
    if (flag) return spmvMalformed(A);
    st.light = 2;
    if ((s = dev.launch(kSpmvTSplit, static_cast<uint32_t>(nb), args, 6, &st, sizeof(st))) != AL_STATUS_SUCCESS)
        return s;
    gLightCalls.fetch_add(1);
    return AL_STATUS_SUCCESS;
}

SpmvBinTiling spmvtBinPlan(const SpmvTilingData& t, const alCsrDescr* A, int64_t nnzT, bool plain) {
    const int64_t forced = gBinChunkEntries.load();
    const int64_t per = forced > 0 ? forced : std::max<int64_t>(2 * A->cols, kSpmvBinChunkMin);
    // the plain product sums straight into y (alpha 1, beta 0, unit stride)
    return spmvBinTiling(t, nnzT, std::max<int64_t>(1, (nnzT + per - 1) / per), plain);
}

alStatus_t spmvtRunBins(Device& dev, SpmvBinTiling* bt, void* const* args) {
    const uint32_t blocks = static_cast<uint32_t>(bt->t.usedCoreNum);
    alStatus_t st = AL_STATUS_SUCCESS;
    // Per chunk: bin, stop on malformed structure, drain.
    for (bt->chunk = 0; bt->chunk < bt->chunks && st == AL_STATUS_SUCCESS; ++bt->chunk) {
        if ((st = dev.launch(kSpmvTBin, blocks, args, 6, bt, sizeof(*bt))) != AL_STATUS_SUCCESS) break;
        int32_t flagged;
        if ((st = dev.copyToHost(&flagged, args[5], sizeof(flagged))) != AL_STATUS_SUCCESS || flagged) break;
        st = dev.launch(kSpmvTDrain, blocks, args, 6, bt, sizeof(*bt));
    }
    if (st == AL_STATUS_SUCCESS) gBinCalls.fetch_add(1);
    return st;
}

void spmvBinForce(int32_t mode, int64_t chunkEntries) {
    gBinForce.store(mode == 0 || mode == 1 ? mode : -1);
    gBinChunkEntries.store(chunkEntries > 0 ? chunkEntries : 0);
}
int64_t spmvBinCalls() { return gBinCalls.load(); }
void spmvSplitForce(int32_t mode) { gSplitForce.store(mode == 0 || mode == 1 ? mode : -1); }
int64_t spmvSplitCalls() { return gSplitCalls.load(); }
void spmvLightForce(int32_t mode) { gLightForce.store(mode == 0 || mode == 1 ? mode : -1); }
int64_t spmvLightCalls() { return gLightCalls.load(); }

}  // namespace al
