// New result arrays of the CPU device's products, and the bounded cache of
// memory behind the large ones.
//
// Why: glibc maps every allocation past its largest mmap threshold (32 MiB)
// afresh and unmaps it when freed, so a product whose result is that large
// pays a page fault, and the kernel's zeroing of the page, for every page it
// writes, on every call: up to half a product's time or more (docs/
// performance.md, forty-sixth session). A loop that computes `y = A @ x` and
// drops the previous y frees one such block per call; handing that block to
// the next call's result removes the faults.
//
// How: a result of kResultCacheMin bytes or more is made by numpy itself
// (PyArray_Empty) while this file's numpy memory handler
// (PyDataMem_SetHandler, NumPy >= 1.22) is current, so it is an ordinary
// ndarray that owns its data (resize, pickling and views behave as for
// np.empty) and numpy hands its memory back through the handler when the
// array dies. The handler maps large blocks itself (rounded up to 2 MiB, with
// MADV_HUGEPAGE as numpy asks for its own large arrays) and keeps freed ones
// idle, at most kMaxIdle of them and at most the limit in bytes (default
// 1 GiB, $ASCEND_LINALG_RESULT_CACHE_MB, or result_cache_set_limit; 0 turns
// the cache off). A new result takes an idle block of its size (at most an
// eighth larger) before mapping one. Smaller allocations through the handler
// (a resize that shrinks, say) go to malloc.
//
// The handler's state is allocated once and never destroyed: arrays may die
// after this module's statics would have.
#define NPY_NO_DEPRECATED_API NPY_1_22_API_VERSION
#define NPY_TARGET_VERSION NPY_1_22_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL ascend_linalg_ARRAY_API
#include "_core_common.h"

#include <numpy/arrayobject.h>

#include <cstdint>
#include <cstdlib>
#include <algorithm>
#include <cstring>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#define AL_RESULT_CACHE 1
#else
#define AL_RESULT_CACHE 0
#endif

namespace alpy {
namespace {

constexpr size_t kResultCacheMin = size_t(32) << 20;  // glibc's largest mmap threshold
constexpr size_t kBlockAlign = size_t(2) << 20;       // one huge page
constexpr size_t kMaxIdle = 4;

#if AL_RESULT_CACHE
void* mapBlock(size_t len) {
    void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
#ifdef MADV_HUGEPAGE
    madvise(p, len, MADV_HUGEPAGE);  // advice only: its failure changes nothing
#endif
    return p;  // a fresh mapping reads as zeros
}
void unmapBlock(void* p, size_t len) { munmap(p, len); }
#else  // no cache: emptyResult never takes a block
void* mapBlock(size_t) { return nullptr; }
void unmapBlock(void*, size_t) {}
#endif

class ResultCache {
public:
    ResultCache() {
        if (const char* env = std::getenv("ASCEND_LINALG_RESULT_CACHE_MB")) {
            char* end = nullptr;
            const unsigned long long mb = std::strtoull(env, &end, 10);
            if (end != env && *end == '\0') limit_ = static_cast<size_t>(mb) << 20;
        }
    }

    // A block of at least n bytes (n >= kResultCacheMin), nullptr when none
    // could be mapped; zeroed when zero is set.
    void* take(size_t n, bool zero) {
        const size_t len = roundUp(n);
        void* p = nullptr;
        {
            std::lock_guard<std::mutex> lock(mu_);
            for (auto it = idle_.begin(); it != idle_.end(); ++it) {
                if (it->second >= len && it->second - len <= len / 8) {
                    p = it->first;
                    idleBytes_ -= it->second;
                    idle_.erase(it);
                    ++hits_;
                    break;
                }
            }
            if (p == nullptr) ++misses_;
        }
        if (p != nullptr) {
            if (zero) std::memset(p, 0, n);
            return p;
        }
        p = mapBlock(len);
        if (p == nullptr) return nullptr;
        std::lock_guard<std::mutex> lock(mu_);
        mapped_[p] = len;
        return p;
    }

