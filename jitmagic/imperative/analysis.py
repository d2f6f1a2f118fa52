"""Dataflow facts about a converted function's body, for the control-flow conversion.

The body is the one `lowering.lower_jumps` produced: structured code (if/for/while, no
break/continue, returns only as the function's last statement), each `for` possibly
carrying an `extra_test` expression (attribute `jm_extra_test`). The user's nested functions
are converted before the function holding them and count as one statement reading their free
variables (closures.py); comprehensions are rejected.

Two analyses:

* liveness (backward, with a fixpoint at each loop's back edge): for every if/for/while,
  `names` = the variables the construct assigns that are needed after it or by it:
      if:    assigned in a branch and (live after the if, or read in a branch before being
             assigned there: the branch function must receive the value before the if);
      loops: assigned in the loop (the for-target included) and live at the loop head (read
             by the test/extra_test, read in the body before being assigned in the same
             iteration, or live after the loop).
  Temporaries (assigned before use in every iteration/branch and dead afterwards) are not in it.
* definite assignment (forward): the reads of a local that may be unbound at that point
  (they get `__jm.check_defined`), and augmented assignments `x += ...` whose `x` may be unbound.
"""

import ast

__all__ = ["Facts", "analyse", "bound_names", "expr_binds", "expr_reads", "target_names"]


def target_names(t):
    """Names an assignment/for target binds, in order (Subscript/Attribute bind none)."""
    if isinstance(t, ast.Name):
        return [t.id]
    if isinstance(t, (ast.Tuple, ast.List)):
        out = []
        for e in t.elts:
            out += target_names(e)
        return out
    if isinstance(t, ast.Starred):
        return target_names(t.value)
    return []


def _target_reads(t):
    """Name loads evaluated when assigning to target t (the a and i of `a[i] = ...`)."""
    if isinstance(t, ast.Name):
        return []
    if isinstance(t, (ast.Tuple, ast.List)):
        out = []
        for e in t.elts:
            out += _target_reads(e)
        return out
    if isinstance(t, ast.Starred):
        return _target_reads(t.value)
    return expr_reads(t)


class _Reads(ast.NodeVisitor):
    def __init__(self):
        self.reads, self.binds = [], []

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load):
            self.reads.append(node)
        else:
            self.binds.append(node.id)

    def visit_NamedExpr(self, node):
        self.visit(node.value)
        self.binds.append(node.target.id)

    def visit_Lambda(self, node):  # generated thunks only: their reads are the enclosing ones
        self.visit(node.body)


def expr_reads(node):
    """Name nodes read (Load) in an expression, in evaluation order (roughly)."""
    if node is None:
        return []
    v = _Reads()
    v.visit(node)
    return v.reads


def expr_binds(node):
    """Names an expression binds (walrus targets)."""
    if node is None:
        return []
    v = _Reads()
    v.visit(node)
    return [b for b in v.binds]


def _simple(s):
    """(Name nodes read, names bound, augmented Name target or None) of a simple statement."""
    if isinstance(s, ast.Assign):
        reads = expr_reads(s.value)
        binds = expr_binds(s.value)
        for t in s.targets:
            reads += _target_reads(t)
            binds += target_names(t)
        return reads, binds, None
    if isinstance(s, ast.AugAssign):
        reads = expr_reads(s.value)
        binds = expr_binds(s.value)
        if isinstance(s.target, ast.Name):
            return reads, binds + [s.target.id], s.target.id
        return _target_reads(s.target) + reads, binds, None
    if isinstance(s, ast.AnnAssign):
        reads = expr_reads(s.value) + _target_reads(s.target)
        binds = expr_binds(s.value)
        if s.value is not None:
            binds += target_names(s.target)
        return reads, binds, None
    if isinstance(s, (ast.Import, ast.ImportFrom)):
        return [], [(a.asname or a.name).split(".")[0] for a in s.names], None
    if isinstance(s, ast.FunctionDef):
        # a generated helper, or the user's nested function (closures.py): its defaults are
        # read here, and so are the variables it reads from this scope (`jm_free`, counted
        # at the def: the free-variable rule keeps them bound once, so this is where it
        # matters)
        reads = [r for d in s.args.defaults + s.args.kw_defaults if d for r in expr_reads(d)]
        reads += [ast.Name(id=n, ctx=ast.Load()) for n in getattr(s, "jm_free", ())]
        return reads, [s.name], None
    reads, binds = [], []
    for child in ast.iter_child_nodes(s):
        if isinstance(child, ast.expr):
            reads += expr_reads(child)
            binds += expr_binds(child)
    return reads, binds, None


def bound_names(stmts, out=None):
    """Names bound anywhere in stmts (nested blocks, tests and for-targets included), in
    source order, each once."""
    out = [] if out is None else out

    def add(names):
        for n in names:
            if n not in out:
                out.append(n)

    for s in stmts:
        if isinstance(s, (ast.If, ast.While)):
            add(expr_binds(s.test))
            bound_names(s.body, out)
            bound_names(s.orelse, out)
        elif isinstance(s, ast.For):
            add(expr_binds(s.iter))
            add(target_names(s.target))
            bound_names(s.body, out)
            bound_names(s.orelse, out)
        else:
            add(_simple(s)[1])
    return out


class Facts:
    """names: {If/For/While node: [carried names]}; checks: Name nodes to wrap in
    check_defined; aug_checks: AugAssign nodes whose Name target may be unbound."""

    def __init__(self):
        self.names = {}
        self.checks = set()
        self.aug_checks = set()


