"""comm: the kernel end of the JupyterLab "JIT" panel, one Jupyter comm per listening frontend.

Protocol (target name ``jitmagic``; every message is a dict with a ``type``):

    kernel -> frontend  {"type": "hello", "version": ...}          when the kernel opens a comm
                        {"type": "event", "event": {...}}           a tracker event, as it happens
                        {"type": "events", "events": [...]}         the recent past, on subscribe;
                          "counts": {...}, "dropped": n             and a burst's events, batched
                        {"type": "snapshot", "snapshot": {...}}     after each cell, and on request
                        {"type": "code", "req": n, "text"|"error": ...}  answer to request_code
    frontend -> kernel  {"type": "subscribe"}                       start streaming on this comm
                        {"type": "request_snapshot"}                send a snapshot now
                        {"type": "unsubscribe"}                     stop streaming on this comm
                        {"type": "request_code", "req": n, "fid": .., "variant": k,
                         "view": "ir"|"llvm"|"asm", "diff_from": k2 or null}
                                                                    one variant's code, or a diff
                        {"type": "clear_cache", "fid": .. or null}  as %jit_cache --clear
                        {"type": "request_profile", "req": n, "fid": .., "variant": k}
                                                                    profile a variant on the
                                                                    inputs of its first call
    kernel -> frontend  {"type": "profile", "req": n, "profile": {...} | "error": ...}
                          the annotated source as data (diagnostics.profile_views.panel_data)

``start(ip)`` announces itself with one kernel-opened comm and registers the target so that a
frontend which connects later (page reload, second tab) can open its own comm. Nothing is
subscribed to the tracker, and nothing is sent, until some frontend says "subscribe": in terminal
IPython, nbclient or any frontend without the extension the cost is one comm_open message at load.
Tracker events only happen on compiles, so the jit cache-hit path is never touched.

Events go out at a bounded rate: the first after a quiet spell at once (the panel shows a miss
while its cell still runs), then at most one batch each FLUSH_S, holding the newest MAX_BATCH
events of the burst with the tracker's totals, so a storm of 10,000 recompiles is 10 messages
a second of at most MAX_BATCH events each, and the counts stay right though the batch left
out older events. Every batch is sent before the snapshot that follows it.
"""

from __future__ import annotations

import collections
import json
import threading
import time

from jitmagic._version import __version__
from jitmagic.diagnostics import tracker
from jitmagic.notebook import profiling

TARGET = "jitmagic"
BACKLOG = 200  # past events sent to a frontend when it subscribes
FLUSH_S = 0.1  # at most one event message per this many seconds, per kernel
MAX_BATCH = 500  # the newest events of a burst kept for the next batch (the panel shows 500)

_bridges = {}  # id(shell) -> _Bridge; a module global so that %reload_ext finds the old one


def start(ip):
    """Announce jitmagic to the frontend of `ip`'s kernel. Idempotent."""
    bridge = _bridges.get(id(ip))
    if bridge is None or bridge.ip is not ip:  # ids of collected shells are reused
        bridge = _bridges[id(ip)] = _Bridge(ip)
        bridge.start()
    return bridge


def stop(ip):
    """Close every comm, unsubscribe from the tracker and unhook from IPython. Idempotent."""
    bridge = _bridges.get(id(ip))
    if bridge is not None and bridge.ip is ip:
        del _bridges[id(ip)]
        bridge.stop()


