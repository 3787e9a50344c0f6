// CpuDevice and its thread pool.
//
// The pool runs one parallelFor at a time. A caller that finds it busy (another
// Python thread is launching, or we are inside a block already) runs its blocks
// inline on its own thread: never a deadlock, never a wait on someone else's job.
// After fork() the child starts a fresh pool on first use (pthread_atfork).
#include "cpu_device.h"

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <memory>
#include <new>
#include <thread>
#include <vector>

namespace al {

namespace {

thread_local std::string tlsLastError;
thread_local bool tlsInsideBlock = false;

uint32_t envThreads(const char* name) {
    const char* v = std::getenv(name);
    if (!v || !*v) return 0;
    char* end = nullptr;
    long n = std::strtol(v, &end, 10);  // "4,2" (OpenMP nesting list) -> 4
    if (end == v || n < 1) return 0;
    return n > 1024 ? 1024u : static_cast<uint32_t>(n);
}

uint32_t defaultThreads() {
    if (uint32_t n = envThreads("ASCEND_LINALG_NUM_THREADS")) return n;
    if (uint32_t n = envThreads("OMP_NUM_THREADS")) return n;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        int c = CPU_COUNT(&set);
        if (c > 0) return static_cast<uint32_t>(c);
    }
    unsigned hc = std::thread::hardware_concurrency();
    return hc ? hc : 1u;
}

// Blocks are claimed one at a time from a shared counter, so whichever
// threads are on a core take them. The launcher waits only for its blocks to
// finish, never for a worker to wake up: a worker that is descheduled (another
// process on its core, OpenBLAS's spinning threads) or still asleep costs the
// call nothing, as the launcher runs the blocks it leaves.
//
// state_ packs (generation << 32) | next block. A launch first marks the new
// generation kFilling, then writes the job (n_, body_, ctx_), then opens it
// (next block 0). A late worker that read the previous generation's state
// can read the new job's n_, but its claim (a CAS on the old state) then
// fails; a claim that succeeds belongs to a job whose blocks are not all done,
// so its launcher is still waiting and the job's fields are stable. All
// seq_cst: the claim's argument relies on one order over state_ and n_.
class Pool {
public:
    explicit Pool(uint32_t threads) {
        for (uint32_t i = 1; i < threads; ++i) workers_.emplace_back([this] { work(); });
    }
    ~Pool() {
        {
            std::lock_guard<std::mutex> g(mu_);
            stop_ = true;
        }
        cv_.notify_all();
        for (auto& t : workers_) t.join();
    }
    uint32_t size() const { return static_cast<uint32_t>(workers_.size()) + 1; }

    // Returns false when busy (the caller then runs inline).
    bool run(uint32_t n, void (*body)(uint32_t, void*), void* ctx) {
        std::unique_lock<std::mutex> launch(launchMu_, std::try_to_lock);
        if (!launch.owns_lock()) return false;
        const uint64_t gen = ++launches_;
        state_.store(gen << 32 | kFilling);
        body_.store(body);
        ctx_.store(ctx);
        n_.store(n);
        done_.store(0);
        state_.store(gen << 32);
        {
            std::lock_guard<std::mutex> g(mu_);  // a worker between its check and its wait sees this
        }
        cv_.notify_all();
        drain(gen);
        // The blocks other threads claimed: a short spin, then yield.
        for (int spin = 0; done_.load() != n; ++spin) {
            if (spin > 2000) std::this_thread::yield();
        }
        return true;
    }

private:
    static constexpr uint32_t kFilling = 0xffffffffu;

    // Claims and runs blocks of generation gen while any are left.
    void drain(uint64_t gen) {
        const bool outer = tlsInsideBlock;
        tlsInsideBlock = true;
        for (;;) {
            uint64_t s = state_.load();
            if (s >> 32 != (gen & 0xffffffffu)) break;
            const uint32_t i = static_cast<uint32_t>(s);
            if (i == kFilling) continue;  // the launcher is writing the job
            if (i >= n_.load()) break;
            if (!state_.compare_exchange_weak(s, s + 1)) continue;
            body_.load()(i, ctx_.load());
            done_.fetch_add(1);
        }
        tlsInsideBlock = outer;
    }
    uint64_t generation() const { return state_.load() >> 32; }
    void work() {
        uint64_t seen = 0;
        for (;;) {
            // Spin a little for back-to-back launches, then sleep.
            uint64_t g = generation();
            for (int spin = 0; g == seen && spin < 20000; ++spin) g = generation();
            if (g == seen) {
                std::unique_lock<std::mutex> lk(mu_);
                cv_.wait(lk, [&] { return stop_ || generation() != seen; });
                if (stop_) return;
                g = generation();
            }
            seen = g;
            drain(g);
        }
    }

