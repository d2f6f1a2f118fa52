"""A generator function rewritten as the driver of the loop that consumes it (as AutoGraph
inlines a generator): the consumer's loop body runs where the generator yields.

    def gen(n):                          def gen(n, *, jm_gen_consume, jm_gen_go,
        for k in range(n):                       jm_gen_state_0, jm_gen_state_1):
            yield k * k                      for k in range(n):
                                                 jm_gen_state_0, jm_gen_state_1, = \\
                                                     jm_gen_consume(k * k, jm_gen_state_0,
                                                                    jm_gen_state_1)
                                                 if not jm_gen_go(jm_gen_state_0, ...):
                                                     return
                                             return (jm_gen_state_0, jm_gen_state_1)

`jm_gen_consume(v, *state)` is the consumer's loop body (its carried variables are the state,
returned updated); `jm_gen_go(*state)` its extra test (false once it broke or returned), so
the generator is not resumed after the consumer stopped, as Python leaves it suspended. The
generator's own `return` ends the loop. The state leaves the driver by its one final return
(convert.py replaces the value of the return that `lower_jumps` leaves last), so the returns
inside its loops carry no values. `yield from g(...)` is `for jm_yf in g(...): yield jm_yf`.

What cannot be inlined this way stays rejected by checks.py: a `yield` whose value is used
(a value sent into the generator) and a generator defined inside njit code.
"""

import ast

from jitmagic.imperative.checks import unsupported
from jitmagic.imperative.lowering import located

__all__ = ["CONSUME", "GO", "state_names", "rewrite_generator", "final_state"]

CONSUME = "jm_gen_consume"
GO = "jm_gen_go"


def state_names(n):
    return [f"jm_gen_state_{i}" for i in range(n)]


def _name(id_, store=False):
    return ast.Name(id=id_, ctx=ast.Store() if store else ast.Load())


def final_state(n):
    """The driver's result: its state variables as one tuple."""
    return ast.Tuple(elts=[_name(s) for s in state_names(n)], ctx=ast.Load())


class _Yields(ast.NodeTransformer):
    def __init__(self, nstate, stoppable, filename, fname):
        self.states = state_names(nstate)
        self.stoppable = stoppable
        self.filename, self.fname = filename, fname
        self.count = 0

    def _consume(self, value, ref):
        call = ast.Call(
            func=_name(CONSUME), args=[value, *(_name(s) for s in self.states)], keywords=[]
        )
        if self.states:
            target = ast.Tuple(elts=[_name(s, True) for s in self.states], ctx=ast.Store())
            out = [located(ast.Assign(targets=[target], value=call), ref)]
        else:
            out = [located(ast.Expr(value=call), ref)]
        if self.stoppable:
            go = ast.Call(func=_name(GO), args=[_name(s) for s in self.states], keywords=[])
            stop = ast.If(
                test=ast.UnaryOp(op=ast.Not(), operand=go),
                body=[ast.Return(value=None)],
                orelse=[],
            )
            out.append(located(stop, ref))
        return out

    def visit_Expr(self, node):
        v = node.value
        if isinstance(v, ast.Yield):
            self._no_yield_inside(v.value)
            value = v.value if v.value is not None else located(ast.Constant(None), v)
            return self._consume(value, node)
        if isinstance(v, ast.YieldFrom):
            self._no_yield_inside(v.value)
            self.count += 1
            item = f"jm_yf_{self.count}"
            loop = ast.For(
                target=_name(item, True),
                iter=v.value,
                body=self._consume(located(_name(item), node), node),
                orelse=[],
            )
            return located(loop, node)
        self._no_yield_inside(v)
        return node

    def visit_Return(self, node):
        # the generator's return value would be StopIteration.value, which a for loop drops:
        # evaluated for its effects, then the loop ends
        out = []
        if node.value is not None and not isinstance(node.value, ast.Constant):
            self._no_yield_inside(node.value)
            out.append(located(ast.Expr(value=node.value), node))
        out.append(located(ast.Return(value=None), node))
        return out

    def generic_visit(self, node):
        if isinstance(node, ast.stmt) and not isinstance(
            node, (ast.If, ast.For, ast.While, ast.With, ast.Try)
        ):
            # a statement that holds expressions only: a yield in them is a yield used as
            # a value
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self._no_yield_inside(child)
            return node
        if isinstance(node, (ast.If, ast.While)):
            self._no_yield_inside(node.test)
        if isinstance(node, ast.For):
            self._no_yield_inside(node.iter)
        return super().generic_visit(node)

    def visit_FunctionDef(self, node):
        return node  # (its yields are its own: checks.py refuses a nested generator)

    def visit_Lambda(self, node):
        return node

    def _no_yield_inside(self, expr):
        if expr is None:
            return
        todo = [expr]
        while todo:
            n = todo.pop()
            if isinstance(n, (ast.Lambda, ast.FunctionDef, ast.GeneratorExp)):
                continue
            if isinstance(n, (ast.Yield, ast.YieldFrom)):
                raise unsupported(
                    "a `yield` used as a value (a value sent into a generator)",
                    n.lineno,
                    self.filename,
                    self.fname,
                    "njit inlines a generator into the `for` loop that consumes it, which "
                    "sends nothing back: write `yield v` as a statement of its own",
                )
            todo.extend(ast.iter_child_nodes(n))


def rewrite_generator(fdef, nstate, stoppable, filename, fname):
    """fdef (a generator's FunctionDef, signature stripped) rewritten in place into the
    driver described in the module docstring; its parameters gain the keyword-only
    `jm_gen_consume`, `jm_gen_go` and the state variables."""
    y = _Yields(nstate, stoppable, filename, fname)
    body = []
    for s in fdef.body:
        r = y.visit(s)
        body += r if isinstance(r, list) else [r]
    fdef.body = body
    extra = [CONSUME, GO, *state_names(nstate)]
    fdef.args.kwonlyargs = fdef.args.kwonlyargs + [located(ast.arg(arg=a), fdef) for a in extra]
    fdef.args.kw_defaults = fdef.args.kw_defaults + [None] * len(extra)
