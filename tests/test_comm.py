"""jitmagic.comm, the kernel end of the JupyterLab panel, against fake comms and the real tracker."""

from __future__ import annotations

import json

import comm as comm_pkg
import numpy as np
import pytest

import jitmagic as jm
from jitmagic.diagnostics import tracker
from jitmagic.notebook import comm as jcomm


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
        json.dumps(data)  # what goes over the wire must be JSON
        # an earlier test's function (its background tier-up, a tier-down, a thread or
        # process it left running) records events at any moment: left out, as are tier events
        if data.get("type") == "event" and _foreign(data["event"]):
            return
        if data.get("type") == "events" and "counts" in data:  # a batch, not the backlog
            data = {**data, "events": [e for e in data["events"] if not _foreign(e)]}
            if not data["events"]:
                return
        self.sent.append(data)

    def events(self):
        """Every event sent, one by one or in batches."""
        return [
            e
            for m in self.sent
            for e in ([m["event"]] if m["type"] == "event" else m.get("events", []))
        ]

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


OWN = ("scale", "<lambda>", "burst", "order")  # the functions these tests make or record


def _foreign(e):
    return e["kind"] in ("tier_up", "tier_down") or (
        e.get("function") is not None and e["function"].rpartition(".")[2] not in OWN
    )


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
        self.callbacks[name].remove(cb)  # ValueError when absent, as IPython's

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
    subscribers = len(tracker.subscribers())
    yield ip, opened, manager
    jcomm.stop(ip)
    assert len(tracker.subscribers()) == subscribers, "comm left a tracker subscription behind"


def _scale():
    @jm.jit(static_argnames=("n",))
    def scale(x, n):
        return x * n + 1.0

    return scale


def test_silent_until_a_frontend_subscribes(kernel):
    ip, opened, manager = kernel
    before = len(tracker.subscribers())
    jcomm.start(ip)
    assert [c.opened_with["type"] for c in opened] == ["hello"]
    assert jcomm.TARGET in manager.targets
    assert len(tracker.subscribers()) == before  # no frontend, no subscription

    scale, x = _scale(), np.arange(3.0)
    scale(x, 2)
    ip.events.trigger("post_run_cell", None)
    assert opened[0].sent == []


def test_streams_events_and_snapshots_to_a_subscriber(kernel):
    ip, opened, _ = kernel
    from jitmagic.dispatch import tiering

    # (no background tier-up may send an event between the test's steps: the protocol's
    # order is what is checked; a loaded machine ran one between subscribe and its snapshot)
    jm.config.update(tiered=False)
    tiering.settle()
    scale, x = _scale(), np.arange(3.0)
    scale(x, 2)  # before anyone listens: arrives in the backlog
    jcomm.start(ip)
    c = opened[0]
    c.receive({"type": "subscribe"})
    assert c.kinds() == ["hello", "events", "snapshot"]
    c.sent.pop(0)
    assert c.sent[0]["events"][-1]["kind"] == "compile"
    assert c.sent[0]["events"][-1]["statics"] == {"n": 2}

    c.sent.clear()
    scale(x, 3)  # recompile: one live event with its reason
    assert c.kinds() == ["event"]
    ev = c.sent[0]["event"]
    assert ev["kind"] == "miss" and ev["variant"] == 2
    assert ev["reasons"][0]["kind"] == "static_value" and ev["reasons"][0]["arg"] == "n"

    c.sent.clear()
    scale(x, 3)  # cache hit: nothing at all
    assert c.sent == []
    ip.events.trigger("post_run_cell", None)  # run statistics after the cell
    assert c.kinds() == ["snapshot"]
    fn = next(
        f
        for f in c.sent[0]["snapshot"]["functions"]
        if f["name"] == "scale" and any(v["calls"] == 2 for v in f["variants"])
    )
    assert [v["statics"] for v in fn["variants"]] == [{"n": "2"}, {"n": "3"}]

    c.sent.clear()
    c.receive({"type": "request_snapshot"})
    assert c.kinds() == ["snapshot"]


def test_unsubscribe_and_close_stop_the_stream(kernel):
    ip, opened, manager = kernel
    before = len(tracker.subscribers())
    jcomm.start(ip)
    c = opened[0]
    c.receive({"type": "subscribe"})
    assert len(tracker.subscribers()) == before + 1
    c.receive({"type": "unsubscribe"})
    assert len(tracker.subscribers()) == before
    c.receive({"type": "subscribe"})
    c.frontend_closes()
    assert len(tracker.subscribers()) == before
    c.sent.clear()
    _scale()(np.arange(2.0), 1)
    assert c.sent == []


def test_a_frontend_that_connects_later_opens_its_own_comm(kernel):
    ip, opened, manager = kernel
    jcomm.start(ip)
    late = FakeComm(jcomm.TARGET, comm_id="from-frontend")
    manager.targets[jcomm.TARGET](late, {"content": {"data": {"type": "subscribe"}}})
    assert late.kinds() == ["hello", "events", "snapshot"]
    _scale()(np.arange(2.0), 5)
    assert late.kinds()[-1] == "event"
    assert opened[0].sent == []  # the announcement comm never subscribed


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
    jcomm.start(ip)  # %reload_ext: a fresh hello
    assert len(opened) == 2 and opened[1].opened_with["type"] == "hello"


def test_unjsonable_statics_go_as_repr():
    class Opaque:
        def __repr__(self):
            return "Opaque()"

    assert jcomm._jsonable({"statics": {"o": Opaque()}}) == {"statics": {"o": "Opaque()"}}


