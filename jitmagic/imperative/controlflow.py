"""if/for/while turned into calls of the hooks, and the expression-level conversions.

Statements: every `if`, `for` and `while` of the (lowered, analysed) body becomes nested
function definitions (branches, loop body, loop condition, extra test) and one hook call
whose result is unpacked into the carried names:

    (a, b) = __jm.if_(test, jm_then_1, jm_else_2, (a, b), ('a', 'b'), 12)

The generated functions take the carried names as parameters and return them as a tuple;
everything else they read reaches them as closures. Each begins by binding its other locals
to `__jm.UNDEFINED`, so that the `init` tuple of a construct inside it can name a variable
not bound yet.

Expressions: `a and b` / `a or b` -> `__jm.and_(a, lambda: b, line)` / `__jm.or_(...)`
(longer chains nest to the right), `not x` -> `__jm.not_(x, line)`, `x if c else y` ->
`__jm.ifexp(c, lambda: x, lambda: y, line)`, `a < b < c` -> `and_` of the comparisons with
every operand evaluated once and in Python's order, `assert c, m` ->
`__jm.assert_(c, lambda: m, line)` (None without a message), `raise E` ->
`__jm.raise_(E, line)` (a `from` clause is dropped), and reads of a local the analysis
cannot prove bound -> `__jm.check_defined(x, 'x', line)`.
"""

import ast

from jitmagic.imperative.lowering import located

__all__ = ["OPS", "Expressions", "Statements", "direct_stores", "hook", "preinit"]

OPS = "__jm"


def _load(n):
    return ast.Name(id=n, ctx=ast.Load())


def _store(n):
    return ast.Name(id=n, ctx=ast.Store())


def hook(name, args, keywords=(), ref=None):
    call = ast.Call(
        func=ast.Attribute(value=_load(OPS), attr=name, ctx=ast.Load()),
        args=list(args),
        keywords=list(keywords),
    )
    return located(call, ref) if ref is not None else call


def mark_aliases(fn_node):
    """Mark the user's `y = x` statements (before the conversion adds its own): the hook
    makes an array x memory both names share."""
    for n in ast.walk(fn_node):
        if (
            isinstance(n, ast.Assign)
            and len(n.targets) == 1
            and isinstance(n.targets[0], ast.Name)
            and isinstance(n.value, ast.Name)
            and n.targets[0].id != n.value.id
        ):
            n.jm_alias = True


def _is_hook_call(node):
    f = node.func if isinstance(node, ast.Call) else None
    return isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == OPS


def _arguments(params):
    return ast.arguments(
        posonlyargs=[],
        args=[ast.arg(arg=p) for p in params],
        vararg=None,
        kwonlyargs=[],
        kw_defaults=[],
        kwarg=None,
        defaults=[],
    )


def _lambda(body, params=()):
    return ast.Lambda(args=_arguments(params), body=body)


def _tuple(names):
    return ast.Tuple(elts=[_load(n) for n in names], ctx=ast.Load())


def _names_const(names):
    return ast.Tuple(elts=[ast.Constant(n) for n in names], ctx=ast.Load())


class _Stores(ast.NodeVisitor):
    def __init__(self):
        self.names = []

    def add(self, n):
        if n not in self.names:
            self.names.append(n)

    def visit_Name(self, node):
        if not isinstance(node.ctx, ast.Load):
            self.add(node.id)

    def visit_NamedExpr(self, node):
        self.visit(node.value)
        self.add(node.target.id)

    def visit_Import(self, node):
        for a in node.names:
            self.add((a.asname or a.name).split(".")[0])

    visit_ImportFrom = visit_Import

    def visit_FunctionDef(self, node):
        pass  # its own scope (its name is bound by the def itself)

    def visit_Lambda(self, node):
        pass


def direct_stores(stmts):
    """Names the statements bind in their own scope (not inside nested defs/lambdas)."""
    v = _Stores()
    for s in stmts:
        v.visit(s)
    return v.names


def preinit(names, ref):
    """`a = b = __jm.UNDEFINED`, or [] when names is empty."""
    if not names:
        return []
    undefined = ast.Attribute(value=_load(OPS), attr="UNDEFINED", ctx=ast.Load())
    return [located(ast.Assign(targets=[_store(n) for n in names], value=undefined), ref)]


