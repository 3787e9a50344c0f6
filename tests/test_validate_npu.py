"""tools/validate_npu.py runs end to end (quick mode) against the fake runtime,
so the script a device owner runs cannot rot unnoticed."""
import pathlib
import re
import subprocess
import sys

from _fake_npu import FAKE, clean_env

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tools" / "validate_npu.py"


def _run(*args, **env):
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=ROOT, env=clean_env(**env),
                          capture_output=True, text=True, timeout=600)


def test_quick_validation_on_the_fake_runtime():
    p = _run("--quick", ASCEND_LINALG_ACL_LIB=FAKE)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]
    out = p.stdout
    assert "fake" in out and "validation PASSED" in out
    # both pytest parts ran and passed something
    results = re.findall(r"result: (\d+) passed", out)
    assert len(results) == 2 and all(int(n) > 10 for n in results), out
    # the three design cases, with their targets, at 1/8 size
    for name, m, target in (("256x256 LEFT UPPER", 32, "7.53"), ("1024x1024 LEFT LOWER", 128, "89.27"),
                            ("1024x1024 RIGHT UPPER", 128, "86.34")):
        line = next(line for line in out.splitlines() if line.strip().startswith(name))
        fields = line.split()
        assert str(m) in fields and target in fields, line


def test_no_npu_exits_2_with_the_reason():
    p = _run("--quick", ASCEND_LINALG_ACL_LIB="/nonexistent/libascendcl.so")
    assert p.returncode == 2
    assert "no usable NPU" in p.stdout and "/nonexistent/libascendcl.so" in p.stdout


def test_failures_are_reported():
    # every launch fails: the accuracy part must fail, and say so
    p = _run("--quick", "--skip-spmv", "--skip-perf", ASCEND_LINALG_ACL_LIB=FAKE, FAKE_ACL_FAIL="launch")
    assert p.returncode == 1, p.stdout[-3000:]
    assert "validation FAILED" in p.stdout and "failed" in p.stdout