class _Analysis:
    def __init__(self, body, params, more_locals):
        self.params = set(params)
        self.facts = Facts()
        self._cache = {}  # memoised per-node facts (the loop fixpoints revisit nodes)
        self.locals = (set(self.bound(body)) | set(more_locals)) - self.params

    def _memo(self, kind, node, fn):
        key = (kind, node)
        r = self._cache.get(key)
        if r is None:
            r = self._cache[key] = fn(node)
        return r

    def simple(self, s):
        return self._memo("simple", s, _simple)

    def _expr(self, e):
        def scan(e):
            v = _Reads()
            v.visit(e)
            return frozenset(n.id for n in v.reads), frozenset(v.binds), v.binds

        return self._memo("expr", e, scan)

    def reads(self, e):
        return self._expr(e)[0]

    def binds(self, e):
        return self._expr(e)[1]

    def _stmt_bound(self, s):
        if isinstance(s, (ast.If, ast.While)):
            parts = [self._expr(s.test)[2], self.bound(s.body), self.bound(s.orelse)]
        elif isinstance(s, ast.For):
            parts = [
                self._expr(s.iter)[2],
                target_names(s.target),
                self.bound(s.body),
                self.bound(s.orelse),
            ]
        else:
            parts = [self.simple(s)[1]]
        out = []
        for p in parts:
            for n in p:
                if n not in out:
                    out.append(n)
        return out

    def bound(self, stmts):
        """bound_names(stmts), memoised."""
        out = []
        for s in stmts:
            for n in self._memo("bound", s, self._stmt_bound):
                if n not in out:
                    out.append(n)
        return out

    # ---- liveness (backward) ---------------------------------------------------------
    def live_block(self, stmts, out):
        live = set(out)
        for s in reversed(stmts):
            live = self.live_stmt(s, live)
        return live

    def live_stmt(self, s, out):
        if isinstance(s, ast.If):
            lb = self.live_block(s.body, out)
            le = self.live_block(s.orelse, out)
            need = out | lb | le
            self.facts.names[s] = [n for n in self.bound(s.body + s.orelse) if n in need]
            return ((lb | le) - self.binds(s.test)) | self.reads(s.test)
        if isinstance(s, ast.While):
            test_r = self.reads(s.test)
            head = out | test_r
            while True:
                new = out | test_r | self.live_block(s.body, head)
                if new == head:
                    break
                head = new
            self.facts.names[s] = [n for n in self.bound(s.body) if n in head]
            return head
        if isinstance(s, ast.For):
            extra = getattr(s, "jm_extra_test", None)
            ex_r = self.reads(extra) if extra is not None else frozenset()
            tnames = set(target_names(s.target))
            t_reads = {n.id for n in _target_reads(s.target)}
            head = out | ex_r
            while True:
                body_in = self.live_block(s.body, head)
                new = out | ex_r | (body_in - tnames) | t_reads
                if new == head:
                    break
                head = new
            modified = target_names(s.target) + self.bound(s.body)
            self.facts.names[s] = [
                n for i, n in enumerate(modified) if n in head and n not in modified[:i]
            ]
            return (head - self.binds(s.iter)) | self.reads(s.iter)
        reads, binds, aug = self.simple(s)
        if isinstance(s, (ast.Return, ast.Raise)):
            return {n.id for n in reads}
        live = (out - set(binds)) | {n.id for n in reads}
        if aug is not None:  # `x += v` reads x
            live.add(aug)
        return live

    # ---- definite assignment (forward); D is a set, or None where unreachable --------
    def _check(self, name_nodes, defined):
        if defined is None:
            return
        for n in name_nodes:
            if n.id in self.locals and n.id not in defined and not n.id.startswith("jm_"):
                self.facts.checks.add(n)

    def md_block(self, stmts, defined):
        for s in stmts:
            defined = self.md_stmt(s, defined)
        return defined

    def md_stmt(self, s, defined):
        if defined is None:
            return None
        if isinstance(s, ast.If):
            self._check(expr_reads(s.test), defined)
            d1 = defined | set(expr_binds(s.test))
            dt = self.md_block(s.body, d1)
            de = self.md_block(s.orelse, d1)
            if dt is None:
                return de
            if de is None:
                return dt
            return dt & de
        if isinstance(s, ast.While):
            self._check(expr_reads(s.test), defined)
            self.md_block(s.body, defined)
            if isinstance(s.test, ast.Constant) and s.test.value:
                return None  # `while True:` without break: nothing follows
            return defined
        if isinstance(s, ast.For):
            self._check(expr_reads(s.iter), defined)
            d1 = defined | set(expr_binds(s.iter))
            self._check(_target_reads(s.target), d1)
            self.md_block(s.body, d1 | set(target_names(s.target)))
            return d1
        reads, binds, aug = _simple(s)
        self._check(reads, defined)
        if (
            aug is not None
            and aug in self.locals
            and aug not in defined
            and not aug.startswith("jm_")
        ):
            self.facts.aug_checks.add(s)
        if isinstance(s, (ast.Return, ast.Raise)):
            return None
        return defined | set(binds)


def analyse(body, params, locals_=()):
    """Facts for a function body (list of statements) whose parameters are `params`;
    `locals_`: more names local to the function (bound in code the lowering dropped)."""
    a = _Analysis(body, params, locals_)
    a.live_block(body, set())
    a.md_block(body, set(params))
    return a.facts
