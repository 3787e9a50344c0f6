#!/usr/bin/env bash
# Build the extension with AddressSanitizer + UndefinedBehaviorSanitizer in its
# own build tree (build-asan/, never the editable build) and run the test suite
# against it. Usage:
#
#   .ci/sanitize.sh [pytest args...]     # default: the whole tests/ directory
#
# Environment:
#   PYTHON       interpreter with numpy, scipy, pytest, hypothesis, meson, ninja and
#                pybind11 importable. Default: a fresh venv at $ASAN_VENV
#                (/tmp/asan-venv) filled from requirements-dev.txt.
#                An interpreter whose site-packages hold an *editable* install of
#                this project would import that instead: use a base interpreter
#                with PYTHONPATH=<that venv's site-packages> (.pth files in
#                PYTHONPATH are not processed, so the editable hook stays off).
#   ASAN_BUILD   build tree (default build/asan)
#   ASAN_STAGE   where the sanitized package is assembled (default /tmp/asan-stage)
#   SANITIZE     meson b_sanitize value (default address,undefined)
#
# The package under test is imported from $ASAN_STAGE (pure-Python sources +
# the sanitized _core), with the tests copied next to it, so that an editable
# install of the project in the same interpreter cannot shadow it.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${ASAN_BUILD:-$ROOT/build/asan}   # under build/: git-ignored, apart from the editable build
STAGE=${ASAN_STAGE:-/tmp/asan-stage}
SANITIZE=${SANITIZE:-address,undefined}

if [[ -z "${PYTHON:-}" ]]; then
    ASAN_VENV=${ASAN_VENV:-/tmp/asan-venv}
    if [[ ! -x "$ASAN_VENV/bin/python" ]]; then
        python3 -m venv "$ASAN_VENV"
        "$ASAN_VENV/bin/pip" install -q -r requirements-dev.txt
    fi
    PYTHON=$ASAN_VENV/bin/python
fi
MESON=("$PYTHON" -m mesonbuild.mesonmain)

echo "== configure + build ($SANITIZE) in $BUILD"
if [[ ! -f "$BUILD/build.ninja" ]]; then
    # b_lundef=false: a sanitized shared object may leave the runtime's symbols
    # to the preloaded libasan. -O1 -g keeps frames for the reports. -O1, not
    # debugoptimized's -O2: the SpMV kernel units instantiate their row loops
    # for every value, index, prefetch and beta combination, and with the
    # sanitizers' checks inlined -O2 took 9-27 minutes a unit on a 2-core
    # host (spmv_kernel_merge_avx2.cpp: 527 s at -O2, 88 s at -O1), about
    # 28 minutes of CI's build.
    "${MESON[@]}" setup "$BUILD" -Dbuildtype=debug -Doptimization=1 -Db_sanitize="$SANITIZE" \
        -Db_lundef=false -Dcpp_args=-fno-omit-frame-pointer
fi
"${MESON[@]}" compile -C "$BUILD"

echo "== stage the package in $STAGE"
rm -rf "$STAGE"
mkdir -p "$STAGE"
# The whole source tree (tests read sources, run tools/ scripts and configure
# meson in it), then the sanitized binaries over it.
if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$STAGE")
else
    (cd "$ROOT" && find . -path ./build -prune -o -path ./.venv -prune -o -type f -print0 | xargs -0 cp --parents -t "$STAGE")
fi
cp "$BUILD"/ascend_linalg/_core*.so "$STAGE/ascend_linalg/"
# The fake ACL runtime (sanitized too), where testing.fake_acl_path() finds an
# installed one: tests/test_npu_fake.py runs the NPU path on it.
install -D -m755 "$BUILD"/fake_acl/libascendcl.so "$STAGE/ascend_linalg/_fake_acl/libascendcl.so"

echo "== run the tests under ASan + UBSan"
LIBASAN=$(${CXX:-g++} -print-file-name=libasan.so)
LIBUBSAN=$(${CXX:-g++} -print-file-name=libubsan.so)
export LD_PRELOAD="$LIBASAN $LIBUBSAN"
# detect_leaks=0: CPython and numpy keep memory alive until exit on purpose.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1:halt_on_error=1:allocator_may_return_null=1:detect_stack_use_after_return=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:suppressions=$ROOT/.ci/ubsan.supp}
# Lets a test tell that it runs under the sanitizers (none skips anything at present).
export ASCEND_LINALG_SANITIZED=1
# Subprocesses the tests start (tools/validate_npu.py, say) import the staged
# package too.
export PYTHONPATH="$STAGE${PYTHONPATH:+:$PYTHONPATH}"
cd "$STAGE"
"$PYTHON" - <<'PY'
import ascend_linalg, os
core = ascend_linalg._core.__file__
assert core.startswith(os.getcwd()), f"imported {core}, not the sanitized build"
print("sanitized _core:", core)
PY
if [[ $# -eq 0 ]]; then
    # tests/test_memory.py measures resident memory over 10,000 calls. ASan
    # keeps freed memory in quarantine (up to 256 MB by default), so there
    # RSS grows with the bytes a call allocates and frees, not with what it
    # keeps (its error case read 19.9-20.8 MB against a 20 MB bound, and 0
    # growth with a 1 MB quarantine). It runs on its own with a 1 MB
    # quarantine, where growth is memory kept alive; everything else keeps
    # the default.
    "$PYTHON" -m pytest -p no:cacheprovider -q tests --ignore=tests/test_memory.py
    ASAN_OPTIONS="$ASAN_OPTIONS:quarantine_size_mb=1" exec "$PYTHON" -m pytest -p no:cacheprovider -q tests/test_memory.py
fi
exec "$PYTHON" -m pytest -p no:cacheprovider -q "$@"
