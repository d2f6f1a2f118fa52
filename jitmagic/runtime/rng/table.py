"""The table of the native random functions: each one's C signature and the NumPy function it
reproduces (SIGNATURES), the declaration a kernel emits (declare), and the registry the
function bodies add themselves to (body)."""

from __future__ import annotations

from llvmlite import ir

from jitmagic.runtime.rng.builder import F64, I32, I64, PTR

_T = {"d": F64, "q": I64, "i": I32, "p": PTR, "v": ir.VoidType()}

# name: (signature "ret:args", NumPy function or method it reproduces)
# args: p = bitgen_t*, g = RandomState's Gaussian cache (p), d = double, q = int64/uint64,
# i = int32/uint32. Integer ranges are (off, rng): values off + [0, rng] (unsigned, wrapping)
SIGNATURES = {
    # raw draws
    "jm_rng_next_double": ("d:p", "Generator.random(), RandomState.random_sample/random/rand"),
    "jm_rng_next_uint64": ("q:p", "bitgen next_uint64"),
    "jm_rng_next_uint32": ("i:p", "bitgen next_uint32"),
    "jm_rng_tomaxint": ("q:p", "RandomState.tomaxint"),
    # the same algorithm in Generator and RandomState
    "jm_rng_uniform": ("d:pdd", "uniform(low, high) of both, as (low, high - low)"),
    "jm_rng_laplace": ("d:pdd", "laplace(loc, scale) of both"),
    "jm_rng_gumbel": ("d:pdd", "gumbel(loc, scale) of both"),
    "jm_rng_logistic": ("d:pdd", "logistic(loc, scale) of both"),
    "jm_rng_triangular": ("d:pddd", "triangular(left, mode, right) of both"),
    "jm_rng_poisson": ("q:pd", "poisson(lam) of both"),
    "jm_rng_random_interval": ("q:pq", "j of shuffle/permutation of both: [0, max], masked"),
    # Generator
    "jm_rng_standard_normal": ("d:p", "Generator.standard_normal (ziggurat)"),
    "jm_rng_normal": ("d:pdd", "Generator.normal(loc, scale)"),
    "jm_rng_standard_exponential": ("d:p", "Generator.standard_exponential (ziggurat)"),
    "jm_rng_standard_exponential_inv": ("d:p", "Generator.standard_exponential(method='inv')"),
    "jm_rng_exponential": ("d:pd", "Generator.exponential(scale)"),
    "jm_rng_standard_gamma": ("d:pd", "Generator.standard_gamma(shape)"),
    "jm_rng_gamma": ("d:pdd", "Generator.gamma(shape, scale)"),
    "jm_rng_beta": ("d:pdd", "Generator.beta(a, b)"),
    "jm_rng_chisquare": ("d:pd", "Generator.chisquare(df)"),
    "jm_rng_f": ("d:pdd", "Generator.f(dfnum, dfden)"),
    "jm_rng_standard_cauchy": ("d:p", "Generator.standard_cauchy"),
    "jm_rng_pareto": ("d:pd", "Generator.pareto(a)"),
    "jm_rng_weibull": ("d:pd", "Generator.weibull(a)"),
    "jm_rng_power": ("d:pd", "Generator.power(a)"),
    "jm_rng_lognormal": ("d:pdd", "Generator.lognormal(mean, sigma)"),
    "jm_rng_rayleigh": ("d:pd", "Generator.rayleigh(scale)"),
    "jm_rng_standard_t": ("d:pd", "Generator.standard_t(df)"),
    "jm_rng_vonmises": ("d:pdd", "Generator.vonmises(mu, kappa)"),
    "jm_rng_wald": ("d:pdd", "Generator.wald(mean, scale)"),
    "jm_rng_binomial": ("q:pqd", "Generator.binomial(n, p)"),
    "jm_rng_geometric": ("q:pd", "Generator.geometric(p)"),
    "jm_rng_negative_binomial": ("q:pdd", "Generator.negative_binomial(n, p)"),
    "jm_rng_integers": (
        "q:pqq",
        "Generator.integers, int64/uint64 (Lemire; 32-bit draws when rng fits)",
    ),
    "jm_rng_integers32": ("i:pii", "Generator.integers, int32/uint32 (Lemire)"),
    # RandomState (legacy)
    "jm_rng_legacy_gauss": ("d:pg", "RandomState.standard_normal/randn (polar, cached pair)"),
    "jm_rng_legacy_normal": ("d:pgdd", "RandomState.normal(loc, scale)"),
    "jm_rng_legacy_standard_exponential": ("d:p", "RandomState.standard_exponential"),
    "jm_rng_legacy_exponential": ("d:pd", "RandomState.exponential(scale)"),
    "jm_rng_legacy_standard_gamma": ("d:pgd", "RandomState.standard_gamma(shape)"),
    "jm_rng_legacy_gamma": ("d:pgdd", "RandomState.gamma(shape, scale)"),
    "jm_rng_legacy_beta": ("d:pgdd", "RandomState.beta(a, b)"),
    "jm_rng_legacy_chisquare": ("d:pgd", "RandomState.chisquare(df)"),
    "jm_rng_legacy_f": ("d:pgdd", "RandomState.f(dfnum, dfden)"),
    "jm_rng_legacy_standard_cauchy": ("d:pg", "RandomState.standard_cauchy"),
    "jm_rng_legacy_standard_t": ("d:pgd", "RandomState.standard_t(df)"),
    "jm_rng_legacy_lognormal": ("d:pgdd", "RandomState.lognormal(mean, sigma)"),
    "jm_rng_legacy_wald": ("d:pgdd", "RandomState.wald(mean, scale)"),
    "jm_rng_legacy_pareto": ("d:pd", "RandomState.pareto(a)"),
    "jm_rng_legacy_weibull": ("d:pd", "RandomState.weibull(a)"),
    "jm_rng_legacy_power": ("d:pd", "RandomState.power(a)"),
    "jm_rng_legacy_rayleigh": ("d:pd", "RandomState.rayleigh(scale)"),
    "jm_rng_legacy_vonmises": ("d:pdd", "RandomState.vonmises(mu, kappa)"),
    "jm_rng_legacy_binomial": ("q:pqd", "RandomState.binomial(n, p)"),
    "jm_rng_legacy_geometric": ("q:pd", "RandomState.geometric(p)"),
    "jm_rng_legacy_negative_binomial": ("q:pgdd", "RandomState.negative_binomial(n, p)"),
    "jm_rng_legacy_randint": (
        "q:pqq",
        "RandomState.randint/random_integers, int64/uint64 (masked)",
    ),
    "jm_rng_legacy_randint32": ("i:pii", "RandomState.randint, int32/uint32 (masked)"),
    # arrays (n values into out); those returning i32 allocate: 0, or -1 when out of memory
    # (nothing drawn then)
    "jm_rng_fill_random": ("v:pqp", "random(n) / random_sample(n) / rand(n) of both"),
    "jm_rng_fill_standard_normal": ("v:pqp", "Generator.standard_normal(n)"),
    "jm_rng_fill_legacy_gauss": ("v:pgqp", "RandomState.standard_normal(n) / randn(n)"),
    "jm_rng_fill_integers": (
        "v:pqqqp",
        "Generator.integers(..., size=n), int64 (off, rng, n, out)",
    ),
    "jm_rng_fill_legacy_randint": ("v:pqqqp", "RandomState.randint(..., size=n), int64"),
    "jm_rng_fill_integers16": (
        "v:pqqqp",
        ("Generator.integers(..., size=n), int16/uint16 (16-bit draws from a buffered 32-bit one)"),
    ),
    "jm_rng_fill_integers8": ("v:pqqqp", "Generator.integers(..., size=n), int8/uint8"),
    "jm_rng_fill_legacy_randint16": ("v:pqqqp", "RandomState.randint(..., size=n), int16/uint16"),
    "jm_rng_fill_legacy_randint8": ("v:pqqqp", "RandomState.randint(..., size=n), int8/uint8"),
    "jm_rng_fill_bool": ("v:pqqqp", "integers/randint(..., size=n, dtype=bool) of both"),
    "jm_rng_shuffle": ("i:pqpqq", "shuffle of a 1-d array of both (n, data, stride, itemsize)"),
    "jm_rng_permutation": ("i:pqp", "permutation(n) of both: int64 out[n]"),
    "jm_rng_choice_noreplace": (
        "i:pqqqp",
        (
            "Generator.choice(pop, size, replace=False, shuffle) "
            "without p: (pop, size, shuffle, out int64[size])"
        ),
    ),
    "jm_rng_legacy_choice_noreplace": (
        "i:pqqp",
        ("RandomState.choice(pop, size, replace=False) without p: (pop, size, out int64[size])"),
    ),
    # the bit generator's lock, for native callers (with the GIL held): the argument is the
    # bound method lock.acquire / lock.release (RngHandle.lock_methods()); 0, or -1 with a
    # Python exception set
    "jm_rng_lock": ("i:p", "with bit_generator.lock: (enter)"),
    "jm_rng_unlock": ("i:p", "with bit_generator.lock: (exit)"),
}


