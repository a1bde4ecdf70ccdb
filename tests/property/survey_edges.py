"""Edge-value survey: every EDGE_VALUE through every public entry point, every finding listed.

The property tests stop at the first failing example of each test; this script lists them all,
so that a batch of fixes can be checked in one run (the property tests remain the gate):

    PYTHONPATH=src python tests/property/survey_edges.py

Findings: an error outside ValueError/TypeError/OverflowError/DPError, a message that does not
name the argument, a call over 10 s, a failed call that consumed the stream or charged the
budget, a RuntimeWarning (an error under the test suite's filterwarnings=error).
"""
import inspect
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
warnings.simplefilter("error")
import numpy as np
import dpnoise
from dpnoise import mechanisms as M, accounting as A
from property_inputs import EDGE_VALUES, ALLOWED, twin_generators, insecure_ok, time_limit, CallTookTooLong

def show(v):
    r = repr(v)
    return r if len(r) < 40 else r[:37] + "..."

found = {}
def record(where, v, what):
    key = (where, what[:90])
    found.setdefault(key, []).append(show(v))

def probe(where, v, call, names):
    rng, wit = twin_generators()
    try:
        with time_limit(10):
            call(rng)
    except ALLOWED as e:
        if not any(n in str(e) for n in names):
            record(where, v, f"{type(e).__name__} not naming {names[0]}: {e}")
        try:
            if not (np.array_equal(rng.random_raw(2), wit.random_raw(2)) and np.array_equal(rng.discrete_laplace(5, 4), wit.discrete_laplace(5, 4))):
                record(where, v, "failed call consumed the stream")
        except Exception as e2:
            record(where, v, f"probe {type(e2).__name__}: {e2}")
    except CallTookTooLong:
        record(where, v, "took > 10 s")
    except Exception as e:
        record(where, v, f"{type(e).__name__}: {e}")

S = {
 "discrete_laplace(scale)": (lambda v: lambda g: g.discrete_laplace(v, 3), ["scale", "size"]),
 "discrete_gaussian(sigma)": (lambda v: lambda g: g.discrete_gaussian(v, 3), ["sigma"]),
 "discrete_gaussian(variance)": (lambda v: lambda g: g.discrete_gaussian(variance=v, size=3), ["variance"]),
 "geometric(scale)": (lambda v: lambda g: g.geometric(scale=v, size=3), ["scale"]),
 "bernoulli(p)": (lambda v: lambda g: g.bernoulli(v, 3), ["p"]),
 "bernoulli_exp(gamma)": (lambda v: lambda g: g.bernoulli_exp(v, 3), ["gamma"]),
 "integers(low)": (lambda v: lambda g: g.integers(v, size=3), ["low", "high", "range"]),
 "integers(0, high)": (lambda v: lambda g: g.integers(0, v, size=3), ["low", "high", "range"]),
 "discrete_laplace(1, size=v)": (lambda v: lambda g: g.discrete_laplace(1, v), ["size"]),
 "discrete_laplace(1, threads=v)": (lambda v: lambda g: g.discrete_laplace(1, 3, threads=v), ["threads"]),
}
for where, (mk, names) in S.items():
    for v in EDGE_VALUES:
        probe(where, v, mk(v), names)

VALID = {"LaplaceMechanism": {"epsilon": 1.0}, "DiscreteLaplaceMechanism": {"epsilon": 1.0},
         "GaussianMechanism": {"epsilon": 1.0, "delta": 1e-6}, "DiscreteGaussianMechanism": {"epsilon": 1.0, "delta": 1e-6},
         "RandomizedResponse": {"epsilon": 1.0, "categories": 3}, "Histogram": {"epsilon": 1.0, "categories": 4},
         "PrivateKDE": {"epsilon": 1.0, "delta": 1e-6, "bandwidth": 1.0, "grid": np.linspace(0, 1, 5)}}
