"""Calibration searches in bounded time: the least noise parameter at or above a start value
that meets a monotone target, by doubling steps then bisection (never a fixed-factor creep);
the finest grid exponent whose noise parameter fits the samplers' range, by bisection."""
from __future__ import annotations

from typing import Callable


def least_at_or_above(ok: Callable[[float], bool], start: float, *, rel: float = 1e-9,
                      what: str = "the noise parameter", first_step: float = 2.0**-24) -> float:
    """The least x >= start with ok(x) to relative precision ``rel`` (the x returned satisfies
    ok), for ok monotone (false below a point, true above). At most ~1100 evaluations of ok
    in all (the step doubles from start·first_step up to 1e300); ValueError if nothing up to 1e300
    meets it."""
    if ok(start):
        return start
    lo, step = start, start * first_step
    hi = start + step
    while not ok(hi):
        lo, step = hi, step * 2.0
        hi = start + step
        if hi > 1e300:
            raise ValueError(f"no value of {what} up to 1e300 meets the privacy target")
    while hi - lo > rel * hi:
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def least_fitting_exponent(fits: Callable[[int], bool], lo: int, hi: int) -> int | None:
    """The least grid exponent k in [lo, hi] with fits(k), for fits monotone in k (false on
    finer grids, true on coarser ones), by bisection: about log2(hi - lo) + 1 evaluations, the
    coarsest (hi) first. None when even hi does not fit (or lo > hi). The k returned is one at
    which fits was evaluated true, so a caller's range holds at it even if fits were not
    monotone (it would then only not be the finest)."""
    if lo > hi or not fits(hi):
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if fits(mid):
            hi = mid
        else:
            lo = mid + 1
    return hi