    // Whether p is one of this cache's blocks; if so, its length.
    bool owns(void* p, size_t* len) {
        std::lock_guard<std::mutex> lock(mu_);
        auto it = mapped_.find(p);
        if (it == mapped_.end()) return false;
        *len = it->second;
        return true;
    }

    // Block p (owned) back: kept idle, or unmapped past the limits.
    void give(void* p) {
        std::deque<std::pair<void*, size_t>> drop;
        {
            std::lock_guard<std::mutex> lock(mu_);
            const size_t len = mapped_.at(p);
            if (len > limit_) {
                mapped_.erase(p);
                drop.emplace_back(p, len);
            } else {
                idle_.emplace_front(p, len);
                idleBytes_ += len;
                trimLocked(limit_, kMaxIdle, &drop);
            }
        }
        unmap(drop);
    }

    size_t release() {
        std::deque<std::pair<void*, size_t>> drop;
        {
            std::lock_guard<std::mutex> lock(mu_);
            trimLocked(0, 0, &drop);
        }
        return unmap(drop);
    }

    void setLimit(size_t bytes) {
        std::deque<std::pair<void*, size_t>> drop;
        {
            std::lock_guard<std::mutex> lock(mu_);
            limit_ = bytes;
            trimLocked(limit_, kMaxIdle, &drop);
        }
        unmap(drop);
    }

    py::dict info() {
        std::lock_guard<std::mutex> lock(mu_);
        py::dict d;
        d["enabled"] = bool(AL_RESULT_CACHE) && limit_ > 0;
        d["limit_bytes"] = limit_;
        d["min_result_bytes"] = kResultCacheMin;
        d["max_idle_blocks"] = kMaxIdle;
        d["idle_blocks"] = idle_.size();
        d["idle_bytes"] = idleBytes_;
        d["live_blocks"] = mapped_.size() - idle_.size();
        d["hits"] = hits_;
        d["misses"] = misses_;
        return d;
    }

    bool enabled() {
        std::lock_guard<std::mutex> lock(mu_);
        return limit_ > 0;
    }

private:
    static size_t roundUp(size_t n) { return (n + kBlockAlign - 1) / kBlockAlign * kBlockAlign; }

    // Oldest idle blocks out until at most `bytes` and `count` stay.
    void trimLocked(size_t bytes, size_t count, std::deque<std::pair<void*, size_t>>* drop) {
        while (!idle_.empty() && (idleBytes_ > bytes || idle_.size() > count)) {
            auto [p, len] = idle_.back();
            idle_.pop_back();
            idleBytes_ -= len;
            mapped_.erase(p);
            drop->emplace_back(p, len);
        }
    }

    static size_t unmap(const std::deque<std::pair<void*, size_t>>& drop) {
        size_t total = 0;
        for (const auto& [p, len] : drop) {
            unmapBlock(p, len);
            total += len;
        }
        return total;
    }

