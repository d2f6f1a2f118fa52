"""jitmagic.numba.experimental.jitclass against two voices: the undecorated class (plain
Python, the oracle) and the real Numba (JITMAGIC_NUMBA_VOICE=1: it compiles each jitclass in
seconds).

Each program takes a module `m` (jitclass, njit, prange and the types, as `from numba import
...` gives them) and returns what it computed, including the state its objects were left in:
by-reference semantics show as the caller's objects changed by compiled code.
"""

# (no `from __future__ import annotations`: jitclass reads the class annotations as types)
import os

import numpy as np
import pytest

import jitmagic.numba as jnb
from jitmagic.errors import NjitTypingError, NjitUnsupportedError, TypingError
from jitmagic.numba import config
from jitmagic.numba.experimental import jitclass


class _Python:
    """The oracle: decorators that leave the class and the functions as they are."""

    def __getattr__(self, name):
        return getattr(jnb, name)  # (the type objects: spec entries nobody reads)

    @staticmethod
    def jitclass(spec=None):
        if isinstance(spec, type):
            return spec
        return lambda cls: cls

    @staticmethod
    def njit(fn=None, **options):
        return fn if fn is not None else (lambda f: f)

    @staticmethod
    def instance_type(cls):
        return None

    prange = range


def _numba():
    if os.environ.get("JITMAGIC_NUMBA_VOICE") != "1":
        return None
    try:
        import numba
        from numba.experimental import jitclass as real_jitclass
    except ImportError:
        return None

    class Real:
        def __getattr__(self, name):
            return getattr(numba, name)

        jitclass = staticmethod(real_jitclass)

        @staticmethod
        def instance_type(cls):
            return cls.class_type.instance_type

    return Real()


class _Jitmagic:
    def __getattr__(self, name):
        return getattr(jnb, name)

    jitclass = staticmethod(jitclass)

    @staticmethod
    def instance_type(cls):
        return cls.class_type.instance_type


PROGRAMS = {}
CASTS = {}  # programs whose values depend on Numba's casts: compared with stated values


def program(fn):
    PROGRAMS[fn.__name__] = fn
    return fn


def casting_program(want):
    def register(fn):
        CASTS[fn.__name__] = (fn, want)
        return fn

    return register


def _same(a, b, where="result"):
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b), (where, a, b)
        for k, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{k}]")
        return
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, err_msg=where)
        assert np.asarray(a).dtype == np.asarray(b).dtype, (where, a, b)
        return
    # (a Python or a NumPy number: the same kind and value)
    assert np.asarray(a).dtype.kind == np.asarray(b).dtype.kind, (where, a, b)
    assert a == pytest.approx(b, rel=1e-12), (where, a, b)


# ---------------------------------------------------------------- programs


@program
def bag(m):
    """Numba's documentation example: scalar and array fields, a property, a method with a
    loop, a static method."""

    @m.jitclass([("value", m.int32), ("array", m.float32[:])])
    class Bag:
        def __init__(self, value):
            self.value = value
            self.array = np.zeros(value, dtype=np.float32)

        @property
        def size(self):
            return self.array.size

        def increment(self, val):
            for i in range(self.size):
                self.array[i] += val
            return self.array

        @staticmethod
        def add(x, y):
            return x + y

    b = Bag(5)
    out = b.increment(3)
    b.increment(0.5)
    return b.value, b.size, out.copy(), b.array.copy(), Bag.add(1, 2), b.add(3, 4)


@program
def counter_by_reference(m):
    """Fields written by an njit function in a loop and a branch are the caller's afterwards;
    annotations declare the fields."""

    @m.jitclass
    class Counter:
        count: m.int64
        total: m.float64

        def __init__(self):
            self.count = 0
            self.total = 0.0

        def add(self, x):
            if x > 0:
                self.count += 1
                self.total += x

    @m.njit
    def feed(c, xs):
        for x in xs:
            c.add(x)
        k = 0
        while c.count < 10:
            c.count += 1
            k += 1
        return k

    c = Counter()
    xs = np.array([1.5, -2.0, 3.0, 0.0, 4.25])
    k = feed(c, xs)
    c.add(1.0)  # (a method called from Python)
    return k, c.count, c.total


