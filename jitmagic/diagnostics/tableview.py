"""What %jit_log and %jit_cache display: DataFrames that show every record whole.

pandas' own display cuts a cell at 50 characters and a wide frame to the columns that fit
(`power_sum: compiled variant 2 in 6.5 ms (stati...`, `[6 rows x 11 columns]`), which is
where the reasons live. These are DataFrames (code that filters or exports them is unchanged;
anything derived from them is a plain DataFrame again) whose text form gives each record its
own lines, wrapped at the terminal's width, and whose HTML wraps reasons and messages instead
of cutting them. Long float literals in reasons and static values print at 6 significant digits.
"""

from __future__ import annotations

import html
import math
import re
import shutil
import textwrap
import time

import pandas as pd

MAX_ROWS = 200  # records shown (the newest); the DataFrame holds every one
_LONG_FLOAT = re.compile(r"(?<![\w.])-?\d+\.\d{7,}(?:e[-+]?\d+)?(?![\w.])")


def readable(text) -> str:
    """`0.00937137205002142` -> `0.00937137` inside any text; other text unchanged."""
    return _LONG_FLOAT.sub(lambda m: f"{float(m.group()):.6g}", str(text))


def _missing(v) -> bool:
    if v is None or v is pd.NA or v is pd.NaT:
        return True
    if isinstance(v, float) and math.isnan(v):
        return True
    return isinstance(v, str) and not v.strip()


def _number(v) -> str:
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and abs(v) < 1e15):
        return f"{int(v):,}"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def cell(column, v) -> str:
    """One value as the table shows it."""
    if _missing(v):
        return ""
    if isinstance(v, pd.Timestamp):  # the log's times are UTC: show the local clock
        return time.strftime("%H:%M:%S", time.localtime(v.timestamp()))
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return _number(v)
    return readable(v)


def _fact(form, text, value):
    return form(text, value) if callable(form) else form.format(text)


def _calls(text, value):
    return f"{text} call" if value == 1 else f"{text} calls"


def _break_even(text, value):
    return f"break-even {text}" + (
        ""
        if not any(ch.isdigit() for ch in text)
        else " call"
        if text.lstrip("≤≥ ") == "1"
        else " calls"
    )


class RecordTable(pd.DataFrame):
    """A DataFrame displayed record by record. Subclasses name the columns' roles."""

    NOUN = "record"
    HEAD: tuple = ()  # columns of a record's first line
    SUB: tuple = ()  # its second line, joined with " · "
    FACTS: dict = {}  # column -> format of its text on the facts line, or a function
    TEXTS: tuple = ()  # long text, each on its own wrapped lines
    HIDDEN: tuple = ()  # in the HTML and the DataFrame, not in the text form

    @property
    def _constructor(self):
        return pd.DataFrame  # a filtered or derived frame is a plain DataFrame

    # ------------------------------------------------------------------ text
    def to_text(self, width=None) -> str:
        width = width or shutil.get_terminal_size((100, 24)).columns
        width = max(40, width)
        if self.empty:
            return f"no {self.NOUN}s"
        rows = self._shown()
        out = []
        if len(self) > len(rows):
            out.append(
                f"the newest {len(rows)} of {len(self)} {self.NOUN}s (the DataFrame has every one)"
            )
        for _, r in rows.iterrows():
            out.extend(self._record(r, width))
        return "\n".join(out)

    def _record(self, r, width):
        indent = "    "
        head = " ".join(
            p
            for p in (self._head_part(c, r[c]) for c in self.HEAD if c in r and not _missing(r[c]))
            if p
        )
        lines = textwrap.wrap(head, width, subsequent_indent=indent) or [""]
        sub = " · ".join(cell(c, r[c]) for c in self.SUB if c in r and not _missing(r[c]))
        facts = [
            _fact(self.FACTS[c], cell(c, r[c]), r[c])
            for c in self.FACTS
            if c in r and not _missing(r[c])
        ]
        placed = (
            set(self.HEAD) | set(self.SUB) | set(self.FACTS) | set(self.TEXTS) | set(self.HIDDEN)
        )
        facts += [f"{c} {cell(c, r[c])}" for c in r.index if c not in placed and not _missing(r[c])]
        for text in (sub, " · ".join(facts)):
            if text:
                lines += textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent)
        for c in self._texts(r):
            lines += textwrap.wrap(
                readable(r[c]),
                width,
                initial_indent=indent,
                subsequent_indent=indent + "  ",
                break_long_words=True,
                break_on_hyphens=False,
            )
        return lines

    def _head_part(self, column, v):
        return cell(column, v)

    def _texts(self, r):
        return [c for c in self.TEXTS if c in r and not _missing(r[c])]

    def _shown(self):
        return self.iloc[-MAX_ROWS:] if len(self) > MAX_ROWS else self

    def __repr__(self):
        return self.to_text()

    def _repr_pretty_(self, p, cycle):
        p.text(self.to_text())

    # ------------------------------------------------------------------ HTML
    def _repr_html_(self):
        if self.empty:
            return f"<p><i>no {self.NOUN}s</i></p>"
        rows = self._shown()
        wrap = set(self.TEXTS) | {"statics", "signature"}
        head = "".join(
            f"<th style='text-align:left'>{html.escape(str(c))}</th>" for c in self.columns
        )
        body = []
        for _, r in rows.iterrows():
            tds = []
            for c in self.columns:
                text = html.escape(cell(c, r[c]))
                if c in wrap:
                    style = "text-align:left;white-space:normal;overflow-wrap:anywhere;" + (
                        "min-width:16em;" if c in self.TEXTS else ""
                    )
                else:
                    style = "text-align:left;white-space:nowrap;"
                tds.append(f"<td style='{style}'>{text}</td>")
            body.append(f"<tr>{''.join(tds)}</tr>")
        note = ""
        if len(self) > len(rows):
            note = (
                f"<p><i>the newest {len(rows)} of {len(self)} {self.NOUN}s; the "
                f"DataFrame has every one</i></p>"
            )
        return (
            f"{note}<table class='dataframe jitmagic-table'><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table>"
        )


