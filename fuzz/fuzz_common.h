// Shared pieces of the libFuzzer harnesses (fuzz/README.md).
//
// Reader: the fuzzer's bytes drive every choice, front to back; once they run
// out, a fixed splitmix64 stream takes over, so a short input can still ask
// for a large structure (the bytes decide its shape, the stream fills it) and
// every input replays exactly.
//
// CL: a value of any SpMV/csymm element type widened to long double (imag 0
// for real types), for the harnesses' own reference computations.
#ifndef ASCEND_LINALG_FUZZ_COMMON_H
#define ASCEND_LINALG_FUZZ_COMMON_H

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fz {

class Reader {
public:
    Reader(const uint8_t* p, size_t n) : p_(p), n_(n), s_(0x9E3779B97F4A7C15ull ^ n) {}
    uint8_t byte() {
        if (n_) {
            --n_;
            return *p_++;
        }
        return static_cast<uint8_t>(next() >> 56);
    }
    uint16_t u16() { return static_cast<uint16_t>(byte() | (byte() << 8)); }
    uint32_t u32() { return static_cast<uint32_t>(u16() | (uint32_t(u16()) << 16)); }
    uint64_t u64() { return u32() | (uint64_t(u32()) << 32); }
    // Uniform-ish in [0, k); k > 0.
    uint32_t below(uint32_t k) { return k <= 256 ? byte() % k : u32() % k; }
    // Bulk data: the stream only (keeps the fuzzer's bytes for the decisions).
    uint64_t bulk() { return next(); }
    uint32_t bulkBelow(uint64_t k) { return static_cast<uint32_t>(next() % k); }

private:
    uint64_t next() {
        uint64_t z = (s_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    const uint8_t* p_;
    size_t n_;
    uint64_t s_;
};

struct CL {
    long double re, im;
};

// FUZZ_VERBOSE set: harnesses print what an input decoded to (for triage).
inline bool verbose() {
    static const bool v = std::getenv("FUZZ_VERBOSE") != nullptr;
    return v;
}

// A finding: say what, then trap (libFuzzer saves the input as crash-*).
[[noreturn]] inline void fail(const char* what, long long a = 0, long long b = 0) {
    std::fprintf(stderr, "FUZZ FINDING: %s (%lld, %lld)\n", what, a, b);
    std::fflush(stderr);
    __builtin_trap();
}

// An exactly sized heap buffer (ASan reports any access past `bytes`); a
// zero-byte buffer is still a distinct pointer that may not be read.
struct Buf {
    unsigned char* p = nullptr;
    size_t bytes = 0;
    Buf() = default;
    explicit Buf(size_t n) : p(static_cast<unsigned char*>(std::malloc(n))), bytes(n) {
        if (!p && n) fail("harness out of memory", static_cast<long long>(n));
    }
    Buf(const Buf&) = delete;
    Buf& operator=(const Buf&) = delete;
    Buf(Buf&& o) noexcept : p(o.p), bytes(o.bytes) { o.p = nullptr; }
    ~Buf() { std::free(p); }
};

}  // namespace fz

#endif
