"""The AST conversion pass of `jitmagic.njit`: a Python function's control flow rewritten into
calls of a small hook interface (in the manner of TensorFlow's AutoGraph), so that a tracer
can turn loops and branches on traced values into native loops and branches.

    c = convert(fn)                  # parse, rewrite, compile once (cached per code object)
    f = c.build(ops, namespace)      # cheap: a plain function, same signature as fn
    c.source                         # the converted code as text (debugging)

`build` returns a function whose globals are the dict `namespace`, whose free variables are
bound to the current contents of fn's closure cells, whose defaults/kw-defaults are fn's, and
in which the name `__jm` is `ops` (a closure variable, not a global; a function that itself
uses the name `__jm` is rejected). Line numbers of the converted code are the user's: tracebacks
and `sys._getframe().f_lineno` point at the user's file and lines.

Hook contract (every hook gets `line`, the 1-based line in the user's file; loop/branch hooks
get `names`, the tuple of carried variable names, in the order of `init` and of the tuples
the generated functions take and return):

    ops.for_range(start, stop, step, body, init, names, line, extra_test=None)
        `for t in range(...)` (range normalised to three arguments); body(i, *carried) -> tuple
    ops.for_iter(iterable, body, init, names, line, extra_test=None)
        any other `for t in EXPR`; body(x, *carried); a non-Name target is unpacked in body
    ops.for_enumerate(iterable, start, body, init, names, line, extra_test=None)
        `for i, x in enumerate(it[, start])`; body(i, x, *carried)
    ops.for_zip(iterables, body, init, names, line, extra_test=None)
        `for a, b in zip(x, y)` (target length = number of zip arguments); iterables is a
        tuple; body(a, b, *carried). `for i, (a, b) in enumerate(zip(x, y[, start]))` is also
        for_zip: the index is a carried counter named `jm_count_N` (the last of `names`, its
        init the start value) that the body copies to i and increments first thing.
    ops.while_(cond, body, init, names, line)          cond(*carried), body(*carried)
    ops.if_(pred, then, orelse, init, names, line)     then(*carried), orelse(*carried)
    ops.ifexp(pred, then, orelse, line)                zero-argument thunks
    ops.and_(a, b_thunk, line), ops.or_(a, b_thunk, line), ops.not_(x, line)
    ops.raise_(exc, line)          exc is what the user's expression gives (instance or class)
    ops.assert_(test, msg_thunk_or_None, line)
    ops.check_defined(value, name, line) -> value    raises UnboundLocalError if UNDEFINED
    ops.arith(op, a, b, line) -> f   `a / b` (// % ** << >>; "Div=" ... for `name /= b`) is
        f(a, b), called in the user's code: the hook picks f (pyops: the operator itself)
    ops.list_(items, line) -> list     a list display (`[a, b]`; a comprehension is a nested
                                   def that fills one: comprehensions.py)
    ops.append(obj, value, fresh, text, line)   `obj.append(value)` (one positional argument);
                                   fresh: the expression makes a new value no name reaches
                                   (an operator's result, x.copy(), np.zeros(...)), text: its
                                   source (a list of rows copies rows: imperative/rowlists.py)
    ops.UNDEFINED                  the value of a variable not bound yet

`extra_test(*carried)` is evaluated before each iteration (before the next element is taken);
a false result ends the loop. Loop hooks return the final carried tuple; `if_` returns the
carried tuple after the statement. Expression hooks get the line of their own expression.

Carried names (analysis.py): a loop carries the variables it assigns (for-target included)
that are live at its head: read by the test/extra test, read in the body before being
assigned in the same iteration, or live after the loop. An `if` carries the variables its
branches assign that are live after it or read in a branch before being assigned there (the
branch function needs the value from before the `if`). Order: first assignment in the
construct's source (for-target first). Temporaries are not carried.

Internal names (all start with `jm_`; a user variable or parameter named so is rejected):
`jm_retval` (return value, carried; UNDEFINED on paths that have not returned yet),
`jm_retflag` (bool: returned), `jm_break_N`, `jm_continue_N` (bool flags of one loop),
`jm_count_N` (enumerate counter), and non-carried helpers `jm_body_N`, `jm_cond_N`,
`jm_test_N`, `jm_then_N`, `jm_else_N`, `jm_item_N` (loop element parameter when the target is
not a plain uncarried name), `jm_cmp_N` (operands of chained comparisons), `jm_lhs` and
`jm_rhs` (arith's operands). A synthetic `if` (guard after a statement that may
break/continue/return, or a loop's `else`) has the line of the statement it follows (the loop
for an `else`).

Scoping: the converted function is compiled inside a factory whose parameters are `__jm` and
fn's free variables, so those stay closures; fn's own name stays a global (recursion goes
through `namespace`). Generated functions are nested defs: non-carried reads reach them as
closures; every local of the function is first bound to UNDEFINED. Methods: private names are
mangled as in the class, and `super()` becomes `super(__class__, <first parameter>)`.

See lowering.py (break/continue/return/else), analysis.py (which names are carried, which
reads are checked) and controlflow.py (the generated code); checks.py lists what is rejected.
"""