for name, kw in VALID.items():
    cls = getattr(M, name)
    for field in ["epsilon", "delta", "sensitivity", "categories", "bandwidth", "granularity", "coordinates", "rho"]:
        if field not in inspect.signature(cls).parameters: continue
        for v in EDGE_VALUES:
            k = dict(kw); k[field] = v
            if field == "rho": k.pop("epsilon", None); k.pop("delta", None)
            probe(f"{name}({field}=v)", v, lambda g, k=k: cls(**k, rng=g, **insecure_ok(cls)).release(np.array([1.0, 2.0]) if not (name.startswith("Discrete") or name in ("RandomizedResponse","Histogram")) else np.array([0, 1])), [field])
    # release with edge values, budget untouched
    for v in EDGE_VALUES:
        rng, wit = twin_generators()
        b = A.PrivacyBudget(1e9, 0.5, accountant="rdp" if "Gauss" in name or name=="PrivateKDE" else "basic")
        try:
            m = cls(**kw, rng=rng, budget=b, **insecure_ok(cls))
        except Exception as e:
            record(f"{name} construct", v, f"{type(e).__name__}: {e}"); continue
        before = (len(b.ledger), b.spent_epsilon)
        try:
            with time_limit(10):
                out = m.release(v)
            a = np.asarray(out)
            if a.dtype.kind == "f" and not np.isfinite(a).all():
                record(f"{name}.release(v)", v, "returned NaN/inf")
        except ALLOWED as e:
            if (len(b.ledger), b.spent_epsilon) != before:
                record(f"{name}.release(v)", v, f"failed ({type(e).__name__}) but budget charged")
            if not (np.array_equal(rng.random_raw(2), wit.random_raw(2)) and np.array_equal(rng.discrete_laplace(5, 4), wit.discrete_laplace(5, 4))):
                record(f"{name}.release(v)", v, f"failed ({type(e).__name__}) but stream consumed")
        except CallTookTooLong:
            record(f"{name}.release(v)", v, "took > 10 s")
        except Exception as e:
            record(f"{name}.release(v)", v, f"{type(e).__name__}: {e}")

def acc_probe(where, v, call, names):
    try:
        with time_limit(10):
            call()
    except ALLOWED as e:
        if names and not any(n in str(e) for n in names):
            record(where, v, f"{type(e).__name__} not naming {names[0]}: {e}")
    except CallTookTooLong:
        record(where, v, "took > 10 s")
    except Exception as e:
        record(where, v, f"{type(e).__name__}: {e}")

