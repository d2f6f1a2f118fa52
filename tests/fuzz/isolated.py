"""Crash-isolated workers for the fuzz campaigns.

A worker is a child process that runs programs k = start, start+1, ... and prints one JSON
line {"start": k} before program k and one record {"done": k, ...} after it. A worker that dies
(a segfault in native code) leaves a "start" without its "done": that program counts as a crash
and a new worker resumes after it.
"""

from __future__ import annotations

import json
import subprocess


def run_range(command, start, stop, on_record, on_crash, cwd=None):
    """Run programs start..stop-1 in workers started by command(k); on_record(rec) sees each
    finished program's record, on_crash(k, exit_status, stderr) each program that killed its
    worker."""
    k = start
    while k < stop:
        proc = subprocess.Popen(
            command(k), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd
        )
        running = None
        for line in proc.stdout:
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
        if running is not None or rc != 0:
            bad = running if running is not None else k
            on_crash(bad, rc, err)
            k = bad + 1
