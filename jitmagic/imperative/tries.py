"""`try`/`except` in njit code (Numba's subset), converted into a branch the hooks compile:

    try:                                 if __jm.try_((ValueError, IndexError), line):
        BODY                                 BODY
    except (ValueError, IndexError):     else:
        HANDLER                              HANDLER

The `if` (marked `jm_try`) is converted as any other (lowering.py's flags for a return or
break inside, analysis.py's carried variables), and the hook `try_` gives the condition a
value that makes `if_` compile both sides as one `nj_try` equation: the body runs, and when
code compiled inside it raises (a `raise`, an index out of range, a division by zero, a
raise in a called function) an exception of those classes, the handler runs instead
(lower/imperative.py). Exceptions of other classes go on up.

The handler sees the variables as they were when the `try` began: a variable the body
rebinds and that is read after the `try` (or in the handler) would hold, in Python, the value
of the body's last assignment before the raise. That is kept exact by refusing the cases
where it could differ (the analysis finds the variable carried through the `try`,
controlflow.py raises the refusal made here): such a variable must be assigned by the handler
before it reads it, or be assigned only by the body's last statement (an assignment, done
after its value is computed, so nothing raises after it). Arrays written into (a[i] = v) are
memory, not rebinding: the writes the body made before the raise stay, as in Python.

Supported: `except` clauses, bare, `except Exception`, a class or a tuple of classes; a
bare `raise` directly in the handler re-raises what it caught (nj_reraise: on to the exit
with the landing's error info); several clauses, `else` and `finally`, expanded into plain
ones (`expand`). Refused by name (checks.py): `except E as e`, a bare `raise` in a `try` of
several clauses, a return, break or continue leaving a `try` with a `finally`, `try` in a
generator around a `yield`, a bare `raise` after another `try` in the handler (whose
landing would overwrite that info).
"""

import ast
import copy

from jitmagic.imperative.analysis import bound_names
from jitmagic.imperative.checks import unsupported
from jitmagic.imperative.lowering import located, terminates

__all__ = ["convert_tries"]

OPS = "__jm"


def _hook(name, args, ref):
    call = ast.Call(
        func=ast.Attribute(value=ast.Name(id=OPS, ctx=ast.Load()), attr=name, ctx=ast.Load()),
        args=list(args),
        keywords=[],
    )
    return located(call, ref)


def _store(name):
    return ast.Name(id=name, ctx=ast.Store())


def _load(name):
    return ast.Name(id=name, ctx=ast.Load())


def _assign(name, value, ref):
    return located(ast.Assign(targets=[_store(name)], value=ast.Constant(value)), ref)


def _try(body, handlers):
    return ast.Try(body=body, handlers=handlers, orelse=[], finalbody=[])


def _copied(stmts):
    """A second copy of statements (a node belongs to one place in the tree)."""
    return [copy.deepcopy(s) for s in stmts]


def _assigned_at_top(stmts, name):
    """Whether stmts assign `name` at their top level before any statement reads it:
    True, False (never assigned so), or the reading statement."""
    for s in stmts:
        if any(n.id == name for n in _reads_of(s)):
            return s
        if isinstance(s, (ast.Assign, ast.AnnAssign)) and name in bound_names([s]):
            return True
    return False


def _reads_of(s):
    out = []
    for n in ast.walk(s):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            out.append(n)
        if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
            out.append(n.target)
    return out


