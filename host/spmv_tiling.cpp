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
// Below this much work per block, another block costs more than it saves.
constexpr int64_t kMinNnzPerBlock = 16384;
}  // namespace

SpmvTilingData spmvTiling(int32_t trans, int64_t rows, int64_t cols, int64_t nnz, int64_t nvec,
                          int32_t valueType, int32_t indexType, uint32_t coreNum) {
    SpmvTilingData t{};
    t.rows = rows;
    t.cols = cols;
    t.nnz = nnz;
    t.nvec = nvec;
    t.trans = trans;
    t.valueType = valueType;
    t.indexType = indexType;
    const int64_t work = std::max<int64_t>(nnz, rows) * std::max<int64_t>(nvec, 1);
    int64_t blocks = std::max<int64_t>(1, std::min<int64_t>(coreNum, work / kMinNnzPerBlock));
    blocks = std::min<int64_t>(blocks, std::max<int64_t>(rows, 1));
    t.usedCoreNum = static_cast<int32_t>(blocks);
    // Status word (padded to 64 bytes), then for the transposed product one
    // cols x nvec partial result per block.
    t.workspaceSize = 64;
    if (trans) t.workspaceSize += blocks * cols * nvec * static_cast<int64_t>(valueBytes(valueType));
    return t;
}

}  // namespace al
