// SpMV tiling: pure function, no device.
#include "spmv_tiling.h"

#include <algorithm>

#include "ascend_linalg/al_types.h"

namespace al {

namespace {
size_t valueBytes(int32_t type) {
    switch (type) {
        case AL_R_32F: case AL_R_32I: return 4;
        case AL_R_64F: case AL_R_64I: case AL_C_32F: return 8;
        case AL_C_64F: return 16;
        default: return 4;
    }
}
}  // namespace

SpmvPlatform spmvPlatformCpu(uint32_t threads) {
    // The non-transposed kernel takes 4 blocks per core: a core that finishes
    // early (or a core the OS gives to another process for a while) takes the
    // next block, and the fix-up cost grows only with the block count. Below
    // 16384 rows + nonzeros per block, another block (a pool thread woken)
    // costs more than it saves. One thread takes one block: its blocks would
    // run one after another on the caller, each with its own split search and
    // fix-up. 112^2 Poisson float64 A x (62272 nonzeros) through Python, one
    // thread, 20000 products: 105 us each with 4 blocks, 80-83 with one
    // (scipy 77-88).
    //
    // Under 2^18 rows + nonzeros a product is one block, whatever the thread
    // count. An iterative solver calls its products between stretches of
    // vector work long enough for the pool's workers to fall asleep (they
    // spin about 10 us), and waking one cost more than the split saved: scipy's
    // cg (300 iterations) and lsqr (150) on a 112^2 Poisson matrix (75k rows
    // + nonzeros) took 27.4 and 35.6 ms on two threads against 23.6 and 29.8
    // on one; on 160^2 (154k) cg 67.8 against 62.8 and lsqr 74.0 against
    // 65.9 (one process rotating the order, medians of 11). Running the
    // blocks on the caller when the workers sleep fixed the solver case but
    // still paid for the blocks: the transposed product's two partials and
    // their reduction, the non-transposed one's split searches and fix-up.
    // At 300^2 (540k) two threads won (cg 133 -> 111 ms, OpenBLAS on one
    // thread). One block also gives a small product the same bits on any
    // number of threads.
    return SpmvPlatform{std::max(threads, 1u), threads > 1 ? 4u : 1u, 16384, kSpmvSmallWork};
}

SpmvPlatform spmvPlatformAscend(uint32_t cores) {
    // One block per AI core: nothing else shares the cores during a launch, so
    // extra blocks would only add fix-up work. The minimum per block is the
    // CPU's until it is measured on a device (docs/npu.md).
    return SpmvPlatform{std::max(cores, 1u), 1, 16384, 0};
}

void spmvLayout(SpmvTilingData* t) {
    const int64_t vb = static_cast<int64_t>(valueBytes(t->valueType));
    const int64_t blocks = t->usedCoreNum;
    t->carryOffset = 64;
    t->partOffset = 64;
    t->pages = t->trans ? (t->cols + (int64_t(1) << kSpmvPageShift) - 1) >> kSpmvPageShift : 0;
    if (t->trans) {
        // Partials first (the reference kernels' layout), then the page flags.
        t->pageOffset = t->partOffset + blocks * t->cols * t->nvec * vb;
        t->workspaceSize = t->pageOffset + blocks * t->pages;
    } else {
        t->pageOffset = 64;
        t->workspaceSize = t->carryOffset + blocks * 2 * t->nvec * vb;
    }
}

SpmvBinTiling spmvBinTiling(const SpmvTilingData& t, int64_t nnz, int64_t chunks, bool sumInY) {
    SpmvBinTiling b{};
    b.t = t;
    b.chunks = std::max<int64_t>(chunks, 1);
    const int64_t vb = static_cast<int64_t>(valueBytes(t.valueType));
    const int64_t blocks = std::max<int32_t>(t.usedCoreNum, 1);
    b.bins = (t.cols + (int64_t(1) << kSpmvBinShift) - 1) >> kSpmvBinShift;
    // A piece of the merge path (rows + nonzeros split evenly over
    // chunks * blocks pieces) holds at most ceil(path / pieces) + 1 nonzeros;
    // every bin's blocks are full but its last.
    const int64_t pieces = b.chunks * blocks;
    const int64_t perPiece = (t.rows + nnz + pieces - 1) / pieces + 1;
    b.poolBlocks = (perPiece + kSpmvBinBlock - 1) / kSpmvBinBlock + b.bins + 1;
    auto up = [](int64_t v) { return (v + 63) / 64 * 64; };
    int64_t o = 0;
    b.headOffset = o;
    o = up(o + 4 * b.bins);
    b.tailOffset = o;
    o = up(o + 4 * b.bins);
    b.stagedOffset = o;
    o = up(o + 4 * b.bins);
    b.nextOffset = o;
    o = up(o + 4 * b.poolBlocks);
    b.countOffset = o;
    o = up(o + 4 * b.poolBlocks);
    b.stageOffOffset = o;
    o = up(o + 2 * kSpmvBinStage * b.bins);
    b.stageValOffset = o;
    o = up(o + vb * kSpmvBinStage * b.bins);
    b.poolOffset = o;
    b.poolBlockBytes = up((2 + vb) * kSpmvBinBlock);
    o += b.poolBlocks * b.poolBlockBytes;
    b.areaOffset = 64;
    b.areaBytes = up(o);
    b.workspaceSize = b.areaOffset + blocks * b.areaBytes;
    if (!sumInY) {
        b.sumOffset = b.workspaceSize;  // a multiple of 64
        b.workspaceSize += up(t.cols * vb);
    }
    return b;
}

SpmvTilingData spmvTiling(int32_t trans, int64_t rows, int64_t cols, int64_t nnz, int64_t nvec,
                          int32_t valueType, int32_t indexType, uint32_t coreNum) {
    return spmvTiling(trans, rows, cols, nnz, nvec, valueType, indexType, spmvPlatformCpu(coreNum));
}

SpmvTilingData spmvTiling(int32_t trans, int64_t rows, int64_t cols, int64_t nnz, int64_t nvec,
                          int32_t valueType, int32_t indexType, const SpmvPlatform& p) {
    SpmvTilingData t{};
    t.rows = rows;
    t.cols = cols;
    t.nnz = nnz;
    t.nvec = nvec;
    t.trans = trans;
    t.valueType = valueType;
    t.indexType = indexType;
    // Merge-path kernels split rows + nonzeros evenly, so neither one long row
    // nor a run of empty rows limits the block count. The transposed kernel's
    // partials cost cols per block, so it keeps one block per core.
    const int64_t work = (rows + nnz) * std::max<int64_t>(nvec, 1);
    const int64_t maxBlocks = int64_t(std::max(p.coreNum, 1u)) * (trans ? 1 : std::max(p.blocksPerCore, 1u));
    const int64_t blocks =
        work < p.minParallelWork
            ? 1
            : std::max<int64_t>(1, std::min<int64_t>(maxBlocks, work / std::max<int64_t>(p.minWorkPerBlock, 1)));
    t.usedCoreNum = static_cast<int32_t>(blocks);
    spmvLayout(&t);
    return t;
}

}  // namespace al
