"""jm.dask: every jitted function's compiles on a Dask cluster's workers, in this process's
tracker.

    tracking = jm.dask.track(client)        # or: with jm.dask.track(client): ...
    futures = client.map(f, chunks)         # f: a jitted function (it pickles, by value)
    %jit_log                                # each worker's compiles, misses, disk-cache hits
    tracking.stop()                         # removes the worker plugin and the subscription

`track` installs a worker plugin (plugin.py) on every worker, present and future, which sends
each of the worker's records as it is made (Dask's event log, topic `jitmagic-<id>`) and its
variants' statistics when they change. Here each record is stored as this process's records
are, with a `worker` field, under the client's own function when it pickled it (same
`fid`): `%jit_log`, `jm.events()`, the panel and the dashboard show them, and misses on the
workers count in the function's storm detector here, so a storm counts across the cluster.
Remote variants are records of their statistics (records.RemoteVariant), folded per function
by `%jit_cache`. Dask is imported only by track().
"""

from __future__ import annotations

import collections
import threading
import uuid
import warnings

from jitmagic.core.config import config
from jitmagic.diagnostics.cluster import records
from jitmagic.dispatch import events, pickling
from jitmagic.errors import RecompilationStormWarning

_active: dict = {}  # topic -> Tracking
_lock = threading.Lock()
_variants: dict = {}  # worker -> [RemoteVariant], from its latest variants message


def track(client, *, interval_s: float = 1.0, **options):
    """Send every worker's jitmagic records to this process's tracker while the returned
    Tracking is active. options: jitmagic options to set on the workers (e.g.
    disk_cache=True, disk_cache_dir=..., disk_cache_shared_key=... for a cache they share,
    so that a variant compiled by one worker is loaded by the others)."""
    known = config.describe()
    for name in options:
        if name not in known:
            raise ValueError(
                f"track(): unknown jitmagic option {name!r}; options: {', '.join(known)}"
            )
    if not (isinstance(interval_s, (int, float)) and interval_s > 0):
        raise ValueError(
            f"track(): interval_s must be a positive number of seconds, got {interval_s!r}"
        )
    if not hasattr(client, "register_plugin") or not hasattr(client, "subscribe_topic"):
        raise TypeError(
            f"track() takes a distributed.Client, got {type(client).__name__}; start one "
            f"with `from distributed import Client; client = Client()`"
        )
    return Tracking(client, interval_s, options)


def untrack(client):
    """Stop every tracking of this client."""
    for t in [t for t in list(_active.values()) if t.client is client]:
        t.stop()


def trackings() -> list:
    return list(_active.values())


class Tracking:
    """One tracking of one client's workers (track() makes it)."""

    def __init__(self, client, interval_s, options):
        # deferred: Dask is an optional dependency, loaded only when a cluster is tracked
        from jitmagic.diagnostics.cluster.plugin import JitmagicWorkerPlugin

        self.client = client
        self.topic = f"jitmagic-{uuid.uuid4().hex[:12]}"
        self.plugin_name = self.topic
        self.options = dict(options)
        self.active = False
        self._workers_by_fid = collections.defaultdict(collections.deque)  # storms' workers
        self._storms: dict = {}  # functions this process does not have -> StormDetector
        client.subscribe_topic(self.topic, self._on_message)
        plugin = JitmagicWorkerPlugin(self.topic, pickling.versions(), self.options, interval_s)
        try:
            client.register_plugin(plugin, name=self.plugin_name)
        except BaseException:
            client.unsubscribe_topic(self.topic)
            try:
                client.unregister_worker_plugin(self.plugin_name)
            except Exception:
                pass  # not registered at all
            raise
        self.active = True
        with _lock:
            _active[self.topic] = self

    def stop(self):
        """Remove the worker plugin (its teardown sends the last statistics) and the
        subscription. Idempotent."""
        if not self.active:
            return
        self.active = False
        try:
            self.client.unregister_worker_plugin(self.plugin_name)
        finally:
            self.client.unsubscribe_topic(self.topic)
            with _lock:
                _active.pop(self.topic, None)

    def refresh(self):
        """Fetch every worker's variants now (they also come every interval_s when they
        changed). A worker that fails to answer keeps its last message."""
        from jitmagic.diagnostics.cluster.plugin import variants_now  # deferred: Dask

        if not self.active:
            return
        try:
            answers = self.client.run(variants_now, on_error="return")
        except Exception:  # a view must show what it has, not fail
            return
        for msg in answers.values():
            if isinstance(msg, dict):
                _store_variants(msg)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def __repr__(self):
        state = "active" if self.active else "stopped"
        return f"<jitmagic cluster tracking {self.topic} of {self.client!r}: {state}>"

    # ------------------------------------------------------------ records from workers
    def _on_message(self, event):
        _, msg = event  # (scheduler time, message)
        try:
            if msg.get("type") == "variants":
                _store_variants(msg)
            elif msg.get("type") == "event":
                self._record(msg)
        except Exception as e:  # a bad message must not break the client's event loop
            warnings.warn(
                f"jitmagic: a worker's record could not be read: {e!r}",
                RuntimeWarning,
                stacklevel=2,
            )

    def _record(self, msg):
        jf = _local_function(msg.get("fn"))
        reasons = records.reasons_of(msg)
        fields = dict(
            when=msg.get("time"),
            worker=msg.get("worker"),
            variant=msg.get("variant"),
            statics=records.statics_of(msg),
            signature=msg.get("signature") or "",
            reasons=reasons,
            timings_ms=msg.get("timings_ms") or {},
            message=msg.get("message") or "",
            run_us=msg.get("run_us") or {},
        )
        if jf is None:
            fields.update(
                function=msg.get("function", ""),
                qualname=msg.get("qualname", ""),
                where=msg.get("where", ""),
            )
        events.record(msg["kind"], jf, **fields)
        if msg["kind"] == "miss":
            self._count_miss(jf, msg, reasons)

    def _count_miss(self, jf, msg, reasons):
        """A worker's miss counts in the function's storm detector here (with this process's
        own misses and every other worker's): one storm record and warning for the cluster."""
        key = jf.fid if jf is not None else (msg.get("qualname"), msg.get("where"))
        storm = jf.storm if jf is not None else self._storms.setdefault(key, events.StormDetector())
        when = msg.get("time")
        seen = self._workers_by_fid[key]
        seen.append((when, msg.get("worker")))
        while seen and when - seen[0][0] > config.storm_window:
            seen.popleft()
        culprit = storm.add(when, reasons)
        if culprit is None:
            return
        workers = sorted({w for _, w in seen if w is not None}, key=str)
        named = jf if jf is not None else _Named(msg)
        text = events.storm_message(named, len(storm.misses), *culprit)
        text += (
            f" (the misses came from {len(workers)} worker{'s' * (len(workers) != 1)}: "
            f"{', '.join(map(str, workers))})"
        )
        events.record(
            "storm",
            jf,
            variant=msg.get("variant"),
            reasons=reasons,
            message=text,
            **({} if jf is not None else _Named(msg).fields()),
        )
        warnings.warn(text, RecompilationStormWarning, stacklevel=2)


