"""The -Dascendc meson option: disabled / auto without CANN / enabled without
CANN, and, against a stand-in CANN tree whose "bisheng" records its arguments,
that the Ascend C kernels are compiled per architecture and installed where
AclDevice looks for them. (No real CANN here: docs/npu.md.)"""
import json
import os
import pathlib
import shutil
import stat
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(
    subprocess.run([sys.executable, "-c", "import mesonbuild, ninja"], capture_output=True).returncode != 0,
    reason="meson and ninja (requirements-dev.txt) are not importable")


def meson(*args, env=None):
    ninja_dir = subprocess.run([sys.executable, "-c", "import ninja; print(ninja.BIN_DIR)"],
                               capture_output=True, text=True).stdout.strip()
    e = {k: v for k, v in os.environ.items() if not k.startswith("ASCEND_")}
    e["PATH"] = ninja_dir + os.pathsep + os.path.dirname(sys.executable) + os.pathsep + e.get("PATH", "")
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "mesonbuild.mesonmain", *args], cwd=ROOT, env=e,
                          capture_output=True, text=True, timeout=300)


def ascend_lines(out):
    return [line for line in out.splitlines() if "Ascend C" in line]


def test_disabled(tmp_path):
    p = meson("setup", str(tmp_path / "b"), "-Dascendc=disabled")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert ascend_lines(p.stdout) == ["Message: Ascend C kernels: skipped (-Dascendc=disabled)"]


def test_auto_without_cann_says_so_in_one_line(tmp_path):
    empty = tmp_path / "no-cann"
    empty.mkdir()
    p = meson("setup", str(tmp_path / "b"), f"-Dascendc-root={empty}")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    lines = ascend_lines(p.stdout)
    assert len(lines) == 1, lines
    assert lines[0].startswith("Message: Ascend C kernels: skipped (CANN's Ascend C compiler not found")
    assert str(empty) in lines[0] and "no bisheng/ccec" in lines[0]
    assert "bisheng" not in p.stdout.replace(lines[0], "")   # no other compiler chatter


def test_enabled_without_cann_fails_clearly(tmp_path):
    empty = tmp_path / "no-cann"
    empty.mkdir()
    p = meson("setup", str(tmp_path / "b"), "-Dascendc=enabled", f"-Dascendc-root={empty}")
    assert p.returncode != 0
    assert "ERROR: Problem encountered: Ascend C kernels: -Dascendc=enabled, but CANN's Ascend C compiler " \
           "not found" in p.stdout + p.stderr


FAKE_BISHENG = """#!{python}
import json, sys
args = sys.argv[1:]
with open({log!r}, "a") as f:
    f.write(json.dumps(args) + "\\n")
open(args[args.index("-o") + 1], "wb").write(b"not a real kernel binary")
"""