import ast
import builtins
import inspect
import re
import types
import weakref

from jitmagic.imperative.analysis import analyse, bound_names
from jitmagic.imperative.checks import check_function, unsupported
from jitmagic.imperative.closures import (
    check_free_variables,
    free_reads,
    hoist_lambdas,
    nested_defs,
)
from jitmagic.imperative.comprehensions import hoist_comprehensions
from jitmagic.imperative.controlflow import OPS, Expressions, Statements, mark_aliases, preinit
from jitmagic.imperative.lowering import Names, located, lower_jumps
from jitmagic.imperative.tries import convert_tries
from jitmagic.imperative.yields import final_state, rewrite_generator

__all__ = ["Converted", "convert", "convert_generator"]

_RECOGNISED = ("range", "enumerate", "zip")
_templates = weakref.WeakKeyDictionary()  # original code object -> _Template
# a generator's code object -> {(state size, stoppable): _Template of its driver (yields.py)}
_drivers = weakref.WeakKeyDictionary()


class _Template:
    """What conversion produced for one code object (holds no reference to it)."""

    def __init__(self, code, tree, used_builtins, filename):
        self.code = code  # the converted function's code object
        self.tree = tree  # its FunctionDef (unparsed on demand)
        self._source = None
        self.used_builtins = used_builtins
        self.filename = filename

    @property
    def source(self):
        if self._source is None:
            self._source = ast.unparse(self.tree)
            self.tree = None
        return self._source


class Converted:
    """A converted function: `.fn` (the original), `.source` (converted code as text),
    `.build(ops, namespace)`."""

    def __init__(self, template, fn):
        self._t = template
        self.fn = fn

    @property
    def source(self):
        return self._t.source

    @property
    def code(self):
        return self._t.code

    def build(self, ops, namespace):
        """A plain function like fn running the converted code: globals `namespace` (a dict),
        free variables bound to the current contents of fn's closure cells, `__jm` = ops."""
        fn, t = self.fn, self._t
        for b in sorted(t.used_builtins):
            seen = namespace.get(b, getattr(builtins, b))
            # (a namespace may give the builtin's own compiled form, marked `builtin_of`)
            if seen is not getattr(builtins, b) and getattr(seen, "builtin_of", None) is not (
                getattr(builtins, b)
            ):
                raise unsupported(
                    f"a rebound builtin `{b}`",
                    fn.__code__.co_firstlineno,
                    t.filename,
                    fn.__qualname__,
                    f"the name `{b}` in the function's globals is {namespace[b]!r}, not the "
                    f"builtin {b}, but the function was converted using `for ... in "
                    f"{b}(...)` as the builtin: rename the global",
                )
        cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))
        closure = []
        # closure values are seen as the namespace's globals are (ops.module_view: njit's
        # numpy for a captured module, a captured helper compiled inline)
        view = getattr(ops, "module_view", None) or (lambda v: v)
        for n in t.code.co_freevars:
            if n == OPS:
                closure.append(types.CellType(ops))
                continue
            try:
                closure.append(types.CellType(view(cells[n].cell_contents)))
            except ValueError:  # an empty cell stays empty: reading it raises NameError
                closure.append(types.CellType())
        f = types.FunctionType(
            t.code, namespace, fn.__name__, fn.__defaults__, tuple(closure) or None
        )
        f.__kwdefaults__ = dict(fn.__kwdefaults__) if fn.__kwdefaults__ else None
        f.__qualname__ = fn.__qualname__
        f.__module__ = fn.__module__
        f.__doc__ = fn.__doc__
        f.__annotations__ = dict(getattr(fn, "__annotations__", None) or {})
        return f

    def __repr__(self):
        return f"<Converted {self.fn.__qualname__}>"


