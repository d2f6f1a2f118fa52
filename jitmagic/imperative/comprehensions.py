"""List comprehensions in njit code: each becomes a call of a nested function made just before
the statement that holds it (as closures.py does for lambdas),

    [e for x in a if c]    ->    def jm_listcomp_N(<free locals>):
                                     jm_list_M = []
                                     for x in a:
                                         if c:
                                             jm_list_M.append(e)
                                     return jm_list_M
                                 ... jm_listcomp_N(<free locals>) ...

so its loop is compiled as the user's loops are (a runtime list, imperative/lists.py) and it is
evaluated where Python evaluates it (in a `while` test, an `and`, a lambda). The variables of
the enclosing functions it reads are passed as arguments, read when the call runs, as Python's
comprehension reads them while it runs; its own targets stay its own. A comprehension inside
another is converted inside the other's function, with the outer targets passed in.

A generator expression is converted where a builtin consumes it whole (checks.py refuses it
anywhere else): `list`, `sorted`, `min` and `max` of it are of the list comprehension;
`sum(e for ...)` is a def that adds each item to a total (`start + e1 + e2 ...`), and
`any(...)`/`all(...)` one that returns at the first true/false item, so the items after it
are not evaluated, as Python's short-circuit leaves them. The builtins it relied on are
checked not to be rebound when the code is built (convert.py, as for `range`).
"""

import ast

from jitmagic.errors import NjitUnsupportedError
from jitmagic.imperative.analysis import bound_names
from jitmagic.imperative.lowering import located

__all__ = ["hoist_comprehensions", "GENEXP_CONSUMERS"]

# the builtins a generator expression may be passed to (as their one argument; sum: and start)
GENEXP_CONSUMERS = ("list", "sorted", "min", "max", "sum", "any", "all")
_AS_LIST = ("list", "sorted", "min", "max")


def _binds(fd):
    a = fd.args
    params = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    params += [x.arg for x in (a.vararg, a.kwarg) if x is not None]
    return set(params) | set(bound_names(fd.body))


