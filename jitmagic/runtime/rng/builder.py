"""A thin layer over llvmlite.ir for writing the random-number functions (jitmagic.runtime.rng).

Bit-exactness with NumPy's C code depends on doing the same IEEE operations in the same order,
so values are wrapped (Val) to let a formula be written as in C: `a * b + c` is (a*b)+c, an int64
meeting a double is converted as C converts it (signed), Python numbers become constants of the
other operand's type, and comparisons are C's (ordered, except !=). No fast-math flag is ever
set, so LLVM neither reassociates nor contracts into FMA (NumPy's distributions are compiled for
baseline x86-64, without FMA). Transcendental functions are glibc's (the functions NumPy calls),
declared as plain external calls; floor, ceil, fabs and sqrt are exact and use LLVM intrinsics.

Mutable variables are stack slots (Fn.var); LLVM's SROA turns them into registers.
"""

from __future__ import annotations

from contextlib import contextmanager

from llvmlite import ir

from jitmagic.runtime.rng.bitgen import (
    BITGEN_NEXT_DOUBLE,
    BITGEN_NEXT_UINT32,
    BITGEN_NEXT_UINT64,
    BITGEN_STATE,
)

F64 = ir.DoubleType()
I64 = ir.IntType(64)
I32 = ir.IntType(32)
I8 = ir.IntType(8)
I1 = ir.IntType(1)
I128 = ir.IntType(128)
PTR = ir.PointerType()

_LIBM = ("exp", "log", "log1p", "expm1", "pow", "cos", "acos", "fmod")
_INTRINSIC = {
    "floor": "llvm.floor.f64",
    "ceil": "llvm.ceil.f64",
    "fabs": "llvm.fabs.f64",
    "sqrt": "llvm.sqrt.f64",
}


class Val:
    """An SSA value of a Fn with C's arithmetic (double, int64/int32 signed, i1)."""

    __slots__ = ("f", "v")

    def __init__(self, f: Fn, v):
        self.f, self.v = f, v

    @property
    def ty(self):
        return self.v.type

    def _pair(self, other):
        b = self.f.b
        a, o = self.v, other.v if isinstance(other, Val) else other
        if not isinstance(other, Val):
            ty = a.type
            if isinstance(o, float) and ty != F64:  # C: an int meeting a double
                return b.sitofp(a, F64), ir.Constant(F64, o), F64
            return a, const(ty, o), ty
        if a.type == o.type:
            return a, o, a.type
        if a.type == F64 and isinstance(o.type, ir.IntType):
            return a, b.sitofp(o, F64), F64
        if o.type == F64 and isinstance(a.type, ir.IntType):
            return b.sitofp(a, F64), o, F64
        raise TypeError(f"mixed operands {a.type} and {o.type}")

    def _arith(self, other, fop, iop, swap=False):
        a, o, ty = self._pair(other)
        if swap:
            a, o = o, a
        b = self.f.b
        return Val(self.f, getattr(b, fop if ty == F64 else iop)(a, o))

    def __add__(self, o):
        return self._arith(o, "fadd", "add")

    def __radd__(self, o):
        return self._arith(o, "fadd", "add", True)

    def __sub__(self, o):
        return self._arith(o, "fsub", "sub")

    def __rsub__(self, o):
        return self._arith(o, "fsub", "sub", True)

    def __mul__(self, o):
        return self._arith(o, "fmul", "mul")

    def __rmul__(self, o):
        return self._arith(o, "fmul", "mul", True)

    def __truediv__(self, o):
        return self._arith(o, "fdiv", "sdiv")

    def __rtruediv__(self, o):
        return self._arith(o, "fdiv", "sdiv", True)

    def __and__(self, o):
        return self._arith(o, None, "and_")

    def __or__(self, o):
        return self._arith(o, None, "or_")

    def __invert__(self):  # logical not of an i1
        return Val(self.f, self.f.b.not_(self.v))

    def __neg__(self):
        b = self.f.b
        return Val(self.f, b.fneg(self.v) if self.ty == F64 else b.neg(self.v))

    def _cmp(self, other, op, swap=False):
        a, o, ty = self._pair(other)
        if swap:
            a, o = o, a
        b = self.f.b
        if ty == F64:
            return Val(
                self.f, b.fcmp_unordered(op, a, o) if op == "!=" else b.fcmp_ordered(op, a, o)
            )
        return Val(self.f, b.icmp_signed(op, a, o))

    def __lt__(self, o):
        return self._cmp(o, "<")

    def __le__(self, o):
        return self._cmp(o, "<=")

    def __gt__(self, o):
        return self._cmp(o, ">")

    def __ge__(self, o):
        return self._cmp(o, ">=")

    def eq(self, o):
        return self._cmp(o, "==")

    def ne(self, o):
        return self._cmp(o, "!=")

    # unsigned integer operations (C's uint64_t / uint32_t)
    def ult(self, o):
        return self._ucmp(o, "<")

    def ule(self, o):
        return self._ucmp(o, "<=")

    def ugt(self, o):
        return self._ucmp(o, ">")

    def _ucmp(self, other, op):
        a, o, _ = self._pair(other)
        return Val(self.f, self.f.b.icmp_unsigned(op, a, o))

    def lshr(self, n):
        return Val(self.f, self.f.b.lshr(self.v, ir.Constant(self.ty, n)))

    def shl(self, n):
        return Val(self.f, self.f.b.shl(self.v, ir.Constant(self.ty, n)))

    def lshr_v(self, o):
        return Val(self.f, self.f.b.lshr(self.v, o.v))

    def urem(self, o):
        a, o, _ = self._pair(o)
        return Val(self.f, self.f.b.urem(a, o))

    def to_f64(self):  # signed integer -> double
        return Val(self.f, self.f.b.sitofp(self.v, F64))

    def u_to_f64(self):  # unsigned integer -> double
        return Val(self.f, self.f.b.uitofp(self.v, F64))

    def to_i64(self):
        """C's (int64_t) of a double as x86-64 does it (cvttsd2si): truncation toward zero,
        and INT64_MIN for NaN and values out of range (LLVM's fptosi would be poison there;
        NumPy reaches such values, e.g. floor(log(0)) before a rejection)."""
        b = self.f.b
        ok = b.and_(
            b.fcmp_ordered(">=", self.v, ir.Constant(F64, -9.223372036854775808e18)),
            b.fcmp_ordered("<", self.v, ir.Constant(F64, 9.223372036854775808e18)),
        )
        safe = b.select(ok, self.v, ir.Constant(F64, 0.0))
        return Val(self.f, b.select(ok, b.fptosi(safe, I64), ir.Constant(I64, -(1 << 63))))

    def zext(self, ty):
        return Val(self.f, self.f.b.zext(self.v, ty))

    def sext(self, ty):
        return Val(self.f, self.f.b.sext(self.v, ty))

    def trunc(self, ty):
        return Val(self.f, self.f.b.trunc(self.v, ty))

    def select(self, a, b):
        f = self.f
        return Val(f, f.b.select(self.v, f.val(a, b).v, f.val(b, a).v))


