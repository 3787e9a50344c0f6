"""Run a test's body in a forked child, so that a crash (SIGSEGV, SIGBUS,
abort) fails the test instead of killing pytest."""
import ast
import os
import signal

import numpy as np


def in_child(fn, timeout=60):
    """Run ``fn`` in a forked child; return ('ok', repr) / ('exc', cls, msg) / ('signal', n)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        try:
            signal.alarm(timeout)
            try:
                out = ("ok", np.asarray(fn()).tolist())
            except Exception as exc:  # noqa: BLE001
                out = ("exc", type(exc).__name__, str(exc))
            os.write(w, repr(out).encode())
        finally:
            os._exit(0)
    os.close(w)
    text = read_all(r)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return ("signal", os.WTERMSIG(status))
    return ast.literal_eval(text)


def read_all(fd):
    """Everything the child wrote to pipe ``fd`` until it closed, decoded; closes ``fd``."""
    chunks = []
    while True:
        b = os.read(fd, 65536)
        if not b:
            break
        chunks.append(b)
    os.close(fd)
    return b"".join(chunks).decode()