def convert(fn):
    """The Converted form of the Python function fn; NjitUnsupportedError if fn uses a
    construct njit cannot compile. Cached per code object: converting again is cheap."""
    if not isinstance(fn, types.FunctionType):
        raise TypeError(f"convert() takes a Python function, not {type(fn).__name__} ({fn!r})")
    code = fn.__code__
    t = _templates.get(code)
    if t is None:
        t = _convert(fn)
        _templates[code] = t
    return Converted(t, fn)


def convert_generator(fn, nstate, stoppable):
    """The generator function fn converted into the driver of a consuming loop that carries
    nstate values (yields.py); stoppable: the loop may stop early (break/return)."""
    if not isinstance(fn, types.FunctionType):
        raise TypeError(f"convert_generator() takes a Python function, not {fn!r}")
    per = _drivers.setdefault(fn.__code__, {})
    key = (nstate, stoppable)
    if key not in per:
        per[key] = _convert(fn, driver=key)
    return Converted(per[key], fn)


# ---- parsing ---------------------------------------------------------------------------
def _parse(fn):
    """The FunctionDef of fn with the user's line numbers and columns."""
    code = fn.__code__
    filename = code.co_filename
    if code.co_name == "<lambda>":
        return _parse_lambda(fn)
    try:
        lines, start = inspect.getsourcelines(fn)
    except (OSError, TypeError) as e:
        raise unsupported(
            "a function whose source is not available",
            code.co_firstlineno,
            filename,
            fn.__qualname__,
            f"define it in a file or a notebook cell, not with exec/eval: njit "
            f"reads the function's source ({e})",
        ) from None
    text = "".join(lines)
    indented = text[:1].isspace()
    if indented:  # a method or nested function parses inside `if 1:` with its columns
        text = "if 1:\n" + text
        start -= 1
    shift = 0
    if start > 1:  # blank lines in front: the parse has the user's line numbers
        text = "\n" * (start - 1) + text
    else:
        shift = start - 1
    try:
        tree = ast.parse(text, filename=filename)
    except SyntaxError:
        tree = None
    node = None
    if tree is not None and tree.body:
        node = tree.body[0].body[0] if indented else tree.body[0]
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name != code.co_name:
        raise unsupported(
            "a function whose source does not match its code",
            code.co_firstlineno,
            filename,
            fn.__qualname__,
            "the file changed since the function was defined: reload the module or re-run the cell",
        )
    if shift:
        ast.increment_lineno(node, shift)
    return node


