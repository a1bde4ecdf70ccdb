"""Blobs written by dpnoise before issue 34's refactor (commit bb87299, the 0.7.1 envelope with
constant time and daily collection as flags): every variant of every family, seeded, so that the
refactored code is checked to read them byte for byte AND to write the same bytes from the same
seed. Run from the repository root with that commit's src on PYTHONPATH, into a new directory
(the blobs beside this script are the pinned ones: it refuses to overwrite them)."""
import json
import pathlib
import sys

import numpy as np

import dpnoise
from dpnoise import ldp

HERE = pathlib.Path(__file__).resolve().parent
KEY = bytes(range(32))
FIXED = {"olh": {"pool_size": 16, "pool_key": 7}, "flh": {"k_prime": 16, "pool_key": 7},
         "dbitflip": {"bits": 4, "pool_size": 16, "pool_key": 7}, "cms": {"hashes": 4, "width": 16, "public_key": 7},
         "hcms": {"hashes": 4, "width": 16, "public_key": 7}, "zmatrix": {"columns": 256, "public_key": 7}}


def main(OUT: pathlib.Path) -> None:
    cases = []
    for name in ldp.protocols():
        for variant in ({}, {"constant_time": True}, {"instantaneous_epsilon": 1.0},
                        {"constant_time": True, "instantaneous_epsilon": 1.0}):
            try:
                cases.append((f"fo_{name}_{'_'.join(sorted(variant)) or 'plain'}",
                              ldp.FrequencyOracle(name, 2.0, 12, **FIXED.get(name, {}), **variant)))
            except ValueError:
                pass
    for method in ("duchi", "bitmean", "piecewise", "hybrid"):
        for variant in ({}, {"constant_time": True}):
            cases.append((f"mean_{method}_{'_'.join(variant) or 'plain'}", ldp.MeanOracle(method, 1.5, (0.0, 10.0), **variant)))
    cases.append(("mean_bitmean_daily", ldp.MeanOracle("bitmean", 1.5, (0.0, 10.0), instantaneous_epsilon=1.0, points=11)))
    cases.append(("hh_pem_constant_time", ldp.HeavyHitters("pem", 4.0, 16, k=2, k_prime=64, pool_key=7, constant_time=True)))
    cases.append(("hh_treehist_str", ldp.HeavyHitters("treehist", 4.0, item_type="str", max_length=6, k=2, k_prime=32, pool_key=7)))
    cases.append(("hh_string_pem", ldp.HeavyHitters("string_pem", 4.0, max_length=12, k=2, k_prime=64, pool_key=7)))
    manifest = {}
    for key, config in cases:
        items = config.example_items(120, seed=5)
        if config.family == "heavy_hitters" and config.codec.item_type != "int":
            items = ["abc", "abd", "xyz", "a", "hello!"] * 24
        memo = getattr(config, "longitudinal", False)
        if memo and (config.family != "mean" or getattr(config, "points", None)):
            reports = config.client(dpnoise.default_rng(9), allow_insecure=True, device_key=KEY).privatize(items)
        else:
            reports = config.client(dpnoise.default_rng(9), allow_insecure=True).privatize(items)
        agg = config.aggregator().add(reports)
        (OUT / f"{key}.reports").write_bytes(reports.to_bytes())
        (OUT / f"{key}.state").write_bytes(agg.to_bytes())
        entry = {"configuration": config.to_json(), "memoised": bool(memo and (config.family != "mean" or config.points)),
                 "loss": repr(config.privacy_loss()), "repr": repr(config)}
        if config.family == "heavy_hitters":
            entry["estimate"] = agg.estimate(list(items[:5]) if isinstance(items, list) else items[:5]).tolist()
        else:
            entry["estimate"] = np.asarray(agg.estimate()).tolist()
        manifest[key] = entry
    (OUT / "expected.json").write_text(json.dumps(manifest, indent=0, sort_keys=True))
    print(len(manifest), "fixtures")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: make_fixtures.py OUTPUT_DIR")
    out = pathlib.Path(sys.argv[1]).resolve()
    if out == HERE:
        raise SystemExit("refusing to overwrite the pinned blobs beside this script: give another directory")
    out.mkdir(parents=True, exist_ok=True)
    main(out)
