// Fingerprint: four independent 64-bit multiply-rotate lanes over 32-byte
// stripes (the structure of the xxHash64 family; this is not bit-compatible
// with it and need not be), per 1 MiB chunk, chunk hashes folded in order.
#include "fingerprint.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "runtime/cpu_device.h"

namespace al {

namespace {

constexpr uint64_t kP1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t kP2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kP3 = 0x165667B19E3779F9ull;
constexpr uint64_t kP4 = 0x85EBCA77C2B2AE63ull;
constexpr uint64_t kP5 = 0x27D4EB2F165667C5ull;
constexpr size_t kChunk = size_t(1) << 20;
// Below this many bytes the pool costs more than it saves.
constexpr size_t kParallelBytes = size_t(8) << 20;

inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
inline uint64_t load64(const unsigned char* p) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    return v;
}
inline uint64_t lane(uint64_t acc, uint64_t in) { return rotl(acc + in * kP2, 31) * kP1; }
inline uint64_t fold(uint64_t acc, uint64_t v) { return (acc ^ lane(0, v)) * kP1 + kP4; }
inline uint64_t avalanche(uint64_t h) {
    h ^= h >> 33;
    h *= kP2;
    h ^= h >> 29;
    h *= kP3;
    h ^= h >> 32;
    return h;
}

// Hash of bytes [p, p + len) with `seed`.
uint64_t hashChunk(const unsigned char* p, size_t len, uint64_t seed) {
    const unsigned char* end = p + len;
    uint64_t h;
    if (len >= 32) {
        uint64_t v1 = seed + kP1 + kP2, v2 = seed + kP2, v3 = seed, v4 = seed - kP1;
        for (const unsigned char* limit = end - 32; p <= limit; p += 32) {
            v1 = lane(v1, load64(p));
            v2 = lane(v2, load64(p + 8));
            v3 = lane(v3, load64(p + 16));
            v4 = lane(v4, load64(p + 24));
        }
        h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
        h = fold(fold(fold(fold(h, v1), v2), v3), v4);
    } else {
        h = seed + kP5;
    }
    h += static_cast<uint64_t>(len);
    for (; p + 8 <= end; p += 8) h = rotl(h ^ lane(0, load64(p)), 27) * kP1 + kP4;
    for (; p < end; ++p) h = rotl(h ^ (uint64_t(*p) * kP5), 11) * kP1;
    return avalanche(h);
}

struct Piece {
    const unsigned char* p;
    size_t len;
    uint64_t seed;  // buffer index and chunk index: the same bytes elsewhere hash differently
};

struct Job {
    const std::vector<Piece>* pieces;
    std::vector<uint64_t>* out;
    uint32_t blocks;
};

void hashBlock(uint32_t b, void* ctx) {
    const Job& j = *static_cast<const Job*>(ctx);
    const size_t n = j.pieces->size();
    for (size_t i = n * b / j.blocks; i < n * (b + 1) / j.blocks; ++i) {
        const Piece& c = (*j.pieces)[i];
        (*j.out)[i] = hashChunk(c.p, c.len, c.seed);
    }
}

}  // namespace

uint64_t fingerprint(const void* const* data, const size_t* bytes, int n) {
    std::vector<Piece> pieces;
    size_t total = 0;
    for (int i = 0; i < n; ++i) {
        const auto* p = static_cast<const unsigned char*>(data[i]);
        const size_t len = p ? bytes[i] : 0;
        total += len;
        size_t chunks = len ? (len + kChunk - 1) / kChunk : 1;  // an empty buffer still counts
        for (size_t c = 0; c < chunks; ++c) {
            const size_t off = c * kChunk;
            pieces.push_back({p + (len ? off : 0), len ? std::min(kChunk, len - off) : 0,
                              (uint64_t(i) << 40) ^ c});
        }
    }
    std::vector<uint64_t> hashes(pieces.size());
    Job job{&pieces, &hashes, 1};
    if (total >= kParallelBytes) {
        job.blocks = std::max<uint32_t>(1, std::min<uint32_t>(cpuNumThreads(), static_cast<uint32_t>(pieces.size())));
        parallelFor(job.blocks, hashBlock, &job);
    } else {
        hashBlock(0, &job);
    }
    uint64_t h = kP5 ^ static_cast<uint64_t>(n);
    for (int i = 0; i < n; ++i) h = fold(h, data[i] ? bytes[i] : 0);
    for (uint64_t c : hashes) h = fold(h, c);
    return avalanche(h);
}

}  // namespace al