for v in EDGE_VALUES:
    for kind in ["basic", "zcdp", "rdp", "pld"]:
        acc_probe(f"Accountant({kind}).get_epsilon(delta=v)", v, lambda: A.Accountant(kind).compose(A.PureDP(1.0) if kind in ("basic","pld") else A.Gaussian(2.0)).get_epsilon(v), ["delta"])
        acc_probe(f"Accountant({kind}).get_delta(epsilon=v)", v, lambda: A.Accountant(kind).compose(A.PureDP(1.0) if kind in ("basic","pld") else A.Gaussian(2.0)).get_delta(v), ["epsilon"])
        acc_probe(f"Accountant({kind}).compose(count=v)", v, lambda: A.Accountant(kind).compose(A.PureDP(1.0) if kind in ("basic","pld") else A.Gaussian(2.0), v).get_epsilon(1e-6), ["count"])
    for fam in ["laplace", "gaussian", "discrete_laplace", "pure"]:
        acc_probe(f"calibrate({fam}, epsilon=v)", v, lambda: A.calibrate(fam, v, 1e-6, accountant="rdp" if "gauss" in fam else "basic"), ["epsilon"])
        acc_probe(f"calibrate({fam}, count=v)", v, lambda: A.calibrate(fam, 1.0, 1e-6, v, accountant="rdp" if "gauss" in fam else "basic"), ["count"])
        acc_probe(f"calibrate({fam}, sensitivity=v)", v, lambda: A.calibrate(fam, 1.0, 1e-6, accountant="rdp" if "gauss" in fam else "basic", sensitivity=v), ["sensitivity"])
    for L, f in [(A.PureDP, "epsilon"), (A.Laplace, "scale"), (A.Gaussian, "sigma"), (A.DiscreteLaplace, "scale"), (A.DiscreteGaussian, "sigma"), (A.ZCDP, "rho")]:
        acc_probe(f"{L.__name__}({f}=v)", v, lambda: A.Accountant("rdp" if L not in (A.PureDP,) else "basic").compose(L(v)).get_epsilon(1e-6), [f])
    b = A.PrivacyBudget(1.0, 1e-6)
    before = b.ledger
    acc_probe("PrivacyBudget.spend(PureDP(0.5), count=v)", v, lambda: b.spend(A.PureDP(0.5), v), ["count"])
    if b.ledger != before and not (isinstance(v, int) and v >= 1):
        record("PrivacyBudget.spend(count=v)", v, "failed spend changed the ledger")
    acc_probe("PrivacyBudget(epsilon=v)", v, lambda: A.PrivacyBudget(v), ["epsilon"])
    acc_probe("PrivacyBudget.from_dict(v)", v, lambda: A.PrivacyBudget.from_dict(v), [])
    acc_probe("PrivacyBudget.from_dict(epsilon=v)", v, lambda: A.PrivacyBudget.from_dict({"epsilon": v, "delta": 0.0, "accountant": "basic", "ledger": []}), ["epsilon"])
    acc_probe("PrivacyBudget.from_dict(count=v)", v, lambda: A.PrivacyBudget.from_dict({"epsilon": 10.0, "delta": 0.0, "accountant": "basic", "ledger": [{"loss": {"type": "PureDP", "epsilon": 0.5}, "count": v}]}), ["count"])
for d in [{}, {"epsilon": 1.0, "delta": 0.0, "accountant": "basic"}, {"epsilon": 1.0, "delta": 0.0, "accountant": "basic", "ledger": [{}]}, {"epsilon": 1.0, "delta": 0.0, "accountant": "basic", "ledger": [{"loss": {"type": "Nope"}, "count": 1}]}, {"epsilon": 1.0, "delta": 0.0, "accountant": "basic", "ledger": [{"loss": {"type": "PureDP"}, "count": 1}]}, {"epsilon": 1.0, "delta": 0.0, "accountant": "basic", "ledger": "xy"}]:
    acc_probe("PrivacyBudget.from_dict(dict)", d, lambda: A.PrivacyBudget.from_dict(d), [])

# mechanisms bound to a budget: each constructor field at each edge value, with a valid query
import test_mechanism_properties as T  # noqa: E402
for name in T.MECHANISMS:
    fields = [f for f in ("epsilon", "delta", "sensitivity", "categories", "bandwidth", "granularity") if f in inspect.signature(M.__dict__[name]).parameters]
    for f in fields:
        for v in EDGE_VALUES:
            try:
                T._check_release(name, {**T._valid_kwargs(name), f: v}, ("rdp", 1e9, 0.5), T._valid_value(name))
            except BaseException as e:
                key = (f"{name}({f}=v).release(valid)", f"{type(e).__name__}: {str(e).splitlines()[0][:150]}")
                found.setdefault(key, []).append(show(v))
    for v in EDGE_VALUES:
        try:
            T._check_release(name, T._valid_kwargs(name), ("basic", 1e9, 0.5), v)
        except BaseException as e:
            key = (f"{name}.release(v)", f"{type(e).__name__}: {str(e).splitlines()[0][:150]}")
            found.setdefault(key, []).append(show(v))

for (where, what), vs in sorted(found.items()):
    print(f"- {where}: {what}\n    inputs: {', '.join(vs[:6])}{' ...' if len(vs) > 6 else ''}")
print(len(found), "distinct findings")
