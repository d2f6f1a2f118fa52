"""The constructs `jitmagic.njit` cannot convert, rejected with NjitUnsupportedError at
conversion time: the message names the construct, the file and line, shows the line, and says
what to write instead."""

import ast
import linecache
import os

from jitmagic.errors import NjitUnsupportedError
from jitmagic.imperative.comprehensions import GENEXP_CONSUMERS

__all__ = ["check_function", "unsupported"]

_FILL = "preallocate an array with np.empty (or a list) and fill it in a loop"


def unsupported(construct, lineno, filename, fname, suggestion):
    """The NjitUnsupportedError for `construct` at filename:lineno in function fname."""
    src = linecache.getline(filename, lineno).strip() if lineno else ""
    where = f'File "{filename}", line {lineno}' if lineno else f'File "{filename}"'
    if filename.startswith("<") or not os.path.isabs(filename):
        where = f"{filename}, line {lineno}"
    msg = f"njit cannot compile {construct} in function {fname!r} ({where})"
    if src:
        msg += f":\n    {src}\n"
    else:
        msg += ".\n"
    msg += suggestion[0].upper() + suggestion[1:]
    if not msg.endswith("."):
        msg += "."
    return NjitUnsupportedError(msg, construct=construct, lineno=lineno, filename=filename)


