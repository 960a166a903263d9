"""Mean and 95% Student-t interval over seeds, the paired version for differences, and the
number of seeds a wanted interval width needs."""

from __future__ import annotations

import math

# Two-sided 97.5% quantiles of Student's t for 1..30 degrees of freedom.
_T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
         2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]
# Beyond 30: 40, 60, 120 degrees of freedom, then the normal quantile.
_T975_TAIL = [(40, 2.021), (60, 2.000), (120, 1.980)]


def t975(df: int) -> float:
    if df <= 30:
        return _T975[df - 1]
    for limit, q in _T975_TAIL:
        if df <= limit:
            return q
    return 1.960


def mean_interval(xs: list[float]) -> dict:
    n = len(xs)
    m = sum(xs) / n
    if n < 2:
        return {"mean": m, "ci95": [m, m], "n": n, "sd": 0.0}
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))
    h = t975(n - 1) * sd / math.sqrt(n)
    return {"mean": m, "ci95": [m - h, m + h], "n": n, "sd": sd}


def signed(m: dict) -> str:
    """A `mean_interval` of differences as "+m [+lo, +hi]", with " *" where the interval excludes 0
    (separable)."""
    lo, hi = m["ci95"]
    return "%+.1f [%+.1f, %+.1f]%s" % (m["mean"], lo, hi, " *" if lo > 0 or hi < 0 else "")


def paired(a: list[float], b: list[float]) -> dict:
    """a − b per seed (same seeds, same pre-trained policy), with its interval."""
    if len(a) != len(b):
        raise ValueError("paired difference of %d and %d seeds" % (len(a), len(b)))
    return mean_interval([x - y for x, y in zip(a, b)])


def half_width(v: dict) -> float:
    return (v["ci95"][1] - v["ci95"][0]) / 2


def seeds_for_half_width(sd: float, target: float, most: int = 10_000) -> int:
    """The fewest seeds n whose 95% t-interval half-width t(n−1)·sd/√n is at most `target`."""
    for n in range(2, most + 1):
        if t975(n - 1) * sd / math.sqrt(n) <= target:
            return n
    return most