class LogTable(RecordTable):
    """%jit_log: one event per record, newest last."""

    NOUN = "event"
    HEAD = ("seq", "time", "kind", "function", "backend", "worker", "variant", "compile_ms")
    SUB = ("statics", "signature")
    TEXTS = ("reason", "message")
    HIDDEN = ("qualname",)

    def _head_part(self, column, v):
        if column == "seq":
            return f"#{cell(column, v)}"
        if column == "variant":
            return f"variant {cell(column, v)}"
        if column == "compile_ms":
            return f"{cell(column, v)} ms"
        if column == "backend":
            return "" if v == "jitmagic" else f"[{v}]"
        if column == "worker":
            return f"on {cell(column, v)}"
        return cell(column, v)

    def _texts(self, r):
        texts = super()._texts(r)
        # a compile's message repeats its reason: the reason is enough
        if (
            "reason" in texts
            and "message" in texts
            and str(r["reason"]).split("; ")[0] in str(r["message"])
        ):
            texts.remove("message")
        return texts


class CacheTable(RecordTable):
    """%jit_cache: one compiled variant per record."""

    NOUN = "compiled variant"
    HEAD = ("function", "backend", "variant")
    SUB = ("statics", "signature")
    FACTS = {
        "compile_ms": "compile {} ms",
        "calls": _calls,
        "kernel_us_median": "kernel {} µs",
        "call_us": "call {} µs",
        "eager": "NumPy {}",
        "speedup": "speedup {}",
        "break_even": _break_even,
    }
    TEXTS = ("reason",)

    def _head_part(self, column, v):
        if column == "variant":
            return f"variant {cell(column, v)}"
        if column == "backend":
            return "" if v == "jitmagic" else f"[{v}]"
        return cell(column, v)


class WorkerCacheTable(RecordTable):
    """%jit_cache, the cluster's part: the workers' variants, folded per function and key
    ("on 4 workers: 1 compiled it, 3 loaded it from the disk cache"), or one per worker."""

    NOUN = "variant on the workers"
    HEAD = ("function", "worker", "variant", "workers")
    SUB = ("statics", "signature")
    FACTS = {
        "compile_ms": "compile {} ms",
        "calls": _calls,
        "run_ms_total": "run {} ms",
        "kernel_us_median": "kernel {} µs",
        "loaded_from": "loaded from the disk cache (compiled by {})",
    }
    TEXTS = ("reason",)

    def _head_part(self, column, v):
        if column == "variant":
            return f"variant {cell(column, v)}"
        if column == "worker":
            return f"on {cell(column, v)}"
        if column == "workers":
            return f"— {cell(column, v)}"
        return cell(column, v)


class CacheTables:
    """%jit_cache with a tracked cluster: this kernel's variants, then the workers'."""

    def __init__(self, local: CacheTable, workers: WorkerCacheTable):
        self.local, self.workers = local, workers

    def __repr__(self):
        return (
            f"in this kernel:\n{self.local.to_text()}\n\n"
            f"on the cluster's workers:\n{self.workers.to_text()}"
        )

    def _repr_pretty_(self, p, cycle):
        p.text(repr(self))

    def _repr_html_(self):
        return (
            f"<p><b>in this kernel</b></p>{self.local._repr_html_()}"
            f"<p><b>on the cluster's workers</b></p>{self.workers._repr_html_()}"
        )
