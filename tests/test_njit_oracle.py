"""The njit oracle corpus (tests/njit_corpus.py) against the compilers there are.

- jitmagic.njit: every entry and input set must match plain Python exactly as tests/oracle.py
  states (results and every argument afterwards; random entries included: same numbers as
  NumPy). What it does not do yet is listed in KNOWN_GAPS, each entry expected to fail.
- Numba, the second voice: each entry's observed outcome (agrees, rejects, differs) must be
  the one its `numba=` annotation documents, so a change in Numba or in the corpus shows up
  here and in tests/njit_corpus_numba.md. Random entries hold Numba to shape, dtype and range
  only (`loose`): Numba's generators are its own code.

    python tests/test_njit_oracle.py --write-numba-md    # rerun Numba, rewrite the table
"""

from __future__ import annotations

import os
import re
import sys
import traceback
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import njit_corpus as C
from oracle import Outcome, arg_names, compare_outcomes, rebind, run_on_copies

MD = Path(__file__).resolve().parent / "njit_corpus_numba.md"
ENTRIES = list(C.CORPUS.values())


def _inputs(e):
    return e.inputs or (lambda: (),)


def _cases():
    return [
        pytest.param(e.name, k, id=f"{e.name}-{k}") for e in ENTRIES for k in range(len(_inputs(e)))
    ]


# --------------------------------------------------------------------------- jitmagic.njit
def _jitmagic_njit():
    import jitmagic

    return getattr(jitmagic, "njit", None)


# What jitmagic.njit does not do yet, each with the reason: expected to fail, strictly (an
# entry that starts passing fails here until it is taken off this list).
KNOWN_GAPS = {
    "fortran_like_and_copy": "the .flags attribute of arrays inside njit code",
}


def _njit_cases():
    return [
        pytest.param(
            e.name,
            k,
            id=f"{e.name}-{k}",
            marks=[pytest.mark.xfail(reason=KNOWN_GAPS[e.name], strict=True)]
            if e.name in KNOWN_GAPS
            else [],
        )
        for e in ENTRIES
        for k in range(len(_inputs(e)))
    ]


def compile_with(njit, e: C.Entry, **options):
    """njit of a copy of the entry's function whose `decorated` helpers are njit-compiled too."""
    f = rebind(e.fn, compile_helper=njit, helpers=e.decorated)
    return njit(f, **options) if options else njit(f)


@pytest.mark.parametrize("name,k", _njit_cases())
def test_jitmagic_njit_matches_python(name, k):
    e = C.CORPUS[name]
    args = _inputs(e)[k]()
    compiled = compile_with(_jitmagic_njit(), e)
    py = run_on_copies(e.fn, args)
    got = run_on_copies(compiled, args)
    problems = compare_outcomes(py, got, names=arg_names(e.fn, len(args)), **e.tol)
    assert not problems, f"{name} (tags {', '.join(e.tags)}):\n  " + "\n  ".join(problems)


# --------------------------------------------------------------------------- Numba
def _loose_problems(py: Outcome, got: Outcome, spec: dict, args) -> list[str]:
    """Random entries under Numba: the same structure, dtypes and shapes as Python's, with
    values in the stated range, a permutation of Python's values, or drawn from an argument."""
    out = []
    if py.raised or got.raised:
        return compare_outcomes(py, got)

    def leaves(v):
        if isinstance(v, (tuple, list)):
            return [y for x in v for y in leaves(x)]
        return [v]

    pairs = list(zip(leaves(got.result), leaves(py.result)))
    pairs += [(g, w) for g, w in zip(got.args, py.args) if isinstance(w, np.ndarray)]
    if len(leaves(got.result)) != len(leaves(py.result)):
        return [f"{len(leaves(py.result))} results expected, got {len(leaves(got.result))}"]
    for i, (g, w) in enumerate(pairs):
        ga, wa = np.asarray(g), np.asarray(w)
        gd = ga.dtype if isinstance(g, (np.ndarray, np.generic)) else C_TYPES.get(type(g))
        wd = wa.dtype if isinstance(w, (np.ndarray, np.generic)) else C_TYPES.get(type(w))
        if (
            isinstance(g, np.ndarray) != isinstance(w, np.ndarray)
            or gd != wd
            or ga.shape != wa.shape
        ):
            out.append(f"value {i}: {wd}{list(wa.shape)} expected, got {gd}{list(ga.shape)}")
            continue
        if "range" in spec:
            lo, hi = spec["range"]
            if not (
                (ga >= lo) & (ga < hi) if wa.dtype.kind == "i" else (ga >= lo) & (ga <= hi)
            ).all():
                out.append(f"value {i}: outside [{lo}, {hi}): {ga}")
        if spec.get("multiset") and not np.array_equal(
            np.sort(ga, axis=None), np.sort(wa, axis=None)
        ):
            out.append(f"value {i}: not a permutation of Python's {wa}")
        if "within" in spec and not np.isin(ga, np.asarray(args[spec["within"]])).all():
            out.append(f"value {i}: not drawn from argument {spec['within']}")
        if wa.dtype.kind in "fc" and not np.isfinite(ga).all():
            out.append(f"value {i}: not finite")
    return out


