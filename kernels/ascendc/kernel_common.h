// Pieces every Ascend C kernel of this project shares. Device code: compiled
// only by CANN's bisheng (kernels/ascendc/meson.build), never by the host
// compiler. NOT YET COMPILED OR RUN: no machine used so far has CANN or an NPU.
#ifndef ASCEND_LINALG_KERNELS_ASCENDC_KERNEL_COMMON_H
#define ASCEND_LINALG_KERNELS_ASCENDC_KERNEL_COMMON_H

#include "kernel_operator.h"

namespace al {
namespace ascendc {

// The host passes the plain tiling struct (host/*_tiling.h) as the last GM_ADDR
// argument, a device copy made by AclDevice::launch. Read it word by word into
// a register copy: the struct is plain fixed-width data, a multiple of 4 bytes.
template <class T>
__aicore__ inline void LoadTiling(T* dst, GM_ADDR src) {
    static_assert(sizeof(T) % sizeof(uint32_t) == 0, "tiling structs are 4-byte multiples");
    const __gm__ uint32_t* s = reinterpret_cast<const __gm__ uint32_t*>(src);
    uint32_t* d = reinterpret_cast<uint32_t*>(dst);
    for (uint32_t i = 0; i < sizeof(T) / sizeof(uint32_t); ++i) d[i] = s[i];
}

__aicore__ inline int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
__aicore__ inline int64_t Min(int64_t a, int64_t b) { return a < b ? a : b; }
__aicore__ inline int64_t Max(int64_t a, int64_t b) { return a > b ? a : b; }

// Elements of T in one 32-byte UB block (DataCopy granularity).
template <class T>
__aicore__ inline constexpr int64_t PerBlock() { return 32 / static_cast<int64_t>(sizeof(T)); }
template <class T>
__aicore__ inline int64_t AlignUp(int64_t n) { return CeilDiv(n, PerBlock<T>()) * PerBlock<T>(); }

// GM <-> UB copies of `count` contiguous elements, any count (DataCopyPad pads
// the UB side to 32 bytes and never touches GM past the end).
template <class T>
__aicore__ inline void CopyIn(const AscendC::LocalTensor<T>& dst, const AscendC::GlobalTensor<T>& src,
                              uint32_t count) {
    AscendC::DataCopyExtParams p{1, static_cast<uint32_t>(count * sizeof(T)), 0, 0, 0};
    AscendC::DataCopyPadExtParams<T> pad{false, 0, 0, 0};
    AscendC::DataCopyPad(dst, src, p, pad);
}
template <class T>
__aicore__ inline void CopyOut(const AscendC::GlobalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                               uint32_t count) {
    AscendC::DataCopyExtParams p{1, static_cast<uint32_t>(count * sizeof(T)), 0, 0, 0};
    AscendC::DataCopyPad(dst, src, p);
}

}  // namespace ascendc
}  // namespace al

#endif