@program
def made_inside_and_returned(m):
    """Instances made in njit code, methods calling methods, returned to Python."""

    @m.jitclass([("x", m.float64), ("y", m.float64)])
    class Point:
        def __init__(self, x, y):
            self.x = x
            self.y = y

        def dot(self, other):
            return self.x * other.x + self.y * other.y

        def norm2(self):
            return self.dot(self)

        def scaled(self, k):
            return Point(self.x * k, self.y * k)

    @m.njit
    def make(n):
        p = Point(1.0, 2.0)
        q = p.scaled(n)
        return q, q.norm2() + p.norm2()

    q, s = make(3.0)
    return q.x, q.y, s, q.norm2()


@program
def instance_carried_by_a_loop(m):
    """A variable rebound to new instances in a loop and a branch: its fields are carried."""

    @m.jitclass([("i", m.int64), ("score", m.float64)])
    class Best:
        def __init__(self, i, score):
            self.i = i
            self.score = score

    @m.njit
    def search(xs):
        best = Best(-1, -np.inf)
        for i in range(xs.shape[0]):
            cand = Best(i, xs[i] * xs[i] - 3.0 * xs[i])
            if cand.score > best.score:
                best = cand
        return best.i, best.score, best

    xs = np.array([0.5, 4.0, -1.0, 2.5, 3.9])
    i, score, b = search(xs)
    return i, score, b.i, b.score


@program
def array_fields_in_place_and_rebound(m):
    """In-place writes into an array field reach the caller's array (no copy); an array field
    rebound in a method (a buffer that grows) is the caller's object's afterwards."""

    @m.jitclass([("n", m.int64), ("data", m.float64[:])])
    class Stack:
        def __init__(self, data):
            self.n = 0
            self.data = data

        def grow(self):
            new = np.zeros(2 * self.data.shape[0])
            new[: self.n] = self.data[: self.n]
            self.data = new

        def push(self, v):
            self.data[self.n] = v
            self.n += 1

    @m.njit
    def fill(s, k):
        for i in range(k):
            s.push(i * 0.5)

    @m.njit
    def grow_then_fill(s, k):
        s.grow()
        fill(s, k)

    buf = np.zeros(4)
    s = Stack(buf)
    fill(s, 3)
    shared = s.data is buf
    seen = buf.copy()
    grow_then_fill(s, 4)
    s.grow()  # (from Python)
    return shared, seen, s.n, s.data.copy(), s.data.shape[0]


@program
def fields_in_compiled_loops(m):
    """self.field updated in for and while loops and nested branches of a method."""

    @m.jitclass([("hits", m.int64), ("misses", m.int32), ("acc", m.float64)])
    class Tally:
        def __init__(self):
            self.hits = 0
            self.misses = 0
            self.acc = 1.0

        def run(self, xs, lo, hi):
            for x in xs:
                if x < lo:
                    self.misses += 1
                elif x > hi:
                    self.misses += 2
                else:
                    self.hits += 1
                    self.acc *= 1.0 + x
            i = 0
            while self.acc > 10.0:
                self.acc /= 2.0
                i += 1
            return i

    t = Tally()
    xs = np.linspace(-1.0, 3.0, 17)
    i = t.run(xs, 0.0, 2.0)
    return i, t.hits, t.misses, t.acc