class _Checker(ast.NodeVisitor):
    def __init__(self, filename, fname, generator=False):
        self.filename, self.fname = filename, fname
        self.thunk = 0  # > 0 inside an operand the conversion turns into a thunk
        self.generator = generator  # a generator being inlined into its consumer (yields.py)
        self.nested = 0  # > 0 inside a nested def or lambda
        self.local_names = set()  # the function's locals and parameters
        self.consumed = set()  # generator expressions a builtin consumes whole
        self.tries = []  # "body" / "handler" / "handler+try" of the `try`s around (innermost last)

    def fail(self, construct, node, suggestion):
        raise unsupported(
            construct, getattr(node, "lineno", None), self.filename, self.fname, suggestion
        )

    # ---- statements -------------------------------------------------------------------
    def visit_Try(self, node):
        # `except` clauses without a name, `else`, `finally`: tries.py converts them
        instead = (
            "njit compiles `try:` with `except:`, `except Exception:` and `except "
            "SomeError:` clauses (no `as`), `else:` and `finally:`; test the condition with "
            "`if` instead, or catch the exception around the call of the njit function"
        )
        if len(node.handlers) > 1:
            for h in node.handlers:
                for n in ast.walk(h):
                    if isinstance(n, ast.Raise) and n.exc is None:
                        self.fail(
                            "a bare `raise` in a `try` with several `except` clauses",
                            n,
                            "raise an exception instance, e.g. `raise ValueError(...)`",
                        )
        if node.finalbody:
            jump = leaves_try(node.body + node.orelse + node.finalbody) or next(
                (leaves_try(h.body) for h in node.handlers if leaves_try(h.body)), None
            )
            if jump is not None:
                self.fail(
                    f"`{type(jump).__name__.lower()}` leaving a `try` that has a `finally`",
                    jump,
                    "set a flag and return (or break) after the `try` statement",
                )
            if any(isinstance(n, ast.Try) for st in node.finalbody for n in ast.walk(st)):
                self.fail("a `try` inside a `finally` block", node.finalbody[0], instead)
        for h in node.handlers:
            if h.name is not None:
                self.fail(f"`except ... as {h.name}` (the exception object)", h, instead)
        if (
            self.generator
            and not self.nested
            and any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in ast.walk(node))
        ):
            self.fail(
                "a `yield` inside `try` in a generator",
                node,
                "njit runs the consuming loop's body where the generator yields, and Python "
                "does not send its exceptions into the generator: move the `yield` out of "
                "the `try`",
            )
        self.tries.append("body")
        for st in node.body:
            self.visit(st)
        for h in node.handlers:
            self.tries[-1] = "handler"
            if any(isinstance(n, ast.Try) for st in h.body for n in ast.walk(st)):
                self.tries[-1] = "handler+try"  # (its landing would overwrite the re-raised)
            if h.type is not None:
                self.visit(h.type)
            for st in h.body:
                self.visit(st)
        self.tries.pop()
        for st in node.orelse:
            self.visit(st)
        self.tries.append("finally")
        for st in node.finalbody:
            self.visit(st)
        self.tries.pop()

    def visit_TryStar(self, node):
        self.fail("`try`/`except*`", node, "use a plain `try`/`except` with one clause")

    def visit_With(self, node):
        self.fail(
            "a `with` statement",
            node,
            "move the `with` block out of the njit function and call the njit function inside it",
        )

    def visit_AsyncWith(self, node):
        self.fail(
            "`async with`",
            node,
            "call the njit function from your async code instead: njit functions are synchronous",
        )

    visit_AsyncFor = visit_AsyncWith

    def visit_AsyncFunctionDef(self, node):
        self.fail(
            "an `async def` function",
            node,
            "call the njit function from your async code instead: njit functions are synchronous",
        )

    def visit_Await(self, node):
        self.fail(
            "`await`",
            node,
            "call the njit function from your async code instead: njit functions are synchronous",
        )

    def visit_Global(self, node):
        self.fail(
            f"a `{type(node).__name__.lower()}` statement",
            node,
            "pass the value in as an argument and return the new value",
        )

    visit_Nonlocal = visit_Global

    def visit_Delete(self, node):
        for t in node.targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Del):
                    self.fail(
                        "`del` of a variable",
                        node,
                        "remove the `del` or assign the variable a new value "
                        "(`del a[i]` on a container is fine)",
                    )
        self.generic_visit(node)

    def visit_ClassDef(self, node):
        self.fail(
            "a class definition inside the function", node, "define the class at module level"
        )

    def visit_FunctionDef(self, node):
        # compiled inline where it is called (closures.py checks what it may read)
        for a in _all_args(node.args):
            self._no_reserved_parameter(a)
        self.nested += 1
        saved, self.tries = self.tries, []
        self.generic_visit(node)
        self.nested -= 1
        self.tries = saved

    def visit_Lambda(self, node):
        for a in _all_args(node.args):
            self._no_reserved_parameter(a)
        self.nested += 1
        self.generic_visit(node)
        self.nested -= 1

    def _no_reserved_parameter(self, a):
        if a.arg == "__jm" or a.arg.startswith("jm_"):
            self.fail(
                f"the parameter name {a.arg!r}",
                a,
                "rename it: njit reserves `__jm` and the `jm_` prefix for its internal variables",
            )

    def visit_SetComp(self, node):
        self.fail("a set comprehension", node, _FILL)

    def visit_DictComp(self, node):
        self.fail("a dict comprehension", node, _FILL)

    def visit_Call(self, node):
        # a generator expression consumed whole by a builtin (comprehensions.py converts it)
        f = node.func
        if (
            isinstance(f, ast.Name)
            and f.id in GENEXP_CONSUMERS
            and f.id not in self.local_names
            and node.args
            and isinstance(node.args[0], ast.GeneratorExp)
            and not node.keywords
            and len(node.args) <= (2 if f.id == "sum" else 1)
        ):
            self.consumed.add(node.args[0])
        self.generic_visit(node)

    def visit_GeneratorExp(self, node):
        if node not in self.consumed:
            self.fail(
                "a generator expression",
                node,
                "pass it whole to list(), sorted(), sum(), min(), max(), any() or all() "
                "(njit converts those), or " + _FILL,
            )
        self.generic_visit(node)

    def visit_Yield(self, node):
        if self.generator and not self.nested:
            self.generic_visit(node)  # (yields.py refuses a yield whose value is used)
            return
        if self.nested:
            self.fail(
                "`yield` (a generator function defined inside njit code)",
                node,
                "define the generator at module level: njit inlines a module-level generator "
                "into the `for` loop (or list/sum/min/max/any/all) that consumes it",
            )
        self.fail(
            "`yield` (a generator function called from Python)",
            node,
            "call it from njit code, in a `for` loop or list/sum/min/max/any/all (njit "
            "inlines a generator into its consumer), or return an array instead: " + _FILL,
        )

    visit_YieldFrom = visit_Yield

    def visit_Match(self, node):
        self.fail("a `match` statement", node, "use an if/elif chain")

    def visit_Raise(self, node):
        if node.exc is None and not (self.tries and self.tries[-1] == "handler"):
            self.fail(
                "a bare `raise`",
                node,
                "njit re-raises only directly in an `except` block (not after another `try` "
                "there, nor in a nested function): raise an exception instance, e.g. "
                "`raise ValueError(...)`",
            )
        self.generic_visit(node)

    def _no_starred_target(self, target, node):
        for n in ast.walk(target):
            if isinstance(n, ast.Starred):
                self.fail(
                    "a starred assignment target",
                    node,
                    "unpack with indexing and slicing instead, e.g. `a, b = t[0], t[1:]`",
                )

    def visit_Assign(self, node):
        for t in node.targets:
            self._no_starred_target(t, node)
        self.generic_visit(node)

    def visit_For(self, node):
        self._no_starred_target(node.target, node)
        self.generic_visit(node)

    def visit_While(self, node):
        self.thunk += 1
        self.visit(node.test)
        self.thunk -= 1
        for s in node.body + node.orelse:
            self.visit(s)

    def visit_Assert(self, node):
        self.visit(node.test)
        if node.msg is not None:
            self.thunk += 1
            self.visit(node.msg)
            self.thunk -= 1

    # ---- expressions turned into thunks: no `:=` inside ------------------------------
    def visit_BoolOp(self, node):
        self.visit(node.values[0])
        self.thunk += 1
        for v in node.values[1:]:
            self.visit(v)
        self.thunk -= 1

    def visit_IfExp(self, node):
        self.visit(node.test)
        self.thunk += 1
        self.visit(node.body)
        self.visit(node.orelse)
        self.thunk -= 1

    def visit_Compare(self, node):
        chained = len(node.ops) > 1
        self.thunk += chained
        self.generic_visit(node)
        self.thunk -= chained

    def visit_NamedExpr(self, node):
        if self.thunk:
            self.fail(
                "an assignment expression (`:=`) in a `while` condition, an operand of "
                "`and`/`or`/`x if c else y`, a chained comparison or an assert message",
                node,
                "assign the value in a separate statement before it",
            )
        self.generic_visit(node)

    def visit_Name(self, node):
        if node.id == "__jm":
            self.fail("the name `__jm`", node, "rename it: njit reserves this name")


