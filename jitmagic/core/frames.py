"""Which stack frame is the user's: the innermost one outside the jitmagic package (errors name
the user's line; generic shapes decide differently in user code and in jitmagic's own)."""

from __future__ import annotations

import linecache
import os
import sys

# the package's root: frames in any of its modules are jitmagic's, the rest the user's
PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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