def _parse_lambda(fn):
    """njit(lambda x: ...): the lambda's node, found in its source lines by its line and
    parameters, as the FunctionDef `def <lambda>(x): return ...` (the name is the code's)."""
    code = fn.__code__
    filename = code.co_filename
    refuse = unsupported(
        "a lambda function whose source cannot be told apart",
        code.co_firstlineno,
        filename,
        "<lambda>",
        "define the function with `def` (njit reads a lambda's source from its line, which "
        "must hold one lambda with these parameters)",
    )
    try:
        lines, start = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        raise refuse from None
    text = "".join(lines)
    first = text.split("\n", 1)[0]
    params = list(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount])
    found = []
    # each `lambda` of its first line, parsed as the longest expression starting there (the
    # line may sit inside a call, a dict, an assignment)
    for m in re.finditer(r"\blambda\b", first):
        rest = text[m.start() :]
        for end in range(len(rest), 0, -1):
            try:
                lam = ast.parse(rest[:end], mode="eval").body
            except SyntaxError:
                continue
            if isinstance(lam, ast.Lambda):
                args = lam.args.posonlyargs + lam.args.args + lam.args.kwonlyargs
                if [a.arg for a in args] == params:
                    found.append(lam)
                break
    if len(found) != 1:
        raise refuse
    lam = found[0]
    node = ast.FunctionDef(
        name="<lambda>",
        args=lam.args,
        body=[ast.Return(value=lam.body)],
        decorator_list=[],
        returns=None,
        type_comment=None,
    )
    if "type_params" in ast.FunctionDef._fields:
        node.type_params = []
    ast.copy_location(node, lam)
    ast.fix_missing_locations(node)
    ast.increment_lineno(node, start - 1)
    return node


def _mangle(node, qualname):
    """Private names (`__x`) as Python mangles them inside class `C`: `_C__x`."""
    parts = qualname.split(".")
    if len(parts) < 2 or parts[-2] == "<locals>":
        return
    cls = parts[-2].lstrip("_")
    if not cls:
        return

    def m(n):
        return f"_{cls}{n}" if n.startswith("__") and not n.endswith("__") else n

    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            n.id = m(n.id)
        elif isinstance(n, ast.Attribute):
            n.attr = m(n.attr)
        elif isinstance(n, ast.arg):
            n.arg = m(n.arg)
        elif isinstance(n, ast.alias) and n.asname:
            n.asname = m(n.asname)


def _explicit_super(node, freevars):
    """`super()` -> `super(__class__, self)`: the zero-argument form finds its arguments in
    the frame that calls it, which is a generated function inside a loop or branch."""
    args = node.args.posonlyargs + node.args.args
    if "__class__" not in freevars or not args:
        return
    for n in ast.walk(node):
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name)
            and n.func.id == "super"
            and not n.args
            and not n.keywords
        ):
            n.args = [
                located(ast.Name(id="__class__", ctx=ast.Load()), n),
                located(ast.Name(id=args[0].arg, ctx=ast.Load()), n),
            ]


def _params(args):
    out = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    out += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    return out


def _strip_signature(node):
    """No decorators, annotations or default expressions: build() installs fn's own."""
    node.decorator_list = []
    node.returns = None
    args = node.args
    for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
        if a is not None:
            a.annotation = None
    args.defaults = [located(ast.Constant(None), d) for d in args.defaults]
    args.kw_defaults = [
        None if d is None else located(ast.Constant(None), d) for d in args.kw_defaults
    ]


