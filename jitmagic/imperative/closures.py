"""Nested functions and lambdas in njit code: compiled inline where they are called, as Numba
compiles its inner functions and closures.

The conversion (convert.py) turns each nested `def` into converted code of its own, nested
where the `def` was, so Python's own closures give the inner function its free variables
when the trace calls it. A `lambda` becomes such a `def` first (`hoist_lambdas`): a def
`jm_lambda_N` placed just before the statement that held the lambda (making a function has no
effect, and a closure reads its free variables when it is called, so the earlier point
changes nothing).

What makes this exact is a rule on the free variables (`check_free_variables`). The converted
code runs each loop body and each branch as a function of its own, with the variables the
construct assigns passed in and out; a closure made in one of those scopes would keep reading
that scope's variable while the loop goes on in another (Python reads the current binding).
So a free variable the enclosing function binds must be bound once, in the very block holding
the nested def (or be the target of the loop whose body holds it), and a parameter read
by a nested function must not be assigned again. Then every scope the converted code makes
sees the same value Python's would. Anything else is refused by name (NjitUnsupportedError),
never compiled to a different number. A nested function that calls itself is refused too:
it is compiled inline, and the recursion would never end.
"""

import ast

from jitmagic.imperative.analysis import target_names
from jitmagic.imperative.checks import unsupported
from jitmagic.imperative.lowering import located, scope_walk

__all__ = ["check_free_variables", "free_reads", "hoist_lambdas", "nested_defs"]


def nested_defs(stmts):
    """The `def` statements of one scope (in its blocks, not inside other defs), in order."""
    out = []
    for s in stmts:
        if isinstance(s, ast.FunctionDef):
            out.append(s)
        elif isinstance(s, (ast.If, ast.For, ast.While)):
            out += nested_defs(s.body) + nested_defs(s.orelse)
    return out


def _params(args):
    out = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    return out + [a.arg for a in (args.vararg, args.kwarg) if a is not None]


def _scope_binds(fdef):
    """Every name the function's own scope binds (parameters included)."""
    out = set(_params(fdef.args))
    for s in fdef.body:
        for n in scope_walk(s):
            if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
                out.add(n.id)
            elif isinstance(n, ast.FunctionDef) and n is not fdef:
                out.add(n.name)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                out.update((a.asname or a.name).split(".")[0] for a in n.names)
        if isinstance(s, ast.FunctionDef):
            out.add(s.name)
    return out


def free_reads(fdef):
    """The names a nested function reads from enclosing scopes (its nested ones' included),
    each once, in order of appearance."""
    bound = _scope_binds(fdef)
    out = []
    for s in fdef.body:
        for n in scope_walk(s):
            names = []
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                names = [n.id]
            elif isinstance(n, ast.FunctionDef):
                names = free_reads(n) + [
                    m.id
                    for d in n.args.defaults + [d for d in n.args.kw_defaults if d]
                    for m in ast.walk(d)
                    if isinstance(m, ast.Name) and isinstance(m.ctx, ast.Load)
                ]
            for name in names:
                if name not in bound and name not in out:
                    out.append(name)
    return out


# ---------------------------------------------------------------- lambdas


class _Hoist(ast.NodeTransformer):
    """Lambdas of one statement replaced by names of defs made before it."""

    def __init__(self, names):
        self.names = names
        self.defs = []

    def visit_Lambda(self, node):
        self.generic_visit(node)  # (lambdas inside it first: their defs go before this one)
        name = self.names.fresh("jm_lambda")
        fd = ast.FunctionDef(
            name=name,
            args=node.args,
            body=[located(ast.Return(value=node.body), node)],
            decorator_list=[],
            returns=None,
            type_comment=None,
        )
        if "type_params" in ast.FunctionDef._fields:
            fd.type_params = []
        fd.jm_lambda = True
        self.defs.append(located(fd, node))
        return located(ast.Name(id=name, ctx=ast.Load()), node)

    def visit_FunctionDef(self, node):
        # its defaults are evaluated here, its body is a block of its own (hoisted there)
        node.args = self.visit(node.args)
        return node


