"""Routing: env var, set/get, context manager across threads, logging, npu errors."""
import logging
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import ascend_linalg
from ascend_linalg import BackendUnavailableError, get_backend, set_backend, use_backend
from ascend_linalg.linalg.blas import csymm
from ascend_linalg.sparse import csr_array
from ascend_linalg.testing import dispatch_records

NO_NPU = not ascend_linalg.devices()[0]["usable"]


def _run(code, **env):
    full = dict(os.environ)
    full.pop("ASCEND_LINALG_BACKEND", None)
    full.update(env)
    return subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True,
                          timeout=120)


@pytest.fixture(autouse=True)
def _restore_global():
    before = get_backend()
    yield
    set_backend(before)


def _ops():
    a = np.eye(3, dtype=np.complex64)
    csymm(1.0, a, a)
    csr_array(np.eye(3)) @ np.ones(3)


@pytest.mark.parametrize("name", ["cpu", "scipy", "auto"])
def test_env_var_selects_backend(name):
    r = _run("import ascend_linalg; print(ascend_linalg.get_backend())", ASCEND_LINALG_BACKEND=name)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == name


def test_env_var_rejects_unknown_name():
    r = _run("import ascend_linalg", ASCEND_LINALG_BACKEND="gpu")
    assert r.returncode != 0
    assert "ASCEND_LINALG_BACKEND" in r.stderr and "'gpu'" in r.stderr


def test_set_get_backend():
    set_backend("cpu")
    assert get_backend() == "cpu"
    set_backend("scipy")
    assert get_backend() == "scipy"
    with pytest.raises(ValueError, match="backend must be one of"):
        set_backend("cuda")
    assert get_backend() == "scipy"


@pytest.mark.parametrize("name", ["cpu", "scipy"])
def test_routed_calls_log_backend(name):
    with use_backend(name), dispatch_records() as recs:
        _ops()
    assert [(op, be) for op, be, _ in recs] == [("csymm", name), ("csr_matvec", name)]


def test_auto_falls_back_silently_with_reason():
    if not NO_NPU:
        pytest.skip("an NPU is usable here")
    with use_backend("auto"), dispatch_records() as recs:
        _ops()
    assert {be for _, be, _ in recs} == {"scipy"}
    assert all("no usable NPU" in reason for _, _, reason in recs)


@pytest.mark.skipif(not NO_NPU, reason="an NPU is usable here")
def test_explicit_npu_without_device_raises_reason():
    a = np.eye(2, dtype=np.complex64)
    with use_backend("npu"):
        with pytest.raises(BackendUnavailableError, match="no NPU is usable: .*libascendcl"):
            csymm(1.0, a, a)
        with pytest.raises(BackendUnavailableError, match="csr_matvec"):
            csr_array(np.eye(2)) @ np.ones(2)


def test_use_backend_is_context_local_across_threads():
    set_backend("scipy")
    barrier = threading.Barrier(2)
    seen = {}

    def worker():
        barrier.wait()  # main thread is inside use_backend("cpu") now
        seen["thread"] = get_backend()
        with dispatch_records() as recs:
            csr_array(np.eye(3)) @ np.ones(3)
        seen["ran"] = recs[-1][1] if recs else None

    t = threading.Thread(target=worker)
    with use_backend("cpu"):
        t.start()
        barrier.wait()
        t.join()
        assert get_backend() == "cpu"
    assert seen["thread"] == "scipy"
    assert get_backend() == "scipy"


def test_use_backend_nests_and_restores_on_error():
    set_backend("scipy")
    with pytest.raises(RuntimeError):
        with use_backend("cpu"):
            with use_backend("scipy"):
                assert get_backend() == "scipy"
            assert get_backend() == "cpu"
            raise RuntimeError
    assert get_backend() == "scipy"


def test_use_backend_as_decorator_and_reentered():
    set_backend("scipy")
    seen = []

    @use_backend("cpu")
    def inner(depth):
        seen.append(get_backend())
        if depth:
            with use_backend("scipy"):
                seen.append(get_backend())
                inner(depth - 1)  # the decorator enters anew inside another block
            seen.append(get_backend())

    inner(2)
    assert seen == ["cpu", "scipy", "cpu", "scipy", "cpu", "cpu", "cpu"]
    assert get_backend() == "scipy"
    block = use_backend("cpu")  # one object entered twice, left in order
    with block:
        with use_backend("scipy"):
            with block:
                assert get_backend() == "cpu"
            assert get_backend() == "scipy"
        assert get_backend() == "cpu"
    assert get_backend() == "scipy"
    with pytest.raises(ValueError, match="backend must be one of"):
        use_backend("gpu")


def test_no_records_when_debug_off(caplog):
    caplog.set_level(logging.WARNING, logger="ascend_linalg.dispatch")
    with use_backend("cpu"):
        _ops()
    assert not [r for r in caplog.records if r.name == "ascend_linalg.dispatch"]


def test_devices_and_show_config(capsys):
    devs = ascend_linalg.devices()
    assert [d["name"] for d in devs] == ["npu", "cpu", "scipy"]
    assert devs[1]["usable"] and devs[2]["usable"]
    if NO_NPU:
        assert "libascendcl.so" in devs[0]["detail"]
    ascend_linalg.show_config()
    out = capsys.readouterr().out
    assert "backend:" in out and "cpu" in out and "ACL runtime search order" in out


def test_acl_search_order_follows_env():
    r = _run("import ascend_linalg._core as c; print('\\n'.join(c.acl_info()['searched']))",
             ASCEND_LINALG_ACL_LIB="/nonexistent/libacl.so", ASCEND_HOME_PATH="/opt/cannhome",
             ASCEND_TOOLKIT_HOME="/opt/toolkit")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split()
    assert lines[:3] == ["/nonexistent/libacl.so", "/opt/cannhome/lib64/libascendcl.so",
                         "/opt/toolkit/lib64/libascendcl.so"]
    assert lines[3:] == ["/usr/local/Ascend/cann/lib64/libascendcl.so",
                         "/usr/local/Ascend/ascend-toolkit/latest/lib64/libascendcl.so"]


def test_main_module_self_check():
    r = _run("import runpy; runpy.run_module('ascend_linalg', run_name='__main__')")
    assert "self-check: OK" in r.stdout, r.stdout + r.stderr
    assert "[PASS] cpu" in r.stdout


def test_num_threads_roundtrip():
    n = ascend_linalg.get_num_threads()
    try:
        ascend_linalg.set_num_threads(1)
        assert ascend_linalg.get_num_threads() == 1
        with use_backend("cpu"):
            a = np.eye(40, dtype=np.complex64)
            assert np.allclose(csymm(2.0, a, a), 2 * np.eye(40))
        with pytest.raises(ValueError):
            ascend_linalg.set_num_threads(0)
    finally:
        ascend_linalg.set_num_threads(n)
