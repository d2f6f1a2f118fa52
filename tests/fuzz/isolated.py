"""Crash-isolated workers for the fuzz campaigns.

A worker is a child process that runs programs k = start, start+1, ... and prints one JSON
line {"start": k} before program k and one record {"done": k, ...} after it. A worker that dies
(a segfault in native code) leaves a "start" without its "done": that program counts as a crash
and a new worker resumes after it.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time


def run_range(command, start, stop, on_record, on_crash, cwd=None, timeout=None):
    """Run programs start..stop-1 in workers started by command(k); on_record(rec) sees each
    finished program's record, on_crash(k, exit_status, stderr) each program that killed its
    worker. With a timeout (seconds), a worker silent that long is killed: its program is
    reported with the exit status "timeout" (a program that never ends)."""
    k = start
    while k < stop:
        proc = subprocess.Popen(
            command(k), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd
        )
        watch = _Watchdog(proc, timeout) if timeout else None
        running = None
        for line in proc.stdout:
            if watch is not None:
                watch.last = time.monotonic()
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if "start" in rec:
                running = rec["start"]
                continue
            running, k = None, rec["done"] + 1
            on_record(rec)
        err = proc.stderr.read()
        rc = proc.wait()
        if watch is not None:
            watch.done.set()
            rc = "timeout" if watch.fired else rc
        if running is not None or rc != 0:
            bad = running if running is not None else k
            on_crash(bad, rc, err)
            k = bad + 1


class _Watchdog:
    """Kills proc when `last` (the time of its last line) is more than timeout seconds ago."""

    def __init__(self, proc, timeout):
        self.proc, self.timeout = proc, timeout
        self.last = time.monotonic()
        self.fired = False
        self.done = threading.Event()
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self):
        while not self.done.wait(1.0):
            if time.monotonic() - self.last > self.timeout:
                self.fired = True
                self.proc.kill()
                return
