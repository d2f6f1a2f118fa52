"""Locks a forked child can use: the child of a process whose threads held them (a compile, a
tier-up, an event being recorded, the buffer pool's table) would otherwise wait forever for a
thread it does not have.

`lock()` and `rlock()` make ordinary threading locks that are reset, unheld, in every forked
child. `hold_across_fork(lock)` marks the few locks that guard state a fork must not copy
half-changed (LLVM's, which lives in C++ and cannot be reset): the forking thread takes them
first, so a fork waits for a compile in progress to finish.
"""

from __future__ import annotations

import os
import threading
import weakref

_locks: weakref.WeakSet = weakref.WeakSet()
_held: list = []


def lock():
    lk = threading.Lock()
    _locks.add(lk)
    return lk


def rlock():
    lk = threading.RLock()
    _locks.add(lk)
    return lk


def hold_across_fork(lk, acquire=None, release=None):
    """The forking thread takes lk before fork() and lets it go after, in the parent and in the
    child. acquire/release: how, for a lock that is not a threading lock (default: its
    acquire() and release())."""
    _held.append((acquire or lk.acquire, release or lk.release))
    return lk


def _before():
    for acquire, _ in _held:
        acquire()


def _after_in_parent():
    for _, release in reversed(_held):
        release()


def _after_in_child():
    for _, release in reversed(_held):
        release()  # the child's only thread is the one that took them
    # the others, held by threads the child does not have: reset as CPython's threading and
    # logging modules reset theirs after a fork
    for lk in list(_locks):
        lk._at_fork_reinit()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=_before, after_in_parent=_after_in_parent, after_in_child=_after_in_child
    )
