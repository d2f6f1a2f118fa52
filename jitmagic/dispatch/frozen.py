"""Calls whose value jm.jit would freeze into a variant: caught while tracing.

jm.jit traces a function once per variant; a call that returns a new value each time it runs
(np.random.rand(3), random.random(), time.time(), input()) would run once, while tracing, and
its result would be compiled in as a constant: every later call would see the same "random"
numbers. While jm.jit traces, a profile hook watches the user's code for such calls; the trace
then fails with FrozenValueError naming the call and its line, and saying what to do (njit
draws fresh numbers on every call; or pass the values in as arguments).
"""

from __future__ import annotations

import os
import random
import sys
import time
from contextlib import contextmanager

import numpy as np

from jitmagic.errors import FrozenValueError

_RANDOM_FILE = getattr(random, "__file__", None)
_CALLS = {
    time.time: "time.time()",
    time.time_ns: "time.time_ns()",
    time.monotonic: "time.monotonic()",
    time.perf_counter: "time.perf_counter()",
    input: "input()",
    os.urandom: "os.urandom()",
}
_RANDOM_TYPES = (np.random.RandomState, np.random.Generator, np.random.BitGenerator, random.Random)


def _user(frame):
    name = frame.f_globals.get("__name__", "") or ""
    return not name.startswith(("jitmagic.", "numpy", "random"))


def _frozen(event, frame, arg):
    """What the call is, if it is one whose value would be frozen (else None)."""
    if event == "c_call":
        try:
            known = _CALLS.get(arg)
        except TypeError:  # (an unhashable callable)
            known = None
        if known:
            return known
        owner = getattr(arg, "__self__", None)
        if isinstance(owner, _RANDOM_TYPES):
            kind = (
                "np.random"
                if isinstance(owner, np.random.RandomState)
                else ("Generator" if isinstance(owner, np.random.Generator) else "random")
            )
            return f"{kind}.{getattr(arg, '__name__', '?')}()"
    elif event == "call" and frame.f_code.co_filename == _RANDOM_FILE:
        return f"random.{frame.f_code.co_name}()"
    return None


_addresses: dict = {}  # id(bit generator) -> (it, its state's address)


def _legacy_state():
    """A cheap view of NumPy's global random state (a draw changes it): () when unknown."""
    try:
        bg = np.random.mtrand._rand._bit_generator
        cached = _addresses.get(id(bg))
        if cached is None or cached[0] is not bg:
            cached = _addresses[id(bg)] = (bg, bg.ctypes.state_address)
        addr = cached[1]
    except Exception:
        return lambda: ()
    import ctypes

    if isinstance(bg, np.random.MT19937):  # key[0:2] (a twist changes them) and pos
        return lambda: (ctypes.string_at(addr, 8), ctypes.string_at(addr + 2496, 4))
    return lambda: ctypes.string_at(addr, 32)


def _named_in_line(filename, line):
    import linecache
    import re

    text = linecache.getline(filename, line)
    m = re.search(r"([A-Za-z_][\w.]*random\.\w+)\s*\(", text)
    return f"{m.group(1)}()" if m else "a np.random function"


_SUSPECT = frozenset(
    {
        "random",
        "rand",
        "randn",
        "randint",
        "time",
        "time_ns",
        "perf_counter",
        "monotonic",
        "input",
        "urandom",
        "default_rng",
        "now",
        "today",
        "uniform",
        "normal",
        "choice",
        "shuffle",
        "permutation",
        "seed",
        "getrandbits",
        "gauss",
    }
)


def _names(code):
    out = set(code.co_names)
    for c in code.co_consts:
        if hasattr(c, "co_names"):
            out |= _names(c)
    return out


def _suspect(fun) -> bool:
    """Does the function's own code name something whose value would be frozen? (Then the
    trace is watched line by line; otherwise only the random states are compared.)"""
    code = getattr(fun, "__code__", None)
    return code is None or bool(_names(code) & _SUSPECT)


@contextmanager
def watch(fname, fun=None):
    """While tracing fname with JAX's semantics: raise FrozenValueError afterwards if the
    user's code called something whose value would be frozen. A function whose code names
    such a call is watched by a profile hook (calls of time.time, random.*, Generator
    methods) and a line tracer (NumPy's legacy np.random.* functions are Cython, seen by no
    hook: a change of the global random state between two lines names the line that drew).
    Any other function costs two reads of the random states: a draw in a helper it calls
    is still caught, without its line. (A profiler or tracer already active is left alone.)"""
    state = _legacy_state()
    before = state()
    if not _suspect(fun) or sys.getprofile() is not None or sys.gettrace() is not None:
        yield
        if state() != before:
            raise FrozenValueError(
                f"a random-number function was called while jm.jit traced {fname} (in it or "
                f"in a function it calls): under jm.jit it would run once, while tracing, and "
                f"its numbers would be compiled into the variant, the same on every call. "
                f"Compile it with jm.njit({fname}) instead, which draws fresh numbers from "
                f"NumPy's own stream on every call, or draw the numbers outside and pass them in "
                f"as an argument."
            )
        return
    hits = []
    last = {"state": state(), "where": None}

    def line_tracer(frame, event, arg):
        if event in ("line", "return") and not hits:
            now = state()
            if now != last["state"] and last["where"] is not None:
                hits.append((_named_in_line(*last["where"]), *last["where"]))
            last["state"] = now
            last["where"] = (frame.f_code.co_filename, frame.f_lineno)
        return line_tracer

    def tracer(frame, event, arg):
        if event == "call" and _user(frame):
            last["where"] = (frame.f_code.co_filename, frame.f_lineno)
            return line_tracer
        return None

    def hook(frame, event, arg):
        if hits:
            return
        what = _frozen(event, frame, arg)
        if what is None:
            return
        caller = frame if event == "c_call" else frame.f_back
        if caller is not None and _user(caller):
            hits.append((what, caller.f_code.co_filename, caller.f_lineno))

    sys.setprofile(hook)
    sys.settrace(tracer)
    try:
        yield
    finally:
        sys.settrace(None)
        sys.setprofile(None)
    if hits:
        what, filename, line = hits[0]
        random_call = "random" in what or "Generator" in what
        fix = (
            f"compile it with jm.njit({fname}) instead, which draws fresh numbers from NumPy's "
            f"own stream on every call, or draw the numbers outside and pass them in as an "
            f"argument"
            if random_call
            else "call it outside the compiled function and pass its value in as an argument"
        )
        raise FrozenValueError(
            f'{what} was called while jm.jit traced {fname} (File "{filename}", line {line}): '
            f"under jm.jit it would run once, while tracing, and its value would be compiled "
            f"into the variant, the same on every call. {fix[0].upper()}{fix[1:]}."
        )