C_TYPES = {
    bool: np.dtype(bool),
    int: np.dtype(np.int64),
    float: np.dtype(np.float64),
    complex: np.dtype(np.complex128),
}


def numba_outcome(e: C.Entry):
    """(category, details): category "agrees", "rejects" or "differs" over all input sets;
    details per input set; plus, for random entries, whether the values equal NumPy's."""
    import numba
    from numba.core.errors import NumbaError

    compiled = compile_with(numba.njit, e, **e.numba_options)
    cats, details, same_values = [], [], []
    for mk in _inputs(e):
        args = mk()
        py = run_on_copies(e.fn, args)
        got = run_on_copies(compiled, args)
        if got.raised and _while_compiling(got.exception, NumbaError):
            msg = [ln for ln in str(got.exception).splitlines() if ln.strip()]
            cats.append("rejects")
            details.append(
                f"{type(got.exception).__name__}: "
                + " ".join(msg[1:3] if len(msg) > 1 else msg)[:300]
            )
            continue
        if e.loose is not None:
            problems = _loose_problems(py, got, e.loose, args)
            same_values.append(not compare_outcomes(py, got, **e.tol))
        else:
            problems = compare_outcomes(py, got, names=arg_names(e.fn, len(args)), **e.tol)
        cats.append("differs" if problems else "agrees")
        details.append("; ".join(problems)[:400])
    cat = "rejects" if "rejects" in cats else "differs" if "differs" in cats else "agrees"
    return cat, details, (all(same_values) if same_values else None)


def _while_compiling(exc, numba_error):
    """True for an exception from Numba's compiler (a refusal: a TypingError, or a
    NotImplementedError or internal error from lowering), not from the compiled code."""
    if isinstance(exc, numba_error):
        return True
    return any(fr.name == "_compile_for_args" for fr in traceback.extract_tb(exc.__traceback__))


def _expected(e):
    return (e.numba.split(":", 1)[0].strip() or "agrees") if e.numba else "agrees"


def _numba_available():
    if os.environ.get("JITMAGIC_SKIP_NUMBA_TESTS") == "1":
        return False
    try:
        import numba  # noqa: F401

        return True
    except ImportError:
        return False


NUMBA = _numba_available()


@pytest.mark.parametrize("name", [e.name for e in ENTRIES] if NUMBA else [])
def test_numba_voice_is_as_documented(name):
    e = C.CORPUS[name]
    cat, details, _ = numba_outcome(e)
    want = _expected(e)
    assert cat == want, (
        f"{name}: Numba {cat}, documented as {want} ({e.numba or 'agrees'})"
        f"\n  " + "\n  ".join(d for d in details if d)
    )


# --------------------------------------------------------------------------- the corpus itself
def test_corpus_size_and_coverage():
    assert len(C.CORPUS) >= 150
    tags = Counter(t for e in ENTRIES for t in e.tags)
    for t in C.TAGS:
        assert tags[t] >= 2, f"tag {t} has {tags[t]} entries"
    for d in C.DTYPE_TAGS:
        assert tags[f"dtype-{d}"] >= 1, d
    augmented = {"+=", "-=", "*=", "/=", "//=", "%=", "**=", "&=", "|=", "^=", "<<=", ">>="}
    import inspect

    src = inspect.getsource(C)
    assert all(f" {op} " in src for op in augmented)


@pytest.mark.parametrize("name", [e.name for e in ENTRIES])
def test_python_side_is_deterministic(name):
    """Every input maker is seeded and every function deterministic: two Python runs agree
    bit for bit (Python's ints compared as they are)."""
    e = C.CORPUS[name]
    for mk in _inputs(e):
        a, b = run_on_copies(e.fn, mk()), run_on_copies(e.fn, mk())
        assert compare_outcomes(a, b, ulps=0, wrap_int64=True) == [], name
        assert a.raised == b.raised


