"""`%%jit --backend jax|numba`: a cell's functions compiled by that JIT, watched."""

from __future__ import annotations

from jitmagic.diagnostics import watch as _watch


def peer_jit(backend, fun, static_argnums, static_argnames):
    mod = _watch._peer(backend)
    if backend == "jax":
        import jax

        return mod.watch(
            jax.jit(fun, static_argnums=static_argnums, static_argnames=static_argnames)
        )
    if static_argnums or static_argnames:
        raise NotImplementedError(
            f"%%jit --backend numba: Numba has no static arguments (it compiles one version per "
            f"argument type), so --static-argnums/--static-argnames cannot apply to "
            f"{fun.__name__}; drop them"
        )
    import numba

    return mod.watch(numba.njit(fun))
