// What the SpMV host's units share: spmv_host.cpp (validation, staging, the
// merge-path launches) and spmvt_cpu.cpp (the CPU device's binned and
// column-split transposed products). Internal to the host layer.
#pragma once
#include <cstddef>
#include <cstdint>

#include "ascend_linalg/al_sparse.h"
#include "context.h"
#include "spmv_tiling.h"

namespace al {

// Bytes of one value of compute type t; 0 for a type this op does not compute.
size_t spmvTypeBytes(alDataType_t t);

// Whether values stored as `store` may be widened to compute type `compute`
// as the kernels read them (store != compute): float16/bfloat16 values with
// float32 compute (the SpMV seed's mixed-precision modes), any index type;
// and, with int32 indices, int8 or bool values with float32 compute and
// float32, int32, int64, int8 or bool values with float64 compute: scipy's
// result type of such a matrix times a float32 or float64 x, which scipy
// (and, before, this project) computes on a converted copy of the values.
// Each value is widened exactly as numpy's astype converts it (int64 to the
// nearest float64), so the product equals the product over that copy. The
// CPU device only (spmv_host.cpp); one more instantiation of every kernel
// per pair, hence the index type and the short list.
inline bool spmvWidenedValues(int32_t store, int32_t compute, int32_t indexType) {
    if ((store == AL_R_16F || store == AL_R_16BF) && compute == AL_R_32F) return true;
    if (indexType != AL_INDEX_32I) return false;
    if (compute == AL_R_32F) return store == AL_R_8I || store == AL_B_8;
    if (compute == AL_R_64F)
        return store == AL_R_32F || store == AL_R_32I || store == AL_R_64I || store == AL_R_8I || store == AL_B_8;
    return false;
}

// The error for a structure the kernels flagged (sets the last error).
alStatus_t spmvMalformed(const alCsrDescr* A);

// The SpMV workspace. On the CPU device one buffer is kept between calls: the
// transposed partials are blocks * cols values, and a fresh allocation per
// call pays page faults and the OS zeroing them every time. One call at a
// time holds it (try_lock); a concurrent call, a device with its own memory,
// or one needing more than 1 GiB allocates its own, freed with this object.
class SpmvWorkspace {
public:
    explicit SpmvWorkspace(Device& d) : dev_(d), own_(d) {}
    ~SpmvWorkspace();
    SpmvWorkspace(const SpmvWorkspace&) = delete;
    SpmvWorkspace& operator=(const SpmvWorkspace&) = delete;
    alStatus_t allocate(size_t bytes);
    void* get() const { return ptr_; }

private:
    Device& dev_;
    DeviceBuffer own_;
    bool cached_ = false;
    void* ptr_ = nullptr;
};

// The CPU device's transposed products beyond the merge path (spmvt_cpu.cpp).
// Each use* says whether y := alpha*A^T x + beta*y takes that path; nnzT is
// indptr[rows], already checked to lie in [0, nnz].

// Column split (kernels/spmv/spmvt_split.h). in: indptr, indices, values, x,
// y. plain: alpha 1, beta 0, unit stride (sums go straight into y).
// *unsorted: a row was found unsorted and nothing was written; the caller
// runs the merge-path product instead.
bool spmvtUseSplit(Device& dev, const SpmvTilingData& t, const alCsrDescr* A, int64_t nnzT);
alStatus_t spmvtRunSplit(Device& dev, const SpmvTilingData& t, const alCsrDescr* A, int64_t nnzT,
                         void* const* in, bool plain, bool* unsorted);

// Light (kernels/spmv/spmvt_light.h): the plain product only (plain: alpha
// 1, beta 0, y unit-stride for one vector, row-major for several).
// spmvtLightBlocks: 0 where it does not apply, else the blocks it runs.
int spmvtLightBlocks(Device& dev, const SpmvTilingData& t, const alCsrDescr* A, int64_t nnzT, bool plain);
alStatus_t spmvtRunLight(Device& dev, const SpmvTilingData& t, const alCsrDescr* A, int64_t nnzT,
                         void* const* in, int blocks);

// Binned (kernels/spmv/spmvt_bins.h). spmvtBinPlan fills the bin tiling
// (chunks, workspace size); spmvtRunBins launches bin and drain per chunk
// into args' workspace (args[5]) and stops at the first chunk whose
// structure the kernels flagged: the caller reads the workspace's status.
bool spmvtUseBins(Device& dev, const SpmvTilingData& t, const alCsrDescr* A, int64_t nnzT);
SpmvBinTiling spmvtBinPlan(const SpmvTilingData& t, const alCsrDescr* A, int64_t nnzT, bool plain);
alStatus_t spmvtRunBins(Device& dev, SpmvBinTiling* bt, void* const* args);

}  // namespace al