def _make_fn(name, params, body, ref):
    pre = preinit([n for n in direct_stores(body) if n not in params], ref)
    fd = ast.FunctionDef(
        name=name,
        args=_arguments(params),
        body=pre + body,
        decorator_list=[],
        returns=None,
        type_comment=None,
    )
    if "type_params" in ast.FunctionDef._fields:
        fd.type_params = []
    return located(fd, ref)


def _ret(names, ref):
    return located(ast.Return(value=_tuple(names)), ref)


def _bind(names, call, ref):
    if names:
        target = ast.Tuple(elts=[_store(n) for n in names], ctx=ast.Store())
        return located(ast.Assign(targets=[target], value=call), ref)
    return located(ast.Expr(value=call), ref)


def _plain_call(node, fname, recognised):
    """Whether node is `fname(...)` with fname the builtin (not shadowed) and no starred
    arguments."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == fname
        and fname in recognised
        and not any(isinstance(a, ast.Starred) for a in node.args)
        and not any(k.arg is None for k in node.keywords)
    )


class Statements:
    """The statement-level conversion of a function body, given the analysis facts."""

    def __init__(self, names, facts, recognised):
        self.names = names  # lowering.Names
        self.facts = facts  # analysis.Facts
        self.recognised = recognised  # builtins (range/enumerate/zip) not shadowed
        self.used_builtins = set()  # the ones the conversion relied on

    def block(self, stmts):
        out = []
        for s in stmts:
            if isinstance(s, ast.If):
                out += self.if_(s)
            elif isinstance(s, ast.For):
                out += self.for_(s)
            elif isinstance(s, ast.While):
                out += self.while_(s)
            else:
                if s in self.facts.aug_checks:
                    n = s.target.id
                    out.append(
                        located(
                            ast.Expr(
                                value=hook(
                                    "check_defined",
                                    [_load(n), ast.Constant(n), ast.Constant(s.lineno)],
                                )
                            ),
                            s.target,
                        )
                    )
                out.append(s)
        return out

    def if_(self, s):
        names = self.facts.names[s]
        refusals = getattr(s, "jm_try_refusals", {})  # (a converted `try`: tries.py)
        for n in names:
            if n in refusals:
                raise refusals[n]
        then = _make_fn(
            self.names.fresh("jm_then"), names, self.block(s.body) + [_ret(names, s)], s
        )
        orelse = _make_fn(
            self.names.fresh("jm_else"), names, self.block(s.orelse) + [_ret(names, s)], s
        )
        call = hook(
            "if_",
            [
                s.test,
                _load(then.name),
                _load(orelse.name),
                _tuple(names),
                _names_const(names),
                ast.Constant(s.lineno),
            ],
        )
        return [then, orelse, _bind(names, call, s)]

    def while_(self, s):
        names = self.facts.names[s]
        cond = _make_fn(
            self.names.fresh("jm_cond"), names, [located(ast.Return(value=s.test), s.test)], s
        )
        body = _make_fn(
            self.names.fresh("jm_body"), names, self.block(s.body) + [_ret(names, s)], s
        )
        call = hook(
            "while_",
            [
                _load(cond.name),
                _load(body.name),
                _tuple(names),
                _names_const(names),
                ast.Constant(s.lineno),
            ],
        )
        return [cond, body, _bind(names, call, s)]

    def _elem(self, target, taken, prologue):
        """The body parameter receiving one loop element bound to target."""
        if isinstance(target, ast.Name) and target.id not in taken:
            taken.add(target.id)
            return target.id
        p = self.names.fresh("jm_item")
        taken.add(p)
        prologue.append(located(ast.Assign(targets=[target], value=_load(p)), target))
        return p

    def for_(self, s):
        names = list(self.facts.names[s])
        init = _tuple(names)
        it, target = s.iter, s.target
        taken = set(names)
        prologue = []
        extra = getattr(s, "jm_extra_test", None)
        pair = isinstance(target, (ast.Tuple, ast.List)) and len(target.elts) == 2
        if _plain_call(it, "range", self.recognised) and not it.keywords and 1 <= len(it.args) <= 3:
            self.used_builtins.add("range")
            a = it.args
            start, stop, step = (
                (located(ast.Constant(0), it), a[0], located(ast.Constant(1), it))
                if len(a) == 1
                else (a[0], a[1], located(ast.Constant(1), it))
                if len(a) == 2
                else tuple(a)
            )
            params = [self._elem(target, taken, prologue)]
            hook_name, lead = "for_range", [start, stop, step]
        elif (
            _plain_call(it, "enumerate", self.recognised)
            and pair
            and self._enumerate_args(it) is not None
        ):
            self.used_builtins.add("enumerate")
            iterable, start = self._enumerate_args(it)
            inner = target.elts[1]
            if (
                _plain_call(iterable, "zip", self.recognised)
                and not iterable.keywords
                and iterable.args
                and isinstance(inner, (ast.Tuple, ast.List))
                and len(inner.elts) == len(iterable.args)
            ):
                # enumerate(zip(...)): for_zip with the index as a carried counter
                self.used_builtins.add("zip")
                counter = self.names.fresh("jm_count")
                params = [self._elem(e, taken, prologue) for e in inner.elts]
                prologue[:0] = [
                    located(
                        ast.Assign(targets=[target.elts[0]], value=_load(counter)), target.elts[0]
                    ),
                    located(
                        ast.Assign(
                            targets=[_store(counter)],
                            value=ast.BinOp(
                                left=_load(counter), op=ast.Add(), right=ast.Constant(1)
                            ),
                        ),
                        s,
                    ),
                ]
                init = ast.Tuple(elts=[_load(n) for n in names] + [start], ctx=ast.Load())
                names.append(counter)
                hook_name = "for_zip"
                lead = [located(ast.Tuple(elts=list(iterable.args), ctx=ast.Load()), iterable)]
            else:
                params = [self._elem(e, taken, prologue) for e in target.elts]
                hook_name, lead = "for_enumerate", [iterable, start]
        elif (
            _plain_call(it, "zip", self.recognised)
            and not it.keywords
            and it.args
            and isinstance(target, (ast.Tuple, ast.List))
            and len(target.elts) == len(it.args)
        ):
            self.used_builtins.add("zip")
            params = [self._elem(e, taken, prologue) for e in target.elts]
            hook_name = "for_zip"
            lead = [located(ast.Tuple(elts=list(it.args), ctx=ast.Load()), it)]
        else:
            params = [self._elem(target, taken, prologue)]
            hook_name, lead = "for_iter", [it]
        body = _make_fn(
            self.names.fresh("jm_body"),
            params + names,
            prologue + self.block(s.body) + [_ret(names, s)],
            s,
        )
        out = [body]
        keywords = []
        if extra is not None:
            test = _make_fn(
                self.names.fresh("jm_test"), names, [located(ast.Return(value=extra), s)], s
            )
            out.append(test)
            keywords.append(ast.keyword(arg="extra_test", value=_load(test.name)))
        call = hook(
            hook_name,
            lead + [_load(body.name), init, _names_const(names), ast.Constant(s.lineno)],
            keywords,
        )
        out.append(_bind(names, call, s))
        return out

    @staticmethod
    def _enumerate_args(call):
        """(iterable, start) of a plain enumerate(...) call, or None if unusual."""
        args, kw = call.args, {k.arg: k.value for k in call.keywords}
        if set(kw) - {"start"} or not 1 <= len(args) + len(kw) <= 2 or not args:
            return None
        if len(args) == 2:
            if kw:
                return None
            return args[0], args[1]
        return args[0], kw.get("start") or located(ast.Constant(0), call)


_ORDERED = ("Lt", "LtE", "Gt", "GtE", "Eq", "NotEq")
_ARITH = ("Div", "FloorDiv", "Mod", "Pow", "LShift", "RShift")


# calls that give a new array or list (never one of their arguments, nor a view of one)
_MAKERS = {
    "array", "zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like",
    "full_like", "arange", "linspace", "copy", "concatenate", "vstack", "hstack", "stack",
}  # fmt: skip
_NEW_METHODS = {"copy", "astype", "flatten", "tolist"}


def _fresh(e):
    """Does the expression e make a new value that no name reaches (an operator's result, a
    display, a comprehension, x.copy(), np.zeros(...))?"""
    if isinstance(e, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.List, ast.Tuple, ast.Constant)):
        return True
    if not isinstance(e, ast.Call) or any(k.arg == "copy" for k in e.keywords):
        return False
    f = e.func
    if isinstance(f, ast.Name):
        return f.id.startswith("jm_listcomp") or f.id == "list"
    if isinstance(f, ast.Attribute):
        if f.attr in _NEW_METHODS:
            return True
        return (
            isinstance(f.value, ast.Name) and f.value.id in ("np", "numpy") and (f.attr in _MAKERS)
        )
    return False


class Expressions(ast.NodeTransformer):
    """The expression-level conversions (module docstring); run over the whole converted
    function after the statement-level one."""

    def __init__(self, names, checks, keep_asserts=True):
        self.names = names
        self.checks = checks
        self.keep_asserts = keep_asserts

    def visit_Name(self, node):
        if node in self.checks:
            return located(
                hook("check_defined", [node, ast.Constant(node.id), ast.Constant(node.lineno)]),
                node,
            )
        return node

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        name = "and_" if isinstance(node.op, ast.And) else "or_"
        result = node.values[-1]
        for v in reversed(node.values[:-1]):
            result = hook(name, [v, _lambda(result), ast.Constant(node.lineno)])
        return located(result, node)

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return located(hook("not_", [node.operand, ast.Constant(node.lineno)]), node)
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        op = type(node.op).__name__
        if op not in _ARITH:
            return node
        return located(self._arith(op, node.left, node.right, node.lineno), node)

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        op = type(node.op).__name__
        if op not in _ARITH or not isinstance(node.target, ast.Name):
            return node
        value = self._arith(op + "=", _load(node.target.id), node.value, node.lineno)
        return located(ast.Assign(targets=[_store(node.target.id)], value=value), node)

    @staticmethod
    def _arith(op, left, right, line):
        """An operator that can raise on two Python numbers (1.5 % 0.0), as
        `(lambda l, r: ops.arith(op, l, r, line)(l, r))(left, right)`: the hook picks the
        function applied (the operator itself, called here in the user's code, where sizes
        tell the user's arithmetic from jitmagic's by the caller)."""
        a, b = "jm_lhs", "jm_rhs"
        pick = hook("arith", [ast.Constant(op), _load(a), _load(b), ast.Constant(line)])
        body = ast.Call(func=pick, args=[_load(a), _load(b)], keywords=[])
        return ast.Call(func=_lambda(body, [a, b]), args=[left, right], keywords=[])

    def visit_IfExp(self, node):
        self.generic_visit(node)
        return located(
            hook(
                "ifexp",
                [node.test, _lambda(node.body), _lambda(node.orelse), ast.Constant(node.lineno)],
            ),
            node,
        )

    def visit_Import(self, node):
        # a module imported inside the function is seen as njit code sees its globals
        # (`import numpy as np` inside: njit's numpy; `import jitmagic.numba as nb`: its prange)
        out = [node]
        for a in node.names:
            bound = a.asname or a.name.split(".")[0]
            if a.name == "*":
                continue
            out.append(
                located(
                    ast.Assign(
                        targets=[ast.Name(id=bound, ctx=ast.Store())],
                        value=hook("module_view", [ast.Name(id=bound, ctx=ast.Load())]),
                    ),
                    node,
                )
            )
        return out

    visit_ImportFrom = visit_Import

    def visit_Assign(self, node):
        self.generic_visit(node)
        if getattr(node, "jm_alias", False):  # `y = x`: one array, two names (trace.alias)
            node.value = located(hook("alias", [node.value]), node)
            return node
        # `a, b = x`: an array whose length the running code knows is unpacked by the hook
        # (Python's unpacking would ask its length while tracing)
        (target,) = node.targets if len(node.targets) == 1 else (None,)
        if (
            not isinstance(target, (ast.Tuple, ast.List))
            or any(isinstance(e, ast.Starred) for e in target.elts)
            or isinstance(node.value, (ast.Tuple, ast.List))
            or _is_hook_call(node.value)  # (the conversion's own: a construct's carried values)
        ):
            return node
        n = ast.Constant(len(target.elts))
        node.value = located(hook("unpack", [node.value, n, ast.Constant(node.lineno)]), node)
        return node

    def visit_Call(self, node):
        # `x.append(e)`: whether e makes a new value (which a list of rows may copy: nothing
        # else reaches it) is known from its form only; the hook gets it (rowlists.py)
        f = node.func
        if not (
            isinstance(f, ast.Attribute)
            and f.attr == "append"
            and len(node.args) == 1
            and not node.keywords
            and not isinstance(node.args[0], ast.Starred)
            and not _is_hook_call(node)
        ):
            return self.generic_visit(node)
        fresh = getattr(node, "jm_fresh", False) or _fresh(node.args[0])
        text = ast.unparse(node.args[0])
        self.generic_visit(node)
        args = [f.value, node.args[0], ast.Constant(fresh), ast.Constant(text)]
        return located(hook("append", [*args, ast.Constant(node.lineno)]), node)

    def visit_List(self, node):
        self.generic_visit(node)
        if not isinstance(node.ctx, ast.Load):
            return node
        return located(hook("list_", [node, ast.Constant(node.lineno)]), node)

    def visit_Subscript(self, node):
        self.generic_visit(node)
        # a tuple indexed by a value the running code computes (t[i]) picks at run time
        if not isinstance(node.ctx, ast.Load) or isinstance(node.slice, (ast.Constant, ast.Slice)):
            return node
        return located(hook("getitem", [node.value, node.slice, ast.Constant(node.lineno)]), node)

    def visit_Dict(self, node):
        # a display may make a table the running code fills (imperative/dicts.py): a hook
        self.generic_visit(node)
        if any(k is None for k in node.keys):  # (`**other` inside: Python's own dict)
            return node
        keys = ast.Tuple(elts=list(node.keys), ctx=ast.Load())
        values = ast.Tuple(elts=list(node.values), ctx=ast.Load())
        return located(hook("dict_display", [keys, values, ast.Constant(node.lineno)]), node)

    def visit_Set(self, node):
        self.generic_visit(node)
        if any(isinstance(e, ast.Starred) for e in node.elts):
            return node
        items = ast.Tuple(elts=list(node.elts), ctx=ast.Load())
        return located(hook("set_display", [items, ast.Constant(node.lineno)]), node)

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) == 1:
            # tuples compare element by element (lexicographically) on traced values too (a
            # tuple written out, or held by a name, an attribute, an index, a call's result)
            op = type(node.ops[0]).__name__
            # (`x is None` on a variable that may be None where the code runs: optional.py)
            is_none = (
                op in ("Is", "IsNot")
                and isinstance(node.comparators[0], ast.Constant)
                and node.comparators[0].value is None
                and not isinstance(node.left, ast.Constant)
            )
            if (op in _ORDERED and not isinstance(node.left, ast.Constant)) or (
                op in ("In", "NotIn") or is_none
            ):
                if isinstance(node.comparators[0], ast.Constant) and not is_none:
                    return node
                return located(
                    hook(
                        "compare",
                        [
                            ast.Constant(type(node.ops[0]).__name__),
                            node.left,
                            node.comparators[0],
                            ast.Constant(node.lineno),
                        ],
                    ),
                    node,
                )
            return node
        line = ast.Constant(node.lineno)

        def rest(prev, ops, comps):
            if len(ops) == 1:
                return ast.Compare(left=_load(prev), ops=[ops[0]], comparators=[comps[0]])
            m = self.names.fresh("jm_cmp")
            return ast.Call(
                func=_lambda(
                    hook(
                        "and_",
                        [
                            ast.Compare(left=_load(prev), ops=[ops[0]], comparators=[_load(m)]),
                            _lambda(rest(m, ops[1:], comps[1:])),
                            line,
                        ],
                    ),
                    [m],
                ),
                args=[comps[0]],
                keywords=[],
            )

        first, second = self.names.fresh("jm_cmp"), self.names.fresh("jm_cmp")
        call = ast.Call(
            func=_lambda(
                hook(
                    "and_",
                    [
                        ast.Compare(
                            left=_load(first), ops=[node.ops[0]], comparators=[_load(second)]
                        ),
                        _lambda(rest(second, node.ops[1:], node.comparators[1:])),
                        line,
                    ],
                ),
                [first, second],
            ),
            args=[node.left, node.comparators[0]],
            keywords=[],
        )
        return located(call, node)

    def visit_Assert(self, node):
        if not self.keep_asserts:  # python -O: asserts are stripped, as Python does
            return located(ast.Pass(), node)
        self.generic_visit(node)
        msg = _lambda(node.msg) if node.msg is not None else ast.Constant(None)
        return located(
            ast.Expr(value=hook("assert_", [node.test, msg, ast.Constant(node.lineno)])), node
        )

    def visit_Raise(self, node):
        self.generic_visit(node)
        if node.exc is None:  # (directly in an `except` block: checks.py)
            return located(ast.Expr(value=hook("reraise", [ast.Constant(node.lineno)])), node)
        return located(ast.Expr(value=hook("raise_", [node.exc, ast.Constant(node.lineno)])), node)
