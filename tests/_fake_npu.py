"""Running code against the fake ACL runtime (docs/npu.md) in a fresh interpreter.

Discovery is cached per process, so every case that needs the NPU path runs in
a subprocess with ASCEND_LINALG_ACL_LIB (and FAKE_ACL_*) set before
ascend_linalg is imported.
"""
import json
import os
import subprocess
import sys
import textwrap

from ascend_linalg.testing import fake_acl_path

FAKE = fake_acl_path()


def clean_env(**env):
    """os.environ without ASCEND_*/FAKE_ACL_* settings, plus ``env``."""
    e = {k: v for k, v in os.environ.items() if not k.startswith(("ASCEND_", "FAKE_ACL_"))}
    e.update({k: str(v) for k, v in env.items()})
    return e


def run_process(code, timeout=120, **env):
    """Run ``code`` in a fresh interpreter; returns the CompletedProcess."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=clean_env(**env),
                          capture_output=True, text=True, timeout=timeout)


def run(code, **env):
    """Run ``code`` in a fresh interpreter; it prints one JSON value, returned here."""
    p = run_process(code, **env)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])
