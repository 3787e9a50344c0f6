"""Compile one Ascend C kernel source into the device binary AclDevice loads
(aclrtBinaryLoadFromFile): a meson custom_target command (kernels/ascendc/).

    compile_kernel.py --compiler BISHENG --cann-root ROOT --npu-arch dav-3510
                      --source-root SRC --output OUT SOURCE

Device-only object (--cce-aicore-only) for the given architecture, with the
project's headers (SRC, SRC/host/include) and CANN's Ascend C headers. Every
KernelDesc name the host looks up must be an extern "C" entry of SOURCE.
NOT YET RUN against a real CANN: no machine used so far has it (docs/npu.md).
"""
import argparse
import os
import subprocess
import sys

HEADER_DIRS = ("include", "compiler/tikcpp/tikcfw", "compiler/tikcpp/tikcfw/impl",
               "compiler/tikcpp/tikcfw/interface", "include/ascendc")


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--compiler", required=True)
    ap.add_argument("--cann-root", required=True)
    ap.add_argument("--npu-arch", required=True, choices=["dav-2201", "dav-3510"])
    ap.add_argument("--source-root", required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("source")
    a = ap.parse_args(argv)
    includes = [f"-I{a.source_root}", f"-I{os.path.join(a.source_root, 'host', 'include')}"]
    includes += [f"-I{os.path.join(a.cann_root, d)}" for d in HEADER_DIRS
                 if os.path.isdir(os.path.join(a.cann_root, d))]
    cmd = [a.compiler, "-xasc", f"--npu-arch={a.npu_arch}", "--cce-aicore-only", "-O2", "-std=c++17",
           *includes, "-c", a.source, "-o", a.output]
    return subprocess.run(cmd).returncode


if __name__ == "__main__":
    sys.exit(main())
