"""Regenerate the measurements of docs/auditing.md: the full audit catalogue (dpnoise, NumPy's
naive float Laplace, the mis-calibrated Laplace and, when installed, diffprivlib and OpenDP),
written to docs/plots/audit_catalogue.json, its plot to docs/plots/audit_catalogue.png and the
markdown table to stdout.

    python docs/plots/audit_catalogue.py            # needs matplotlib (the plot extra)

The peers are measured in a separate environment, never as dependencies:
    python -m venv /tmp/peers && /tmp/peers/bin/pip install opendp diffprivlib 'scikit-learn<1.7' matplotlib
"""
import json
import os
import sys

from dpnoise.audit import cli_main

HERE = os.path.dirname(os.path.abspath(__file__))


def markdown(rows):
    lines = ["| library | mechanism | claimed ε | δ | trials per input | ε lower bound | verdict |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        bound, claim = r["epsilon_lower_bound"], r["claimed_epsilon"]
        if bound > claim:
            verdict = f"**refuted**: +{bound - claim:.2f} ({bound / claim:.1f}× the claim)"
        else:
            verdict = "within the claim"
        lines.append(f"| {r['library']} | {r['mechanism']} | {claim:g} | {r['delta']:g} | {r['trials']:,} | "
                     f"{bound:.3f} | {verdict} |")
    return "\n".join(lines)


def main(argv):
    js = os.path.join(HERE, "audit_catalogue.json")
    png = os.path.join(HERE, "audit_catalogue.png")
    rc = cli_main(["--json", js, "--plot", png, "--seed", "2026"] + list(argv))
    with open(js) as fh:
        print(markdown(json.load(fh)["rows"]))
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