@program
def operators(m):
    """Special methods: binary operators (reflected too), unary ones, indexing, comparisons,
    in njit code and from Python."""

    @m.jitclass([("x", m.float64), ("y", m.float64)])
    class Vec:
        def __init__(self, x, y):
            self.x = x
            self.y = y

        def __add__(self, o):
            return Vec(self.x + o.x, self.y + o.y)

        def __mul__(self, k):
            return Vec(self.x * k, self.y * k)

        def __rmul__(self, k):
            return Vec(self.x * k, self.y * k)

        def __neg__(self):
            return Vec(-self.x, -self.y)

        def __getitem__(self, i):
            return self.x if i == 0 else self.y

        def __setitem__(self, i, v):
            if i == 0:
                self.x = v
            else:
                self.y = v

        def __lt__(self, o):
            return self.x * self.x + self.y * self.y < o.x * o.x + o.y * o.y

        def __len__(self):
            return 2

    @m.njit
    def combine(a, b, k):
        c = a + b * 2.0
        d = -(c * k)
        d[1] = d[1] + 0.5
        for i in range(3):
            a[0] = a[0] + i
        return d[0], d[1], a < b, b < a

    a, b = Vec(1.0, 2.0), Vec(3.0, 5.0)
    out = combine(a, b, 3.0)
    e = a + b
    return (*out, a.x, e.x, e.y, len(a), a[1], a < b)


@program
def booleans_complex_and_small_ints(m):
    """Fields of bool, complex and uint8 type, written in a compiled loop."""

    @m.jitclass([("seen", m.boolean), ("z", m.complex128), ("k", m.int64), ("w", m.float32)])
    class State:
        def __init__(self):
            self.seen = False
            self.z = 0j
            self.k = 0
            self.w = np.float32(0.0)

    @m.njit
    def walk(s, xs):
        for x in xs:
            s.z = s.z * 1j + x
            s.k += 1
            s.w += np.float32(0.25)
            if x > 2.0:
                s.seen = True

    s = State()
    walk(s, np.array([1.0, 3.0, 0.5]))
    return s.seen, s.z, s.k, s.w


@program
def growing_buffer(m):
    """A buffer that grows when full (an array field rebound in a branch of a method called
    in a loop), and a constructor choosing its array in a branch."""

    @m.jitclass([("n", m.int64), ("data", m.float64[:])])
    class Buf:
        def __init__(self, cap):
            if cap > 0:
                self.data = np.zeros(cap)
            else:
                self.data = np.zeros(1)
            self.n = 0

        def push(self, v):
            if self.n == self.data.shape[0]:
                new = np.zeros(2 * self.data.shape[0])
                new[: self.n] = self.data
                self.data = new
            self.data[self.n] = v
            self.n += 1

    @m.njit
    def fill(b, k):
        for i in range(k):
            b.push(i * 1.5)
        return b.data.shape[0]

    @m.njit
    def made(k):
        b = Buf(0)
        for i in range(k):
            b.push(i + 0.5)
        return b

    b = Buf(2)
    cap = fill(b, 5)
    r = made(6)
    return cap, b.n, b.data.copy(), r.n, r.data.copy(), Buf(0).data.shape[0]


@program
def nested_instances(m):
    """Fields holding instances of another jitclass: read, written into, rebound in a method
    called in a compiled loop; the caller's object holds the new ones afterwards."""

    @m.jitclass([("x", m.float64), ("y", m.float64)])
    class Vec:
        def __init__(self, x, y):
            self.x = x
            self.y = y

    spec = [("pos", m.instance_type(Vec)), ("vel", m.instance_type(Vec)), ("steps", m.int64)]

    @m.jitclass(spec)
    class Body:
        def __init__(self, x, y):
            self.pos = Vec(x, y)
            self.vel = Vec(1.0, 0.5)
            self.steps = 0

        def step(self, dt):
            self.pos = Vec(self.pos.x + dt * self.vel.x, self.pos.y + dt * self.vel.y)
            self.vel.y -= 9.81 * dt
            self.steps += 1

    @m.njit
    def run(b, n, dt):
        for i in range(n):
            b.step(dt)
        return b.pos.x

    b = Body(0.0, 10.0)
    first = b.pos
    x = run(b, 10, 0.1)
    b.step(0.05)  # (from Python)
    return x, b.pos.x, b.pos.y, b.vel.y, b.steps, first.x, first.y


