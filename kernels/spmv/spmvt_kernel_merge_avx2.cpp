// The transposed merge-path SpMV compiled with -mavx2 -mfma -mf16c (chosen at
// run time only where the CPU has AVX2 and FMA; for float16 values only where
// it also has F16C): the same templates as the baseline build
// (spmvt_merge_impl.h), where the span checks' unsigned min/max become one
// instruction per eight indices instead of an emulation.
#include "spmvt_merge_impl.h"

namespace al {
namespace spmvm {

const SpmvtTable* spmvtAvx2() {
    static const SpmvtTable t{spmvtScatterEntry, spmvtReduceEntry, spmvtBinEntry, spmvtDrainEntry, spmvtSplitEntry, "avx2+fma"};
    return &t;
}

}  // namespace spmvm
}  // namespace al
