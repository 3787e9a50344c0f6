// The _core module's test hooks: entry points the tests use to reach the
// kernels' and the thread pool's internals directly (not part of the API).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "_core_gil.h"
#include "ascend_linalg/al_types.h"
#include "host/runtime/cpu_device.h"
#include "host/spmv_tiling.h"
#include "host/spmv_tune.h"
#include "kernels/spmv/spmv_kernel_merge.h"

namespace py = pybind11;
using alpy::withoutGil;

void addTestHooks(py::module_& m) {
    m.def(
        "spmv_widen_baseline",
        [](py::array_t<uint16_t, py::array::c_style | py::array::forcecast> bits, const std::string& store) {
            if (store != "float16" && store != "bfloat16") throw py::value_error("store must be float16 or bfloat16");
            py::array_t<float> out(bits.size());
            al::spmvWidenBaseline(store == "float16" ? AL_R_16F : AL_R_16BF, bits.data(), out.mutable_data(),
                                  bits.size());
            return out;
        },
        py::arg("bits"), py::arg("store"),
        "Test hook: 16-bit values (their bits) as the baseline SpMV build widens them (no F16C)");
    m.def(
        "spmv_scattered",
        [](py::array indices, int64_t lo, int64_t hi, int64_t stride) {
            if (indices.ndim() != 1 || !(indices.flags() & py::array::c_style))
                throw py::value_error("indices must be a contiguous 1-D array");
            if (lo < 0 || hi < lo || hi > indices.shape(0)) throw py::value_error("need 0 <= lo <= hi <= len(indices)");
            if (py::isinstance<py::array_t<int32_t>>(indices))
                return al::spmvScattered32(static_cast<const int32_t*>(indices.data()), lo, hi, stride);
            if (py::isinstance<py::array_t<int64_t>>(indices))
                return al::spmvScattered64(static_cast<const int64_t*>(indices.data()), lo, hi, stride);
            throw py::type_error("indices must be int32 or int64");
        },
        py::arg("indices"), py::arg("lo"), py::arg("hi"), py::arg("stride") = 1,
        "Test hook: whether the SpMV row loops treat nonzeros [lo, hi) as scattered (prefetched per nonzero)");
    m.def(
        "spmv_row_shape",
        [](py::array indptr, int64_t nnz) {
            if (indptr.ndim() != 1 || !(indptr.flags() & py::array::c_style) || indptr.shape(0) < 1)
                throw py::value_error("indptr must be a contiguous 1-D array of rows + 1 entries");
            const bool i64 = py::isinstance<py::array_t<int64_t>>(indptr);
            if (!i64 && !py::isinstance<py::array_t<int32_t>>(indptr)) throw py::type_error("indptr must be int32 or int64");
            return al::spmvRowShape(indptr.data(), i64, indptr.shape(0) - 1, nnz);
        },
        py::arg("indptr"), py::arg("nnz"),
        "Test hook: the rows' shape the SpMV prefetch classes key on (1: skewed, 0: even)");
    m.def(
        "pool_check",
        [](int64_t launches, uint32_t maxBlocks, uint32_t work) {
            if (launches < 0 || maxBlocks < 1 || maxBlocks > 4096)
                throw py::value_error("launches >= 0 and 1 <= max_blocks <= 4096");
            // Launch l runs 1 + l % maxBlocks blocks (the block count changes
            // between back-to-back launches); block i of launch l counts itself
            // in hits[l][i] after `work` steps of busy work that vary by block.
            struct Ctx {
                std::atomic<uint32_t>* hits;
                uint32_t work;
            };
            std::vector<std::atomic<uint32_t>> hits(static_cast<size_t>(launches) * maxBlocks);
            for (auto& h : hits) h.store(0, std::memory_order_relaxed);
            int64_t wrong = 0;
            withoutGil([&] {
                for (int64_t l = 0; l < launches; ++l) {
                    const uint32_t n = 1 + static_cast<uint32_t>(l % maxBlocks);
                    Ctx ctx{hits.data() + static_cast<size_t>(l) * maxBlocks, work};
                    al::parallelFor(n, [](uint32_t i, void* p) {
                        auto* c = static_cast<Ctx*>(p);
                        volatile uint32_t sink = 0;
                        for (uint32_t k = 0; k < c->work * (1 + i % 3); ++k) sink = sink + k;
                        c->hits[i].fetch_add(1, std::memory_order_relaxed);
                    }, &ctx);
                    // every block of this launch ran once, when parallelFor returned
                    for (uint32_t i = 0; i < maxBlocks; ++i)
                        wrong += ctx.hits[i].load(std::memory_order_relaxed) != (i < n ? 1u : 0u);
                }
            });
            // and nothing ran later on a finished launch's context
            for (int64_t l = 0; l < launches; ++l)
                for (uint32_t i = 0; i < maxBlocks; ++i)
                    wrong += hits[static_cast<size_t>(l) * maxBlocks + i].load() !=
                             (i < 1 + static_cast<uint32_t>(l % maxBlocks) ? 1u : 0u);
            return wrong;
        },
        py::arg("launches"), py::arg("max_blocks"), py::arg("work") = 0,
        "Test hook: run launches on the CPU pool and count blocks that ran other than once");
    m.def(
        "spmv_tiling",
        [](bool trans, int64_t rows, int64_t cols, int64_t nnz, int64_t nvec, const std::string& platform,
           uint32_t threads) {
            if (rows < 0 || cols < 0 || nnz < 0 || nvec < 1) throw py::value_error("need rows, cols, nnz >= 0, nvec >= 1");
            if (platform != "cpu" && platform != "ascend") throw py::value_error("platform must be cpu or ascend");
            const al::SpmvPlatform p = platform == "cpu" ? al::spmvPlatformCpu(threads) : al::spmvPlatformAscend(threads);
            const al::SpmvTilingData t = al::spmvTiling(trans, rows, cols, nnz, nvec, AL_R_32F, AL_R_32I, p);
            py::dict d;
            d["usedCoreNum"] = t.usedCoreNum;
            d["workspaceSize"] = t.workspaceSize;
            d["pages"] = t.pages;
            return d;
        },
        py::arg("trans"), py::arg("rows"), py::arg("cols"), py::arg("nnz"), py::arg("nvec") = 1,
        py::arg("platform") = "cpu", py::arg("threads") = 2,
        "Test hook: the SpMV tiling (float32 values, int32 indices) on the CPU (threads) or an Ascend "
        "platform (threads = AI cores)");
    m.def(
        "spmv_prefetch_classes",
        [] {
            py::list out;
            for (const auto& c : al::spmvPrefetchClasses()) {
                py::dict d;
                d["key"] = c.key;
                d["plan"] = c.plan;
                py::tuple samples(al::kSpmvPrefetchPlans), best(al::kSpmvPrefetchPlans);
                for (int i = 0; i < al::kSpmvPrefetchPlans; ++i) {
                    samples[i] = c.samples[i];
                    best[i] = c.best[i];
                }
                d["trans"] = c.trans != 0;
                d["value_type"] = c.valueType;
                d["value_store"] = c.valueStore;
                d["blocks"] = c.blocks;
                d["target_log2"] = c.targetLog2;
                d["row_shape"] = c.rowShape;
                d["scattered"] = c.scattered != 0;
                d["samples"] = samples;
                d["best_ns"] = best;
                out.append(d);
            }
            return out;
        },
        "The CPU one-vector SpMV prefetch plan per size class timed so far: key, trans (A^T x), "
        "value_type, value_store (0: as value_type; else the alDataType_t the values are stored in, 32 for float32), blocks, target_log2 (target bytes < 2**target_log2), "
        "row_shape (1: most rows far shorter than the mean), scattered (the indices sampled as scattered), plan (-1 while timing), calls timed and fastest ns per row + nonzero per plan (0-7)");
    m.def(
        "spmv_prefetch_decide",
        [](bool trans, int64_t targetBytes, py::sequence bestNs) {
            if (py::len(bestNs) != static_cast<size_t>(al::kSpmvPrefetchPlans))
                throw py::value_error("best_ns must have " + std::to_string(al::kSpmvPrefetchPlans) + " entries");
            double best[al::kSpmvPrefetchPlans];
            for (int i = 0; i < al::kSpmvPrefetchPlans; ++i) best[i] = bestNs[static_cast<size_t>(i)].cast<double>();
            int32_t cand[al::kSpmvPrefetchPlans];
            int n = 0;
            const int32_t plan = al::spmvPrefetchDecide(trans, targetBytes, best, cand, &n);
            py::tuple cands(static_cast<size_t>(n));
            for (int i = 0; i < n; ++i) cands[static_cast<size_t>(i)] = cand[i];
            return py::make_tuple(plan, cands);
        },
        py::arg("trans"), py::arg("target_bytes"), py::arg("best_ns"),
        "Test hook: (plan, candidates) the host would keep for a class with these fastest times per plan");
    m.def("spmv_prefetch_reset", [] { al::spmvPrefetchReset(); },
          "Forget every size class's prefetch plan (the next calls time the candidates again)");
    m.def(
        "spmv_prefetch_force",
        [](int plan) {
            if (plan < -1 || plan >= al::kSpmvPrefetchPlans)
                throw py::value_error("prefetch plan must be -1 (timed) or 0-" +
                                      std::to_string(al::kSpmvPrefetchPlans - 1) + ", got " + std::to_string(plan));
            al::spmvPrefetchForce(plan);
        },
        py::arg("plan"),
        "Every CPU one-vector SpMV call (A x and A^T x) whose plan the host would choose by timing (rows + "
        "nonzeros 2**18 or more, not binned or column-split; the others keep plan 0, the rule) uses this prefetch plan (0-7, "
        "SpmvPrefetchPlan bits), or -1: chosen by timing");
    m.def(
        "spmv_bin_force",
        [](int mode, int64_t chunk_entries) {
            if (mode < -1 || mode > 1)
                throw py::value_error("bin mode must be -1 (by size), 0 (never) or 1 (always), got " +
                                      std::to_string(mode));
            if (chunk_entries < 0)
                throw py::value_error("chunk_entries must be >= 0, got " + std::to_string(chunk_entries));
            al::spmvBinForce(mode, chunk_entries);
        },
        py::arg("mode"), py::arg("chunk_entries") = 0,
        "The binned A^T x on the CPU device: 1 whenever it applies (one unit-stride vector, alpha 1, "
        "beta 0), 0 never, -1 past its size bound with scattered indices (default); chunk_entries > 0 "
        "sets the pool entries per chunk of the matrix (0: the rule)");
    m.def(
        "spmv_row_prefetch_force",
        [](int mode) {
            if (mode < -1 || mode > 1)
                throw py::value_error("row prefetch mode must be -1 (by the rule), 0 (never) or 1 (always), got " +
                                      std::to_string(mode));
            al::spmvRowPrefetchForce(mode);
        },
        py::arg("mode"),
        "Prefetches inside long rows on the CPU device: x in A x (AVX2 build) and the partial or y in "
        "A^T x, and in both the rows' values and indices (A^T x: in blocks that are not scattered, and "
        "column-split blocks). 1 in every row long enough, 0 never, -1 by the rule (default): the target "
        "where it outgrows the cache and the row's columns are more than a line apart, the values and "
        "indices where the matrix's arrays outgrow kSpmvArraysCachedBytes (16 MiB)");
    m.def("spmv_bin_calls", [] { return al::spmvBinCalls(); }, "A^T x products run binned so far");
    m.def(
        "spmv_split_force",
        [](int mode) {
            if (mode < -1 || mode > 1)
                throw py::value_error("split mode must be -1 (by the rule), 0 (never) or 1 (always), got " +
                                      std::to_string(mode));
            al::spmvSplitForce(mode);
        },
        py::arg("mode"),
        "The column-split A^T x on the CPU device (one vector, two threads or more): 1 whenever it "
        "applies, 0 never, -1 for long rows and large partials (default)");
    m.def("spmv_split_calls", [] { return al::spmvSplitCalls(); },
          "A^T x products run column-split so far (not those that fell back on an unsorted row)");
    m.def(
        "spmv_light_force",
        [](int mode) {
            if (mode < -1 || mode > 1)
                throw py::value_error("light mode must be -1 (by the rule), 0 (never) or 1 (always), got " +
                                      std::to_string(mode));
            al::spmvLightForce(mode);
        },
        py::arg("mode"),
        "The light A^T X on the CPU device (the plain product, up to 16 vectors): 1 whenever it applies, "
        "0 never, -1 for far fewer nonzeros than columns (default)");
    m.def("spmv_light_calls", [] { return al::spmvLightCalls(); }, "A^T X products run light so far");
}
