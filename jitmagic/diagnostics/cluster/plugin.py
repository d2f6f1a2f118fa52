"""The worker end of cluster tracking: a Dask worker plugin (jm.dask.track installs it).

On setup it checks that the worker runs the client's jitmagic, Python and LLVM (else it
raises an error naming the worker, which track() reports), applies the jitmagic options the
client asked for (a shared disk cache, ...), names this process's records after the worker,
and subscribes to them: each one is sent to the client under the tracking's topic as it is
made (Worker.log_event: batched, non-blocking, from any thread). The variants' run statistics
go every `interval_s` when they changed, from the worker's event loop: nothing runs on a
cache-hit call. Teardown sends them one last time and unsubscribes.

This module imports distributed (the plugin's base class): only jm.dask.track loads it.
"""

from __future__ import annotations

import distributed
from distributed.diagnostics.plugin import WorkerPlugin
from tornado.ioloop import PeriodicCallback

from jitmagic.core.config import config
from jitmagic.diagnostics.cluster import records
from jitmagic.dispatch import events, pickling

_installed: list = []  # the plugins set up in this process (several in a threaded cluster)


def worker_label(worker) -> str:
    """A worker's records are labelled with its address: unique in the cluster, and what the
    scheduler itself puts in a worker's event-log messages (their `worker` key)."""
    return str(worker.address)


def variants_now() -> dict:
    """This worker's variants message (Tracking.refresh runs it on every worker)."""
    return records.variants_message(events.process_label())


class JitmagicWorkerPlugin(WorkerPlugin):
    def __init__(self, topic, versions, options, interval_s, skip_kinds=("storm",)):
        self.topic = topic
        self.versions = versions
        self.options = options
        self.interval_s = interval_s
        self.skip_kinds = tuple(skip_kinds)

    def setup(self, worker):
        self.worker = worker
        self.label = worker_label(worker)
        mine = pickling.versions()
        differ = [k for k in ("jitmagic", "python", "llvm") if self.versions.get(k) != mine[k]]
        if differ:
            text = ", ".join(
                f"{k} {self.versions.get(k)} on the client, {mine[k]} here" for k in differ
            )
            raise pickling.VersionMismatchError(
                f"jitmagic on Dask worker {worker.address} ({self.label}) differs from the "
                f"client's: {text}. Install the same jitmagic, Python and llvmlite on every "
                f"worker"
            )
        self._previous = {k: getattr(config, k) for k in self.options}
        if self.options:
            config.update(**self.options)
        events.set_process_label(self.label)
        # the storm warning is the client's (a storm counts across workers): not printed in
        # the worker's log as well, while tracked
        events.set_storm_warnings(False)
        self._last = None
        self._unsubscribe = events.subscribe(self._on_record)
        _installed.append(self)
        self._periodic = PeriodicCallback(self.send_variants, self.interval_s * 1e3)
        self._periodic.start()
        self.send_variants()

    def teardown(self, worker):
        self._periodic.stop()
        self._unsubscribe()
        if self in _installed:
            _installed.remove(self)
        self.send_variants(force=True)
        events.set_process_label(None)
        events.set_storm_warnings(True)
        config.update(**self._previous)  # the worker's own options again

    def _on_record(self, ev):
        if ev.kind in self.skip_kinds or ev.worker is not None:
            return
        # in a threaded cluster every worker's plugin sees the process's records: the one
        # of the worker running the task sends it (a background thread's: the first one)
        try:
            current = distributed.get_worker()
        except ValueError:
            current = None
        if current is not None and current is not self.worker:
            return
        if current is None and _installed and _installed[0] is not self:
            return
        jf = next((f for f in events.all_functions() if f.fid == ev.fid), None)
        self.worker.log_event(self.topic, records.event_message(ev, jf, self.label))

    def send_variants(self, force=False):
        if not force and _installed and _installed[0] is not self:
            return  # a threaded cluster: one process, one set of variants, sent once
        message = records.variants_message(self.label)
        fp = records.fingerprint(message)
        if force or fp != self._last:
            self._last = fp
            self.worker.log_event(self.topic, message)
