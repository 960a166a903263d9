"""Mean and 95% Student-t interval over seeds, and the paired version for differences."""

from __future__ import annotations

import math

# Two-sided 97.5% quantiles of Student's t for 1..30 degrees of freedom.
_T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
         2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def t975(df: int) -> float:
    return _T975[df - 1] if df <= 30 else 1.96


def mean_interval(xs: list[float]) -> dict:
    n = len(xs)
    m = sum(xs) / n
    if n < 2:
        return {"mean": m, "ci95": [m, m], "n": n}
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1))
    h = t975(n - 1) * sd / math.sqrt(n)
    return {"mean": m, "ci95": [m - h, m + h], "n": n}


def paired(a: list[float], b: list[float]) -> dict:
    """a − b per seed (same seeds, same pre-trained policy), with its interval."""
    return mean_interval([x - y for x, y in zip(a, b)])