    std::mutex mu_;
    std::unordered_map<void*, size_t> mapped_;   // every block this cache mapped: live and idle
    std::deque<std::pair<void*, size_t>> idle_;  // front: the latest freed
    size_t idleBytes_ = 0;
    size_t limit_ = size_t(1) << 30;
    uint64_t hits_ = 0, misses_ = 0;
};

ResultCache& cache() {
    static ResultCache* c = new ResultCache();  // never destroyed (see the top)
    return *c;
}

#if AL_RESULT_CACHE
// numpy calls these from C: nothing may throw out of them (the cache's
// bookkeeping can only throw std::bad_alloc). A failed allocation is NULL,
// which numpy raises as MemoryError; a free that cannot be recorded leaks
// the block rather than end the process.
void* handlerMalloc(void*, size_t n) noexcept {
    if (n < kResultCacheMin) return std::malloc(n ? n : 1);
    try {
        return cache().take(n, false);
    } catch (...) {
        return nullptr;
    }
}
void* handlerCalloc(void*, size_t nelem, size_t elsize) noexcept {
    if (elsize != 0 && nelem > SIZE_MAX / elsize) return nullptr;
    const size_t n = nelem * elsize;
    if (n < kResultCacheMin) return std::calloc(nelem ? nelem : 1, elsize ? elsize : 1);
    try {
        return cache().take(n, true);
    } catch (...) {
        return nullptr;
    }
}
void handlerFree(void*, void* p, size_t) noexcept {
    if (p == nullptr) return;
    try {
        size_t len;
        if (cache().owns(p, &len)) cache().give(p);
        else std::free(p);
    } catch (...) {
    }
}
void* handlerRealloc(void* ctx, void* p, size_t n) noexcept {
    if (p == nullptr) return handlerMalloc(ctx, n);
    try {
        size_t len;
        if (!cache().owns(p, &len)) return std::realloc(p, n ? n : 1);  // a malloc'd block stays one
        void* q = handlerMalloc(ctx, n);
        if (q == nullptr) return nullptr;
        std::memcpy(q, p, std::min(len, n));
        cache().give(p);
        return q;
    } catch (...) {
        return nullptr;
    }
}

PyDataMem_Handler gHandler = {"ascend_linalg_results", 1,
                              {nullptr, handlerMalloc, handlerCalloc, handlerRealloc, handlerFree}};
PyObject* gHandlerCapsule = nullptr;  // set by addResults; never released
#endif

}  // namespace

py::array emptyResult(const py::dtype& dtype, const std::vector<py::ssize_t>& shape) {
    size_t n = static_cast<size_t>(dtype.itemsize());
    for (py::ssize_t s : shape) n *= static_cast<size_t>(s);
#if AL_RESULT_CACHE
    if (n >= kResultCacheMin && cache().enabled()) {
        std::vector<npy_intp> dims(shape.begin(), shape.end());
        PyObject* old = PyDataMem_SetHandler(gHandlerCapsule);
        if (old == nullptr) throw py::error_already_set();
        Py_INCREF(dtype.ptr());  // PyArray_Empty steals the descriptor
        PyObject* arr = PyArray_Empty(static_cast<int>(dims.size()), dims.data(),
                                      reinterpret_cast<PyArray_Descr*>(dtype.ptr()), 0);
        PyObject* back = PyDataMem_SetHandler(old);
        Py_DECREF(old);
        if (back == nullptr) {
            Py_XDECREF(arr);
            throw py::error_already_set();
        }
        Py_DECREF(back);
        if (arr == nullptr) throw py::error_already_set();
        return py::reinterpret_steal<py::array>(arr);
    }
#endif
    return py::array(dtype, shape);
}

}  // namespace alpy

void addResults(pybind11::module_& m) {
    namespace py = pybind11;
    using namespace alpy;
    if (_import_array() < 0) throw py::error_already_set();
#if AL_RESULT_CACHE
    gHandlerCapsule = PyCapsule_New(&gHandler, "mem_handler", nullptr);
    if (gHandlerCapsule == nullptr) throw py::error_already_set();
#endif
    m.def(
        "empty_result",
        [](py::object shape, const py::dtype& dtype) {
            std::vector<py::ssize_t> dims;
            if (py::isinstance<py::int_>(shape)) {
                dims.push_back(shape.cast<py::ssize_t>());
            } else {
                for (py::handle s : shape) dims.push_back(s.cast<py::ssize_t>());
            }
            for (py::ssize_t s : dims)
                if (s < 0) throw py::value_error("empty_result: negative dimensions are not allowed");
            return emptyResult(dtype, dims);
        },
        py::arg("shape"), py::arg("dtype"),
        "np.empty(shape, dtype) for a product's result: from the result cache when it is "
        "min_result_bytes or larger and the cache is on (_core_results.cpp)");
    m.def("result_cache_info", [] { return cache().info(); },
          "The result cache's limits, idle and live blocks, and hits and misses so far");
    m.def("result_cache_release", [] { return cache().release(); },
          "Unmap every idle block of the result cache; returns the bytes handed back");
    m.def(
        "result_cache_set_limit",
        [](long long bytes) {
            if (bytes < 0) throw py::value_error("result cache limit must be >= 0 bytes");
            cache().setLimit(static_cast<size_t>(bytes));
        },
        py::arg("bytes"), "Most bytes of idle blocks the result cache keeps; 0 turns it off");
}