def _subscribed(kernel):
    ip, opened, _ = kernel
    jcomm.start(ip)
    c = opened[0]
    c.receive({"type": "subscribe"})
    c.sent.clear()
    return c


def _fid(f):
    return f.fid


def test_the_panel_fetches_a_variants_code_and_a_diff(kernel):
    c = _subscribed(kernel)
    scale, x = jm.jit(lambda x, n: x * n - 7.0, static_argnames=("n",)), np.arange(3.0)
    scale(x, 2)
    scale(x, 3)
    v1, v2 = (v.id for v in scale.variants)
    c.receive({"type": "request_code", "req": 1, "fid": _fid(scale), "variant": v2, "view": "ir"})
    assert c.sent[-1] == {"type": "code", "req": 1, "text": scale.inspect_ir(v2)}
    c.receive({"type": "request_code", "req": 2, "fid": _fid(scale), "variant": v2, "view": "llvm"})
    assert c.sent[-1]["text"] == scale.inspect_llvm(v2) and "define" in c.sent[-1]["text"]
    c.receive(
        {
            "type": "request_code",
            "req": 3,
            "fid": _fid(scale),
            "variant": v2,
            "view": "ir",
            "diff_from": v1,
        }
    )
    diff = c.sent[-1]["text"]
    assert diff.startswith(f"--- variant {v1}\n+++ variant {v2}")
    assert "-" in diff and "3.0" in diff  # the static value differs between the two IRs
    c.receive({"type": "request_code", "req": 4, "fid": _fid(scale), "variant": v1, "view": "asm"})
    assert c.sent[-1]["req"] == 4 and c.sent[-1]["text"].strip()


def test_bad_code_requests_answer_with_an_error_not_a_traceback(kernel):
    c = _subscribed(kernel)
    scale = _scale()
    scale(np.arange(3.0), 2)
    for bad in (
        {"fid": -5, "variant": 1, "view": "ir"},
        {"fid": _fid(scale), "variant": 99, "view": "ir"},
        {"fid": _fid(scale), "variant": scale.variants[0].id, "view": "nope"},
        {"fid": _fid(scale)},
    ):
        c.receive({"type": "request_code", "req": 7, **bad})
        assert c.sent[-1]["type"] == "code" and c.sent[-1]["req"] == 7
        assert c.sent[-1]["error"], bad


def test_clear_cache_from_the_panel(kernel):
    c = _subscribed(kernel)
    scale, other = _scale(), jm.jit(lambda x: x - 1)
    scale(np.arange(3.0), 2)
    other(np.arange(3.0))
    c.receive({"type": "clear_cache", "fid": _fid(scale)})
    assert scale.variants == [] and len(other.variants) == 1
    assert c.kinds()[-1] == "snapshot"  # after the batch of evictions it follows
    assert any(e["kind"] == "evict" for e in c.events())
    c.receive({"type": "clear_cache", "fid": None})
    assert other.variants == []


def test_hello_names_the_kernel(monkeypatch):
    import sys
    import types

    class App:
        connection_file = "/run/jupyter/kernel-1234-abcd.json"

        @classmethod
        def initialized(cls):
            return True

        @classmethod
        def instance(cls):
            return cls()

    monkeypatch.setitem(sys.modules, "ipykernel.kernelapp", types.SimpleNamespace(IPKernelApp=App))
    assert jcomm.kernel_id() == "1234-abcd"
    assert jcomm._hello()["kernel_id"] == "1234-abcd"


def test_a_burst_goes_out_in_batches_at_a_bounded_rate_with_the_totals(kernel, monkeypatch):
    import time

    monkeypatch.setattr(jcomm, "MAX_BATCH", 50)
    c = _subscribed(kernel)
    n, t0 = 400, time.monotonic()
    for i in range(n):
        tracker.record(
            "miss", None, function="burst", qualname="burst", where="cell In[1]:1", variant=i
        )
        if i % 100 == 0:
            time.sleep(jcomm.FLUSH_S * 1.5)  # a burst that lasts a few flush periods
    elapsed = time.monotonic() - t0
    time.sleep(jcomm.FLUSH_S * 3)  # the last batch, from the timer thread
    messages = [m for m in c.sent if m["type"] in ("event", "events")]
    # one message at once, then at most one per FLUSH_S (and the timer's last one)
    assert len(messages) <= 2 + elapsed / jcomm.FLUSH_S, (len(messages), elapsed)
    batches = [m for m in messages if m["type"] == "events"]
    assert batches and all(len(b["events"]) <= 50 for b in batches)
    mine = [e for e in c.events() if e["function"] == "burst"]
    dropped = sum(b["dropped"] for b in batches)
    assert len(mine) + dropped == n and dropped > 0
    assert mine[-1]["variant"] == n - 1  # the newest always arrive
    assert [e["seq"] for e in mine] == sorted(e["seq"] for e in mine)
    assert batches[-1]["counts"] == tracker.counts()


def test_a_batch_goes_out_before_the_snapshot_that_follows_it(kernel):
    ip, _, _ = kernel
    c = _subscribed(kernel)
    for i in range(5):
        tracker.record("miss", None, function="order", qualname="order", where="", variant=i)
    ip.events.trigger("post_run_cell", None)
    kinds = [m["type"] for m in c.sent]
    assert kinds[-1] == "snapshot" and "events" in kinds
    assert [e["variant"] for e in c.events() if e["function"] == "order"] == list(range(5))