def leaves_try(stmts):
    """The first return, or break/continue of a loop outside stmts, in stmts (nested
    functions not entered), or None."""
    todo = [(s, False) for s in reversed(stmts)]
    while todo:
        n, in_loop = todo.pop()
        if isinstance(n, ast.Return) or (isinstance(n, (ast.Break, ast.Continue)) and not in_loop):
            return n
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        inner = in_loop or isinstance(n, (ast.For, ast.While))
        for c in reversed(list(ast.iter_child_nodes(n))):
            if isinstance(c, (ast.stmt, ast.excepthandler)):
                todo.append((c, inner if c in getattr(n, "body", ()) else in_loop))
    return None


def _all_args(args):
    return [
        a
        for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]
        if a is not None
    ]


def check_function(fdef, filename, fname, local_names, generator=False):
    """Raise NjitUnsupportedError for the first unsupported construct in fdef's body, or for
    a local variable whose name njit reserves (`jm_...`). generator: fdef is a generator
    inlined into its consumer, whose own `yield` statements are allowed."""
    c = _Checker(filename, fname, generator)
    c.local_names = set(local_names) | {a.arg for a in _all_args(fdef.args)}
    for s in fdef.body:
        c.visit(s)
    for a in _all_args(fdef.args):
        c._no_reserved_parameter(a)
    for name in local_names:
        if name.startswith("jm_") or name == "__jm":
            node = next(
                (n for n in ast.walk(fdef) if isinstance(n, ast.Name) and n.id == name), fdef
            )
            c.fail(
                f"the variable name {name!r}",
                node,
                "rename it: njit reserves the `jm_` prefix for its internal variables",
            )
