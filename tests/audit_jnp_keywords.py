"""Keyword audit cases for the jax.numpy functions of round 3 (tests/test_jnp_functions_vs_jax.py),
merged into AUDIT of tests/test_jax_compat_semantics.py: J compares with real JAX, N with
NumPy, NI asserts NotImplementedError. x is XA there (3x4 float64, traced)."""

from __future__ import annotations

import numpy as np


def cases(J, N, NI):
    return {
        ("isclose", "allclose"): {
            ("rtol", "atol", "equal_nan"): J(
                lambda ns, x: (
                    ns.jnp.isclose(x, x + 0.3, rtol=0.1, atol=0.2, equal_nan=True),
                    ns.jnp.allclose(x, x * 1.01, rtol=0.02, atol=0.0, equal_nan=False),
                )
            )
        },
        "array_equal": {
            "equal_nan": J(lambda ns, x: ns.jnp.array_equal(x / 0.0, x / 0.0, equal_nan=True))
        },
        "nan_to_num": {
            ("copy", "nan", "posinf", "neginf"): J(
                lambda ns, x: ns.jnp.nan_to_num(
                    x / 0.0, copy=True, nan=-1.0, posinf=8.0, neginf=-8.0
                )
            )
        },
        # NaN reductions: x / (x > -3) puts NaN-free infinities, x * nan_mask NaNs in
        ("nansum", "nanprod"): {
            ("axis", "dtype", "keepdims", "initial", "where"): J(
                lambda ns, x: (
                    ns.jnp.nansum(
                        _nans(ns, x),
                        axis=1,
                        dtype=np.float32,
                        keepdims=True,
                        initial=1.5,
                        where=x < 4,
                    ),
                    ns.jnp.nanprod(
                        _nans(ns, x) / 3,
                        axis=0,
                        keepdims=False,
                        initial=2.0,
                        where=x > -4,
                        dtype=np.float64,
                    ),
                )
            ),
            "out": NI(lambda ns, j, x: j.nansum(x, out=x), "out"),
        },
        ("nanmax", "nanmin"): {
            ("axis", "keepdims", "initial", "where"): J(
                lambda ns, x: (
                    ns.jnp.nanmax(_nans(ns, x), axis=1, keepdims=True, initial=-1.0, where=x < 4),
                    ns.jnp.nanmin(_nans(ns, x), axis=0, initial=1.0, where=x > -4),
                )
            ),
            "out": NI(lambda ns, j, x: j.nanmin(x, out=x), "out"),
        },
        ("nanargmax", "nanargmin"): {
            ("axis", "keepdims"): J(
                lambda ns, x: (
                    ns.jnp.nanargmax(_nans(ns, x), axis=1, keepdims=True),
                    ns.jnp.nanargmin(_nans(ns, x), axis=0, keepdims=False),
                )
            ),
            "out": NI(lambda ns, j, x: j.nanargmax(x, out=x), "out"),
        },
        ("nancumsum", "nancumprod"): {
            ("axis", "dtype"): J(
                lambda ns, x: (
                    ns.jnp.nancumsum(_nans(ns, x), axis=1, dtype=np.float32),
                    ns.jnp.nancumprod(_nans(ns, x) / 4, axis=0, dtype=np.float64),
                )
            ),
            "out": NI(lambda ns, j, x: j.nancumsum(x, out=x), "out"),
        },
        "nanmean": {
            ("axis", "dtype", "keepdims", "where"): J(
                lambda ns, x: ns.jnp.nanmean(
                    _nans(ns, x), axis=1, dtype=np.float32, keepdims=True, where=x < 4
                )
            ),
            "out": NI(lambda ns, j, x: j.nanmean(x, out=x), "out"),
        },
        ("nanvar", "nanstd"): {
            ("axis", "dtype", "keepdims", "where", "ddof", "mean"): J(
                lambda ns, x: (
                    ns.jnp.nanvar(
                        _nans(ns, x), axis=1, dtype=np.float64, keepdims=True, where=x < 4, ddof=1
                    ),
                    ns.jnp.nanstd(
                        _nans(ns, x),
                        axis=0,
                        mean=ns.jnp.nanmean(_nans(ns, x), axis=0, keepdims=True),
                    ),
                )
            ),
            "out": NI(lambda ns, j, x: j.nanstd(x, out=x), "out"),
        },
        ("quantile", "nanquantile", "percentile", "nanpercentile"): {
            # overwrite_input only allows the input to be reused: honoured by not using it
            # (JAX rejects True)
            "overwrite_input": N(
                lambda j, x: (
                    j.quantile(x, 0.3, overwrite_input=True),
                    j.nanquantile(x, 0.3, overwrite_input=True),
                    j.percentile(x, 30, overwrite_input=True),
                    j.nanpercentile(x, 30, overwrite_input=True),
                ),
                lambda x: (
                    np.quantile(x, 0.3),
                    np.quantile(x, 0.3),
                    np.percentile(x, 30),
                    np.percentile(x, 30),
                ),
            ),
            ("axis", "keepdims", "method"): J(
                lambda ns, x: (
                    ns.jnp.quantile(x, 0.3, axis=1, keepdims=True, method="lower"),
                    ns.jnp.nanquantile(_nans(ns, x), np.array([0.2, 0.7]), axis=0, method="higher"),
                    ns.jnp.percentile(x, 40, axis=(0, 1), method="midpoint", keepdims=True),
                    ns.jnp.nanpercentile(_nans(ns, x), 61, axis=1, method="linear"),
                )
            ),
            "out": NI(lambda ns, j, x: j.quantile(x, 0.5, out=x), "out"),
            "weights": NI(lambda ns, j, x: j.percentile(x, 5, weights=x), "weights"),
        },
        ("median", "nanmedian"): {
            ("axis", "keepdims"): J(
                lambda ns, x: (
                    ns.jnp.median(x, axis=1, keepdims=True),
                    ns.jnp.nanmedian(_nans(ns, x), axis=0, keepdims=False),
                )
            ),
            "overwrite_input": N(
                lambda j, x: (
                    j.median(x, overwrite_input=True),
                    j.nanmedian(x, overwrite_input=True),
                ),
                lambda x: (np.median(x), np.median(x)),
            ),
            "out": NI(lambda ns, j, x: j.nanmedian(x, out=x), "out"),
        },
        "average": {
            ("axis", "keepdims", "returned", "weights"): J(
                lambda ns, x: ns.jnp.average(
                    x, axis=1, weights=abs(x[0]), returned=True, keepdims=True
                )
            )
        },
        "ptp": {
            ("axis", "keepdims"): J(lambda ns, x: ns.jnp.ptp(x, axis=0, keepdims=True)),
            "out": NI(lambda ns, j, x: j.ptp(x, out=x), "out"),
        },
        "count_nonzero": {
            ("axis", "keepdims"): J(
                lambda ns, x: ns.jnp.count_nonzero(x > 0, axis=1, keepdims=True)
            )
        },
        "diff": {
            ("n", "axis", "prepend", "append"): J(
                lambda ns, x: ns.jnp.diff(x, n=2, axis=0, prepend=x[:1] * 2, append=0.5)
            )
        },
        "ediff1d": {
            ("to_begin", "to_end"): J(lambda ns, x: ns.jnp.ediff1d(x, to_begin=x[0], to_end=-1.0))
        },
        "trapezoid": {
            ("x", "dx", "axis"): J(
                lambda ns, x: (
                    ns.jnp.trapezoid(x, x=np.arange(4.0) ** 2),
                    ns.jnp.trapezoid(x, dx=0.3, axis=0),
                )
            )
        },
        "unwrap": {
            ("discont", "axis", "period"): J(
                lambda ns, x: ns.jnp.unwrap(x * 2, discont=4.0, axis=0, period=5.0)
            )
        },
        "gradient": {
            "axis": J(lambda ns, x: ns.jnp.gradient(x, 0.5, axis=1)),
            "edge_order": N(lambda j, x: j.gradient(x, edge_order=2)),
        },
        "cov": {
            ("y", "rowvar", "bias", "ddof", "fweights", "aweights", "dtype"): J(
                lambda ns, x: (
                    ns.jnp.cov(x, y=x[::-1] ** 2, rowvar=False, bias=True),
                    ns.jnp.cov(
                        x,
                        ddof=2,
                        fweights=np.array([1, 2, 3, 1]),
                        aweights=np.array([0.5, 1.0, 0.2, 0.7]),
                    ),
                    ns.jnp.cov(x, dtype=np.float32),
                )
            )
        },
        "corrcoef": {
            ("y", "rowvar", "dtype"): J(
                lambda ns, x: ns.jnp.corrcoef(x, y=x**2, rowvar=False, dtype=np.float64)
            )
        },
        "searchsorted": {
            ("side", "sorter", "method"): N(
                lambda j, x: j.searchsorted(
                    x[1], x[0], side="right", sorter=np.arange(4), method="compare_all"
                ),
                lambda x: np.searchsorted(x[1], x[0], side="right", sorter=np.arange(4)),
            )
        },
        "digitize": {
            ("right", "method"): N(
                lambda j, x: j.digitize(x, np.array([-3.0, 0.0, 2.5]), right=True, method="sort"),
                lambda x: np.digitize(x, np.array([-3.0, 0.0, 2.5]), right=True),
            )
        },
        "interp": {
            ("left", "right"): J(
                lambda ns, x: ns.jnp.interp(
                    x, np.array([-2.0, 0.0, 3.0]), np.array([1.0, 5.0, -1.0]), left=-7.0, right=7.0
                )
            ),
            "period": J(
                lambda ns, x: ns.jnp.interp(
                    x, np.array([0.0, 1.0, 3.0]), np.array([1.0, 5.0, -1.0]), period=4.0
                )
            ),
        },
        "bincount": {
            ("weights", "minlength", "length"): J(
                lambda ns, x: ns.jnp.bincount(
                    (abs(x) * 2).astype(int).ravel(), weights=x.ravel(), minlength=3, length=9
                )
            )
        },
        # shapes and index tricks
        "append": {"axis": J(lambda ns, x: ns.jnp.append(x, x[:1], axis=0))},
        "apply_along_axis": {
            "kw": N(
                lambda j, x: j.apply_along_axis(lambda r, k=1.0: r * k, 1, x, k=3.0),
                lambda x: x * 3.0,
            )
        },
        ("array_repr", "array_str"): {
            "kw": N(
                lambda j, x: (
                    x
                    * (j.array_str(np.arange(3.0) / 3, precision=2) == "[0.   0.33 0.67]")
                    * (j.array_repr(np.arange(2.0), precision=1) == "array([0., 1.])")
                ),
                lambda x: x,
            )
        },
        "can_cast": {
            "casting": N(
                lambda j, x: x * j.can_cast(np.float64, np.float32, casting="same_kind"),
                lambda x: x * True,
            )
        },
        "choose": {
            "mode": J(lambda ns, x: ns.jnp.choose(np.array([0, 3, 1, -1]), [x, -x], mode="wrap")),
            "out": NI(
                lambda ns, j, x: j.choose(np.array([0, 1, 0, 1]), [x, x], out=x, mode="clip"), "out"
            ),
        },
        "compress": {
            ("axis", "size", "fill_value"): J(
                lambda ns, x: ns.jnp.compress(x[0] > -3, x, axis=1, size=3, fill_value=7.0)
            ),
            "out": NI(lambda ns, j, x: j.compress(np.array([True]), x, out=x), "out"),
        },
        "extract": {
            ("size", "fill_value"): J(
                lambda ns, x: ns.jnp.extract(x > 0, x, size=8, fill_value=-1.0)
            )
        },
        "cross": {
            ("axisa", "axisb", "axisc"): J(
                lambda ns, x: ns.jnp.cross(x[:, :3], x[:, 1:].T, axisa=1, axisb=0, axisc=0)
            ),
            "axis": J(lambda ns, x: ns.jnp.cross(x[:, :3], x[:, 1:], axis=0)),
        },
        "delete": {
            "axis": J(lambda ns, x: ns.jnp.delete(x, 2, axis=-1)),
            # a promise about obj that never changes the result of indices keeping it
            "assume_unique_indices": J(
                lambda ns, x: ns.jnp.delete(x, np.array([0, 2]), axis=1, assume_unique_indices=True)
            ),
        },
        "diag_indices": {"ndim": J(lambda ns, x: ns.jnp.diag_indices(2, ndim=3))},
        "diagflat": {"k": J(lambda ns, x: ns.jnp.diagflat(x[0], k=-1))},
        "dstack": {"dtype": J(lambda ns, x: ns.jnp.dstack([x, x], dtype=np.float32))},
        "einsum_path": {
            "optimize": N(
                lambda j, x: x * len(j.einsum_path("ij,jk->ik", x, x.T, optimize="greedy")[0]),
                lambda x: x * 2,
            )
        },
        "fill_diagonal": {
            "wrap": N(
                lambda j, x: j.fill_diagonal(j.zeros((7, 3)), 1.0, wrap=True, inplace=False),
                lambda x: np.eye(7, 3) + np.eye(7, 3, -4),
            ),
            "inplace": NI(lambda ns, j, x: j.fill_diagonal(x, 1.0, inplace=True), "inplace"),
        },
        # NumPy's rule: the function gets whole index arrays (JAX maps it over scalars
        # with vmap and fails on keywords)
        "fromfunction": {
            ("dtype", "kw"): N(
                lambda j, x: j.fromfunction(
                    lambda i, k, s=1: (i + k) * s, (2, 3), dtype=np.float32, s=3
                )
            )
        },
        "frompyfunc": {
            "identity": N(
                lambda j, x: j.frompyfunc(lambda a, b: a + b, 2, 1, identity=10.0).reduce(
                    x, axis=0
                ),
                lambda x: x.sum(0) + 10.0,
            )
        },
        "indices": {
            ("dtype", "sparse"): J(
                lambda ns, x: ns.jnp.indices((2, 3), dtype=np.int32, sparse=True)
            )
        },
        "insert": {"axis": J(lambda ns, x: ns.jnp.insert(x, 1, -1.0, axis=0))},
        "mask_indices": {
            "k": N(lambda j, x: x * len(j.mask_indices(3, np.triu, k=1)[0]), lambda x: x * 3),
            "size": N(
                lambda j, x: j.mask_indices(3, np.triu, 1, size=4)[1],
                lambda x: np.array([1, 2, 2, 0]),
            ),
        },
        "piecewise": {
            "kw": N(lambda j, x: j.piecewise(x, [x < 0], [lambda t, s=1.0: t * s, 0.0], s=2.0))
        },
        "place": {"inplace": NI(lambda ns, j, x: j.place(x, x > 0, 1.0, inplace=True), "inplace")},
        ("put", "put_along_axis"): {
            "mode": J(
                lambda ns, x: (
                    ns.jnp.put(x, np.array([1, 30]), 2.0, mode="clip", inplace=False),
                    ns.jnp.put_along_axis(
                        x, np.array([[0, 7, 1, 2]]), -1.0, axis=0, mode="clip", inplace=False
                    ),
                )
            ),
            "inplace": NI(lambda ns, j, x: j.put(x, 0, 1.0, inplace=True), "inplace"),
        },
        "ravel_multi_index": {
            ("mode", "order"): J(
                lambda ns, x: ns.jnp.ravel_multi_index(
                    (np.array([0, 5]), np.array([1, -3])), (3, 4), mode="wrap", order="F"
                )
            )
        },
        "rollaxis": {"start": J(lambda ns, x: ns.jnp.rollaxis(x.reshape(3, 2, 2), 2, start=1))},
        "rot90": {("k", "axes"): J(lambda ns, x: ns.jnp.rot90(x, k=3, axes=(1, 0)))},
        "save": {
            "allow_pickle": N(lambda j, x: x + _saved(j.save, allow_pickle=False), lambda x: x)
        },
        "savez": {"kw": N(lambda j, x: x + _saved(j.savez, b=np.ones(2)), lambda x: x)},
        "select": {"default": J(lambda ns, x: ns.jnp.select([x > 0], [x], default=-2.0))},
        "tri": {("M", "k", "dtype"): J(lambda ns, x: ns.jnp.tri(3, M=5, k=-1, dtype=int))},
        ("tril_indices", "triu_indices"): {
            ("k", "m"): J(
                lambda ns, x: (ns.jnp.tril_indices(3, k=1, m=5), ns.jnp.triu_indices(4, k=-1, m=2))
            )
        },
        ("tril_indices_from", "triu_indices_from"): {
            "k": J(
                lambda ns, x: (ns.jnp.tril_indices_from(x, k=1), ns.jnp.triu_indices_from(x, k=-2))
            )
        },
        "unstack": {"axis": J(lambda ns, x: ns.jnp.unstack(x, axis=-1))},
        "vander": {("N", "increasing"): J(lambda ns, x: ns.jnp.vander(x[0], N=3, increasing=True))},
        "vecdot": {
            ("axis", "precision"): J(
                lambda ns, x: ns.jnp.vecdot(x, x, axis=0, precision="highest")
            ),
            "preferred_element_type": NI(
                lambda ns, j, x: j.vecdot(x, x, preferred_element_type=np.float32),
                "preferred_element_type",
            ),
        },
        "vectorize": {
            ("excluded", "signature"): J(
                lambda ns, x: ns.jnp.vectorize(
                    lambda r, s: r.sum() * s, excluded={1}, signature="(n)->()"
                )(x, 2.0)
            )
        },
        # sets: size/fill_value make the length static; assume_unique is a promise that
        # never changes the result of inputs keeping it (jitmagic does not rely on it)
        "unique": {
            (
                "return_index",
                "return_inverse",
                "return_counts",
                "size",
                "fill_value",
                "equal_nan",
                "sorted",
            ): J(
                lambda ns, x: ns.jnp.unique(
                    x // 2,
                    return_index=True,
                    return_inverse=True,
                    return_counts=True,
                    size=7,
                    fill_value=-1.0,
                    equal_nan=True,
                    sorted=True,
                )
            ),
            "axis": NI(lambda ns, j, x: j.unique(x, axis=0, size=3), "axis"),
        },
        ("unique_all", "unique_counts", "unique_inverse", "unique_values"): {
            ("size", "fill_value"): J(
                lambda ns, x: (
                    ns.jnp.unique_all(x // 3, size=5, fill_value=9.0),
                    ns.jnp.unique_counts(x // 3, size=2),
                    ns.jnp.unique_inverse(x // 3, size=4),
                    ns.jnp.unique_values(x // 4, size=6, fill_value=0.5),
                )
            )
        },
        ("union1d", "intersect1d", "setdiff1d", "setxor1d"): {
            ("size", "fill_value"): J(
                lambda ns, x: (
                    ns.jnp.union1d(x[0], x[1] // 2, size=9, fill_value=0.0),
                    ns.jnp.intersect1d(x // 2, x[1], size=3, fill_value=-1.0),
                    ns.jnp.setdiff1d(x[0], x[1] - 2, size=4, fill_value=7.0),
                    ns.jnp.setxor1d(x[0], x[0] + 2, size=5, fill_value=1.0),
                )
            ),
        },
        ("intersect1d", "setdiff1d", "setxor1d"): {
            "assume_unique": J(
                lambda ns, x: (
                    ns.jnp.intersect1d(x[0], x[1] - 4, assume_unique=True, size=4),
                    ns.jnp.setdiff1d(x[0], x[1] - 4, assume_unique=True, size=4),
                    ns.jnp.setxor1d(x[0], x[1] - 4, assume_unique=True, size=4),
                )
            )
        },
        "intersect1d": {
            "return_indices": NI(
                lambda ns, j, x: j.intersect1d(x[0], x[1], return_indices=True, size=2),
                "return_indices",
            )
        },
        "isin": {
            ("invert", "assume_unique", "method"): J(
                lambda ns, x: (
                    ns.jnp.isin(x, x[0] + 1, invert=True, assume_unique=True),
                    ns.jnp.isin(x, x[1], method="sort"),
                )
            )
        },
        "lexsort": {"axis": J(lambda ns, x: ns.jnp.lexsort([x, x // 3], axis=0))},
        ("partition", "argpartition"): {
            "axis": N(
                lambda j, x: (
                    j.partition(x, 1, axis=0)[1],
                    j.take_along_axis(x, j.argpartition(x, 1, axis=0), 0)[1],
                ),
                lambda x: (np.sort(x, axis=0)[1], np.sort(x, axis=0)[1]),
            )
        },
        "trim_zeros": {
            "trim": N(
                lambda j, x: x * len(j.trim_zeros(np.array([0, 1, 0]), trim="f")), lambda x: x * 2
            ),
            "axis": NI(lambda ns, j, x: j.trim_zeros(np.array([0, 1]), axis=0), "axis"),
        },
        # polynomials, windows, bits
        "polyval": {"unroll": J(lambda ns, x: ns.jnp.polyval(x[0], x, unroll=2))},
        "polymul": {
            "trim_leading_zeros": NI(
                lambda ns, j, x: j.polymul(x[0], x[1], trim_leading_zeros=True),
                "trim_leading_zeros",
            )
        },
        "polyder": {"m": J(lambda ns, x: ns.jnp.polyder(x[0], m=2))},
        "polyint": {
            ("m", "k"): J(lambda ns, x: ns.jnp.polyint(x[0], m=2, k=np.array([1.0, -1.0])))
        },
        ("packbits", "unpackbits"): {
            ("axis", "bitorder"): J(
                lambda ns, x: (
                    ns.jnp.packbits(x > 0, axis=1, bitorder="little"),
                    ns.jnp.unpackbits(ns.jnp.packbits(x > 0), axis=0, bitorder="big"),
                )
            )
        },
        "unpackbits": {
            "count": J(
                lambda ns, x: ns.jnp.unpackbits(ns.jnp.packbits(x > 0, axis=1), axis=1, count=5)
            )
        },
        "histogram_bin_edges": {
            ("bins", "range", "weights"): N(
                lambda j, x: j.histogram_bin_edges(x, bins=4, range=(-3, 4), weights=x),
                lambda x: np.histogram_bin_edges(x, bins=4, range=(-3, 4), weights=x),
            )
        },
        ("histogramdd", "histogram2d"): {
            ("bins", "range", "weights", "density"): N(
                lambda j, x: (
                    j.histogramdd(
                        x[:, :2],
                        bins=[2, 3],
                        range=[(-6, 6), (-5, 5)],
                        weights=x[:, 2],
                        density=True,
                    )[0],
                    j.histogram2d(
                        x[0], x[1], bins=3, range=[(-6, 6), (-5, 5)], weights=x[2], density=False
                    )[0],
                ),
                lambda x: (
                    np.histogramdd(
                        x[:, :2],
                        bins=[2, 3],
                        range=[(-6, 6), (-5, 5)],
                        weights=x[:, 2],
                        density=True,
                    )[0],
                    np.histogram2d(
                        x[0], x[1], bins=3, range=[(-6, 6), (-5, 5)], weights=x[2], density=False
                    )[0],
                ),
            )
        },
        "polyfit": {
            ("rcond", "w"): J(
                lambda ns, x: ns.jnp.polyfit(x[0], x[1] ** 2, 2, rcond=1e-10, w=abs(x[2]) + 1)
            ),
            ("full", "cov"): NI(lambda ns, j, x: j.polyfit(x[0], x[1], 1, full=True), "full"),
        },
    }


def _nans(ns, x):
    """x with NaN where x is in (-1, 1) and an infinity at one place."""
    return ns.jnp.where(abs(x) < 1, np.nan, x).at[0, 0].set(np.inf)


def _saved(save, **kw):
    """0 after saving a constant with save(file, array, **kw) into a temporary file."""
    import os
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        save(os.path.join(d, "a"), np.arange(3.0), **kw)
    return 0
