"""A seeded random projection (Johnson–Lindenstrauss) of hidden states to k dimensions, on the
trainer's side, before they are sent: an LLM's hidden state (4096–8192 float32s, 16–32 KiB
per node) becomes k numbers.

TRACE reads embeddings only through the cosine between siblings. A Gaussian projection keeps
inner products in expectation, and the error it makes on a set of vectors depends on k and on
their Gram matrix only, not on the original dimension: for a vector z, |Pz|²/|z|² is
χ²_k / k (relative standard deviation √(2/k)). Measured cosine errors and plan changes on the
LLM example's forests: python/README.md ("Large hidden states").

    project = RandomProjection(in_dim=4096, k=256, seed=0)   # the same seed on every rank
    turn_embedding = project(hidden_states)                    # (n, 4096) -> (n, 256), numpy or torch

The matrix is drawn once on the host by numpy (PCG64 from `seed`, entries N(0, 1/k)), so every
rank with the same seed and numpy builds the same one; a torch input is multiplied on its own
device, with one copy of the matrix per device and dtype, made on first use.
"""
from __future__ import annotations

import math
from typing import Any, Dict, Tuple

import numpy as np

from ._errors import TraceAllocError


class RandomProjection:
    """x ↦ x·P with P (in_dim × k), P[i, j] ~ N(0, 1/k), seeded."""

    def __init__(self, in_dim: int, k: int, seed: int = 0) -> None:
        for name, value in (("in_dim", in_dim), ("k", k)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise TraceAllocError("invalid_options", "%s must be an integer >= 1, got %r" % (name, value), field=name)
        self.in_dim, self.k, self.seed = in_dim, k, seed
        rng = np.random.Generator(np.random.PCG64(seed))
        #: (in_dim, k) float64: the projection matrix.
        self.matrix = rng.standard_normal((in_dim, k)) / math.sqrt(k)
        self._on_device: Dict[Tuple[str, Any], Any] = {}

    def __call__(self, x: Any) -> Any:
        """Projects rows: (..., in_dim) -> (..., k). numpy in, numpy out (float64 for float64
        input, else float32); a torch tensor stays on its device and keeps its floating dtype."""
        shape = tuple(getattr(x, "shape", ()))
        if not shape or shape[-1] != self.in_dim:
            raise TraceAllocError("invalid_value", 'field "embedding": expected rows of %d numbers, got shape %s'
                                  % (self.in_dim, shape), field="embedding")
        if hasattr(x, "detach") and hasattr(x, "device"):
            return x @ self._matrix_for(x)
        a = np.asarray(x)
        dtype = np.float64 if a.dtype == np.float64 else np.float32
        return (a.astype(dtype, copy=False) @ self.matrix.astype(dtype, copy=False)).astype(dtype, copy=False)

    def _matrix_for(self, x: Any) -> Any:
        import torch  # only reached with a torch input

        dtype = x.dtype if x.is_floating_point() else torch.float32
        key = (str(x.device), dtype)
        if key not in self._on_device:
            self._on_device[key] = torch.from_numpy(self.matrix).to(device=x.device, dtype=dtype)
        return self._on_device[key]
