"""Which stack frame is the user's: the innermost one outside the jitmagic package (errors name
the user's line; generic shapes decide differently in user code and in jitmagic's own), and the
user's lines an equation comes from (`user_lines`, recorded on every equation for profiles)."""

from __future__ import annotations

import linecache
import os
import sys
import sysconfig

import numpy as np

# the package's root: frames in any of its modules are jitmagic's, the rest the user's
PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# NumPy's own Python code (np.mean, np.linalg.norm calling methods of a tracer) is not a line
# of the user's either
_NUMPY_DIR = os.path.dirname(os.path.abspath(np.__file__))
_MAX_LINES = 16  # user frames kept per equation (a deep recursion keeps its innermost ones)


_STDLIB = os.path.abspath(sysconfig.get_paths()["stdlib"]) + os.sep
_SITE = tuple(os.path.abspath(sysconfig.get_paths()[k]) + os.sep for k in ("purelib", "platlib"))


def library_file(filename) -> bool:
    """Is filename jitmagic's, NumPy's or the standard library's (contextlib's context
    managers around a call), never a line of the user's code?"""
    fn = os.path.abspath(filename)
    if fn.startswith((PKG_DIR + os.sep, _NUMPY_DIR + os.sep)):
        return True
    return fn.startswith(_STDLIB) and not fn.startswith(_SITE)


def user_frame():
    """(filename, lineno, source line) of the innermost frame outside jitmagic."""
    f = sys._getframe(1)
    while f is not None:
        fn = os.path.abspath(f.f_code.co_filename)
        if not fn.startswith(PKG_DIR + os.sep):
            return (
                f.f_code.co_filename,
                f.f_lineno,
                linecache.getline(f.f_code.co_filename, f.f_lineno, f.f_globals).strip(),
            )
        f = f.f_back
    return None


_is_user: dict = {}  # filename -> whether its frames are the user's (a few per session)


def _user_file(filename):
    fn = os.path.abspath(filename)
    user = not fn.startswith((PKG_DIR + os.sep, _NUMPY_DIR + os.sep))
    _is_user[filename] = user
    return user


def user_lines(skip=2):
    """Where in the user's code the caller's caller is, innermost first: ((code object,
    instruction offset), ...), the run of user frames nearest to it (a helper's line, then the
    line that called the helper, up to the first frame that is jitmagic's or NumPy's again: a
    nested jit's caller is added when the call is inlined). Called on every traced equation, so
    it only walks frames and looks filenames up in a dict (about 0.4 µs a call); line numbers
    are worked out when someone asks (`resolve`)."""
    f = sys._getframe(skip)
    out = []
    known = _is_user
    while f is not None:
        code = f.f_code
        user = known.get(code.co_filename)
        if user is None:
            user = _user_file(code.co_filename)
        if user:
            out.append((code, f.f_lasti))
            if len(out) == _MAX_LINES:
                break
        elif out:
            break
        f = f.f_back
    return tuple(out)


def resolve(loc):
    """user_lines' result as ((filename, line number, function name), ...)."""
    return tuple((code.co_filename, _line_at(code, lasti), code.co_name) for code, lasti in loc)


def _line_at(code, lasti):
    for start, end, line in code.co_lines():
        if start <= lasti < end:
            return line if line is not None else code.co_firstlineno
    return code.co_firstlineno