def hoist_lambdas(stmts, names):
    """Every lambda of the statements (and of nested defs' bodies) replaced by a def
    `jm_lambda_N` made just before the statement holding it."""
    out = []
    for s in stmts:
        if isinstance(s, ast.FunctionDef):
            s.body = hoist_lambdas(s.body, names)
        if isinstance(s, (ast.If, ast.For, ast.While)):
            s.body = hoist_lambdas(s.body, names)
            s.orelse = hoist_lambdas(s.orelse, names)
            h = _Hoist(names)
            for field in ("test", "iter", "target"):
                if getattr(s, field, None) is not None:
                    setattr(s, field, h.visit(getattr(s, field)))
        else:
            h = _Hoist(names)
            s = h.visit(s)
        out += h.defs + [s]
    return out


# ---------------------------------------------------------------- the free-variable rule


def _bindings(stmts, block, out):
    """name -> [(binding node, block it sits in, loop whose target it is or None)] for one
    scope."""
    for s in stmts:
        if isinstance(s, ast.For):
            for n in target_names(s.target):
                out.setdefault(n, []).append((s, block, s))
            _expr_bindings(s.iter, s, block, out)
            _bindings(s.body, s.body, out)
            _bindings(s.orelse, s.orelse, out)
        elif isinstance(s, (ast.If, ast.While)):
            _expr_bindings(s.test, s, block, out)
            _bindings(s.body, s.body, out)
            _bindings(s.orelse, s.orelse, out)
        elif isinstance(s, ast.FunctionDef):
            out.setdefault(s.name, []).append((s, block, None))
            for d in s.args.defaults + [d for d in s.args.kw_defaults if d is not None]:
                _expr_bindings(d, s, block, out)
        else:
            _expr_bindings(s, s, block, out)


def _expr_bindings(node, stmt, block, out):
    for n in scope_walk(node):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            out.setdefault(n.id, []).append((stmt, block, None))
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            for a in n.names:
                out.setdefault((a.asname or a.name).split(".")[0], []).append((stmt, block, None))


def _block_of(stmts, target):
    """The statement list of one scope that holds target directly, or None."""
    for s in stmts:
        if s is target:
            return stmts
        if isinstance(s, (ast.If, ast.For, ast.While)):
            for part in (s.body, s.orelse):
                found = _block_of(part, target)
                if found is not None:
                    return found
    return None


def check_free_variables(fdef, filename, qualname):
    """Refuse (NjitUnsupportedError) a nested def of fdef's scope, at any depth, that reads a
    variable of an enclosing function the conversion could not give it as Python would."""
    _check_scope(fdef, filename, qualname)


def _check_scope(fdef, filename, qualname):
    params = set(_params(fdef.args))
    binds = {}
    _bindings(fdef.body, fdef.body, binds)
    for inner in nested_defs(fdef.body):
        if inner.decorator_list:
            raise unsupported(
                "a decorated nested function",
                inner.lineno,
                filename,
                qualname,
                "remove the decorator: njit compiles a nested function inline where it is called",
            )
        what = (
            "a lambda" if getattr(inner, "jm_lambda", False) else f"nested function {inner.name!r}"
        )
        free = free_reads(inner)
        if not getattr(inner, "jm_lambda", False) and inner.name in free:
            raise unsupported(
                f"a recursive nested function ({inner.name!r} calls itself)",
                inner.lineno,
                filename,
                qualname,
                "nested functions are compiled inline where they are called; write the "
                "recursion as a loop",
            )
        here = _block_of(fdef.body, inner)
        for name in free:
            sites = binds.get(name, [])
            if name in params:
                if sites:
                    raise unsupported(
                        f"{what} reading the parameter {name!r}, which the function assigns again",
                        inner.lineno,
                        filename,
                        qualname,
                        f"assign the new value to another name, or pass {name!r} to the "
                        "nested function as an argument",
                    )
                continue
            if not sites:
                continue  # a global, a builtin, or a variable of an enclosing scope
            ok = len(sites) == 1 and (
                (sites[0][2] is None and sites[0][1] is here)
                or (sites[0][2] is not None and sites[0][2].body is here)
            )
            if not ok:
                line = sites[0][0].lineno if len(sites) == 1 else sites[1][0].lineno
                raise unsupported(
                    f"{what} reading {name!r}, which the function binds "
                    + ("more than once" if len(sites) > 1 else "in another block")
                    + f" (line {line})",
                    inner.lineno,
                    filename,
                    qualname,
                    "loops and branches are compiled as scopes of their own, so the nested "
                    f"function would not see every new value of {name!r}: pass {name!r} to it "
                    "as an argument, or bind it once, in the block that defines the function",
                )
        _check_scope(inner, filename, qualname)