class Var:
    """A mutable local (a stack slot)."""

    __slots__ = ("f", "p", "ty")

    def __init__(self, f, ty):
        self.f, self.ty = f, ty
        self.p = f.entry_b.alloca(ty)

    def get(self) -> Val:
        return Val(self.f, self.f.b.load(self.p))

    def set(self, v):
        self.f.b.store(self.f.val(v, self.ty).v, self.p)


class Fn:
    """One function being written: blocks, locals, calls, and the bit generator's functions."""

    def __init__(self, module: ir.Module, fn: ir.Function, bitgen_next=None):
        self.m, self.fn = module, fn
        entry = fn.append_basic_block("entry")
        self.entry_b = ir.IRBuilder(entry)
        body = fn.append_basic_block("body")
        self.b = ir.IRBuilder(body)
        self.entry_b.branch(body)
        self.entry_b.position_at_start(entry)
        self.args = [Val(self, a) for a in fn.args]
        self._next = bitgen_next

    # constants and values
    def val(self, x, like=F64) -> Val:
        if isinstance(x, Val):
            return x
        ty = like.ty if isinstance(like, Val) else like
        return Val(self, const(ty, x))

    def d(self, x) -> Val:
        return Val(self, ir.Constant(F64, float(x)))

    def i64(self, x) -> Val:
        return Val(self, const(I64, x))

    def var(self, ty=F64, init=None) -> Var:
        v = Var(self, ty)
        if init is not None:
            v.set(init)
        return v

    # control flow
    def block(self, name="") -> ir.Block:
        return self.fn.append_basic_block(name)

    def at(self, blk):
        self.b.position_at_end(blk)

    def br(self, blk):
        self.b.branch(blk)

    def cbr(self, cond: Val, t, f):
        self.b.cbranch(cond.v, t, f)

    def ret(self, v=None):
        if v is None:
            self.b.ret_void()
        else:
            self.b.ret(self.val(v, self.fn.function_type.return_type).v)

    def ret_if(self, cond: Val, value):
        """if (cond) return value; (continues in a new block). A callable value is evaluated
        only on that branch: it must be, when it draws."""
        yes, no = self.block(), self.block()
        self.cbr(cond, yes, no)
        self.at(yes)
        self.ret(value() if callable(value) else value)
        self.at(no)

    def goto_if(self, cond: Val, target):
        no = self.block()
        self.cbr(cond, target, no)
        self.at(no)

    def loop(self) -> ir.Block:
        """Start a loop: returns its head, to be branched to for `continue`."""
        head = self.block("loop")
        self.br(head)
        self.at(head)
        return head

    @contextmanager
    def if_(self, cond: Val):
        then, done = self.block(), self.block()
        self.cbr(cond, then, done)
        self.at(then)
        yield
        if not self.b.block.is_terminated:
            self.br(done)
        self.at(done)

    @contextmanager
    def if_else(self, cond: Val):
        """with f.if_else(c) as orelse: <then>; orelse(); <else>"""
        then, other, done = self.block(), self.block(), self.block()
        self.cbr(cond, then, other)
        self.at(then)

        def orelse():
            if not self.b.block.is_terminated:
                self.br(done)
            self.at(other)

        yield orelse
        if not self.b.block.is_terminated:
            self.br(done)
        self.at(done)

    # calls
    def call(self, name: str, *args) -> Val:
        fn = self.m.get_global(name)
        vals = [self.val(a, t).v for a, t in zip(args, fn.function_type.args)]
        r = self.b.call(fn, vals)
        return Val(self, r)

    def math(self, name: str, *args) -> Val:
        if name in _INTRINSIC:
            fn = _declare(self.m, _INTRINSIC[name], F64, [F64])
        else:
            assert name in _LIBM, name
            fn = _declare(self.m, name, F64, [F64] * len(args))
        return Val(self, self.b.call(fn, [self.val(a).v for a in args]))

    def load(self, ptr, ty, offset=0) -> Val:
        p = ptr.v if isinstance(ptr, Val) else ptr
        if offset:
            p = self.b.gep(p, [ir.Constant(I64, offset)], source_etype=I8)
        return Val(self, self.b.load(p, typ=ty))

    def store(self, ptr, offset, value: Val):
        p = ptr.v if isinstance(ptr, Val) else ptr
        if offset:
            p = self.b.gep(p, [ir.Constant(I64, offset)], source_etype=I8)
        self.b.store(value.v, p)

    def table(self, gv: ir.GlobalVariable, idx: Val, ty) -> Val:
        p = self.b.gep(gv, [ir.Constant(I64, 0), idx.v], inbounds=True)
        return Val(self, self.b.load(p, typ=ty))

    # the bit generator
    def next_double(self, bg) -> Val:
        return self._next(self, bg, "double")

    def next_u64(self, bg) -> Val:
        return self._next(self, bg, "uint64")

    def next_u32(self, bg) -> Val:
        return self._next(self, bg, "uint32")


