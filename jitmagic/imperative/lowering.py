"""break / continue / return / loop-else lowered into flag variables and guards.

After `lower_jumps` a function body has no `break` or `continue`, at most one `return` (its
last statement), and loops have no `else`:

* `break` in a loop: `jm_break_N = True`; the statements that follow it in its loop body are
  guarded by `if not jm_break_N:`; the flag is set False before the loop and stops it: a
  `while` test becomes `not jm_break_N and <test>`, a `for` gets the extra test
  `not jm_break_N` (attribute `jm_extra_test` on the For node, evaluated before each
  iteration by the hook).
* `continue`: `jm_continue_N = True`, guards on what follows; set False at the top of each
  iteration (a temporary, never loop-carried).
* `for/while ... else: E`: E follows the loop, as `if not jm_break_N: E` when the loop breaks.
* `return v` when the function has a return anywhere but as its last statement: in "tail"
  position (nothing runs after it but the end of the function: the last statement of the
  body, or of a branch of an `if` that is itself in tail position) it becomes
  `jm_retval = v`. Elsewhere (inside loops, or followed by statements) it becomes
  `jm_retval = v; jm_retflag = True`, the rest is guarded by `if not jm_retflag:` and
  enclosing loops are stopped by `not jm_retflag`. An `if` in tail position whose one branch
  ends in a return takes the statements that follow it into its other branch (no flag).
  The function ends with `return jm_retval`; a body that can fall off the end gets an
  explicit `return None` first.
* Code after a statement that always jumps (break/continue/return/raise, an `if` whose
  branches all do, `while True:` without break) is unreachable and dropped.
"""

import ast

__all__ = ["Names", "located", "lower_jumps", "terminates"]


class Names:
    """Fresh internal names that collide with no identifier of the user's function."""

    def __init__(self, used):
        self.used = set(used)
        self.counter = 0

    def fresh(self, prefix):
        while True:
            self.counter += 1
            name = f"{prefix}_{self.counter}"
            if name not in self.used:
                self.used.add(name)
                return name

    def fixed(self, name):
        if name in self.used:
            return self.fresh(name)
        self.used.add(name)
        return name


def _width(n):
    if isinstance(n, ast.Name):
        return len(n.id)
    if isinstance(n, ast.Attribute):
        return _width(n.value) + 1 + len(n.attr)
    return 1


def located(node, ref):
    """Give node and its sub-nodes without a position the position of ref (a node or a line).
    Sub-trees that have a position (the user's code, or generated code placed already) are
    left alone; `ast.fix_missing_locations` catches anything left."""
    if isinstance(ref, int):
        pos = (ref, 0, ref, 0)
    else:
        pos = (
            ref.lineno,
            ref.col_offset,
            getattr(ref, "end_lineno", None) or ref.lineno,
            getattr(ref, "end_col_offset", None) or ref.col_offset,
        )
    todo = [node]
    while todo:
        n = todo.pop()
        if "lineno" in n._attributes:
            if getattr(n, "lineno", None) is not None:
                continue
            n.lineno, n.col_offset, n.end_lineno, n.end_col_offset = pos
            if isinstance(n, (ast.Name, ast.Attribute)):
                # on one line: CPython (3.11+) moves a method call's line to the end line of
                # its attribute, which would be the end of a multi-line statement
                n.end_lineno = n.lineno
                n.end_col_offset = n.col_offset + _width(n)
        todo.extend(ast.iter_child_nodes(n))
    return node


def _breaks_here(stmts):
    """Whether a `break` in stmts belongs to the loop whose body they are."""
    for s in stmts:
        if isinstance(s, ast.Break):
            return True
        if isinstance(s, ast.If) and (_breaks_here(s.body) or _breaks_here(s.orelse)):
            return True
        if isinstance(s, (ast.For, ast.While)) and _breaks_here(s.orelse):
            return True
    return False


def _infinite(s):
    return (
        isinstance(s, ast.While)
        and isinstance(s.test, ast.Constant)
        and bool(s.test.value)
        and not _breaks_here(s.body)
    )


def terminates(stmts):
    """Whether control never reaches the end of stmts (return/raise/infinite loop)."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    if isinstance(last, ast.If):
        return terminates(last.body) and terminates(last.orelse)
    return _infinite(last)


def scope_walk(node):
    """ast.walk of one scope's statement or expression: defs and lambdas are yielded, not
    entered (their returns are their own)."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        if isinstance(n, (ast.FunctionDef, ast.Lambda)):
            continue
        todo.extend(ast.iter_child_nodes(n))


def _has_return(stmts):
    return any(isinstance(n, ast.Return) for s in stmts for n in scope_walk(s))


def _name(id_, store=False):
    return ast.Name(id=id_, ctx=ast.Store() if store else ast.Load())


def _set(flag, value, ref):
    return located(ast.Assign(targets=[_name(flag, True)], value=ast.Constant(value)), ref)


def _not(flags):
    flags = sorted(flags)
    inner = (
        _name(flags[0])
        if len(flags) == 1
        else ast.BoolOp(op=ast.Or(), values=[_name(f) for f in flags])
    )
    return ast.UnaryOp(op=ast.Not(), operand=inner)


class _Loop:
    def __init__(self, names):
        self.names = names
        self.brk = self.cont = None