class _Bridge:
    def __init__(self, ip):
        self.ip = ip
        self.channels = {}  # comm_id -> comm; those listed in `listening` get the stream
        self.listening = set()
        self._unsubscribe = None
        self._lock = threading.Lock()
        self._pending = collections.deque(maxlen=MAX_BATCH)  # events not sent yet
        self._dropped = 0  # events of the burst that fell out of `_pending`
        self._last_send = -FLUSH_S  # time.monotonic() of the last event message
        self._timer = None

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self):
        manager = _comm_manager()
        if manager is not None:
            manager.register_target(TARGET, self._on_frontend_open)
        self.ip.events.register("post_run_cell", self._post_run_cell)
        self._add(_create_comm(data=_hello()))

    def stop(self):
        self._flush()
        try:
            self.ip.events.unregister("post_run_cell", self._post_run_cell)
        except ValueError:
            pass
        manager = _comm_manager()
        if manager is not None:
            try:
                manager.unregister_target(TARGET, self._on_frontend_open)
            except KeyError:
                pass
        for c in list(self.channels.values()):
            try:
                c.close(data={"type": "bye"})
            except Exception:  # a comm whose kernel is gone cannot fail the unload
                pass
        self.channels.clear()
        self._set_listening(set())

    # -- channels -------------------------------------------------------------------------------
    def _add(self, c, listening=False):
        if c is None:
            return
        self.channels[c.comm_id] = c
        c.on_msg(lambda msg, c=c: self._on_msg(c, msg))
        c.on_close(lambda msg, c=c: self._on_close(c))
        if listening:
            self._listen(c)

    def _on_frontend_open(self, c, msg):
        data = msg.get("content", {}).get("data") or {}
        self._add(c, listening=data.get("type") == "subscribe")

    def _on_msg(self, c, msg):
        kind = (msg.get("content", {}).get("data") or {}).get("type")
        if kind == "subscribe":
            self._listen(c)
        elif kind == "unsubscribe":
            self._set_listening(self.listening - {c.comm_id})
        elif kind == "request_snapshot":
            self._flush()
            self._send(c, {"type": "snapshot", "snapshot": _snapshot()})
        elif kind == "request_code":
            self._send(c, _code_answer(msg["content"]["data"]))
        elif kind == "request_profile":
            self._send(c, profiling.panel_answer(msg["content"]["data"], _function))
            self._flush()  # the profile's event
            self._broadcast({"type": "snapshot", "snapshot": _snapshot()})
        elif kind == "clear_cache":
            _clear(msg["content"]["data"].get("fid"))
            self._flush()
            self._broadcast({"type": "snapshot", "snapshot": _snapshot()})

    def _on_close(self, c):
        self.channels.pop(c.comm_id, None)
        self._set_listening(self.listening - {c.comm_id})

    def _listen(self, c):
        self._set_listening(self.listening | {c.comm_id})
        self._send(c, _hello())  # a comm the frontend opened has not heard it yet
        # what happened before this frontend listened (cells queued ahead of "subscribe",
        # a page reload), then the snapshot, which is authoritative for counts and variants
        self._send(c, {"type": "events", "events": _backlog()})
        self._send(c, {"type": "snapshot", "snapshot": _snapshot()})

    def _set_listening(self, ids):
        """Subscribe to the tracker while at least one frontend listens, and only then."""
        with self._lock:
            self.listening = set(ids)
            if self.listening and self._unsubscribe is None:
                self._unsubscribe = tracker.subscribe(self._on_event)
            elif not self.listening and self._unsubscribe is not None:
                self._unsubscribe()
                self._unsubscribe = None

    # -- what flows -----------------------------------------------------------------------------
    def _on_event(self, event):
        # called in the compiling thread; ipykernel's iopub thread makes send() thread-safe
        now = time.monotonic()
        with self._lock:
            quiet = not self._pending and self._timer is None
            if quiet and now - self._last_send >= FLUSH_S:
                self._last_send = now
            else:
                if len(self._pending) == self._pending.maxlen:
                    self._dropped += 1
                self._pending.append(event)
                if self._timer is None:
                    wait = max(0.0, FLUSH_S - (now - self._last_send))
                    self._timer = threading.Timer(wait, self._flush)
                    self._timer.daemon = True
                    self._timer.start()
                return
        self._broadcast({"type": "event", "event": _jsonable(event.to_dict())})

    def _flush(self):
        """Send the events held back since the last message, as one batch."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if not self._pending:
                return
            events, dropped = list(self._pending), self._dropped
            self._pending.clear()
            self._dropped = 0
            self._last_send = time.monotonic()
        self._broadcast(
            {
                "type": "events",
                "events": _jsonable([e.to_dict() for e in events]),
                "dropped": dropped,
                "counts": tracker.counts(),
            }
        )

    def _post_run_cell(self, result=None):
        if self.listening:  # run statistics change on cache hits: refresh them per cell
            self._flush()
            self._broadcast({"type": "snapshot", "snapshot": _snapshot()})

    def _broadcast(self, data):
        for cid in list(self.listening):
            c = self.channels.get(cid)
            if c is not None:
                self._send(c, data)

    def _send(self, c, data):
        try:
            c.send(data=data)
        except Exception:  # never let the panel break the user's computation
            self._on_close(c)


def kernel_id():
    """This kernel's id (from its connection file), so a live dashboard finds its kernel."""
    import os
    import sys

    # only a running kernel has an IPKernelApp; asking ipykernel otherwise would import (and
    # create) one, and importing ipykernel's kernel patches the `comm` package
    app = getattr(sys.modules.get("ipykernel.kernelapp"), "IPKernelApp", None)
    try:
        if app is None or not app.initialized():
            return ""
        name = os.path.basename(app.instance().connection_file or "")
    except Exception:
        return ""
    return name[len("kernel-") : -len(".json")] if name.startswith("kernel-") else name


