#!/usr/bin/env bash
# Build the libFuzzer harnesses over the host C API (fuzz/README.md) with
# ASan + UBSan and run each for a bounded time. Exits non-zero on any finding
# (crash, sanitizer report, oracle mismatch, timeout, out-of-memory), and also
# when no clang with libFuzzer can be found or installed: a fuzz step that
# cannot run must not look like one that passed.
#
#   fuzz/run.sh [spmv] [csymm]        # default: both
#
# Environment:
#   FUZZ_SECONDS   seconds per harness (default 60); 0: only replay the corpus
#   FUZZ_BUILD     build directory (default build/fuzz, git-ignored)
#   CLANGXX        clang++ to use (default: the first clang++[-N] on PATH that
#                  links -fsanitize=fuzzer; else apt-get installs clang-14 and
#                  libclang-rt-14-dev when running as root)
#   FUZZ_ARGS      extra libFuzzer flags (e.g. "-jobs=2" or "-seed=1")
#
# The committed seeds (fuzz/corpus/<harness>/) are copied into
# $FUZZ_BUILD/corpus/<harness>/, which grows across runs; a finding is saved
# as $FUZZ_BUILD/artifacts/<harness>-crash-* and can be replayed with
#   $FUZZ_BUILD/fuzz_<harness> <that file>
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${FUZZ_BUILD:-$ROOT/build/fuzz}
SECONDS_EACH=${FUZZ_SECONDS:-60}
HARNESSES=("$@")
[[ ${#HARNESSES[@]} -eq 0 ]] && HARNESSES=(spmv csymm)

say() { echo "== fuzz: $*"; }
die() { echo "!! fuzz: $*" >&2; exit 2; }

# ------------------------------------------------------------ the compiler
links_fuzzer() {  # does "$1" build and link a libFuzzer + ASan + UBSan target?
    local dir
    dir=$(mktemp -d)
    printf '#include <cstdint>\n#include <cstddef>\nextern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n' > "$dir/t.cpp"
    "$1" -fsanitize=fuzzer,address,undefined "$dir/t.cpp" -o "$dir/t" >/dev/null 2>&1
    local rc=$?
    rm -rf "$dir"
    return $rc
}
find_clang() {
    local c
    for c in ${CLANGXX:-} clang++ clang++-19 clang++-18 clang++-17 clang++-16 clang++-15 clang++-14; do
        if command -v "$c" >/dev/null 2>&1 && links_fuzzer "$c"; then echo "$c"; return 0; fi
    done
    return 1
}
if ! CXX=$(find_clang); then
    [[ -n "${CLANGXX:-}" ]] && die "CLANGXX=$CLANGXX cannot link -fsanitize=fuzzer,address,undefined"
    command -v apt-get >/dev/null 2>&1 || die "no clang++ with libFuzzer on PATH and no apt-get to install one"
    [[ $(id -u) -eq 0 ]] || die "no clang++ with libFuzzer on PATH; install clang-14 and libclang-rt-14-dev (needs root)"
    say "installing clang-14 + libclang-rt-14-dev with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    if ! { apt-get install -y -q clang-14 libclang-rt-14-dev >/tmp/fuzz-apt.log 2>&1 ||
           { apt-get update -q >>/tmp/fuzz-apt.log 2>&1 &&
             apt-get install -y -q clang-14 libclang-rt-14-dev >>/tmp/fuzz-apt.log 2>&1; }; }; then
        tail -n 20 /tmp/fuzz-apt.log >&2
        die "FAILED to install clang-14/libclang-rt-14-dev (apt unreachable?): the fuzzers did NOT run"
    fi
    CXX=$(find_clang) || die "clang installed but cannot link -fsanitize=fuzzer: the fuzzers did NOT run"
fi
say "compiler: $CXX ($("$CXX" --version | head -n 1))"

# ------------------------------------------------------------ the sources
# The host and kernel translation units of host/meson.build and
# kernels/meson.build, with the same per-ISA flags.
HOST_SRC=(host/context.cpp host/csymm_host.cpp host/fingerprint.cpp host/csymm_tiling.cpp host/spmv_host.cpp host/spmv_tiling.cpp host/spmv_tune.cpp host/spmvt_cpu.cpp
          host/runtime/acl_device.cpp host/runtime/acl_locate.cpp host/runtime/cpu_device.cpp)
KERNEL_SRC=(kernels/csymm/csymm_kernel_ref.cpp kernels/csymm/csymm_kernel_packed.cpp kernels/csymm/csymm_pack.cpp
            kernels/csymm/csymm_ukernel_baseline.cpp kernels/spmv/spmv_kernel_ref.cpp
            kernels/spmv/spmv_kernel_merge.cpp kernels/spmv/spmvt_kernel_merge.cpp)
AVX2_SRC=(kernels/csymm/csymm_ukernel_avx2.cpp kernels/csymm/csymm_pack_avx2.cpp kernels/spmv/spmv_kernel_merge_avx2.cpp
          kernels/spmv/spmvt_kernel_merge_avx2.cpp)
AVX512_SRC=(kernels/csymm/csymm_ukernel_avx512.cpp)
# Fail when meson.build lists a source this script does not know (or the reverse).
listed=$(cd host && grep -o "'[^']*\.cpp'" meson.build | tr -d "'" | sed 's|^|host/|'; \
         cd ../kernels && grep -o "'[^']*\.cpp'" meson.build | tr -d "'" | sed 's|^|kernels/|')
ours=$(printf '%s\n' "${HOST_SRC[@]}" "${KERNEL_SRC[@]}" "${AVX2_SRC[@]}" "${AVX512_SRC[@]}")
if [[ "$(sort <<<"$listed")" != "$(sort <<<"$ours")" ]]; then
    diff <(sort <<<"$listed") <(sort <<<"$ours") >&2 || true
    die "fuzz/run.sh's source lists differ from host/ and kernels/meson.build (left: meson, right: here)"
fi

X86=0
[[ $(uname -m) == x86_64 ]] && X86=1
SAN=(-fsanitize=address,undefined -fno-sanitize-recover=all)
CXXFLAGS=(-std=c++17 -O1 -g -fno-omit-frame-pointer -I"$ROOT" -I"$ROOT/host/include" "${SAN[@]}")
mkdir -p "$BUILD/obj" "$BUILD/artifacts"
objs=()
# Up to FUZZ_JOBS compiles at once (default: the cores). A slot is refilled
# as soon as any compile in flight ends (wait -n), and any failure stops the
# build. Waiting in launch order instead held a free slot for as long as the
# oldest compile ran: the transposed kernels' two units (about 8 and 13.5
# minutes on a 2-core host, instrumented) then ran one after the other.
JOBS=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
running=0
compile() {  # src, extra flags...
    local src=$1; shift
    local obj=$BUILD/obj/$(echo "$src" | tr / _).o
    if [[ ! -f "$obj" || "$src" -nt "$obj" || -n $(find host kernels fuzz -name '*.h' -newer "$obj" -print -quit) ]]; then
        if [[ $running -ge $JOBS ]]; then
            wait -n || die "compiling for the fuzzers failed"
            running=$((running - 1))
        fi
        rm -f "$obj"  # a failed compile leaves none behind to look up to date
        "$CXX" "${CXXFLAGS[@]}" -fsanitize=fuzzer-no-link "$@" -c "$src" -o "$obj" &
        running=$((running + 1))
    fi
    objs+=("$obj")
}
listed_in() {  # is "$1" one of the remaining arguments?
    local s
    for s in "${@:2}"; do [[ $s == "$1" ]] && return 0; done
    return 1
}
isa_flags() {  # the per-ISA flags of kernels/meson.build for "$1" (none: host code)
    [[ $X86 -eq 1 ]] || return 0
    if listed_in "$1" "${AVX2_SRC[@]}"; then echo -mavx2 -mfma -mf16c -DAL_HAVE_AVX2=1
    elif listed_in "$1" "${AVX512_SRC[@]}"; then echo -mavx512f -mavx512dq -mavx2 -mfma -DAL_HAVE_AVX512=1
    elif listed_in "$1" "${KERNEL_SRC[@]}"; then echo -DAL_CPU_DISPATCH=1
    fi
}
# The longest compiles first, so that no long one starts last.
LONGEST=(kernels/spmv/spmvt_kernel_merge_avx2.cpp kernels/spmv/spmvt_kernel_merge.cpp kernels/spmv/spmv_kernel_merge.cpp
         kernels/spmv/spmv_kernel_merge_avx2.cpp)
all=("${HOST_SRC[@]}" "${KERNEL_SRC[@]}")
[[ $X86 -eq 1 ]] && all+=("${AVX2_SRC[@]}" "${AVX512_SRC[@]}")  # no per-ISA units off x86
order=()
for s in "${LONGEST[@]}"; do
    listed_in "$s" "${HOST_SRC[@]}" "${KERNEL_SRC[@]}" "${AVX2_SRC[@]}" "${AVX512_SRC[@]}" ||
        die "fuzz/run.sh: $s, in LONGEST, is in none of the source lists"
    listed_in "$s" "${all[@]}" && order+=("$s")
done
for s in "${all[@]}"; do listed_in "$s" "${LONGEST[@]}" || order+=("$s"); done
say "building in $BUILD ($JOBS compiles at a time)"
for s in "${order[@]}"; do
    # shellcheck disable=SC2046
    compile "$s" $(isa_flags "$s")
done
while [[ $running -gt 0 ]]; do
    wait -n || die "compiling for the fuzzers failed"
    running=$((running - 1))
done
for h in "${HARNESSES[@]}"; do
    [[ -f fuzz/fuzz_$h.cpp ]] || die "no harness fuzz/fuzz_$h.cpp"
    "$CXX" "${CXXFLAGS[@]}" -fsanitize=fuzzer "fuzz/fuzz_$h.cpp" "${objs[@]}" -lpthread -ldl -o "$BUILD/fuzz_$h"
done

# ------------------------------------------------------------ run
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
summary=()
for h in "${HARNESSES[@]}"; do
    corpus=$BUILD/corpus/$h
    mkdir -p "$corpus"
    [[ -d fuzz/corpus/$h ]] && cp -n fuzz/corpus/$h/* "$corpus/" 2>/dev/null || true
    log=$BUILD/fuzz_$h.log
    say "running fuzz_$h for ${SECONDS_EACH}s (log: $log)"
    rc=0
    # shellcheck disable=SC2086
    if [[ $SECONDS_EACH -gt 0 ]]; then budget=(-max_total_time="$SECONDS_EACH"); else budget=(-runs=0); fi
    "$BUILD/fuzz_$h" "${budget[@]}" -timeout=60 -rss_limit_mb=4096 -print_final_stats=1 \
        -artifact_prefix="$BUILD/artifacts/$h-" ${FUZZ_ARGS:-} "$corpus" >"$log" 2>&1 || rc=$?
    execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | tail -n 1 | awk '{print $2}')
    last=$(grep -E '^#[0-9]+.*cov: [0-9]+ ft: [0-9]+' "$log" | tail -n 1 | grep -oE 'cov: [0-9]+ ft: [0-9]+' || true)
    line="fuzz_$h: rc=$rc executions=${execs:-?} ${last:-cov: ? ft: ?} corpus=$(ls "$corpus" | wc -l)"
    summary+=("$line")
    if [[ $rc -ne 0 ]]; then
        status=1
        echo "!! fuzz_$h FOUND A PROBLEM (rc=$rc):" >&2
        grep -E 'FUZZ FINDING|ERROR: (AddressSanitizer|libFuzzer|LeakSanitizer)|runtime error|SUMMARY|Test unit written' "$log" | head -n 20 >&2 || true
        tail -n 40 "$log" >&2
    fi
done
say "summary"
printf '   %s\n' "${summary[@]}"
exit $status