    std::vector<std::thread> workers_;
    std::mutex launchMu_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool stop_ = false;
    uint64_t launches_ = 0;  // under launchMu_
    std::atomic<uint64_t> state_{0};
    std::atomic<uint32_t> n_{0};
    std::atomic<uint32_t> done_{0};
    std::atomic<void (*)(uint32_t, void*)> body_{nullptr};
    std::atomic<void*> ctx_{nullptr};
};

std::mutex gPoolMu;
std::shared_ptr<Pool> gPool;      // created on first parallel launch
std::atomic<uint32_t> gThreads{0};  // 0: not yet decided

void atforkChild() {
    // The parent's workers do not exist here; forget the pool (leaked on purpose,
    // its mutexes may be held by threads that are gone) and start anew on demand.
    new (&gPoolMu) std::mutex();
    new std::shared_ptr<Pool>(std::move(gPool));
}

// A launch holds its own reference, so resizing or shutting down the pool
// while another thread's launch is in flight only drops the global one.
std::shared_ptr<Pool> pool() {
    static std::once_flag once;
    std::call_once(once, [] { pthread_atfork(nullptr, nullptr, atforkChild); });
    std::lock_guard<std::mutex> g(gPoolMu);
    if (!gPool) gPool = std::make_shared<Pool>(cpuNumThreads());
    return gPool;
}

}  // namespace

void setLastError(const std::string& message) { tlsLastError = message; }
void clearLastError() { tlsLastError.clear(); }
const char* lastErrorCStr() { return tlsLastError.c_str(); }

uint32_t cpuNumThreads() {
    uint32_t n = gThreads.load();
    if (n == 0) {
        n = defaultThreads();
        gThreads.store(n);
    }
    return n;
}

void cpuSetNumThreads(uint32_t n) {
    if (n < 1) n = 1;
    std::lock_guard<std::mutex> g(gPoolMu);
    gThreads.store(n);
    if (gPool && gPool->size() != n) gPool.reset();
}

void cpuShutdown() {
    std::shared_ptr<Pool> old;
    {
        std::lock_guard<std::mutex> g(gPoolMu);
        old.swap(gPool);
    }
}  // `old` joins the workers here, outside the lock

void parallelFor(uint32_t n, void (*body)(uint32_t, void*), void* ctx) {
    if (n == 0) return;
    if (n == 1 || tlsInsideBlock || cpuNumThreads() == 1 || !pool()->run(n, body, ctx)) {
        bool outer = tlsInsideBlock;
        tlsInsideBlock = true;
        for (uint32_t i = 0; i < n; ++i) body(i, ctx);
        tlsInsideBlock = outer;
    }
}

const char* cpuIsa() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return "avx512f";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "avx2+fma";
#endif
    return "baseline";
}

std::string CpuDevice::describe() const {
    return "cpu: " + std::to_string(cpuNumThreads()) + " threads, isa " + cpuIsa();
}

uint32_t CpuDevice::coreNum() const { return cpuNumThreads(); }

alStatus_t CpuDevice::malloc(void** ptr, size_t bytes) {
    *ptr = std::aligned_alloc(64, ((bytes ? bytes : 1) + 63) / 64 * 64);
    if (*ptr) return AL_STATUS_SUCCESS;
    setLastError("host allocation of " + std::to_string(bytes) + " bytes failed");
    return AL_STATUS_ALLOC_FAILED;
}

alStatus_t CpuDevice::free(void* ptr) {
    std::free(ptr);
    return AL_STATUS_SUCCESS;
}

alStatus_t CpuDevice::copyToDevice(void* dst, const void* src, size_t bytes) {
    if (bytes) std::memcpy(dst, src, bytes);
    return AL_STATUS_SUCCESS;
}

alStatus_t CpuDevice::copyToHost(void* dst, const void* src, size_t bytes) {
    if (bytes) std::memcpy(dst, src, bytes);
    return AL_STATUS_SUCCESS;
}

namespace {
struct LaunchCtx {
    CpuKernelEntry entry;
    uint32_t numBlocks;
    void* const* args;
    const void* tiling;
};
void runBlock(uint32_t i, void* p) {
    auto* c = static_cast<LaunchCtx*>(p);
    c->entry(i, c->numBlocks, c->args, c->tiling);
}
}  // namespace

alStatus_t CpuDevice::supports(const KernelDesc& kernel, int32_t) {
    if (kernel.cpu) return AL_STATUS_SUCCESS;  // the CPU kernels compute every type the host accepts
    setLastError(std::string("kernel ") + kernel.name + " has no CPU version");
    return AL_STATUS_NOT_SUPPORTED;
}

alStatus_t CpuDevice::launch(const KernelDesc& kernel, uint32_t numBlocks,
                             void* const* args, int, const void* tiling, size_t) {
    if (!kernel.cpu) {
        setLastError(std::string("kernel ") + kernel.name + " has no CPU version");
        return AL_STATUS_NOT_SUPPORTED;
    }
    LaunchCtx ctx{kernel.cpu, numBlocks, args, tiling};
    parallelFor(numBlocks, runBlock, &ctx);
    return AL_STATUS_SUCCESS;
}

CpuDevice& cpuDevice() {
    static CpuDevice* d = new CpuDevice();  // never destroyed: usable during exit
    return *d;
}

}  // namespace al