@casting_program(want=(2.0, 6.0, 15, np.array([2.5, 1.0, 1.0], np.float32)))
def casts_per_spec(m):
    """Values are cast to the field's type (an int into a float field is a float)."""

    @m.jitclass([("a", m.float64), ("b", m.int64), ("c", m.float32[:])])
    class Holder:
        def __init__(self, a, b, n):
            self.a = a
            self.b = b
            self.c = np.ones(n, dtype=np.float32)

    @m.njit
    def bump(h):
        h.a = h.b + 1  # int -> float64
        h.b = h.b * 3
        h.c[0] = 2.5

    h = Holder(2, 5, 3)
    first = h.a
    bump(h)
    return first, h.a, h.b, h.c.copy()


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_against_python(name):
    fn = PROGRAMS[name]
    _same(fn(_Jitmagic()), fn(_Python()))


@pytest.mark.parametrize("name", sorted(CASTS))
def test_casts_against_stated_values(name):
    fn, want = CASTS[name]
    _same(fn(_Jitmagic()), want)


NUMBA = _numba()


@pytest.mark.skipif(NUMBA is None, reason="Numba's voice is off (JITMAGIC_NUMBA_VOICE=1)")
@pytest.mark.parametrize("name", sorted(PROGRAMS) + sorted(CASTS))
def test_against_numba(name):
    fn = PROGRAMS[name] if name in PROGRAMS else CASTS[name][0]
    _same(fn(_Jitmagic()), fn(NUMBA))


# ---------------------------------------------------------------- Numba's casts (its voice)


def _holder():
    @jitclass([("i", jnb.int32), ("f", jnb.float32), ("x", jnb.float64), ("a", jnb.float64[:])])
    class Holder:
        def __init__(self, i, f, a):
            self.i = i
            self.f = f
            self.x = 0.0
            self.a = a

    return Holder


def test_fields_are_cast_as_numba_casts():
    """Numba's values (0.68): an int32 field given 3.7 holds 3, a float32 field rounds, Python
    reads Python numbers, and an array field keeps the very array."""
    Holder = _holder()
    a = np.arange(3.0)
    h = Holder(3.7, 0.1, a)
    assert (h.i, type(h.i)) == (3, int)
    assert h.f == float(np.float32(0.1)) and type(h.f) is float
    assert h.a is a
    a[0] = 99.0
    assert h.a[0] == 99.0
    h.i = 2.5
    assert h.i == 2
    h.i = 2**31 + 5  # (wraps, as Numba's int32 does)
    assert h.i == -(2**31) + 5


def test_type_changing_assignments_raise_naming_the_field():
    Holder = _holder()
    h = Holder(1, 1.0, np.zeros(2))
    with pytest.raises(NjitTypingError, match="field 'x' of Holder"):
        h.x = 1j
    with pytest.raises(TypeError, match="field 'a' of Holder"):
        h.a = np.zeros(2, np.int64)
    with pytest.raises(TypeError, match="field 'i' of Holder"):
        h.i = np.ones(3)
    with pytest.raises(TypeError, match="field 'a' of Holder"):
        Holder(1, 1.0, np.zeros((2, 2)))

    @jnb.njit
    def complex_into_float(h):
        h.x = 1j

    @jnb.njit
    def int_array_into_float_array(h):
        h.a = np.arange(3)

    @jnb.njit
    def array_into_scalar(h):
        h.i = h.a

    for f, field in [
        (complex_into_float, "x"),
        (int_array_into_float_array, "a"),
        (array_into_scalar, "i"),
    ]:
        with pytest.raises(TypingError, match=f"field '{field}' of Holder"):
            f(h)
    assert h.x == 0.0 and h.i == 1  # nothing was run


def test_unknown_attributes():
    Holder = _holder()
    h = Holder(1, 1.0, np.zeros(2))
    with pytest.raises(AttributeError, match="no attribute 'z'"):
        h.z = 3

    @jnb.njit
    def write(h):
        h.z = 3

    @jnb.njit
    def read(h):
        return h.z

    with pytest.raises(AttributeError, match="no attribute 'z'"):
        write(h)
    with pytest.raises(AttributeError, match="no attribute 'z'"):
        read(h)


