// The _core module's bandwidth yardsticks: compiled passes over memory on the
// CPU device's thread pool that benchmarks/bench_spmv.py times next to the
// products (not part of the API).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include "_core_gil.h"
#include "host/runtime/cpu_device.h"

namespace py = pybind11;
using alpy::withoutGil;

namespace {

// scatter_pass's per-block partials: one buffer kept between calls (as the
// kernels keep their workspace), on huge pages where the system gives them
// (the partials are updated at random, as the kernels' are), grown as needed.
// The mutex is held for the whole pass.
struct ScatterBuffer {
    std::mutex mu;
    std::unique_ptr<unsigned char, void (*)(void*)> p{nullptr, std::free};
    size_t bytes = 0;
    unsigned char* get(size_t need) {
        if (need > bytes) {
            constexpr size_t kAlign = size_t(2) << 20;
            const size_t n = (need + kAlign - 1) / kAlign * kAlign;
            p.reset(static_cast<unsigned char*>(std::aligned_alloc(kAlign, n)));
            bytes = p ? n : 0;
            if (!p) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
            madvise(p.get(), n, MADV_HUGEPAGE);
#endif
        }
        return p.get();
    }
};
ScatterBuffer& scatterBuffer() {
    static auto* b = new ScatterBuffer();  // never destroyed: a call may run at exit
    return *b;
}

// The pass for one index and value type: block b takes its contiguous share
// of the entries, zeroes its own partial of n elements and adds each value to
// its index's element in entry order, the partial element prefetched
// kAheadEntries entries on and both streams kAheadBytes on (non-temporal),
// as the kernels' scattered blocks do; then out[c] sums the partials in
// block order, its columns split over the blocks. An index outside [0, n)
// is counted and skipped; out is written only if there was none.
template <class I, class V>
int64_t scatterPass(const I* idx, const V* val, int64_t len, V* out, int64_t n, uint32_t blocks) {
    constexpr int64_t kAheadEntries = 64;
    constexpr uintptr_t kAheadBytes = 8192;
    std::lock_guard<std::mutex> lk(scatterBuffer().mu);
    V* parts = reinterpret_cast<V*>(scatterBuffer().get(sizeof(V) * static_cast<size_t>(n) * blocks));
    struct Ctx {
        const I* idx;
        const V* val;
        int64_t len, n;
        V* parts;
        V* out;
        uint32_t blocks;
        std::vector<int64_t> bad;
    } ctx{idx, val, len, n, parts, out, blocks, std::vector<int64_t>(blocks, 0)};
    al::parallelFor(blocks, [](uint32_t b, void* p) {
        auto* c = static_cast<Ctx*>(p);
        using U = std::make_unsigned_t<I>;
        const U lim = static_cast<U>(c->n);
        V* part = c->parts + static_cast<int64_t>(b) * c->n;
        std::fill(part, part + c->n, V(0));
        const int64_t lo = c->len * b / c->blocks, hi = c->len * (b + 1) / c->blocks;
        const int64_t pfEnd = std::max(lo, hi - kAheadEntries);
        int64_t bad = 0;
        auto add = [&](int64_t k) __attribute__((always_inline)) {
            const U i = static_cast<U>(c->idx[k]);
            if (__builtin_expect(i >= lim, 0)) {
                ++bad;
                return;
            }
            part[i] += c->val[k];
        };
        int64_t k = lo;
        for (; k < pfEnd; ++k) {
            if ((k & 15) == 0) {
                __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(c->idx + k) + kAheadBytes), 0, 0);
                __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(c->val + k) + kAheadBytes), 0, 0);
            }
            // the index may be out of range: clamped, as merely forming
            // such an address is undefined
            __builtin_prefetch(part + std::min(static_cast<U>(c->idx[k + kAheadEntries]), static_cast<U>(lim - 1)), 1);
            add(k);
        }
        for (; k < hi; ++k) add(k);
        c->bad[b] = bad;
    }, &ctx);
    int64_t bad = 0;
    for (int64_t v : ctx.bad) bad += v;
    if (bad) return bad;
    al::parallelFor(blocks, [](uint32_t b, void* p) {
        auto* c = static_cast<Ctx*>(p);
        const int64_t lo = c->n * b / c->blocks, hi = c->n * (b + 1) / c->blocks;
        for (int64_t i = lo; i < hi; ++i) {
            V s = c->parts[i];
            for (uint32_t q = 1; q < c->blocks; ++q) s += c->parts[static_cast<int64_t>(q) * c->n + i];
            c->out[i] = s;
        }
    }, &ctx);
    return 0;
}

}  // namespace

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
        "scatter_pass",
        // Every array is taken as it is (no conversion): indices and values
        // are only read, out is written in place.
        [](py::array indices, py::array values, py::array out, int64_t blocks) {
            if (blocks < 1 || blocks > 1024) throw py::value_error("scatter_pass: blocks must be in [1, 1024]");
            const bool i32 = indices.dtype().is(py::dtype::of<int32_t>());
            if (!i32 && !indices.dtype().is(py::dtype::of<int64_t>()))
                throw py::value_error("scatter_pass: indices must be int32 or int64");
            const bool f32 = values.dtype().is(py::dtype::of<float>());
            if (!f32 && !values.dtype().is(py::dtype::of<double>()))
                throw py::value_error("scatter_pass: values must be float32 or float64");
            if (!out.dtype().is(values.dtype())) throw py::value_error("scatter_pass: out must have the values' dtype");
            if (indices.ndim() != 1 || values.ndim() != 1 || out.ndim() != 1)
                throw py::value_error("scatter_pass: indices, values and out must be 1-D");
            if (!(indices.flags() & py::array::c_style) || !(values.flags() & py::array::c_style) ||
                !(out.flags() & py::array::c_style))
                throw py::value_error("scatter_pass: indices, values and out must be C-contiguous");
            if (!out.writeable()) throw py::value_error("scatter_pass: out must be writeable");
            if (indices.shape(0) != values.shape(0))
                throw py::value_error("scatter_pass: indices and values must have the same length");
            const auto* o = static_cast<const unsigned char*>(out.data());
            const int64_t on = static_cast<int64_t>(out.nbytes());
            for (const py::array* r : {&indices, &values}) {
                const auto* q = static_cast<const unsigned char*>(r->data());
                const int64_t qn = static_cast<int64_t>(r->nbytes());
                if (on > 0 && qn > 0 && o < q + qn && q < o + on)
                    throw py::value_error("scatter_pass: out must not share memory with indices or values");
            }
            const int64_t len = static_cast<int64_t>(indices.shape(0)), n = static_cast<int64_t>(out.shape(0));
            if (len > 0 && n == 0) throw py::value_error("scatter_pass: an index must lie in [0, len(out)): out is empty");
            if (n > (int64_t(1) << 40) / blocks) throw py::value_error("scatter_pass: out times blocks is too large");
            int64_t bad = 0;
            const auto b = static_cast<uint32_t>(blocks);
            withoutGil([&] {
                if (n == 0) return;
                if (i32 && f32)
                    bad = scatterPass(static_cast<const int32_t*>(indices.data()), static_cast<const float*>(values.data()),
                                      len, static_cast<float*>(out.mutable_data()), n, b);
                else if (i32)
                    bad = scatterPass(static_cast<const int32_t*>(indices.data()), static_cast<const double*>(values.data()),
                                      len, static_cast<double*>(out.mutable_data()), n, b);
                else if (f32)
                    bad = scatterPass(static_cast<const int64_t*>(indices.data()), static_cast<const float*>(values.data()),
                                      len, static_cast<float*>(out.mutable_data()), n, b);
                else
                    bad = scatterPass(static_cast<const int64_t*>(indices.data()), static_cast<const double*>(values.data()),
                                      len, static_cast<double*>(out.mutable_data()), n, b);
            });
            if (bad)
                throw py::value_error("scatter_pass: " + std::to_string(bad) + " index(es) outside [0, " +
                                      std::to_string(n) + ")");
        },
        py::arg("indices"), py::arg("values"), py::arg("out"), py::arg("blocks"),
        "out[i] = the sum of values[k] over the k with indices[k] == i (np.bincount with weights, in "
        "out's dtype), in one compiled pass split into `blocks` contiguous shares, each summed into its "
        "own partial of len(out) elements (prefetched as the kernels' scattered blocks prefetch "
        "theirs), then the partials summed in block order: the scatter yardstick of "
        "benchmarks/bench_spmv.py, what a transposed product's per-block partials cost without x, "
        "indptr or rows. indices int32 or int64, values and out float32 or float64 (the same), all "
        "1-D and C-contiguous; an index outside [0, len(out)) raises ValueError, out unwritten.");
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
