"""Find CANN's Ascend C compiler for meson (kernels/ascendc/meson.build).

Prints two lines and exits 0 when found: the compiler (bisheng, else ccec)
and the CANN root whose headers it compiles against (kernel_operator.h under
include/ or compiler/tikcpp/tikcfw/). Otherwise prints one line, the reason,
and exits 1. Roots searched, in order: the `--root` argument when given (only
that one), else $ASCEND_HOME_PATH, $ASCEND_TOOLKIT_HOME,
/usr/local/Ascend/cann, /usr/local/Ascend/ascend-toolkit/latest.
"""
import os
import sys

COMPILERS = ("bisheng", "ccec")
BIN_DIRS = ("bin", "compiler/ccec_compiler/bin", "tools/bisheng_compiler/bin", "compiler/bisheng/bin")
HEADER_DIRS = ("include", "compiler/tikcpp/tikcfw", "include/ascendc")


def roots(explicit):
    if explicit:
        return [explicit]
    out = [os.environ.get(v) for v in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME")]
    out += ["/usr/local/Ascend/cann", "/usr/local/Ascend/ascend-toolkit/latest"]
    return [r for r in out if r]


def find(root):
    """(compiler, None) or (None, why) for one CANN root."""
    if not os.path.isdir(root):
        return None, "no such directory"
    compiler = next((os.path.join(root, d, c) for c in COMPILERS for d in BIN_DIRS
                     if os.access(os.path.join(root, d, c), os.X_OK)), None)
    if compiler is None:
        return None, "no bisheng/ccec in " + ", ".join(BIN_DIRS)
    if not any(os.path.isfile(os.path.join(root, d, "kernel_operator.h")) for d in HEADER_DIRS):
        return None, f"{os.path.basename(compiler)} found but no kernel_operator.h (Ascend C headers)"
    return compiler, None


def main(argv):
    explicit = argv[argv.index("--root") + 1] if "--root" in argv else ""
    tried = []
    for root in roots(explicit):
        compiler, why = find(root)
        if compiler:
            print(compiler)
            print(os.path.abspath(root))
            return 0
        tried.append(f"{root}: {why}")
    print("CANN's Ascend C compiler not found (" + "; ".join(tried) +
          "; install CANN and source set_env.sh, or pass -Dascendc-root=<CANN root>)")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