class _Tries:
    def __init__(self, filename, fname):
        self.filename, self.fname = filename, fname
        self.count = 0

    def fail(self, what, node, why):
        raise unsupported(what, node.lineno, self.filename, self.fname, why)

    def block(self, stmts):
        """stmts with their `try` statements converted."""
        out = []
        for s in stmts:
            if isinstance(s, ast.Try) and (s.orelse or s.finalbody or len(s.handlers) > 1):
                out += self.block(self.expand(s))
                continue
            if isinstance(s, ast.Try):
                s = self.try_(s)
            elif isinstance(s, (ast.If, ast.For, ast.While)):
                s.body, s.orelse = self.block(s.body), self.block(s.orelse)
            out.append(s)
        return out

    def expand(self, s):
        """A `try` with several `except` clauses, `else` or `finally` as plain ones (checks.py
        refused a `finally` that a return, break or continue would leave, and a bare `raise`
        in a handler of several):

            try: B                     jm_try_which_N = 0
            except A: H1               try:
            except C: H2                   try: B
                             ->            except A: jm_try_which_N = 1
                                       except C: jm_try_which_N = 2
                                       if jm_try_which_N == 1: H1
                                       elif jm_try_which_N == 2: H2

            try: B                     jm_try_else_N = False
            except C: H                try: B; jm_try_else_N = True
            else: E          ->        except C: H
                                       if jm_try_else_N: E

            try: T                     try: T
            finally: F       ->        except: F; raise
                                       F

        The handlers of several clauses run after the `try`, so an error in one is not caught
        by the next, as in Python; which variables they may read is decided on the original
        clauses (_values_at_raise)."""
        self.count += 1
        n = self.count
        out, body = [], list(s.body)
        if s.orelse:
            flag = f"jm_try_else_{n}"
            out.append(_assign(flag, False, s))
            done = _assign(flag, True, s)
            done.jm_synthetic = True  # (not the body's last assignment: _values_at_raise)
            body.append(done)
        if len(s.handlers) == 1:
            protected = [located(_try(body, s.handlers), s)]
        elif s.handlers:
            which = f"jm_try_which_{n}"
            out.append(_assign(which, 0, s))
            refusals = self._values_at_raise(s, s.body, [h.body for h in s.handlers])
            protected = body
            for k, h in enumerate(s.handlers, 1):
                catch = ast.ExceptHandler(type=h.type, name=None, body=[_assign(which, k, h)])
                t = located(_try(protected, [located(catch, h)]), s)
                t.jm_refusals = refusals
                protected = [t]
            chain = []
            for k, h in reversed(list(enumerate(s.handlers, 1))):
                test = ast.Compare(left=_load(which), ops=[ast.Eq()], comparators=[ast.Constant(k)])
                chain = [located(ast.If(test=test, body=h.body, orelse=chain), s)]
            protected += chain
        else:
            protected = body
        if s.orelse:
            # (a synthetic `if` has the line of the statement it stands for)
            protected.append(located(ast.If(test=_load(flag), body=s.orelse, orelse=[]), s))
        out += protected
        if not s.finalbody:
            return out
        again = located(ast.Raise(exc=None, cause=None), s.finalbody[-1])
        catch_all = ast.ExceptHandler(type=None, name=None, body=[*s.finalbody, again])
        located(catch_all, s.finalbody[0])
        return [located(_try(out, [catch_all]), s), *_copied(s.finalbody)]

    def try_(self, s):
        (h,) = s.handlers  # (checks.py refused the other forms)
        body = self.block(s.body)
        handler = self.block(h.body)
        refusals = getattr(s, "jm_refusals", None)  # (decided on the clauses: expand)
        if refusals is None:
            refusals = self._values_at_raise(s, body, [handler])
        classes = h.type if h.type is not None else ast.Constant(None)
        args = [classes, ast.Constant(s.lineno)]
        if getattr(s, "jm_refusals", None) is not None:
            args.append(ast.Constant(True))  # (one of several clauses: unbound_ok, pyops.py)
        test = _hook("try_", args, s)
        node = located(ast.If(test=test, body=body, orelse=handler), s)
        node.jm_try = True
        node.jm_try_refusals = refusals
        return node

    def _values_at_raise(self, s, body, handlers):
        """{name: the refusal} for the variables the body rebinds whose value the handler or
        the code after it could see differ from Python's (controlflow.py raises it for those
        the analysis finds carried through the `try`: read after it or in the handler)."""
        own = [s for s in body if not getattr(s, "jm_synthetic", False)]
        last = own[-1] if own else None
        out = {}
        for name in bound_names(body):
            if name.startswith("jm_"):
                continue
            only_last = (
                isinstance(last, (ast.Assign, ast.AugAssign, ast.AnnAssign))
                and name not in bound_names(own[:-1])
                and not any(isinstance(n, ast.NamedExpr) for n in ast.walk(last))
            )
            if only_last:
                continue
            if all(
                (h := _assigned_at_top(handler, name)) is True
                or (h is False and terminates(handler))
                for handler in handlers
            ):
                continue
            out[name] = unsupported(
                f"variable '{name}' rebound in a `try` body and read after it",
                s.lineno,
                self.filename,
                self.fname,
                f"njit's `except` sees the variables as they were when the `try` began, "
                f"Python's as the body left them when it raised: assign '{name}' in the "
                f"`except` block before it is read, or only in the body's last statement",
            )
        return out


def convert_tries(fdef, filename, fname):
    """Every `try` of fdef's body (nested functions' too) as the marked `if` above, in place."""
    t = _Tries(filename, fname)
    for node in [n for n in ast.walk(fdef) if isinstance(n, ast.FunctionDef)]:
        if any(isinstance(n, ast.Try) for n in ast.walk(node)):
            node.body = t.block(node.body)
