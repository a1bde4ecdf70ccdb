"""The blobs 0.4.0 wrote (run with that version's src on PYTHONPATH, into a new directory: the
blobs beside this script are pinned, and it refuses to overwrite them)."""
import json
import pathlib
import sys

import numpy as np

import dpnoise
from dpnoise import ldp

if len(sys.argv) != 2 or pathlib.Path(sys.argv[1]).resolve() == pathlib.Path(__file__).resolve().parent:
    raise SystemExit("usage: make_fixtures.py OUTPUT_DIR (not this script's directory: its blobs are pinned)")
out = sys.argv[1]
rng = dpnoise.default_rng(2024)
manifest = {}
hhopts = {"pem": {"k_prime": 256}, "treehist": {"k_prime": 256}, "bitstogram": {"k_prime": 64, "k_prime_bits": 64, "buckets": 16}}
opts = {"flh": {"k_prime": 64}, "cms": {"hashes": 16, "width": 64}, "hcms": {"hashes": 16, "width": 64}, "zmatrix": {"columns": 4096}}
for name in ldp.protocols():
    fo = ldp.FrequencyOracle(name, 2.0, 64, **opts.get(name, {}))
    items = np.arange(200) % 64
    rep = fo.client(rng, allow_insecure=True).privatize(items)
    agg = fo.aggregator(); agg.add(rep)
    open(f"{out}/fo_{name}.reports", "wb").write(rep.to_bytes())
    open(f"{out}/fo_{name}.state", "wb").write(agg.to_bytes())
    manifest[f"fo_{name}"] = {"estimate": agg.estimate().tolist(), "stderr": agg.stderr().tolist(), "n": agg.n, "repr": repr(fo)}
for m in ldp.heavy_hitters.methods():
    hh = ldp.HeavyHitters(m, 4.0, 16, k=4, **hhopts[m])
    items = np.repeat(np.array([7, 300, 4000, 65000]), 150)
    rep = hh.client(rng, allow_insecure=True).privatize(items)
    agg = hh.aggregator(); agg.add(rep)
    open(f"{out}/hh_{m}.reports", "wb").write(rep.to_bytes())
    open(f"{out}/hh_{m}.state", "wb").write(agg.to_bytes())
    manifest[f"hh_{m}"] = {"top": [list(map(float, h[1:])) + [int(h[0])] for h in agg.top(4)], "n": agg.n, "repr": repr(hh)}
json.dump(manifest, open(f"{out}/expected.json", "w"), indent=0)
print(sorted(manifest))