def _targets(comp):
    """The targets of comp and of the comprehensions inside it (theirs, not the function's)."""
    out = set()
    for c in ast.walk(comp):
        if isinstance(c, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            for g in c.generators:
                for n in ast.walk(g.target):
                    if isinstance(n, ast.Name):
                        out.add(n.id)
    return out


def _free(comp, bound):
    """Names comp reads that an enclosing function binds (not its own targets), in order."""
    own = _targets(comp)
    out = []
    for n in ast.walk(comp):
        if (
            isinstance(n, ast.Name)
            and isinstance(n.ctx, ast.Load)
            and n.id in bound
            and n.id not in own
            and n.id not in out
        ):
            out.append(n.id)
    return out


_CONSUMERS = ("array", "asarray", "vstack", "stack", "concatenate")
_READING = ("range", "len", "enumerate", "zip", "min", "max", "abs", "int", "float")


def _reads_only(comp):
    """Does comp call nothing that could write to an array (only builtins that read)?"""
    return all(
        isinstance(n.func, ast.Name) and n.func.id in _READING
        for n in ast.walk(comp)
        if isinstance(n, ast.Call)
    ) and not any(isinstance(n, (ast.NamedExpr, ast.Lambda)) for n in ast.walk(comp))


class _Hoist(ast.NodeTransformer):
    """The list comprehensions of one statement (outermost first) replaced by calls of defs
    made before it."""

    def __init__(self, names, bound, used_builtins):
        self.names = names
        self.bound = bound
        self.defs = []
        self.used_builtins = used_builtins

    def visit_ListComp(self, node):
        acc = self.names.fresh("jm_list")
        add = ast.Call(
            func=ast.Attribute(value=_load(acc), attr="append", ctx=ast.Load()),
            args=[node.elt],
            keywords=[],
        )
        if getattr(node, "jm_consumed", False):
            add.jm_fresh = True  # (the list dies in np.array: its rows may be copies)
        append = ast.Expr(value=add)
        return self._hoist(
            node,
            "jm_listcomp",
            [_assign(acc, ast.List(elts=[], ctx=ast.Load()))],
            [append],
            [ast.Return(value=_load(acc))],
        )

    def visit_Call(self, node):
        self._mark_consumed(node)
        f = node.func
        if not (
            isinstance(f, ast.Name)
            and f.id in GENEXP_CONSUMERS
            and node.args
            and isinstance(node.args[0], ast.GeneratorExp)
        ):
            return self.generic_visit(node)
        if f.id in self.bound:
            raise NjitUnsupportedError(
                f"a generator expression passed to the local `{f.id}` (line {node.lineno}): "
                f"njit converts one passed to the builtin only; pass a list comprehension",
                construct="a generator expression passed to a local function",
            )
        self.used_builtins.add(f.id)
        gen = node.args[0]
        if f.id in _AS_LIST:
            comp = located(ast.ListComp(elt=gen.elt, generators=gen.generators), gen)
            node.args = [self.visit(comp), *(self.visit(a) for a in node.args[1:])]
            return node
        e = gen.elt
        if f.id == "sum":
            acc = self.names.fresh("jm_total")
            start = node.args[1] if len(node.args) > 1 else ast.Constant(0)
            add = ast.BinOp(left=_load(acc), op=ast.Add(), right=e)
            return self._hoist(
                gen, "jm_sum", [_assign(acc, start)], [_assign(acc, add)],
                [ast.Return(value=_load(acc))], reads=start,
            )  # fmt: skip
        want = f.id == "any"
        test = e if want else ast.UnaryOp(op=ast.Not(), operand=e)
        early = ast.If(test=test, body=[ast.Return(value=ast.Constant(want))], orelse=[])
        return self._hoist(
            gen, f"jm_{f.id}", [], [early], [ast.Return(value=ast.Constant(not want))]
        )

    def _hoist(self, node, prefix, before, inner, after, reads=None):
        """A call of a new def: `before`, the comprehension's loops around `inner`, `after`
        (reads: an expression of `before` outside the comprehension)."""
        name = self.names.fresh(prefix)
        params = _free(node, self.bound)
        if reads is not None:
            params += [p for p in _free(reads, self.bound) if p not in params]
        body = [located(s, node.elt) for s in inner]
        for g in reversed(node.generators):
            if g.is_async:
                return node  # (refused by checks.py with the other async constructs)
            for cond in reversed(g.ifs):
                body = [located(ast.If(test=cond, body=body, orelse=[]), cond)]
            body = [located(ast.For(target=g.target, iter=g.iter, body=body, orelse=[]), g.iter)]
        fd = ast.FunctionDef(
            name=name,
            args=ast.arguments(
                posonlyargs=[],
                args=[ast.arg(arg=p) for p in params],
                vararg=None,
                kwonlyargs=[],
                kw_defaults=[],
                kwarg=None,
                defaults=[],
            ),
            body=[
                *(located(s, node) for s in before),
                *body,
                *(located(s, node) for s in after),
            ],
            decorator_list=[],
            returns=None,
            type_comment=None,
        )
        if "type_params" in ast.FunctionDef._fields:
            fd.type_params = []
        located(fd, node)
        # comprehensions inside it (its element, conditions, inner iterables) are converted in
        # its own body, where its targets are bound
        fd.body = hoist_comprehensions(
            fd.body, self.names, self.bound | _binds(fd), self.used_builtins
        )
        self.defs.append(fd)
        return located(
            ast.Call(func=_load(name), args=[_load(p) for p in params], keywords=[]), node
        )

    @staticmethod
    def _mark_consumed(node):
        # np.array([x[i] for i in ...]): the list is copied into an array as soon as it is
        # made, and nothing in it can write to the arrays its elements view, so its rows
        # may be copies of them (rowlists.py: elsewhere an array others reach is refused)
        f = node.func
        if (
            isinstance(f, ast.Attribute)
            and isinstance(f.value, ast.Name)
            and f.value.id in ("np", "numpy")
            and f.attr in _CONSUMERS
            and node.args
            and isinstance(node.args[0], ast.ListComp)
            and _reads_only(node.args[0])
        ):
            node.args[0].jm_consumed = True

    def visit_FunctionDef(self, node):
        node.args = self.visit(node.args)  # (its body is a block of its own)
        return node

    def visit_Lambda(self, node):
        return node  # (lambdas are defs by now: closures.hoist_lambdas)


def _load(name):
    return ast.Name(id=name, ctx=ast.Load())


def _assign(name, value):
    return ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=value)


def hoist_comprehensions(stmts, names, bound, used_builtins=None):
    """Every list comprehension of the statements (and of nested defs' bodies) replaced by a
    call of a def `jm_listcomp_N` made just before the statement holding it, and every
    generator expression passed to a builtin by a def of its own (module docstring).
    `bound`: the names the enclosing functions bind; `used_builtins` (a set) gets the
    builtins the conversion relied on."""
    used_builtins = set() if used_builtins is None else used_builtins
    out = []
    for s in stmts:
        if isinstance(s, ast.FunctionDef):
            s.body = hoist_comprehensions(s.body, names, bound | _binds(s), used_builtins)
        h = _Hoist(names, bound, used_builtins)
        if isinstance(s, (ast.If, ast.For, ast.While)):
            s.body = hoist_comprehensions(s.body, names, bound, used_builtins)
            s.orelse = hoist_comprehensions(s.orelse, names, bound, used_builtins)
            for field in ("test", "iter"):
                if getattr(s, field, None) is not None:
                    setattr(s, field, h.visit(getattr(s, field)))
        elif not isinstance(s, ast.FunctionDef):
            s = h.visit(s)
        out += h.defs + [s]
    return out