def test_numba_table_is_current():
    """tests/njit_corpus_numba.md lists exactly the entries annotated as rejected or
    differing (rewrite it with --write-numba-md after changing an annotation)."""
    text = MD.read_text()
    listed = {
        ln.split("|")[1].strip().strip("`") for ln in text.splitlines() if ln.startswith("| `")
    }
    annotated = {e.name for e in ENTRIES if _expected(e) != "agrees"}
    assert listed == annotated, (sorted(listed - annotated), sorted(annotated - listed))


def test_loose_check_of_random_entries_can_fail():
    """What Numba's random entries are held to: structure, dtype, shape, range, multiset."""
    py = Outcome((np.arange(4.0),), (np.array([0.1, 0.5]), 3))
    good = Outcome((np.array([3.0, 1.0, 0.0, 2.0]),), (np.array([0.7, 0.2]), 5))
    assert _loose_problems(py, good, {"range": (0, 10)}, ()) == []
    assert _loose_problems(py, good, {"multiset": True}, ()) != []  # results are not
    out_of_range = Outcome(good.args, (np.array([0.7, 1.2]), 5))
    assert _loose_problems(py, out_of_range, {"range": (0.0, 1.0)}, ()) != []
    wrong_dtype = Outcome(good.args, (np.array([0.7, 0.2], np.float32), 5))
    assert _loose_problems(py, wrong_dtype, {}, ()) != []
    wrong_shape = Outcome(good.args, (np.array([0.7]), 5))
    assert _loose_problems(py, wrong_shape, {}, ()) != []
    not_a_permutation = Outcome((np.array([3.0, 3.0, 0.0, 2.0]),), py.result)
    assert _loose_problems(py, not_a_permutation, {"multiset": True}, ()) != []
    assert (
        _loose_problems(
            Outcome((), np.array([12, 15])),
            Outcome((), np.array([12, 99])),
            {"within": 0},
            (np.arange(10, 20),),
        )
        != []
    )


# --------------------------------------------------------------------------- the table
def _short(detail):
    """The first difference seen, without what changes from run to run (addresses, lines)."""
    d = re.sub(r"0x[0-9a-f]+", "0x…", detail)
    d = re.sub(r'File "[^"]*", line \d+:?', "", d)
    return d.replace("|", "/").strip()[:110]


def write_numba_md(path=MD):
    import numba

    rows, stream = [], []
    counts = Counter()
    for e in ENTRIES:
        cat, details, same = numba_outcome(e)
        counts[cat] += 1
        if _expected(e) != cat:
            print(
                f"warning: {e.name}: Numba {cat}, annotated {_expected(e)}: "
                + " | ".join(d for d in details if d)[:300],
                file=sys.stderr,
            )
        if cat != "agrees":
            why = e.numba.split(":", 1)[1].strip() if ":" in e.numba else "(not annotated)"
            rows.append(
                f"| `{e.name}` | {', '.join(e.tags)} | {cat} | {why} | "
                f"{_short(next((d for d in details if d), ''))} |"
            )
        if e.loose is not None and same is not None:
            stream.append(f"`{e.name}` {'the same' if same else 'other'}")
    n_in = sum(len(_inputs(e)) for e in ENTRIES)
    lines = [
        "# Where Numba differs from Python + NumPy on the njit corpus",
        "",
        f"Generated by `python tests/test_njit_oracle.py --write-numba-md` with numba "
        f"{numba.__version__} and numpy {np.__version__}: {len(ENTRIES)} entries, {n_in} input "
        f"sets; {counts['agrees']} agree, {counts['rejects']} are rejected, "
        f"{counts['differs']} compile and differ. The oracle is the undecorated function run "
        f"by CPython + NumPy on a copy of the same inputs (tests/oracle.py). Random entries "
        f"hold Numba to shapes, dtypes and ranges only (its generators are its own code); "
        f"out-of-range entries run Numba with boundscheck=True (its default does not check, "
        f"and an unchecked write corrupts memory).",
        "",
        "| entry | tags | Numba | why | first difference seen |",
        "|---|---|---|---|---|",
        *rows,
        "",
        "Random entries Numba compiles, whether its values happen to equal NumPy's: "
        + ", ".join(stream)
        + ".",
        "",
    ]
    path.write_text("\n".join(lines))
    return counts


if __name__ == "__main__":
    if "--write-numba-md" in sys.argv:
        print(write_numba_md())
