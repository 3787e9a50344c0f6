// The _core module's bandwidth yardsticks: compiled passes over memory on the
// CPU device's thread pool that benchmarks/bench_spmv.py times next to the
// products (not part of the API).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "_core_gil.h"
#include "host/runtime/cpu_device.h"

namespace py = pybind11;
using alpy::withoutGil;

void addYardsticks(py::module_& m) {
    m.def(
        "stream_triad",
        // a is the caller's array, written in place: taken as a plain array
        // and checked, never converted (a converted copy would take the
        // result and be dropped). b and c are only read: converted if need be.
        [](py::array a, py::array_t<double, py::array::c_style | py::array::forcecast> b,
           py::array_t<double, py::array::c_style | py::array::forcecast> c, double s, int64_t blocks) {
            if (blocks < 1 || blocks > 1024) throw py::value_error("stream_triad: blocks must be in [1, 1024]");
            if (!a.dtype().is(py::dtype::of<double>()) || !(a.flags() & py::array::c_style))
                throw py::value_error("stream_triad: a must be a C-contiguous float64 array");
            if (!a.writeable()) throw py::value_error("stream_triad: a must be writeable");
            if (a.ndim() != 1 || b.ndim() != 1 || c.ndim() != 1)
                throw py::value_error("stream_triad: a, b and c must be 1-D");
            if (b.shape(0) != a.shape(0) || c.shape(0) != a.shape(0))
                throw py::value_error("stream_triad: a, b and c must have the same length");
            struct Ctx {
                double* a;
                const double *b, *c;
                double s;
                int64_t n;
                uint32_t blocks;
            } ctx{static_cast<double*>(a.mutable_data()), b.data(), c.data(), s, static_cast<int64_t>(a.shape(0)),
                  static_cast<uint32_t>(blocks)};
            withoutGil([&] {
                al::parallelFor(blocks, [](uint32_t i, void* p) {
                    auto* x = static_cast<Ctx*>(p);
                    const int64_t lo = x->n * i / x->blocks, hi = x->n * (i + 1) / x->blocks;
                    for (int64_t k = lo; k < hi; ++k) x->a[k] = x->b[k] + x->s * x->c[k];
                }, &ctx);
            });
        },
        py::arg("a"), py::arg("b"), py::arg("c"), py::arg("s"), py::arg("blocks"),
        "STREAM's triad a[i] = b[i] + s*c[i] (float64, 1-D, C-contiguous a) in one pass, split into "
        "`blocks` contiguous pieces on the CPU device's thread pool: the bandwidth yardstick of "
        "benchmarks/bench_spmv.py");
    m.def(
        "stream_pass",
        // The arrays' bytes are only read (any dtype: a buffer of bytes);
        // out is the caller's array, written in place, so it is checked, never
        // converted.
        [](const std::vector<py::array>& reads, py::array out, int64_t blocks) {
            if (blocks < 1 || blocks > 1024) throw py::value_error("stream_pass: blocks must be in [1, 1024]");
            struct Span {
                const unsigned char* p;
                int64_t n;
            };
            std::vector<Span> spans;
            for (size_t i = 0; i < reads.size(); ++i) {
                if (!(reads[i].flags() & py::array::c_style))
                    throw py::value_error("stream_pass: read array " + std::to_string(i) + " must be C-contiguous");
                spans.push_back({static_cast<const unsigned char*>(reads[i].data()), static_cast<int64_t>(reads[i].nbytes())});
            }
            if (!(out.flags() & py::array::c_style)) throw py::value_error("stream_pass: out must be C-contiguous");
            if (!out.writeable()) throw py::value_error("stream_pass: out must be writeable");
            // All C-contiguous: each is one byte range, so overlap is a
            // comparison of bounds (no call back into numpy on the timed path).
            const auto* o = static_cast<const unsigned char*>(out.data());
            const int64_t on = static_cast<int64_t>(out.nbytes());
            for (const Span& r : spans)
                if (on > 0 && r.n > 0 && o < r.p + r.n && r.p < o + on)
                    throw py::value_error("stream_pass: out must not share memory with a read array");
            struct Ctx {
                const Span* spans;
                size_t count;
                unsigned char* out;
                int64_t outBytes;
                uint32_t blocks;
                std::vector<uint64_t> sums;
            } ctx{spans.data(), spans.size(), static_cast<unsigned char*>(out.mutable_data()),
                  static_cast<int64_t>(out.nbytes()), static_cast<uint32_t>(blocks),
                  std::vector<uint64_t>(static_cast<size_t>(blocks), 0)};
            withoutGil([&] {
                al::parallelFor(ctx.blocks, [](uint32_t b, void* p) {
                    auto* c = static_cast<Ctx*>(p);
                    auto share = [&](int64_t words, int64_t* lo, int64_t* hi) {
                        *lo = words * b / c->blocks;
                        *hi = words * (b + 1) / c->blocks;
                    };
                    const bool last = b + 1 == c->blocks;
                    // The arrays are read together, a stretch of each in turn
                    // (kStepWords of the longest share a step, the others in
                    // proportion), each prefetched kAhead bytes on: a product
                    // reads its values, indices and x at once, and several
                    // streams in flight draw more from this machine's memory
                    // than one array after another. 2 threads, 320 MB in
                    // three arrays (160/80/80), standalone C++, medians of
                    // 11: one after another 17.4 ms (19.2 GB/s), with the
                    // prefetch 14.3 (23.4); together with it 12.5 (26.9).
                    constexpr int64_t kStepWords = 128;
                    constexpr uintptr_t kAhead = 8192;
                    struct Share {
                        const unsigned char* src;
                        int64_t lo, len, at;
                    };
                    std::vector<Share> sh(c->count);
                    int64_t longest = 0;
                    for (size_t i = 0; i < c->count; ++i) {
                        int64_t lo, hi;
                        share(c->spans[i].n / 8, &lo, &hi);
                        sh[i] = {c->spans[i].p, lo, hi - lo, lo};
                        longest = std::max(longest, hi - lo);
                    }
                    const int64_t steps = std::max<int64_t>(1, (longest + kStepWords - 1) / kStepWords);
                    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
                    for (int64_t st = 1; st <= steps; ++st) {
                        for (Share& a : sh) {
                            // exact in 128 bits: len * st can pass 2^63
                            const int64_t e = a.lo + static_cast<int64_t>(static_cast<unsigned __int128>(a.len) *
                                                                          static_cast<uint64_t>(st) /
                                                                          static_cast<uint64_t>(steps));
                            int64_t k = a.at;
                            for (; k + 8 <= e; k += 8) {  // a line: prefetch on, four sums the compiler vectorises
                                __builtin_prefetch(reinterpret_cast<const void*>(
                                    reinterpret_cast<uintptr_t>(a.src + 8 * k) + kAhead));
                                uint64_t w[8];
                                std::memcpy(w, a.src + 8 * k, sizeof w);
                                s0 += w[0] + w[4], s1 += w[1] + w[5], s2 += w[2] + w[6], s3 += w[3] + w[7];
                            }
                            for (; k < e; ++k) {
                                uint64_t w;
                                std::memcpy(&w, a.src + 8 * k, sizeof w);
                                s0 += w;
                            }
                            a.at = e;
                        }
                    }
                    if (last)
                        for (size_t i = 0; i < c->count; ++i)
                            for (int64_t j = 8 * (c->spans[i].n / 8); j < c->spans[i].n; ++j) s0 += c->spans[i].p[j];
                    c->sums[b] = s0 + s1 + s2 + s3;
                    const int64_t words = c->outBytes / 8;
                    int64_t lo, hi;
                    share(words, &lo, &hi);
                    for (int64_t k = lo; k < hi; ++k) {  // word k := k (not a memset)
                        const uint64_t w = static_cast<uint64_t>(k);
                        std::memcpy(c->out + 8 * k, &w, sizeof w);
                    }
                    if (last) std::memset(c->out + 8 * words, 0, static_cast<size_t>(c->outBytes - 8 * words));
                }, &ctx);
            });
            uint64_t sum = 0;
            for (uint64_t s : ctx.sums) sum += s;
            return sum;
        },
        py::arg("reads"), py::arg("out"), py::arg("blocks"),
        "One compiled pass that reads every byte of each array in `reads` and writes every byte of `out`, "
        "split into `blocks` contiguous pieces on the CPU device's thread pool: the streaming roof of a "
        "product that must move those bytes (benchmarks/bench_spmv.py). Returns the sum, modulo 2^64, of "
        "each array's little-endian 64-bit words plus its trailing bytes; out's word k becomes k and its "
        "trailing bytes 0.");
}
