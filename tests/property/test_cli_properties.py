"""Property test of the command line's argument handling (issue #10): for any argv, `dpnoise`
exits 0 with the output asked for, or exits 2 with exactly one line on stderr; never a traceback.
demo and bench are only parsed (they take seconds to run); sample runs with small -n."""
from __future__ import annotations

import contextlib
import io

from hypothesis import given
from hypothesis import strategies as st

from dpnoise import cli
from property_inputs import PROFILE, time_limit

TOKENS = st.one_of(
    st.sampled_from(["sample", "demo", "bench", "discrete-laplace", "discrete-gaussian", "geometric",
                     "bernoulli", "bernoulli-exp", "-n", "--seed", "--threads", "--scale", "--sigma",
                     "--p", "--gamma", "--plot", "--quick", "--json", "--peers", "--repeats", "--only"]),
    st.sampled_from(["0", "1", "3", "-1", "2", "1/2", "7/3", "0.3", "nan", "inf", "-0", "1e308",
                     "1e-320", "1e999999", str(2**256), str(2**64), "99999999999999999999", "1" * 500,
                     "", " ", "x", "--", "-", "/nonexistent/x.png", "1/0", "0x10", "1_000", "٣"]),
    st.text(max_size=6),
)


@PROFILE
@given(argv=st.lists(TOKENS, max_size=7))
def test_any_argv_exits_0_or_2_with_one_line(argv):
    try:
        parsed = cli.build_parser().parse_args(argv)
    except cli._UsageError as exc:
        assert "\n" not in " ".join(str(exc).split())
        parsed = None
    except SystemExit as exc:  # --help / -h print usage and exit 0
        assert exc.code == 0
        return
    if parsed is not None and (parsed.command != "sample" or parsed.n > 50):
        return  # parsing accepted it; demo/bench/large samples are not run here
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), time_limit():
        code = cli.main(argv)
    if code == 0:
        assert parsed is not None and len(out.getvalue().split()) == parsed.n
    else:
        assert code == 2, code
        lines = [ln for ln in err.getvalue().splitlines() if ln.strip()]
        assert len(lines) == 1 and "Traceback" not in err.getvalue(), err.getvalue()