def _fnty(sig: str) -> ir.FunctionType:
    ret, args = sig.split(":")
    return ir.FunctionType(_T[ret], [_T["p" if a == "g" else a] for a in args])


def declare(module: ir.Module, name: str) -> ir.Function:
    """The declaration of jm_rng function `name` in `module` (made once per module)."""
    try:
        return module.get_global(name)
    except KeyError:
        return ir.Function(module, _fnty(SIGNATURES[name][0]), name)


UINT32_MAX = 0xFFFFFFFF
UINT64_MAX = 0xFFFFFFFFFFFFFFFF
INT64_MAX = 0x7FFFFFFFFFFFFFFF
M_PI = 3.14159265358979323846264338328

_INTERNAL = {
    "jm_rng__loggam": "d:d",
    "jm_rng__btpe": "q:pqd",
    "jm_rng__inversion": "q:pqd",
    "jm_rng__legacy_inversion": "q:pqd",
    "jm_rng__geometric_search": "q:pd",
    "jm_rng__masked32": "i:pii",  # (rng, mask): masked rejection on next_uint32
    "jm_rng__masked64": "q:pqq",
    "jm_rng__lemire32": "i:pi",
    "jm_rng__lemire64": "q:pq",
    "jm_rng__bounded_lemire": "q:pq",  # random_bounded_uint64(bg, 0, rng, 0, use_masked=0)
    "jm_rng__shuffle_lemire": "v:pqqp",  # _shuffle_int(bg, n, first, data)
}


_BODIES = {}


def body(name, tables=False):
    def reg(fn):
        fn.tables = tables
        _BODIES[name] = fn
        return fn

    return reg
