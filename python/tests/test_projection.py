"""The seeded random projection: reproducible, linear, and as accurate as Johnson–Lindenstrauss says."""
import numpy as np
import pytest

from trace_alloc import TraceAllocError
from trace_alloc.projection import RandomProjection

from conftest import require_torch


def test_same_seed_same_matrix_and_different_seed_different():
    a, b, c = RandomProjection(300, 16, seed=5), RandomProjection(300, 16, seed=5), RandomProjection(300, 16, seed=6)
    np.testing.assert_array_equal(a.matrix, b.matrix)
    assert not np.allclose(a.matrix, c.matrix)
    assert a.matrix.shape == (300, 16)


def test_projects_rows_keeping_the_float_width():
    p = RandomProjection(50, 8, seed=1)
    x = np.random.default_rng(0).normal(size=(7, 50))
    y = p(x)
    assert y.shape == (7, 8) and y.dtype == np.float64
    np.testing.assert_allclose(y, x @ p.matrix)
    assert p(x.astype(np.float32)).dtype == np.float32
    with pytest.raises(TraceAllocError) as info:
        p(np.zeros((3, 49)))
    assert info.value.field == "embedding"


def test_cosines_keep_within_the_jl_scale():
    # Near-duplicate pairs in 2048 dims (cosine about 0.9), as siblings' hidden states are.
    rng = np.random.default_rng(2)
    base = rng.normal(size=(400, 2048))
    other = base + 0.48 * rng.normal(size=(400, 2048))
    cos = lambda u, v: np.sum(u * v, 1) / np.linalg.norm(u, axis=1) / np.linalg.norm(v, axis=1)  # noqa: E731
    before = cos(base, other)
    errors = {}
    for k in (16, 64, 256):
        p = RandomProjection(2048, k, seed=3)
        errors[k] = np.abs(cos(p(base), p(other)) - before).mean()
    # The error shrinks like 1/sqrt(k): each 4x in k about halves it.
    assert errors[16] > errors[64] > errors[256]
    assert 1.5 < errors[16] / errors[64] < 2.7 and 1.5 < errors[64] / errors[256] < 2.7
    assert errors[256] < 0.02


def test_torch_input_stays_on_its_device_and_dtype():
    torch = require_torch()
    p = RandomProjection(40, 6, seed=4)
    x = torch.randn(5, 40, dtype=torch.float64)
    y = p(x)
    assert isinstance(y, torch.Tensor) and y.dtype == torch.float64 and y.device == x.device
    np.testing.assert_allclose(y.numpy(), x.numpy() @ p.matrix, rtol=1e-12)
    assert p(x.float()).dtype == torch.float32
