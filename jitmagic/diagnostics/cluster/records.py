"""What a worker sends about its jitted functions, and how the client reads it back.

Two kinds of message, plain dicts that msgpack carries (Dask's event log):

- `{"type": "event", ...}`: one of the worker's records (Event.to_dict(), its statics as
  text), with the function's identity: its pickle token (the client's own function, when
  the client pickled it), module and qualname;
- `{"type": "variants", "functions": [...]}`: the worker's live variants and their run
  statistics, sent when they changed (not per call): the remote variants `%jit_cache`, the
  panel and the dashboard show are these records, never live objects.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from jitmagic.dispatch import events

# ---------------------------------------------------------------- the worker's side


def identity(jf) -> dict:
    return {
        "token": getattr(jf, "pickle_token", None),
        "module": getattr(jf, "__module__", None),
        "qualname": jf.qualname,
        "name": jf.name,
        "where": jf.where,
    }


def event_message(ev: events.Event, jf, worker: str) -> dict:
    d = ev.to_dict()
    d["statics"] = {k: events.fmt_value(v) for k, v in ev.statics.items()}
    d.update(type="event", worker=worker, fn=identity(jf) if jf is not None else None)
    return d


def variants_message(worker: str) -> dict:
    functions = []
    for jf in events.all_functions():
        if getattr(jf, "backend", "jitmagic") != "jitmagic":
            continue
        vs = []
        for v in jf.variants:
            med = v.median_ns()
            vs.append(
                {
                    "variant": v.id,
                    "statics": {k: events.fmt_value(x) for k, x in v.statics.items()},
                    "signature": v.signature,
                    "compile_ms": v.compile_ms,
                    "calls": v.calls,
                    "run_ms_total": v.total_ns / 1e6,
                    "kernel_ms_median": med / 1e6 if med is not None else None,
                    "tier": v.tier,
                    "reason": v.reason,
                    "loaded_from": v.loaded_from,
                }
            )
        if vs:
            functions.append({**identity(jf), "variants": vs})
    return {"type": "variants", "worker": worker, "functions": functions}


def fingerprint(message: dict) -> tuple:
    """What changed between two variants messages (a message is sent only then)."""
    return tuple(
        (f["token"], f["qualname"], v["variant"], v["calls"], v["tier"])
        for f in message["functions"]
        for v in f["variants"]
    )


# ---------------------------------------------------------------- the client's side


@dataclass
class RemoteVariant:
    """A variant compiled (or loaded) by a worker, as its last variants message said."""

    worker: str
    fid: int | None  # the client's function, when it has one
    function: str
    qualname: str
    variant: int
    statics: dict
    signature: str
    compile_ms: float
    calls: int
    run_ms_total: float
    kernel_ms_median: float | None
    tier: int | None
    reason: str
    loaded_from: str | None = None
    extra: dict = field(default_factory=dict)

    @property
    def origin(self) -> str:
        return "compiled" if self.loaded_from is None else "disk cache"


class Shown(str):
    """A worker's static value as its record shows it (the worker's repr): printed as is,
    in the log and the notices, as the value itself would be here."""

    def __repr__(self):
        return str(self)


def statics_of(message: dict) -> dict:
    return {k: Shown(v) for k, v in (message.get("statics") or {}).items()}


def reasons_of(message: dict) -> list:
    return [events.Reason(**r) for r in message.get("reasons") or ()]


def fold(rows: list) -> list:
    """Remote variants folded per function and key (statics and signature): one dict each,
    with how many workers have it and how many of them loaded it from the disk cache."""
    groups = {}
    for r in rows:
        k = (r.fid, r.qualname, tuple(sorted(r.statics.items())), r.signature)
        groups.setdefault(k, []).append(r)
    out = []
    for (fid, qualname, _, signature), rs in groups.items():
        workers = sorted({r.worker for r in rs})
        loaded = sorted({r.worker for r in rs if r.loaded_from is not None})
        compiled = [r for r in rs if r.loaded_from is None]
        text = f"compiled on {len(workers)} worker{'s' * (len(workers) != 1)}"
        if loaded:
            text = (
                f"on {len(workers)} worker{'s' * (len(workers) != 1)}: "
                f"{len(workers) - len(loaded)} compiled it, {len(loaded)} loaded it from the "
                f"disk cache"
            )
        out.append(
            {
                "fid": fid,
                "function": rs[0].function,
                "qualname": qualname,
                "statics": rs[0].statics,
                "signature": signature,
                "workers": workers,
                "loaded": loaded,
                "summary": text,
                "compile_ms": max((r.compile_ms for r in compiled), default=None),
                "calls": sum(r.calls for r in rs),
                "run_ms_total": sum(r.run_ms_total for r in rs),
                "reason": (compiled or rs)[0].reason,
            }
        )
    return out