def test_found_compiler_builds_and_installs_each_arch(tmp_path):
    cann = tmp_path / "cann"
    (cann / "bin").mkdir(parents=True)
    (cann / "include").mkdir()
    (cann / "include" / "kernel_operator.h").write_text("// stand-in\n")
    log = tmp_path / "bisheng.log"
    bisheng = cann / "bin" / "bisheng"
    bisheng.write_text(FAKE_BISHENG.format(python=sys.executable, log=str(log)))
    bisheng.chmod(bisheng.stat().st_mode | stat.S_IEXEC)
    build = tmp_path / "b"
    # found through $ASCEND_HOME_PATH, as after sourcing CANN's set_env.sh
    p = meson("setup", str(build), "-Dascendc=enabled", env={"ASCEND_HOME_PATH": str(cann)})
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert ascend_lines(p.stdout) == [f"Message: Ascend C kernels: building with {bisheng}"]
    targets = ["kernels/ascendc/arch35/ascend_linalg_kernels.o", "kernels/ascendc/arch22/ascend_linalg_kernels.o"]
    ninja = shutil.which("ninja", path=subprocess.run(
        [sys.executable, "-c", "import ninja; print(ninja.BIN_DIR)"], capture_output=True, text=True).stdout.strip())
    b = subprocess.run([ninja, "-C", str(build), *targets], capture_output=True, text=True, timeout=300)
    assert b.returncode == 0, b.stdout[-3000:] + b.stderr[-3000:]
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    by_arch = {next(a for a in c if a.startswith("--npu-arch=")): c for c in calls}
    assert set(by_arch) == {"--npu-arch=dav-3510", "--npu-arch=dav-2201"}
    source = {arch: (build / c[-3]).resolve() for arch, c in by_arch.items()}   # commands run in the build dir
    assert source["--npu-arch=dav-3510"] == ROOT / "kernels/csymm/arch35/csymm_kernel.cpp"
    assert source["--npu-arch=dav-2201"] == ROOT / "kernels/spmv/arch22/spmv_kernel.cpp"
    for c in calls:
        assert "--cce-aicore-only" in c and f"-I{cann / 'include'}" in c and f"-I{ROOT}" in c
    # installed where AclDevice looks: ascend_linalg/kernels/<arch>/ascend_linalg_kernels.o
    intro = meson("introspect", "--installed", str(build))
    installed = json.loads(intro.stdout)
    for t, arch in zip(targets, ("arch35", "arch22")):
        dest = installed[str(build / t)]
        assert dest.endswith(f"ascend_linalg/kernels/{arch}/ascend_linalg_kernels.o"), dest


def test_kernel_names_match_the_host():
    # every KernelDesc name the host launches is an extern "C" entry of the Ascend C source for its arch
    import re
    # (except those the host marks cpu-only, which it launches on the CPU device alone)
    desc = r'KernelDesc\s+\w+\s*\{\s*"(\w+)"[^\n]*'
    host = {f.stem: {m.group(1) for m in re.finditer(desc, f.read_text()) if "// cpu-only" not in m.group(0)}
            for f in (ROOT / "host").glob("*_host.cpp")}
    # the transposed CPU paths live in their own unit, with only cpu-only kernels
    spmvt_cpu = (ROOT / "host/spmvt_cpu.cpp").read_text()
    assert not {m.group(1) for m in re.finditer(desc, spmvt_cpu) if "// cpu-only" not in m.group(0)}
    cpu_only = {n for f in ("spmv_host.cpp", "spmvt_cpu.cpp")
                for n in re.findall(desc[:-6] + r'.*// cpu-only', (ROOT / "host" / f).read_text())}
    assert cpu_only == {"spmv_pack_rows", "spmvt_bin", "spmvt_drain", "spmvt_split"}
    host_src = (ROOT / "host/spmv_host.cpp").read_text()
    assert "packX = op == AL_OP_N && dev.kind() == AL_DEVICE_CPU" in host_src
    assert "if (force == 0 || dev.kind() != AL_DEVICE_CPU ||" in spmvt_cpu  # spmvtUseBins: the binned launches
    # spmvtUseSplit: the column-split launch
    assert "if (force == 0 || (force < 0 && gBinForce.load() == 1) || dev.kind() != AL_DEVICE_CPU ||" in spmvt_cpu
    csymm = (ROOT / "kernels/csymm/arch35/csymm_kernel.cpp").read_text()
    spmv = (ROOT / "kernels/spmv/arch22/spmv_kernel.cpp").read_text()
    assert host["csymm_host"] == set(re.findall(r'__global__ __aicore__ void (\w+)\(', csymm))
    assert host["spmv_host"] == set(re.findall(r'^AL_SPMV_ENTRY\((\w+),', spmv, re.M))
    # they include the host's tiling headers instead of restating the structs
    assert '#include "host/csymm_tiling.h"' in csymm and "struct CsymmTilingData" not in csymm
    assert '#include "host/spmv_tiling.h"' in spmv and "struct SpmvTilingData" not in spmv