def test_an_array_field_rebound_in_a_compiled_loop():
    """Rebinding a field in a loop carries the instance's array fields through it."""

    @jitclass([("data", jnb.float64[:])])
    class Box:
        def __init__(self, n):
            self.data = np.zeros(n)

    @jnb.njit
    def regrow(b, n):
        for i in range(n):
            b.data = np.full(i + 1, float(i))
        return b.data.sum()

    b = Box(2)
    assert regrow(b, 4) == 12.0
    np.testing.assert_array_equal(b.data, [3.0, 3.0, 3.0, 3.0])


def test_an_array_field_rebound_in_a_conditional_expression_is_refused_by_name():
    @jitclass([("data", jnb.float64[:])])
    class Box:
        def __init__(self, n):
            self.data = np.zeros(n)

        def reset(self):
            self.data = np.zeros(1)
            return 1

    @jnb.njit
    def maybe_reset(b, c):
        return b.reset() if c > 0 else 0

    with pytest.raises(NjitUnsupportedError, match="array field 'data' of a Box"):
        maybe_reset(Box(2), 1)


def test_variant_key_holds_the_class_and_its_field_types():
    """Two classes with the same fields compile separately (their methods differ); an array
    field of another layout is another variant; the same class again hits."""

    def make(k):
        @jitclass([("v", jnb.float64), ("a", jnb.float64[:])])
        class K:
            def __init__(self, v, a):
                self.v = v
                self.a = a

            def get(self):
                return self.v * k + self.a[0]

        return K

    A, B = make(1.0), make(10.0)

    @jnb.njit
    def f(o):
        return o.get()

    x = np.ones(4)
    assert f(A(2.0, x)) == 3.0
    assert f(B(2.0, x)) == 21.0
    assert f(A(5.0, x)) == 6.0
    assert len(f.variants) == 2
    assert f(A(1.0, x[::2])) == 2.0  # a strided array in the float64[:] field
    assert len(f.variants) == 3


def test_returned_argument_is_the_callers_instance():
    """By reference: what njit code returns of an argument instance is that instance."""

    @jitclass([("v", jnb.int64)])
    class V:
        def __init__(self, v):
            self.v = v

    @jnb.njit
    def same(o):
        o.v += 1
        return o

    o = V(1)
    r = same(o)
    assert r is o and o.v == 2
    r.v = 7
    assert o.v == 7


def test_class_members_and_methods_as_numba_refuses_them():
    with pytest.raises(TypeError, match="class members are not yet supported: K"):

        @jitclass([("v", jnb.int64)])
        class A:
            K = 3

    with pytest.raises(NotImplementedError, match="classmethod 'make'"):

        @jitclass([("v", jnb.int64)])
        class B:
            @classmethod
            def make(cls):
                return cls()

    with pytest.raises(NameError, match="name shadowing: v"):

        @jitclass([("v", jnb.int64)])
        class C:
            def v(self):
                return 1

    with pytest.raises(NotImplementedError, match="field 't' of type UniTuple"):

        @jitclass([("t", jnb.types.UniTuple(jnb.int64, 2))])
        class D:
            pass

    with pytest.raises(TypeError, match="Numba type instances"):

        @jitclass([("v", np.float64)])
        class E:
            pass


def test_class_type_and_isinstance():
    Holder = _holder()
    h = Holder(1, 1.0, np.zeros(2))
    assert isinstance(h, Holder) and not isinstance(object(), Holder)
    assert "x:float64" in str(Holder.class_type)
    assert str(Holder.class_type.instance_type).startswith("instance.jitclass.Holder")
    assert jnb.typeof(h) == Holder.class_type.instance_type

    @jnb.njit
    def check(o):
        return isinstance(o, Holder)

    assert check(h) is True