# ---- the conversion --------------------------------------------------------------------
def _convert(fn, driver=None):
    code = fn.__code__
    filename = code.co_filename
    node = _parse(fn)
    if isinstance(node, ast.AsyncFunctionDef):
        raise unsupported(
            "an `async def` function",
            node.lineno,
            filename,
            fn.__qualname__,
            "call the njit function from your async code instead: njit functions are synchronous",
        )
    _mangle(node, fn.__qualname__)
    _explicit_super(node, code.co_freevars)
    _strip_signature(node)
    params = _params(node.args)
    nparams = (
        code.co_argcount
        + code.co_kwonlyargcount
        + bool(code.co_flags & inspect.CO_VARARGS)
        + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    )
    if params != list(code.co_varnames[:nparams]):
        raise unsupported(
            "a function whose source does not match its code",
            node.lineno,
            filename,
            fn.__qualname__,
            "the file changed since the function was defined: reload the module or re-run the cell",
        )
    user_locals = [n for n in bound_names(node.body) if n not in params]
    check_function(node, filename, fn.__qualname__, user_locals, generator=driver is not None)
    mark_aliases(node)
    if driver is not None:
        rewrite_generator(node, *driver, filename, fn.__qualname__)
        params = _params(node.args)
    convert_tries(node, filename, fn.__qualname__)

    used = {OPS, *params, *code.co_freevars}
    used.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name))
    names = Names(used)
    node.body = hoist_lambdas(node.body, names)
    genexp_builtins = set()
    node.body = hoist_comprehensions(
        node.body, names, set(params) | set(bound_names(node.body)), genexp_builtins
    )
    check_free_variables(node, filename, fn.__qualname__)
    checks, used_builtins = _convert_scope(
        node, params, names, set(code.co_freevars), None if driver is None else driver[0]
    )
    Expressions(names, checks, keep_asserts=__debug__).visit(node)

    factory = ast.FunctionDef(
        name="__jm_factory",
        args=ast.arguments(
            posonlyargs=[],
            args=[ast.arg(arg=a) for a in (OPS, *code.co_freevars)],
            vararg=None,
            kwonlyargs=[],
            kw_defaults=[],
            kwarg=None,
            defaults=[],
        ),
        # `global name`: the function's own name inside it stays a global (recursion)
        # instead of the factory's local bound by the def
        body=([] if node.name in code.co_freevars else [ast.Global(names=[node.name])])
        + [node, ast.Return(value=ast.Name(id=node.name, ctx=ast.Load()))],
        decorator_list=[],
        returns=None,
        type_comment=None,
    )
    if "type_params" in ast.FunctionDef._fields:
        factory.type_params = []
    located(factory, node.lineno)
    module = ast.Module(body=[factory], type_ignores=[])
    try:
        module_code = compile(module, filename, "exec", dont_inherit=True)
    except (TypeError, ValueError):  # a generated node without a position (should not be)
        module_code = compile(
            ast.fix_missing_locations(module), filename, "exec", dont_inherit=True
        )
    factory_code = next(c for c in module_code.co_consts if isinstance(c, types.CodeType))
    inner = next(
        c
        for c in factory_code.co_consts
        if isinstance(c, types.CodeType) and c.co_name == node.name
    )
    return _Template(inner, node, frozenset(used_builtins | genexp_builtins), filename)


def _convert_scope(node, params, names, shadowed, driver_state=None):
    """Convert one function's body in place, its nested functions' first (each becomes
    converted code nested where its def was, closures.py). Returns (the reads to check for
    being bound, the builtins the conversion relied on); the expression-level pass runs
    once, afterwards, over the whole function. driver_state: the number of state variables
    of a generator's driver (yields.py), whose one final return gives them."""
    checks, used_builtins = set(), set()
    scope_names = set(bound_names(node.body)) | set(params)
    for inner in nested_defs(node.body):
        inner.jm_free = free_reads(inner)
        c, u = _convert_scope(inner, _params(inner.args), names, shadowed | scope_names)
        checks |= c
        used_builtins |= u
    user_locals = [n for n in bound_names(node.body) if n not in params]
    prologue, _ = lower_jumps(node, names)
    if driver_state is not None:
        if node.body and isinstance(node.body[-1], ast.Return):
            node.body[-1].value = located(final_state(driver_state), node.body[-1])
        else:
            end = getattr(node.body[-1], "end_lineno", None) if node.body else None
            node.body.append(
                located(ast.Return(value=final_state(driver_state)), end or node.lineno)
            )
    facts = analyse(node.body, params, user_locals)
    # locals bound only in unreachable code the lowering dropped stay locals: reading them
    # raises UnboundLocalError, as in Python, not NameError
    outer_locals = user_locals + [
        n for n in bound_names(node.body) if n not in params and n not in user_locals
    ]
    recognised = set(_RECOGNISED) - set(outer_locals) - set(params) - shadowed
    st = Statements(names, facts, recognised)
    body = st.block(node.body)
    doc = []
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        doc = [body.pop(0)]
    node.body = doc + preinit(outer_locals, node.lineno) + prologue + body
    return checks | facts.checks, used_builtins | st.used_builtins
