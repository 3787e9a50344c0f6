// A fast 64-bit fingerprint of host buffers: how a device-resident copy is
// checked against the host arrays it was made from before it is reused
// (docs/npu.md, "Residency"). Not cryptographic: it detects changes, it does
// not resist someone crafting a collision.
#ifndef ASCEND_LINALG_FINGERPRINT_H
#define ASCEND_LINALG_FINGERPRINT_H

#include <cstddef>
#include <cstdint>

namespace al {

// Fingerprint of the concatenation of `n` buffers, each hashed with its own
// length and position, so that moving bytes from one buffer to the next
// changes the result. Deterministic: the same bytes give the same value on
// every call, whatever the thread count. Buffers are cut into fixed 1 MiB
// chunks hashed independently (in parallel on the CPU pool when the total is
// large), then the chunk hashes are combined in order.
// Reads every byte once; writes nothing. Call it without the GIL.
uint64_t fingerprint(const void* const* data, const size_t* bytes, int n);

}  // namespace al

#endif