def test_instances_of_a_list_with_a_traced_index_raise_clearly():
    """Lists (and tuples) of instances indexed by a value the code computes are out of scope:
    a clear error, not a crash."""

    @jitclass([("v", jnb.int64)])
    class V:
        def __init__(self, v):
            self.v = v

    @jnb.njit
    def pick(i):
        vs = (V(1), V(2))
        return vs[i].v

    with pytest.raises(NjitUnsupportedError, match="tuple"):
        pick(1)

    @jnb.njit
    def pick_from_list(vs, i):
        return vs[i].v

    @jnb.njit
    def bump_all(vs):
        for v in vs:  # (a list the caller passes: its items are known, the loop unrolled)
            v.v += 1

    vs = [V(1), V(2)]
    with pytest.raises(NjitUnsupportedError, match="list"):
        pick_from_list(vs, 1)
    bump_all(vs)
    assert [v.v for v in vs] == [2, 3]


def test_jm_jit_refuses_an_instance():
    Holder = _holder()
    import jitmagic as jm

    f = jm.jit(lambda h: h.x)
    with pytest.raises(NotImplementedError, match="jitclass"):
        f(Holder(1, 1.0, np.zeros(2)))


def test_disable_jit_returns_the_class(monkeypatch):
    monkeypatch.setattr(config, "DISABLE_JIT", True)

    class Plain:
        def __init__(self):
            self.v = 1

    assert jitclass([("v", jnb.int64)])(Plain) is Plain
    assert jitclass(Plain) is Plain


def test_an_instance_njit_code_finds_as_a_global_is_refused():
    """Its fields would be read once while compiling (and written once): refused by name."""
    Holder = _holder()
    glob = Holder(1, 1.0, np.zeros(2))

    @jnb.njit
    def read():
        return glob.x

    with pytest.raises(NotImplementedError, match="field 'x' of a Holder .* global"):
        read()


def test_reflected_operators():
    """`k * obj` with k a number calls obj.__rmul__ (Python's rule; Numba 0.68 refuses it)."""

    @jitclass([("x", jnb.float64)])
    class S:
        def __init__(self, x):
            self.x = x

        def __rmul__(self, k):
            return S(self.x * k)

    @jnb.njit
    def f(k, s):
        return (k * s).x

    assert f(3.0, S(2.0)) == 6.0
    assert (3.0 * S(2.0)).x == 6.0


def test_constructor_and_methods_take_keywords_and_defaults():
    @jitclass([("a", jnb.float64), ("b", jnb.int64)])
    class KW:
        def __init__(self, a, b=7):
            self.a = a
            self.b = b

        def f(self, x, scale=2.0):
            return (self.a + x) * scale + self.b

    @jnb.njit
    def inside(x):
        k = KW(1.5)
        m = KW(b=1, a=0.5)
        return k.f(x) + m.f(x, scale=1.0)

    k = KW(b=3, a=2.0)
    assert (k.a, k.b) == (2.0, 3) and KW(1.0).b == 7
    assert k.f(1.0) == 9.0 and k.f(1.0, scale=1.0) == 6.0
    assert inside(1.0) == (2.5 * 2.0 + 7) + (1.5 + 1)
    with pytest.raises(TypeError, match=r"KW\(\)"):
        KW()


def test_fields_read_in_a_parallel_loop():
    @jitclass([("scale", jnb.float64), ("out", jnb.float64[:])])
    class Job:
        def __init__(self, scale, out):
            self.scale = scale
            self.out = out

    @jnb.njit(parallel=True)
    def run(job, x):
        for i in jnb.prange(x.shape[0]):
            job.out[i] = x[i] * job.scale

    x = np.arange(1000.0)
    job = Job(0.5, np.empty(1000))
    run(job, x)
    np.testing.assert_array_equal(job.out, x * 0.5)


def test_an_unassigned_array_field():
    @jitclass([("n", jnb.int64), ("data", jnb.float64[:])])
    class Lazy:
        def __init__(self, n):
            self.n = n

    @jnb.njit
    def read(o):
        return o.data[0]

    o = Lazy(3)
    with pytest.raises(AttributeError, match="field 'data' of Lazy was never assigned"):
        o.data  # noqa: B018
    with pytest.raises(AttributeError, match="field 'data' of Lazy is read before"):
        read(o)
    o.data = np.ones(2)
    assert read(o) == 1.0