class _Lowering:
    def __init__(self, names, rewriting):
        self.names = names
        self.rewriting = rewriting
        self.retval = names.fixed("jm_retval") if rewriting else None
        self.retflag = None

    def block(self, stmts, loop, tail):
        """(new statements, flags they may set, whether they always jump)."""
        stmts = list(stmts)
        out, may = [], set()
        i = 0
        while i < len(stmts):
            s = stmts[i]
            # (not a `try`, tries.py: what follows it must stay out of its body)
            if (
                tail
                and self.rewriting
                and isinstance(s, ast.If)
                and not getattr(s, "jm_try", False)
                and i < len(stmts) - 1
            ):
                rest = stmts[i + 1 :]
                if terminates(s.body) and terminates(s.orelse):
                    del stmts[i + 1 :]
                elif terminates(s.body) and _has_return(s.body):
                    s.orelse = s.orelse + rest
                    del stmts[i + 1 :]
                elif terminates(s.orelse) and _has_return(s.orelse):
                    s.body = s.body + rest
                    del stmts[i + 1 :]
            if isinstance(s, (ast.For, ast.While)):
                new, ms, definite, after = self.loop(s)
                stmts[i + 1 : i + 1] = after
            else:
                new, ms, definite = self.stmt(s, loop, tail and i == len(stmts) - 1)
            out += new
            if definite:
                return out, may | ms, True
            if ms:
                rest_out, rest_ms, rest_def = self.block(stmts[i + 1 :], loop, tail)
                if rest_out:
                    out.append(located(ast.If(test=_not(ms), body=rest_out, orelse=[]), s.lineno))
                return out, may | ms | rest_ms, rest_def
            i += 1
        return out, may, False

    def stmt(self, s, loop, tail):
        if isinstance(s, ast.Return):
            if not self.rewriting:
                return [s], set(), True
            value = s.value if s.value is not None else located(ast.Constant(None), s)
            out = [located(ast.Assign(targets=[_name(self.retval, True)], value=value), s)]
            if tail:
                return out, set(), True
            if self.retflag is None:
                self.retflag = self.names.fixed("jm_retflag")
            out.append(_set(self.retflag, True, s))
            return out, {self.retflag}, True
        if isinstance(s, ast.Break):
            if loop.brk is None:
                loop.brk = self.names.fresh("jm_break")
            return [_set(loop.brk, True, s)], {loop.brk}, True
        if isinstance(s, ast.Continue):
            if loop.cont is None:
                loop.cont = self.names.fresh("jm_continue")
            return [_set(loop.cont, True, s)], {loop.cont}, True
        if isinstance(s, ast.Raise):
            return [s], set(), True
        if isinstance(s, ast.If):
            body, mb, db = self.block(s.body, loop, tail)
            orelse, me, de = self.block(s.orelse, loop, tail)
            s.body = body or [located(ast.Pass(), s)]
            s.orelse = orelse
            return [s], mb | me, db and de and bool(orelse)
        return [s], set(), False

    def loop(self, s):
        """(statements replacing loop s, flags set, always jumps, statements to run after)."""
        infinite = _infinite(s)
        ctx = _Loop(self.names)
        body, ms, _ = self.block(s.body, ctx, False)
        if ctx.cont is not None:
            body.insert(0, _set(ctx.cont, False, s))
        s.body = body or [located(ast.Pass(), s)]
        pre, stops = [], []
        if ctx.brk is not None:
            pre.append(_set(ctx.brk, False, s))
            stops.append(ctx.brk)
        may = set()
        if self.retflag is not None and self.retflag in ms:
            stops.append(self.retflag)
            may.add(self.retflag)
        if stops:
            nots = [located(_not([f]), s) for f in stops]
            if isinstance(s, ast.While):
                s.test = located(ast.BoolOp(op=ast.And(), values=nots + [s.test]), s.test)
            else:
                s.jm_extra_test = (
                    nots[0] if len(nots) == 1 else located(ast.BoolOp(op=ast.And(), values=nots), s)
                )
        after = []
        if s.orelse and not infinite:
            if ctx.brk is not None:
                after = [located(ast.If(test=_not([ctx.brk]), body=s.orelse, orelse=[]), s.lineno)]
            else:
                after = list(s.orelse)
        s.orelse = []
        return pre + [s], may, infinite, after


def lower_jumps(fdef, names):
    """Lower fdef.body in place. Returns the prologue to run at function entry (the
    return flag's initialisation) and the name of the return-value variable, or None."""
    body = fdef.body
    returns = [n for s in body for n in scope_walk(s) if isinstance(n, ast.Return)]
    rewriting = bool(returns) and not (len(returns) == 1 and body[-1] is returns[0])
    if rewriting and not terminates(body):
        end = max(getattr(n, "end_lineno", None) or 0 for n in body) or fdef.lineno
        body.append(located(ast.Return(value=None), end))
    lw = _Lowering(names, rewriting)
    out, _, _ = lw.block(body, None, True)
    prologue = []
    if rewriting:
        if lw.retflag is not None:
            prologue.append(_set(lw.retflag, False, fdef.lineno))
        end = out[-1].lineno if out else fdef.lineno
        out.append(located(ast.Return(value=_name(lw.retval)), end))
    fdef.body = out
    return prologue, lw.retval
