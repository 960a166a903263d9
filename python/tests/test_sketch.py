"""trace_alloc.sketch: seeded signed feature hashing of token n-grams, the same on every machine."""
import os
import subprocess
import sys

import numpy as np
import pytest

from trace_alloc import TraceAllocError
from trace_alloc.sketch import DEFAULT_WIDTH, TokenSketch


def counts(v):
    """A sketch as {coordinate: signed n-gram count} (undoing the unit-length scaling)."""
    nz = np.flatnonzero(v)
    unit = np.abs(v[nz]).min()
    return {int(i): int(round(v[i] / unit)) for i in nz}


def test_the_hash_is_pinned_so_every_machine_computes_the_same_sketch():
    # Unigrams 151935, 0, 7 (three times) and bigrams (151935, 0), (0, 7), (7, 7) (twice): six
    # coordinates, the repeated n-grams with counts 3 and 2. A change of the hash changes these.
    assert counts(TokenSketch(width=64)([151935, 0, 7, 7, 7])) == {6: -3, 18: -1, 33: 1, 49: 1, 51: 2, 61: -1}
    assert counts(TokenSketch(width=64, seed=5, orders=(1, 2, 3))([1, 2, 3])) == {1: 1, 15: 1, 17: 1, 31: -1, 54: -1, 63: -1}


def test_another_process_with_another_hash_seed_gets_the_same_bytes():
    turns = [[3, 1, 4, 1, 5], [9, 2, 6], [5]]
    here = TokenSketch(width=32, seed=11).batch(turns).tobytes().hex()
    code = ("import sys; sys.path.insert(0, %r); from trace_alloc.sketch import TokenSketch; "
            "print(TokenSketch(width=32, seed=11).batch(%r).tobytes().hex())"
            % (os.path.dirname(os.path.dirname(os.path.abspath(__import__("trace_alloc").__file__))), turns))
    for hash_seed in ("1", "12345"):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env={**os.environ, "PYTHONHASHSEED": hash_seed})
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == here


def test_a_sketch_is_a_unit_float32_vector_of_the_width_and_equal_turns_are_equal():
    s = TokenSketch()
    a, b = s([5, 4, 9]), s([5, 4, 9])
    assert a.dtype == np.float32 and a.shape == (DEFAULT_WIDTH,)
    assert np.linalg.norm(a) == pytest.approx(1.0, abs=1e-6)
    assert a.tobytes() == b.tobytes()  # identical text: distance 0
    assert not np.any(s([]))  # an empty turn has no n-gram


def test_a_one_token_change_keeps_part_of_the_similarity_and_bigrams_see_order():
    s = TokenSketch(width=4096)  # wide enough that no two of these n-grams collide
    one_off = float(s([5, 4, 9]) @ s([5, 4, 10]))
    # Unigrams {5, 4, 9} vs {5, 4, 10} share 2 of 3, bigrams (5, 4) of 2: cos = 3 / 5.
    assert one_off == pytest.approx(3 / 5, abs=1e-6)
    assert float(s([1, 2, 3]) @ s([7, 8, 9])) == pytest.approx(0.0, abs=1e-6)
    bag = TokenSketch(width=4096, orders=(1,))
    assert float(bag([1, 2, 3]) @ bag([3, 2, 1])) == pytest.approx(1.0, abs=1e-6)  # unigrams alone ignore order
    assert float(s([1, 2, 3]) @ s([3, 2, 1])) == pytest.approx(3 / 5, abs=1e-6)  # bigrams do not


def test_a_batch_equals_one_turn_at_a_time_and_no_ngram_crosses_two_turns():
    s = TokenSketch(width=16, orders=(1, 2, 3))
    turns = [[1, 2], [3], [], [4, 5, 6, 7], np.array([8, 9], dtype=np.int32)]
    batch = s.batch(turns)
    for row, turn in zip(batch, turns):
        assert row.tobytes() == s(turn).tobytes()
    assert s.batch([]).shape == (0, 16)


def test_seeds_and_widths_give_different_sketches():
    assert TokenSketch(seed=0)([1, 2, 3]).tobytes() != TokenSketch(seed=1)([1, 2, 3]).tobytes()
    assert TokenSketch(width=8)([1, 2, 3]).shape == (8,)


@pytest.mark.parametrize("options, field", [
    (dict(width=0), "width"), (dict(width=True), "width"), (dict(orders=()), "orders"), (dict(orders=(1, 1)), "orders"),
    (dict(orders=(0,)), "orders"), (dict(seed=-1), "seed"), (dict(seed=2 ** 64), "seed"),
])
def test_bad_options_are_refused(options, field):
    with pytest.raises(TraceAllocError) as info:
        TokenSketch(**options)
    assert info.value.field == field


def test_token_ids_must_be_non_negative_integers():
    for bad in ([1, -2], [0.5], [[1, 2]]):
        with pytest.raises(TraceAllocError) as info:
            TokenSketch()(bad)
        assert info.value.field == "tokens"