def test_the_same_instance_twice():
    @jitclass([("v", jnb.int64)])
    class V:
        def __init__(self, v):
            self.v = v

    @jnb.njit
    def bump_both(a, b):
        a.v += 1
        b.v += 10
        return a.v

    o = V(0)
    assert bump_both(o, o) == 11 and o.v == 11


def test_an_eager_signature_with_an_instance_type_raises_naming_it():
    @jitclass([("v", jnb.int64)])
    class V:
        def __init__(self, v):
            self.v = v

    with pytest.raises(NotImplementedError, match="jitclass type"):
        jnb.njit(jnb.int64(V.class_type.instance_type))(lambda o: o.v)


def test_len_bool_and_in_with_python_values():
    """len(), truth and `in` need a Python value while compiling: a constant works, a value
    the code computes raises naming the method."""

    @jitclass([("n", jnb.int64)])
    class Sized:
        def __init__(self, n):
            self.n = n

        def __len__(self):
            return self.n

        def __contains__(self, x):
            return x < 2

    @jnb.njit
    def constant_membership(o):
        return 1 in o

    @jnb.njit
    def computed_len(o):
        return len(o)

    o = Sized(4)
    assert len(o) == 4 and (1 in o) and 3 not in o
    assert constant_membership(o)
    with pytest.raises(NotImplementedError, match="__len__"):
        computed_len(o)

    @jnb.njit
    def truth(o):
        return 1 if o else 0

    assert truth(o) == 1  # (no __bool__: Python's truth of an object)


def test_property_setters_and_static_methods_in_njit_code():
    @jitclass([("c", jnb.float64)])
    class Temp:
        def __init__(self, c):
            self.c = c

        @property
        def f(self):
            return self.c * 9.0 / 5.0 + 32.0

        @f.setter
        def f(self, v):
            self.c = (v - 32.0) * 5.0 / 9.0

        @staticmethod
        def avg(a, b):
            return (a + b) / 2.0

    @jnb.njit
    def warm(t, by):
        t.f = t.f + by
        return Temp.avg(t.c, 0.0) + t.avg(1.0, 3.0)

    t = Temp(100.0)
    assert t.f == 212.0
    t.f = 32.0
    assert t.c == 0.0
    t.c = 10.0
    r = warm(t, 9.0)
    assert t.c == pytest.approx(15.0) and r == pytest.approx(7.5 + 2.0)


def test_an_instance_field_takes_instances_of_its_class_only():
    @jitclass([("v", jnb.int64)])
    class A:
        def __init__(self, v):
            self.v = v

    @jitclass([("v", jnb.int64)])
    class B:
        def __init__(self, v):
            self.v = v

    @jitclass([("a", A.class_type.instance_type)])
    class Holder:
        def __init__(self, a):
            self.a = a

    h = Holder(A(1))
    assert h.a.v == 1
    with pytest.raises(TypingError, match="field 'a' of Holder"):
        h.a = B(2)

    @jnb.njit
    def swap_in(h):
        h.a = B(3)

    with pytest.raises(TypingError, match="field 'a' of Holder"):
        swap_in(h)


def test_a_method_called_positionally_and_by_keyword_agree():
    """Positional calls from Python go through a caller of the instance's arrays (njit's quick
    path); keyword calls through the method's own njit function: the same results and state."""

    @jitclass([("n", jnb.int64), ("data", jnb.float64[:])])
    class Acc:
        def __init__(self, m):
            self.n = 0
            self.data = np.zeros(m)

        def add(self, v, times):
            for _ in range(times):
                if self.n == self.data.shape[0]:
                    bigger = np.zeros(2 * self.data.shape[0])
                    bigger[: self.n] = self.data
                    self.data = bigger
                self.data[self.n] = v
                self.n += 1
            return self.n

    a, b = Acc(1), Acc(1)
    for k in range(4):
        assert a.add(k * 1.5, 2) == b.add(v=k * 1.5, times=2)
    assert a.n == b.n == 8
    np.testing.assert_array_equal(a.data, b.data)
    assert a.data.shape == (8,)
