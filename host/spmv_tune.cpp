// The CPU kernels' prefetch plan per size class, chosen by timing
// (tunePick / tuneRecord, used by alSpmv in spmv_host.cpp), and the
// hooks that let tests read, reset and force it.
#include "spmv_tune.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace al {
namespace {

constexpr int kTuneSamples = 2;
constexpr double kTuneMargin = 0.05;  // fraction of the rule's time another plan must save
struct TuneEntry {
    bool warm = false;  // a class's first call runs the rule untimed: it pays cold caches and page faults
    int32_t plan = -1;
    int32_t samples[kSpmvPrefetchPlans] = {};
    double best[kSpmvPrefetchPlans] = {};
};
std::mutex gTuneMu;
std::map<uint64_t, TuneEntry>& tuneTable() {
    static auto* t = new std::map<uint64_t, TuneEntry>();  // never destroyed: calls may run at exit
    return *t;
}
int32_t tuneForceFromEnv() {
    const char* e = std::getenv("ASCEND_LINALG_SPMV_PREFETCH");
    if (!e || !*e || std::strcmp(e, "auto") == 0) return -1;
    if (std::strcmp(e, "rule") == 0) return 0;
    if (e[0] >= '0' && e[0] < '0' + kSpmvPrefetchPlans && e[1] == '\0') return e[0] - '0';
    return -1;  // anything else: as unset
}
std::atomic<int32_t> gTuneForce{tuneForceFromEnv()};

// Candidates: a target past the rule's bound may be prefetched, so its plans
// are the rule, no target prefetch, and neither; below it, the target is not
// prefetched by the rule (A^T x's short rows aside), and the plans are the
// rule, no value/index prefetch in scattered blocks, and for A^T x the
// partials prefetched anyway. (x prefetched below the bound lost every A x
// measured: random 1e6 float32, 2 threads, 10.7 ms against the rule's 7.9.)
constexpr int kTuneMaxCandidates = 3;
int tuneCandidates(bool trans, int64_t targetBytes, int32_t* out) {
    out[0] = 0;
    if (targetBytes > kSpmvScatterPfMinBytes) {
        out[1] = SPMV_PF_NO_TARGET;
        out[2] = SPMV_PF_NO_TARGET | SPMV_PF_NO_STREAMS;
        return 3;
    }
    out[1] = SPMV_PF_NO_STREAMS;
    if (!trans) return 2;
    out[2] = SPMV_PF_ANY_SIZE;
    return 3;
}
// The plan a class keeps, given each candidate's fastest time: another plan
// must beat the rule (cand[0]) by kTuneMargin, as two calls each on a shared
// machine are noisy: plan 3 won random 1e6 float64 A^T x's race by 1.6% in
// one benchmark run, and took 12.5 and 17.7 ms in alternating runs where the
// rule took 12.1 and 13.9.
int32_t tuneDecide(const int32_t* cand, int nc, const double* best) {
    int32_t pick = cand[0];
    double pickNs = best[cand[0]] * (1.0 - kTuneMargin);
    for (int i = 1; i < nc; ++i)
        if (best[cand[i]] < pickNs) {
            pick = cand[i];
            pickNs = best[pick];
        }
    return pick;
}
}  // namespace

