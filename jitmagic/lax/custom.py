"""lax functions whose value is a user function's: custom_root and custom_linear_solve (their
custom derivatives do not matter, since jitmagic does not differentiate: the value is the
solve's) and platform_dependent (jitmagic runs on the CPU)."""

from __future__ import annotations


def custom_root(f, initial_guess, solve, tangent_solve, has_aux=False):
    """lax.custom_root: solve(f, initial_guess) (with its auxiliary output if has_aux)."""
    return solve(f, initial_guess)


def custom_linear_solve(matvec, b, solve, transpose_solve=None, symmetric=False, has_aux=False):
    """lax.custom_linear_solve: solve(matvec, b) (with its auxiliary output if has_aux)."""
    return solve(matvec, b)


def platform_dependent(*args, default=None, **per_platform):
    """lax.platform_dependent: the 'cpu' branch (or `default`) applied to args."""
    fn = per_platform.get("cpu", default)
    if fn is None:
        raise NotImplementedError(
            f"lax.platform_dependent: no branch for the platform 'cpu' (jitmagic compiles for "
            f"the CPU only) and no default; branches given: {sorted(per_platform)}"
        )
    return fn(*args)


__all__ = ["custom_root", "custom_linear_solve", "platform_dependent"]
