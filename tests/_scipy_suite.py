"""Load one of the installed scipy's own test modules with names patched in.

scipy's tests bind the objects they test at import time (module globals and
``parametrize`` arguments), so the patch is applied while the module executes
and undone straight after: nothing outside the loaded copy sees it.
"""
import importlib.util
import pathlib
from contextlib import ExitStack
from unittest import mock

import scipy


def load(relpath, modname, patches):
    """Execute scipy/<relpath> as module ``modname`` with ``patches`` applied.

    ``patches`` maps (module object, attribute name) -> replacement.
    """
    path = pathlib.Path(scipy.__file__).parent / relpath
    spec = importlib.util.spec_from_file_location(modname, path)
    module = importlib.util.module_from_spec(spec)
    with ExitStack() as stack:
        for (target, attr), value in patches.items():
            stack.enter_context(mock.patch.object(target, attr, value))
        spec.loader.exec_module(module)
    return module
