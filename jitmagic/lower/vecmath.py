"""Vector math through glibc's libmvec.

LLVM's loop vectorizer only calls a vector variant of a scalar function when the call carries a
"vector-function-abi-variant" attribute naming it (this llvmlite build has no -vector-library
option). We declare each libm function the module uses with that attribute, listing the
variants the host CPU can run, and keep the vector declarations alive via llvm.compiler.used.
"""

from __future__ import annotations

import re

# (libm name, number of vector arguments); float32 versions append "f"
FUNCTIONS = {
    "sin": 1,
    "cos": 1,
    "tan": 1,
    "asin": 1,
    "acos": 1,
    "atan": 1,
    "sinh": 1,
    "cosh": 1,
    "tanh": 1,
    "asinh": 1,
    "acosh": 1,
    "atanh": 1,
    "exp": 1,
    "exp2": 1,
    "expm1": 1,
    "log": 1,
    "log2": 1,
    "log10": 1,
    "log1p": 1,
    "cbrt": 1,
    "pow": 2,
    "atan2": 2,
    "hypot": 2,
}

# ISA letter -> (required CPU feature, f64 lanes)
_ISAS = [("e", "+avx512f", 8), ("d", "+avx2", 4), ("b", "+sse2", 2)]


def scalar_names():
    return set(FUNCTIONS) | {n + "f" for n in FUNCTIONS}


def _variants(name, features):
    base = name[:-1] if name.endswith("f") and name[:-1] in FUNCTIONS else name
    nargs = FUNCTIONS[base]
    lanes_mult = 2 if base != name else 1
    out = []
    for isa, feat, lanes in _ISAS:
        if feat in features:
            n = lanes * lanes_mult
            out.append((n, f"_ZGV{isa}N{n}{'v' * nargs}_{name}", nargs))
    return out


def annotate(text: str, used: set, features: str, enabled: bool) -> str:
    """Give every used libm declaration memory(none) and, if enabled, its vector variants."""
    if not used:
        return text
    lines = text.splitlines()
    decls, keep = [], []
    group = 900
    attrs = []
    for i, line in enumerate(lines):
        m = re.match(r'declare (\w+) @"?([\w.]+)"?\((.*)\)(.*)$', line)
        if not m or m.group(2) not in used:
            continue
        ret, name, args, _ = m.groups()
        group += 1
        lines[i] = f'declare {ret} @"{name}"({args}) #{group}'
        extra = ""
        if enabled and name in scalar_names():
            variants = _variants(name, features)
            if variants:
                mapping = ",".join(f"_ZGV_LLVM_N{n}{'v' * k}_{name}({vn})" for n, vn, k in variants)
                extra = f' "vector-function-abi-variant"="{mapping}"'
                for n, vn, k in variants:
                    vt = f"<{n} x {ret}>"
                    decls.append(f"declare {vt} @{vn}({', '.join([vt] * k)})")
                    keep.append(vn)
        attrs.append(f"attributes #{group} = {{ nounwind memory(none){extra} }}")
    out = "\n".join(lines) + "\n" + "\n".join(decls + attrs) + "\n"
    if keep:
        ptrs = ", ".join(f"ptr @{k}" for k in keep)
        out += (
            f"@llvm.compiler.used = appending global [{len(keep)} x ptr] [{ptrs}], "
            f'section "llvm.metadata"\n'
        )
    return out