class _Named:
    """A worker's function that this process does not have, named as its records name it."""

    def __init__(self, msg):
        self.name = msg.get("function", "")
        self.qualname = msg.get("qualname", "")
        self.where = msg.get("where", "")
        self.shapes = None
        self.generic_failures = {}

    def fields(self):
        return {"function": self.name, "qualname": self.qualname, "where": self.where}


def _local_function(fn):
    """This process's function that a worker's record is about: the one it pickled (by its
    token), else the one of the same module and qualname; None if none."""
    if not fn:
        return None
    if fn.get("token"):
        jf = pickling.by_token(fn["token"])
        if jf is not None and "fun" in vars(jf):
            return jf
    for jf in events.all_functions():
        if getattr(jf, "backend", "jitmagic") != "jitmagic":
            continue
        if jf.qualname == fn.get("qualname") and getattr(jf, "__module__", None) == fn.get(
            "module"
        ):
            return jf
    return None


def _store_variants(msg):
    rows = []
    for fn in msg.get("functions") or ():
        jf = _local_function(fn)
        for v in fn.get("variants") or ():
            rows.append(
                records.RemoteVariant(
                    worker=msg["worker"],
                    fid=jf.fid if jf is not None else None,
                    function=fn.get("name", ""),
                    qualname=fn.get("qualname", ""),
                    variant=v["variant"],
                    statics=v.get("statics") or {},
                    signature=v.get("signature", ""),
                    compile_ms=v.get("compile_ms") or 0.0,
                    calls=v.get("calls") or 0,
                    run_ms_total=v.get("run_ms_total") or 0.0,
                    kernel_ms_median=v.get("kernel_ms_median"),
                    tier=v.get("tier"),
                    reason=v.get("reason") or "",
                    loaded_from=v.get("loaded_from"),
                )
            )
    with _lock:
        _variants[msg["worker"]] = rows


def remote_variants(function=None) -> list:
    """Every worker's variants (RemoteVariant records, as their latest messages said); of one
    function (a JitFunction, or a name) when given."""
    with _lock:
        rows = [r for rs in _variants.values() for r in rs]
    if isinstance(function, str):
        rows = [r for r in rows if function in (r.function, r.qualname)]
    elif function is not None:
        rows = [r for r in rows if r.fid == function.fid]
    return sorted(rows, key=lambda r: (r.qualname, str(r.worker), r.variant))


def folded(function=None) -> list:
    """remote_variants folded per function and key (records.fold)."""
    return records.fold(remote_variants(function))


def cache_frame(function=None, per_worker=False):
    """The workers' variants as a DataFrame: folded per function and key (a `workers`
    summary), or one row per worker and variant."""
    import pandas as pd  # deferred, as in every view: pandas is loaded by the views only

    if per_worker:
        rows = [
            {
                "function": r.function,
                "worker": r.worker,
                "variant": r.variant,
                "statics": ", ".join(f"{k}={v}" for k, v in r.statics.items()),
                "signature": r.signature,
                "compile_ms": r.compile_ms,
                "calls": r.calls,
                "run_ms_total": r.run_ms_total,
                "kernel_us_median": None
                if r.kernel_ms_median is None
                else r.kernel_ms_median * 1e3,
                "tier": r.tier,
                "loaded_from": r.loaded_from,
                "reason": r.reason,
            }
            for r in remote_variants(function)
        ]
    else:
        rows = [
            {
                "function": g["function"],
                "workers": g["summary"],
                "statics": ", ".join(f"{k}={v}" for k, v in g["statics"].items()),
                "signature": g["signature"],
                "compile_ms": g["compile_ms"],
                "calls": g["calls"],
                "run_ms_total": g["run_ms_total"],
                "reason": g["reason"],
            }
            for g in folded(function)
        ]
    return pd.DataFrame(rows)


def refresh():
    """Ask every tracked cluster's workers for their variants now (a view about to show them
    should not be a second late)."""
    for t in trackings():
        t.refresh()


def clear():
    """Forget the workers' variants received so far."""
    with _lock:
        _variants.clear()
