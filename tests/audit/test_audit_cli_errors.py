"""Issue 33 item 4: every argument error of ``dpnoise audit`` is one line on stderr and exit
status 2, before any work (never a traceback); a small α that the audit honours runs."""
import io

import pytest

from dpnoise.audit import cli_main
from dpnoise.cli import main


def run(argv):
    out, err = io.StringIO(), io.StringIO()
    rc = cli_main(argv, stdout=out, stderr=err)
    return rc, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("argv", [["--alpha", "1e-301"], ["--alpha", "1e-400"], ["--alpha", "nan"],
                                  ["--plot", "."], ["--json", "."], ["--epsilons", "1e-300"]])
def test_argument_errors_are_one_line_and_exit_2(argv, tmp_path):
    rc, out, err = run(argv + ["--no-peers", "--quick"])
    assert rc == 2 and out == "", err
    assert err.startswith("dpnoise audit: error:") and err.count("\n") == 1


def test_epsilon_a_dpnoise_row_refuses_names_the_row_and_the_option():
    rc, _, err = run(["--epsilons", "1e-300", "--no-peers", "--only", "LaplaceMechanism"])
    assert rc == 2 and "--epsilons" in err and "LaplaceMechanism" in err


def test_small_alpha_runs(tmp_path):
    # alpha = 1e-17 raised statistics.StatisticsError before (a 34-line traceback)
    rc, out, _ = run(["--alpha", "1e-17", "--no-peers", "--only", "RandomizedResponse", "--epsilons", "1",
                      "--trials", "20000"])
    assert rc == 0 and "alpha = 1e-17" in out


def test_through_the_dpnoise_command(capsys):
    assert main(["audit", "--alpha", "1e-301"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and "alpha" in err


def test_a_peer_that_refuses_the_epsilon_is_a_failed_row_not_a_traceback(monkeypatch):
    from dpnoise.audit import catalogue as catalogue_module
    from dpnoise.audit.catalogue import Entry

    def refuses(seed):
        raise ValueError("epsilon too small for this peer")
    monkeypatch.setitem(catalogue_module.PEERS, "fakepeer",
                        lambda eps: [Entry("FakeMechanism", "fakepeer", e, 0.0, refuses, ((0, 1),), expect="measured")
                                     for e in eps])
    rc, out, err = run(["--only", "fakepeer", "--epsilons", "1", "--trials", "1000"])
    assert rc == 1 and "ERROR: cannot build the mechanism: ValueError: epsilon too small" in out
    assert "Traceback" not in err
