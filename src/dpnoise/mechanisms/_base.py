"""What the mechanisms share beyond the release path (dpnoise/_release/): the policy for
records outside a categorical mechanism's public domain. The release names are re-exported
here for the mechanism modules."""
from __future__ import annotations

from typing import Any

from .._release import (
    MAX_EPSILON,
    MAX_RHO,
    MIN_REAL_SENSITIVITY,
    Mechanism,
    as_integer_array,
    as_real_array,
    check_beta,
    check_delta,
    check_epsilon,
    check_rho,
    check_sensitivity,
    clamp_to_grid,
    clamped_integers,
    integers_on_grid,
    normalise_shape,
    size_of,
)

# -- records outside a categorical mechanism's public domain ------------------------------------
OUT_OF_DOMAIN = ("clamp", "drop", "raise")
# The default: the only policy whose observable behaviour (no exception, same output shape) does
# not depend on the data; docs/security.md gives the reasoning.
DEFAULT_OUT_OF_DOMAIN = "clamp"


def check_out_of_domain(value: Any, *, drop: bool = True) -> str:
    """One of OUT_OF_DOMAIN ("drop" only where a dropped record cannot change the output's shape)."""
    allowed = OUT_OF_DOMAIN if drop else tuple(p for p in OUT_OF_DOMAIN if p != "drop")
    if not isinstance(value, str) or value not in allowed:
        extra = "" if drop else (" ('drop' is refused here: the output's length would reveal how many "
                                 "records were dropped)")
        raise ValueError(f"out_of_domain must be one of {allowed}, got {value!r}{extra}")
    return value


def out_of_domain_error(domain: str) -> ValueError:
    """The exception of out_of_domain='raise'; it names the public domain, never a value."""
    return ValueError(f"some records are outside {domain} (out_of_domain='raise'; this exception "
                      "reveals that such a record exists: use 'clamp' or 'drop' on private data)")


# the release names the mechanism modules import from here, and this module's own
__all__ = [
    "DEFAULT_OUT_OF_DOMAIN", "MAX_EPSILON", "MAX_RHO", "MIN_REAL_SENSITIVITY", "Mechanism", "OUT_OF_DOMAIN",
    "as_integer_array", "as_real_array", "check_beta", "check_delta", "check_epsilon", "check_out_of_domain",
    "check_rho", "check_sensitivity", "clamp_to_grid", "clamped_integers", "integers_on_grid", "normalise_shape",
    "out_of_domain_error", "size_of",
]
