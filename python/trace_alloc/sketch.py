"""Turn embeddings from token ids alone, for generators that return no hidden states (vLLM,
SGLang, an API): a seeded sketch of the turn's hashed token n-grams.

    sketch = TokenSketch()                 # width 256, unigrams + bigrams, seed 0
    sketch([17, 402, 9])                   # (256,) float32, unit length
    sketch.batch([[17, 402, 9], [17, 403, 9]])

Each n-gram of the turn (every run of n consecutive token ids, for each n in `orders`) is hashed
to one of `width` coordinates and a sign (signed feature hashing), the signs are summed per
coordinate and the vector is scaled to unit length. Signed feature hashing is itself a sparse
Johnson–Lindenstrauss projection of the turn's n-gram count vector, so the cosine of two
sketches estimates the cosine of the two turns' n-gram counts, with an error that shrinks as
√(1/width); no second projection (`projection.RandomProjection`) is needed. TRACE reads an
embedding only through the distance d = (1 − cos)/2 between siblings: identical turns get
d = 0, turns that share no n-gram d ≈ 1/2, and a one-token difference in a short turn lands in
between, which is what the contrast needs. Why these defaults (width 256, orders 1 and 2):
python/README.md, "Embeddings without hidden states", measured by
`examples/llm/sketch_study.py`.

The hash is a fixed 64-bit integer mix (SplitMix64's finaliser) of the seed, the n-gram's order
and its token ids: the same sketch in every process and on every machine (never Python's
`hash()`, which is salted per process). Cost: O(tokens × len(orders)), numpy only, no model call.
"""
from __future__ import annotations

from typing import Any, List, Sequence, Tuple

import numpy as np

from ._errors import TraceAllocError

__all__ = ["DEFAULT_ORDERS", "DEFAULT_WIDTH", "TokenSketch"]

#: The default width: sibling distances within about 7% (median relative error) of the exact n-gram
#: distance at any turn length, for 1 KiB of float32 per node (16 coordinates: 30%, 64: 15%, 1024: 3%);
#: measured in python/README.md, "Embeddings without hidden states".
DEFAULT_WIDTH = 256
#: Unigrams and bigrams: bigrams keep word order (with unigrams alone a turn and its reordering are
#: identical), trigrams changed no plan on the example's forests (python/README.md).
DEFAULT_ORDERS = (1, 2)

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def _mix(h: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser on uint64 arrays (wraps modulo 2**64, as intended)."""
    h = h ^ (h >> np.uint64(30))
    h = h * _M1
    h = h ^ (h >> np.uint64(27))
    h = h * _M2
    return h ^ (h >> np.uint64(31))


class TokenSketch:
    """Seeded signed feature hashing of a turn's token n-grams into `width` float32s (module docstring)."""

    def __init__(self, width: int = DEFAULT_WIDTH, orders: Sequence[int] = DEFAULT_ORDERS, seed: int = 0) -> None:
        if isinstance(width, bool) or not isinstance(width, int) or width < 1:
            raise TraceAllocError("invalid_options", "width must be an integer >= 1, got %r" % (width,), field="width")
        orders = tuple(orders)
        if not orders or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in orders) \
                or len(set(orders)) != len(orders):
            raise TraceAllocError("invalid_options", "orders must be distinct integers >= 1, got %r" % (orders,),
                                  field="orders")
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2 ** 64:
            raise TraceAllocError("invalid_options", "seed must be an integer in [0, 2**64), got %r" % (seed,), field="seed")
        self.width, self.orders, self.seed = width, orders, seed
        # One starting hash per order, so that a unigram and a bigram never share a hash by construction.
        self._salt = {n: _mix(np.array([seed], dtype=np.uint64) ^ (np.array([n], dtype=np.uint64) * _GOLDEN))[0]
                      for n in orders}

    def __repr__(self) -> str:
        return "TokenSketch(width=%d, orders=%r, seed=%d)" % (self.width, self.orders, self.seed)

    def __call__(self, tokens: Sequence[int]) -> np.ndarray:
        """One turn's sketch: (width,) float32, unit length (zero only for an empty turn)."""
        return self.batch([tokens])[0]

    def batch(self, turns: Sequence[Sequence[int]]) -> np.ndarray:
        """Sketches of many turns at once: (len(turns), width) float32, one row per turn."""
        ids, starts = _flatten(turns)
        out = np.zeros((len(turns), self.width), dtype=np.float64)
        if ids.size:
            row = np.repeat(np.arange(len(turns)), np.diff(starts))
            for n in self.orders:
                if ids.size < n:
                    continue
                m = ids.size - n + 1  # n-grams starting at every position; those that cross a turn are dropped
                h = np.full(m, self._salt[n], dtype=np.uint64)
                for k in range(n):
                    h = _mix((h ^ ids[k:k + m]) * _GOLDEN)
                keep = row[:m] == row[n - 1:n - 1 + m]
                h, r = h[keep], row[:m][keep]
                index = (h % np.uint64(self.width)).astype(np.int64)
                sign = np.where((h >> np.uint64(63)) == 1, -1.0, 1.0)
                np.add.at(out, (r, index), sign)
        norm = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norm, out=out, where=norm > 0)
        return out.astype(np.float32)


def _flatten(turns: Sequence[Sequence[int]]) -> Tuple[np.ndarray, np.ndarray]:
    """Every turn's token ids in one uint64 array, and each turn's start offset (plus the end)."""
    parts: List[Any] = []
    lengths = []
    for i, t in enumerate(turns):
        a = np.asarray(t.detach().cpu() if hasattr(t, "detach") else t)
        if a.ndim != 1 or (a.size and (a.dtype.kind not in "iu" or int(a.min()) < 0)):
            raise TraceAllocError("invalid_value", 'field "tokens": turn %d must be a sequence of token ids >= 0' % i,
                                  field="tokens")
        parts.append(a.astype(np.uint64))
        lengths.append(a.size)
    starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    ids = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)
    return ids, starts
