"""``sampling.layerwise.scale_columns`` is ``M @ diag(d)`` entry for entry."""

import numpy as np
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import spla
from sampling.layerwise import diagonal, scale_columns


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 30), st.integers(1, 40), st.floats(0.0, 1.0), st.integers(0, 2 ** 31),
       st.sampled_from([np.float32, np.float64]))
def test_scale_columns_equals_product_with_diagonal(m, n, density, seed, dtype):
    rng = np.random.default_rng(seed)
    S = sp.random(m, n, density=density, format="csr", random_state=rng, dtype=dtype)
    S.data = (S.data * 10.0 ** rng.integers(-30, 30, S.data.size)).astype(dtype)
    M = spla.Matrix.from_scipy(S)
    d = (rng.random(n) * 10.0 ** rng.integers(-20, 20, n)).astype(dtype)
    d[rng.random(n) < 0.2] = 0.0           # zero scales keep their entries
    want = spla.mxm(M, diagonal(d)).new()
    got = scale_columns(M, d)
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.array_equal(np.asarray(got.indptr), np.asarray(want.indptr))
    assert np.array_equal(np.asarray(got.indices), np.asarray(want.indices))
    assert np.asarray(got.values).tobytes() == np.asarray(want.values).tobytes()
    # And against scipy (an independent product).
    with np.errstate(over="ignore"):
        ref = (S @ sp.diags(d)).toarray()
    assert np.allclose(got.to_dense(), ref, rtol=1e-6, atol=0)