def _hello():
    return {"type": "hello", "version": __version__, "kernel_id": kernel_id()}


def _function(fid=None, qualname=None):
    fns = tracker.all_functions()
    for f in fns:
        if fid is not None and f.fid == fid:
            return f
    for f in fns:
        if fid is None and qualname and qualname in (f.qualname, f.name):
            return f
    raise LookupError(
        f"no live jitted function with id {fid!r} ({qualname or '?'}); "
        f"it may have been redefined or cleared: refresh the panel"
    )


def code_text(f, view, variant):
    if view == "ir":
        return f.inspect_ir(variant)
    if view == "llvm":
        return f.inspect_llvm(variant)
    if view == "asm":
        return f.inspect_asm(variant)
    raise ValueError(f"unknown code view {view!r}: use ir, llvm or asm")


def _code_answer(data):
    """One variant's code, or a unified diff from `diff_from` to `variant`, for the panel."""
    import difflib

    req = data.get("req")
    try:
        f = _function(data.get("fid"), data.get("qualname"))
        view, variant = data.get("view", "ir"), int(data["variant"])
        text = code_text(f, view, variant)
        if data.get("diff_from") is not None:
            old = code_text(f, view, int(data["diff_from"]))
            text = (
                "\n".join(
                    difflib.unified_diff(
                        old.splitlines(),
                        text.splitlines(),
                        f"variant {data['diff_from']}",
                        f"variant {variant}",
                        lineterm="",
                    )
                )
                or "(identical)"
            )
        return {"type": "code", "req": req, "text": text}
    except Exception as e:  # the panel shows the error; the kernel carries on
        return {"type": "code", "req": req, "error": f"{type(e).__name__}: {e}"}


def _clear(fid):
    for f in tracker.all_functions():
        if fid is None or f.fid == fid:
            f.clear_cache()


def _jsonable(data):
    """Static values are arbitrary Python objects: what JSON cannot hold goes as its repr."""
    return json.loads(json.dumps(data, default=repr))


def _backlog(n=BACKLOG):
    return _jsonable([e.to_dict() for e in tracker.event_list()[-n:]])


def _snapshot():
    try:
        return _jsonable(tracker.snapshot())
    except Exception as e:  # a broken snapshot shows in the panel, not as a kernel traceback
        return {"functions": [], "error": f"{type(e).__name__}: {e}"}


def _create_comm(**kwargs):
    import comm

    # outside a kernel (terminal IPython) this is comm's DummyComm, which sends nothing
    return comm.create_comm(target_name=TARGET, **kwargs)


def _comm_manager():
    try:
        import comm

        return comm.get_comm_manager()
    except Exception:
        return None
