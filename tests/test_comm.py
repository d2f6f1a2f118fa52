"""jitmagic.comm, the kernel end of the JupyterLab panel, against fake comms and the real tracker."""
from __future__ import annotations

import json

import numpy as np
import pytest

import comm as comm_pkg
import jitmagic as jm
from jitmagic import comm as jcomm
from jitmagic import tracker


class FakeComm:
    def __init__(self, target_name, data=None, comm_id=None):
        FakeComm.count += 1
        self.comm_id = comm_id or f"comm-{FakeComm.count}"
        self.target_name = target_name
        self.opened_with = data
        self.sent, self.closed = [], None
        self._on_msg = self._on_close = None

    count = 0

    def send(self, data=None):
        json.dumps(data)   # what goes over the wire must be JSON
        self.sent.append(data)

    def close(self, data=None):
        self.closed = data

    def on_msg(self, cb):
        self._on_msg = cb

    def on_close(self, cb):
        self._on_close = cb

    # the frontend talks
    def receive(self, data):
        self._on_msg({"content": {"comm_id": self.comm_id, "data": data}})

    def frontend_closes(self):
        self._on_close({"content": {"comm_id": self.comm_id, "data": {}}})

    def kinds(self):
        return [m["type"] for m in self.sent]


class FakeManager:
    def __init__(self):
        self.targets = {}

    def register_target(self, name, f):
        self.targets[name] = f

    def unregister_target(self, name, f):
        return self.targets.pop(name)


class FakeEvents:
    def __init__(self):
        self.callbacks = {}

    def register(self, name, cb):
        self.callbacks.setdefault(name, []).append(cb)

    def unregister(self, name, cb):
        self.callbacks[name].remove(cb)   # ValueError when absent, as IPython's

    def trigger(self, name, *args):
        for cb in list(self.callbacks.get(name, [])):
            cb(*args)


class FakeShell:
    def __init__(self):
        self.events = FakeEvents()


@pytest.fixture
def kernel(monkeypatch):
    opened, manager = [], FakeManager()

    def create_comm(target_name, data=None, **kw):
        c = FakeComm(target_name, data)
        opened.append(c)
        return c

    monkeypatch.setattr(comm_pkg, "create_comm", create_comm)
    monkeypatch.setattr(comm_pkg, "get_comm_manager", lambda: manager)
    ip = FakeShell()
    subscribers = len(tracker._subscribers)
    yield ip, opened, manager
    jcomm.stop(ip)
    assert len(tracker._subscribers) == subscribers, "comm left a tracker subscription behind"


def _scale():
    @jm.jit(static_argnames=("n",))
    def scale(x, n):
        return x * n + 1.0
    return scale


def test_silent_until_a_frontend_subscribes(kernel):
    ip, opened, manager = kernel
    before = len(tracker._subscribers)
    jcomm.start(ip)
    assert [c.opened_with["type"] for c in opened] == ["hello"]
    assert jcomm.TARGET in manager.targets
    assert len(tracker._subscribers) == before   # no frontend, no subscription

    scale, x = _scale(), np.arange(3.0)
    scale(x, 2)
    ip.events.trigger("post_run_cell", None)
    assert opened[0].sent == []


def test_streams_events_and_snapshots_to_a_subscriber(kernel):
    ip, opened, _ = kernel
    scale, x = _scale(), np.arange(3.0)
    scale(x, 2)                     # before anyone listens: arrives in the backlog
    jcomm.start(ip)
    c = opened[0]
    c.receive({"type": "subscribe"})
    assert c.kinds() == ["events", "snapshot"]
    assert c.sent[0]["events"][-1]["kind"] == "compile"
    assert c.sent[0]["events"][-1]["statics"] == {"n": 2}

    c.sent.clear()
    scale(x, 3)                     # recompile: one live event with its reason
    assert c.kinds() == ["event"]
    ev = c.sent[0]["event"]
    assert ev["kind"] == "miss" and ev["variant"] == 2
    assert ev["reasons"][0]["kind"] == "static_value" and ev["reasons"][0]["arg"] == "n"

    c.sent.clear()
    scale(x, 3)                     # cache hit: nothing at all
    assert c.sent == []
    ip.events.trigger("post_run_cell", None)    # run statistics after the cell
    assert c.kinds() == ["snapshot"]
    fn = next(f for f in c.sent[0]["snapshot"]["functions"] if f["name"] == "scale"
              and any(v["calls"] == 2 for v in f["variants"]))
    assert [v["statics"] for v in fn["variants"]] == [{"n": "2"}, {"n": "3"}]

    c.sent.clear()
    c.receive({"type": "request_snapshot"})
    assert c.kinds() == ["snapshot"]


def test_unsubscribe_and_close_stop_the_stream(kernel):
    ip, opened, manager = kernel
    before = len(tracker._subscribers)
    jcomm.start(ip)
    c = opened[0]
    c.receive({"type": "subscribe"})
    assert len(tracker._subscribers) == before + 1
    c.receive({"type": "unsubscribe"})
    assert len(tracker._subscribers) == before
    c.receive({"type": "subscribe"})
    c.frontend_closes()
    assert len(tracker._subscribers) == before
    c.sent.clear()
    _scale()(np.arange(2.0), 1)
    assert c.sent == []


def test_a_frontend_that_connects_later_opens_its_own_comm(kernel):
    ip, opened, manager = kernel
    jcomm.start(ip)
    late = FakeComm(jcomm.TARGET, comm_id="from-frontend")
    manager.targets[jcomm.TARGET](late, {"content": {"data": {"type": "subscribe"}}})
    assert late.kinds() == ["events", "snapshot"]
    _scale()(np.arange(2.0), 5)
    assert late.kinds()[-1] == "event"
    assert opened[0].sent == []     # the announcement comm never subscribed


def test_start_is_idempotent_and_stop_says_bye(kernel):
    ip, opened, manager = kernel
    b = jcomm.start(ip)
    assert jcomm.start(ip) is b and len(opened) == 1
    opened[0].receive({"type": "subscribe"})
    jcomm.stop(ip)
    jcomm.stop(ip)
    assert opened[0].closed == {"type": "bye"}
    assert jcomm.TARGET not in manager.targets
    assert ip.events.callbacks["post_run_cell"] == []
    jcomm.start(ip)                 # %reload_ext: a fresh hello
    assert len(opened) == 2 and opened[1].opened_with["type"] == "hello"


def test_unjsonable_statics_go_as_repr():
    class Opaque:
        def __repr__(self):
            return "Opaque()"
    assert jcomm._jsonable({"statics": {"o": Opaque()}}) == {"statics": {"o": "Opaque()"}}