def const(ty, x):
    """A constant of type ty; integers are taken modulo 2**width (C's unsigned wrap)."""
    if ty == F64:
        return ir.Constant(F64, float(x))
    w = ty.width
    x = int(x) & ((1 << w) - 1)
    return ir.Constant(ty, x - (1 << w) if x >> (w - 1) else x)


def _declare(module, name, ret, args):
    try:
        return module.get_global(name)
    except KeyError:
        return ir.Function(module, ir.FunctionType(ret, args), name)


def indirect_next(f: Fn, bg: Val, kind: str) -> Val:
    """bitgen->next_<kind>(bitgen->state): a call through the bit generator's function table."""
    off, ret = {
        "double": (BITGEN_NEXT_DOUBLE, F64),
        "uint64": (BITGEN_NEXT_UINT64, I64),
        "uint32": (BITGEN_NEXT_UINT32, I32),
    }[kind]
    state = f.load(bg, PTR, BITGEN_STATE)
    fp = f.load(bg, PTR, off).v
    # a bitgen_t's fields do not change while compiled code draws (its lock is held): loads
    # LLVM may hoist out of a loop that also stores into arrays it cannot tell apart
    module = f.b.module
    for instr in (state.v, fp):
        instr.set_metadata("invariant.load", module.add_metadata([]))
    # llvmlite calls a value through its function_type, which an opaque pointer lacks
    fp.__class__ = _FunctionPointer
    fp.fnty = ir.FunctionType(ret, [PTR])
    return Val(f, f.b.call(fp, [state.v]))


class _FunctionPointer(ir.instructions.LoadInstr):
    """A loaded function pointer that llvmlite can call (it carries the callee's type)."""

    @property
    def function_type(self):
        return self.fnty


# helpers for the bodies


def gen_mask(f, x: Val) -> Val:
    """The smallest all-ones mask >= x (NumPy's gen_mask)."""
    mask = x
    for s in (1, 2, 4, 8, 16, 32):
        mask = mask | mask.lshr(s)
    return mask


def for_range(f, n: Val):
    """for (i = 0; i < n; i++): returns (i, the callback that ends the body)."""
    i = f.var(I64, 0)
    head = f.loop()
    body_, done = f.block(), f.block()
    f.cbr(i.get() < n, body_, done)
    f.at(body_)

    def close():
        i.set(i.get() + 1)
        f.br(head)
        f.at(done)

    return i.get(), close


def gep(f, ptr: Val, idx: Val, ety) -> Val:
    return Val(f, f.b.gep(ptr.v, [idx.v], source_etype=ety))


def is_null(f, p: Val) -> Val:
    return Val(f, f.b.icmp_unsigned("==", p.v, ir.Constant(PTR, None)))