int32_t tunePick(uint64_t key, bool trans, int64_t targetBytes, bool* timed) {
    *timed = false;
    const int32_t forced = gTuneForce.load(std::memory_order_relaxed);
    if (forced >= 0) return forced;
    int32_t cand[kTuneMaxCandidates];
    const int nc = tuneCandidates(trans, targetBytes, cand);
    std::lock_guard<std::mutex> lk(gTuneMu);
    TuneEntry& e = tuneTable()[key];
    if (e.plan >= 0) return e.plan;
    if (!e.warm) {
        e.warm = true;
        return 0;
    }
    int32_t pick = cand[0];
    for (int i = 1; i < nc; ++i)
        if (e.samples[cand[i]] < e.samples[pick]) pick = cand[i];
    *timed = true;
    return pick;
}
void tuneRecord(uint64_t key, bool trans, int64_t targetBytes, int32_t plan, double nsPerWork) {
    int32_t cand[kTuneMaxCandidates];
    const int nc = tuneCandidates(trans, targetBytes, cand);
    std::lock_guard<std::mutex> lk(gTuneMu);
    TuneEntry& e = tuneTable()[key];
    if (e.plan >= 0) return;  // another thread's calls decided it meanwhile
    e.best[plan] = e.samples[plan] ? std::min(e.best[plan], nsPerWork) : nsPerWork;
    ++e.samples[plan];
    for (int i = 0; i < nc; ++i)
        if (e.samples[cand[i]] < kTuneSamples) return;
    e.plan = tuneDecide(cand, nc, e.best);
}
int32_t spmvRowShape(const void* indptr, bool index64, int64_t rows, int64_t nnz) {
    constexpr int kSamples = 64;
    if (rows <= 0 || nnz <= 0) return 0;
    int64_t len[kSamples];
    for (int i = 0; i < kSamples; ++i) {
        // the middle row of the i-th of 64 equal stretches (rows < 2^62: no overflow)
        const int64_t r = static_cast<int64_t>((static_cast<unsigned __int128>(2 * i + 1) * rows) / (2 * kSamples));
        // unsigned: a malformed indptr's difference must not overflow
        const uint64_t a = index64 ? static_cast<uint64_t>(static_cast<const int64_t*>(indptr)[r])
                                   : static_cast<uint64_t>(static_cast<int64_t>(static_cast<const int32_t*>(indptr)[r]));
        const uint64_t b = index64 ? static_cast<uint64_t>(static_cast<const int64_t*>(indptr)[r + 1])
                                   : static_cast<uint64_t>(static_cast<int64_t>(static_cast<const int32_t*>(indptr)[r + 1]));
        len[i] = static_cast<int64_t>(b - a);
    }
    std::nth_element(len, len + kSamples / 2, len + kSamples);
    const double median = static_cast<double>(len[kSamples / 2]);
    return 4.0 * median < static_cast<double>(nnz) / static_cast<double>(rows) ? 1 : 0;
}
uint64_t tuneKey(const SpmvTilingData& t, int64_t blocks, bool trans, int64_t targetBytes, int32_t rowShape,
                 bool scattered) {
    const uint64_t bucket = 64 - static_cast<uint64_t>(__builtin_clzll(static_cast<uint64_t>(targetBytes)));
    return static_cast<uint64_t>(t.valueType & 0xff) | static_cast<uint64_t>(t.valueStore & 0xff) << 8 |
           static_cast<uint64_t>(t.indexType & 0xf) << 16 | static_cast<uint64_t>(blocks & 0xffff) << 20 |
           bucket << 36 | static_cast<uint64_t>(trans) << 44 | static_cast<uint64_t>(rowShape & 1) << 45 |
           static_cast<uint64_t>(scattered) << 46;
}

std::vector<SpmvPrefetchClass> spmvPrefetchClasses() {
    std::lock_guard<std::mutex> lk(gTuneMu);
    std::vector<SpmvPrefetchClass> out;
    for (const auto& [key, e] : tuneTable()) {
        SpmvPrefetchClass c{};
        c.key = key;
        c.trans = static_cast<int32_t>(key >> 44 & 1);
        c.valueType = static_cast<int32_t>(key & 0xff);
        c.valueStore = static_cast<int32_t>(key >> 8 & 0xff);
        c.blocks = static_cast<int32_t>(key >> 20 & 0xffff);
        c.targetLog2 = static_cast<int32_t>(key >> 36 & 0xff);
        c.rowShape = static_cast<int32_t>(key >> 45 & 1);
        c.scattered = static_cast<int32_t>(key >> 46 & 1);
        c.plan = e.plan;
        for (int i = 0; i < kSpmvPrefetchPlans; ++i) {
            c.samples[i] = e.samples[i];
            c.best[i] = e.best[i];
        }
        out.push_back(c);
    }
    return out;
}
int32_t spmvPrefetchDecide(bool trans, int64_t targetBytes, const double* best, int32_t* candidates, int* n) {
    *n = tuneCandidates(trans, targetBytes, candidates);
    return tuneDecide(candidates, *n, best);
}
void spmvPrefetchReset() {
    std::lock_guard<std::mutex> lk(gTuneMu);
    tuneTable().clear();
}
void spmvPrefetchForce(int32_t plan) { gTuneForce.store(plan >= 0 && plan < kSpmvPrefetchPlans ? plan : -1); }

}  // namespace al
