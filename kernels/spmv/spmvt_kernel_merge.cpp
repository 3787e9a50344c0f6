// Transposed merge-path SpMV, baseline build, and the run-time choice between
// it and the AVX2 build of the same templates (spmvt_merge_impl.h).
#include "spmvt_merge_impl.h"

namespace al {
namespace spmvm {

#ifndef AL_CPU_DISPATCH  // meson: the AVX2 TU is built (and linked) exactly when this is set
const SpmvtTable* spmvtAvx2() { return nullptr; }
#endif

namespace {
const SpmvtTable kBaseline{spmvtScatterEntry, spmvtReduceEntry, spmvtBinEntry, spmvtDrainEntry, spmvtSplitEntry, "baseline"};
const SpmvtTable& spmvtChosen() {
    static const SpmvtTable* chosen = [] {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_cpu_init();
        if (const SpmvtTable* t = spmvtAvx2())
            if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return t;
#endif
        return &kBaseline;
    }();
    return *chosen;
}
// float16 values: the AVX2 build converts them with F16C.
const SpmvtTable& spmvtChosenF16() {
    static const SpmvtTable* chosen = &spmvtChosen() != &kBaseline && cpuHasF16c() ? &spmvtChosen() : &kBaseline;
    return *chosen;
}
}  // namespace
}  // namespace spmvm

void spmvt_kernel_merge_cpu(uint32_t b, uint32_t nb, void* const* args, const void* tiling) {
    const bool f16 = static_cast<const SpmvTilingData*>(tiling)->valueStore == AL_R_16F;
    (f16 ? spmvm::spmvtChosenF16() : spmvm::spmvtChosen()).scatter(b, nb, args, tiling);
}

void spmvt_reduce_merge_cpu(uint32_t b, uint32_t nb, void* const* args, const void* tiling) {
    spmvm::spmvtChosen().reduce(b, nb, args, tiling);
}

void spmvt_bin_cpu(uint32_t b, uint32_t nb, void* const* args, const void* tiling) {
    const bool f16 = static_cast<const SpmvBinTiling*>(tiling)->t.valueStore == AL_R_16F;
    (f16 ? spmvm::spmvtChosenF16() : spmvm::spmvtChosen()).bin(b, nb, args, tiling);
}

void spmvt_drain_cpu(uint32_t b, uint32_t nb, void* const* args, const void* tiling) {
    spmvm::spmvtChosen().drain(b, nb, args, tiling);
}

void spmvt_split_cpu(uint32_t b, uint32_t nb, void* const* args, const void* tiling) {
    const bool f16 = static_cast<const SpmvSplitTiling*>(tiling)->t.valueStore == AL_R_16F;
    (f16 ? spmvm::spmvtChosenF16() : spmvm::spmvtChosen()).split(b, nb, args, tiling);
}

}  // namespace al
