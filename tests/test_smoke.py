import numpy as np

import jitmagic as jm


def test_seed_example_matches_numpy():
    @jm.jit
    def f(x, y):
        return np.sin(x) * y + 1.0

    x = np.linspace(-3, 3, 11)
    out = f(x, 2.0)
    assert isinstance(out, np.ndarray)
    np.testing.assert_allclose(out, np.sin(x) * 2.0 + 1.0, rtol=1e-14)
    assert len(f.variants) == 1
