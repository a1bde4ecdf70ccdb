"""The built-in ``dpnoise bench`` catalogue: samplers, mechanisms, selection, local DP (every
registered frequency oracle and heavy-hitters method), NumPy through ChaCha20, accounting.

Imported by :func:`dpnoise.bench.workloads` (it registers everything at import). Built on the
public API only. Each workload's reference is like-for-like (the same job the usual way) or
absent; utility metrics are computed on the state the workload is timed on, before the timing.
"""
from __future__ import annotations

import importlib
import math
from collections.abc import Mapping
from functools import partial
from typing import Any, Callable, Protocol, TypeVar

import numpy as np

from dpnoise import ldp
from dpnoise.bench import Context, Peer, Workload, register
from dpnoise.demos.data import id_workload, true_top, zipf_items

MakePeer = Callable[[Any, Context, Any], tuple[Callable[[], object], int]]
PeerUtility = Callable[[Any, Context, Any], dict[str, float]]


def _epsilon(ctx: Context) -> float:
    """The row's ε, for a workload that declares one (the harness sets ``ctx.epsilon`` for it)."""
    if ctx.epsilon is None:
        raise ValueError(f"workload {ctx.workload!r} needs an epsilon: ctx.epsilon is None")
    return float(ctx.epsilon)


# -- samplers ---------------------------------------------------------------------------------

def _sampler_state(ctx: Context) -> dict[str, Any]:
    return {"rng": ctx.rng(), "np": ctx.numpy_rng()}


def _laplace_variance(scale: float) -> float:
    """Var of the discrete Laplace with P(x) ∝ exp(-|x|/t): 2q/(1-q)^2, q = e^(-1/t)
    (Canonne, Kamath & Steinke 2020, eq. for the discrete Laplace)."""
    q = math.exp(-1.0 / scale)
    return 2 * q / (1 - q) ** 2


def _opendp_vector_noise(kind: str, scale: float) -> MakePeer:
    """OpenDP's sampler on an int vector of zeros (discrete noise, like dpnoise's)."""
    def make(dp: Any, ctx: Context, state: Any) -> tuple[Callable[[], object], int]:
        dp.enable_features("contrib")
        n = 10_000 if ctx.quick else 50_000  # OpenDP draws ~10^5 samples/s: keep runs short
        space = (dp.vector_domain(dp.atom_domain(T=int)),
                 dp.l1_distance(T=int) if kind == "laplace" else dp.l2_distance(T=int))
        meas = (dp.m.make_laplace if kind == "laplace" else dp.m.make_gaussian)(*space, scale=scale)
        data = [0] * n
        return (lambda: meas(data)), n
    return make


def _opendp_variance_ratio(kind: str, scale: float) -> PeerUtility:
    def utility(dp: Any, ctx: Context, state: Any) -> dict[str, float]:
        call, _ = _opendp_vector_noise(kind, scale)(dp, ctx, state)
        x = np.asarray(call(), dtype=float)
        exact = _laplace_variance(scale) if kind == "laplace" else scale**2
        return {"variance_ratio": float(x.var() / exact)}
    return utility


def _register_samplers() -> None:
    for kind, ref_name, exact in (("laplace", "numpy laplace(scale=10)", _laplace_variance(10.0)),
                                  ("gaussian", "numpy normal(scale=10)", 100.0)):
        def draw(ctx: Context, s: dict[str, Any], kind: str = kind) -> np.ndarray:
            f = s["rng"].discrete_laplace if kind == "laplace" else s["rng"].discrete_gaussian
            return f(10, ctx.samples, threads=ctx.threads)

        def reference(ctx: Context, s: dict[str, Any], kind: str = kind) -> np.ndarray:
            f = s["np"].laplace if kind == "laplace" else s["np"].normal
            return f(0.0, 10.0, ctx.samples)

        def utility(ctx: Context, s: dict[str, Any], draw: Any = draw, exact: float = exact) -> dict[str, float]:
            # the discrete Gaussian's variance is within 1e-6 of sigma^2 for sigma = 10
            # (Canonne, Kamath & Steinke 2020, Cor. 9)
            return {"variance_ratio": float(draw(ctx, s).var() / exact)}

        register(Workload(
            name=f"discrete_{kind}({'scale' if kind == 'laplace' else 'sigma'}=10)",
            items=lambda ctx: ctx.samples, setup=_sampler_state, run=draw,
            reference_name=ref_name, reference=reference, family="exact samplers",
            metrics=("variance_ratio",), utility=utility,
            peers=(Peer("opendp.prelude", f"OpenDP make_{kind} (int vector)", _opendp_vector_noise(kind, 10.0),
                        _opendp_variance_ratio(kind, 10.0)),),
        ))


# -- mechanisms -------------------------------------------------------------------------------

def _diffprivlib_scalar(kind: str) -> MakePeer:
    """diffprivlib's mechanisms randomise one scalar per call; time a loop over a few."""
    def make(lib: Any, ctx: Context, state: Any) -> tuple[Callable[[], object], int]:
        mechs = importlib.import_module("diffprivlib.mechanisms")
        eps = _epsilon(ctx)
        mech = (mechs.Laplace(epsilon=eps, sensitivity=1.0) if kind == "laplace"
                else mechs.GaussianAnalytic(epsilon=eps, delta=1e-6, sensitivity=1.0))
        n = 2_000 if ctx.quick else 20_000
        return (lambda: [mech.randomise(0.5) for _ in range(n)]), n
    return make


def _diffprivlib_error(kind: str) -> PeerUtility:
    """The peer's mean squared error over the variance dpnoise states for the same job (the
    workload's own metric): below 1, the peer adds less noise than dpnoise at this epsilon."""
    def utility(lib: Any, ctx: Context, state: Any) -> dict[str, float]:
        call, _ = _diffprivlib_scalar(kind)(lib, ctx, state)
        err = np.asarray(call(), dtype=float) - 0.5
        return {state["metric"]: float(np.mean(err**2) / state["variance"])}
    return utility


def _mechanism_state(kind: str) -> Callable[[Context], dict[str, Any]]:
    def setup(ctx: Context) -> dict[str, Any]:
        from dpnoise.mechanisms import GaussianMechanism, LaplaceMechanism

        rng = ctx.rng()
        eps = _epsilon(ctx)
        mech: LaplaceMechanism | GaussianMechanism
        if kind == "laplace":
            mech = LaplaceMechanism(eps, 1.0, rng=rng, threads=ctx.threads, allow_insecure=ctx.allow_insecure)
            width = 1.0 / eps  # b = sensitivity / epsilon
            variance, metric = 2 * width**2, "mse_over_2b2"  # Var Laplace(b) = 2b^2
        else:
            mech = gauss = GaussianMechanism(eps, 1e-6, 1.0, rng=rng, threads=ctx.threads,
                                             allow_insecure=ctx.allow_insecure)
            k, _, sigma_units = gauss.grid(ctx.values)
            width = sigma_units * 2.0**k  # the same sigma the mechanism adds
            variance, metric = width**2, "mse_over_sigma2"
        x = ctx.numpy_rng("x").random(ctx.values) * 100.0
        return {"mech": mech, "x": x, "np": ctx.numpy_rng(), "width": width, "variance": variance, "metric": metric}
    return setup


def _mse_over_stated(ctx: Context, s: dict[str, Any]) -> dict[str, float]:
    """Mean squared error / the stated noise variance (2b^2 for Laplace, sigma^2 for Gaussian):
    1 is exactly calibrated; the output grid's rounding adds a little."""
    err = s["mech"](s["x"]) - s["x"]
    return {s["metric"]: float(np.mean(err**2) / s["variance"])}


def _register_mechanisms() -> None:
    register(Workload(
        name="LaplaceMechanism on floats", items=lambda ctx: ctx.values, setup=_mechanism_state("laplace"),
        run=lambda ctx, s: s["mech"](s["x"]), epsilon=1.0, family="mechanisms on floats",
        reference_name="x + numpy laplace(0, b, n)",
        reference=lambda ctx, s: s["x"] + s["np"].laplace(0.0, s["width"], s["x"].size),
        metrics=("mse_over_2b2",), utility=_mse_over_stated,
        peers=(Peer("diffprivlib", "diffprivlib Laplace.randomise (per scalar)", _diffprivlib_scalar("laplace"),
                    _diffprivlib_error("laplace")),),
    ))
    register(Workload(
        name="GaussianMechanism(delta=1e-6) on floats", items=lambda ctx: ctx.values,
        setup=_mechanism_state("gaussian"), run=lambda ctx, s: s["mech"](s["x"]), epsilon=1.0,
        family="mechanisms on floats",
        reference_name="x + numpy normal(0, sigma, n)",
        reference=lambda ctx, s: s["x"] + s["np"].normal(0.0, s["width"], s["x"].size),
        metrics=("mse_over_sigma2",), utility=_mse_over_stated,
        peers=(Peer("diffprivlib", "diffprivlib GaussianAnalytic.randomise (per scalar)",
                    _diffprivlib_scalar("gaussian"), _diffprivlib_error("gaussian")),),
    ))


# -- selection --------------------------------------------------------------------------------

# Report-noisy-max with noise of scale 2Δ/ε on every score is ε-DP for each of the three noises:
# Laplace (Dwork & Roth 2014, Claim 3.9), Gumbel = the exponential mechanism (McSherry & Talwar
# 2007), exponential = permute-and-flip (McKenna & Sheldon 2020; Ding et al. 2021, Thm. 1).
_NUMPY_NOISE = {"exponential": lambda r, b, shape: r.exponential(b, shape),
                "gumbel": lambda r, b, shape: r.gumbel(0.0, b, shape),
                "laplace": lambda r, b, shape: r.laplace(0.0, b, shape)}


def _selection_rows(ctx: Context) -> int:
    return 200 if ctx.quick else 10_000


def _selection_state(noise: str) -> Callable[[Context], dict[str, Any]]:
    def setup(ctx: Context) -> dict[str, Any]:
        from dpnoise.selection import ReportNoisyMax

        scores = ctx.numpy_rng("scores").integers(0, 1000, size=(_selection_rows(ctx), 1000), dtype=np.int32)
        mech = ReportNoisyMax(_epsilon(ctx), noise=noise, rng=ctx.rng(),
                              threads=ctx.threads, allow_insecure=ctx.allow_insecure)
        return {"mech": mech, "scores": scores, "np": ctx.numpy_rng()}
    return setup


def _p_correct(ctx: Context, s: dict[str, Any]) -> dict[str, float]:
    picked = s["mech"](s["scores"])
    best = s["scores"].max(axis=1)
    return {"p_correct": float(np.mean(s["scores"][np.arange(len(picked)), picked] == best))}


def _opendp_noisy_max(dp: Any, ctx: Context, state: Any) -> tuple[Callable[[], object], int]:
    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(T=int)), dp.linf_distance(T=int)
    # make_noisy_max (0.16+): zCDP gives Gumbel noise (the exponential mechanism), scale 2Δ/ε
    meas = dp.m.make_noisy_max(*space, dp.zero_concentrated_divergence(), scale=2.0 / _epsilon(ctx))
    vectors = [row.tolist() for row in state["scores"][:20 if ctx.quick else 100]]
    return (lambda: [meas(v) for v in vectors]), len(vectors)


def _opendp_p_correct(dp: Any, ctx: Context, state: Any) -> dict[str, float]:
    call, n = _opendp_noisy_max(dp, ctx, state)
    picked = np.asarray(call())
    rows = state["scores"][:n]
    return {"p_correct": float(np.mean(rows[np.arange(n), picked] == rows.max(axis=1)))}


def _register_selection() -> None:
    for noise, draw in _NUMPY_NOISE.items():
        def reference(ctx: Context, s: dict[str, Any], draw: Any = draw) -> np.ndarray:
            b = 2.0 / _epsilon(ctx)
            return np.argmax(s["scores"] + draw(s["np"], b, s["scores"].shape), axis=1)

        register(Workload(
            name=f"report_noisy_max {noise}: rows of 1000 int32", unit="ops", items=_selection_rows,
            setup=_selection_state(noise), run=lambda ctx, s: s["mech"](s["scores"]), epsilon=1.0,
            family="report_noisy_max, rows of 1000 int32",
            reference_name=f"numpy argmax(S + {noise}(2/eps))", reference=reference,
            metrics=("p_correct",), utility=_p_correct,
            size=lambda ctx: f"{_selection_rows(ctx):,} rows of 1,000 scores in [0, 1000)",
            peers=((Peer("opendp.prelude", "OpenDP noisy max (one vector per call)", _opendp_noisy_max,
                         _opendp_p_correct),) if noise == "gumbel" else ()),
        ))


# -- local DP: frequency oracles ----------------------------------------------------------------

_LDP_D = 1024


# Shares of the devices for the slow sides, so that a run stays short (each row states its size,
# and the plot marks a row whose size differs from its family's): the CMS client draws one exact
# Bernoulli per sketch bit (m = 1024). Every server runs on the same number of reports, so that
# the utility of the protocols is compared at one n (OLH's server had 1/10 of them up to 0.8.0,
# when its O(n·d) estimate was slow; it takes about 3 ms for 20,000 reports now).
_SERVER_SHARE: dict[str, int] = {}
_CLIENT_SHARE = {"cms": 10}


def _server_devices(ctx: Context, name: str) -> int:
    return ctx.devices // _SERVER_SHARE.get(name, 1)


def _client_devices(ctx: Context, name: str) -> int:
    return ctx.devices // _CLIENT_SHARE.get(name, 1)


class _HasParams(Protocol):
    """A local-DP configuration as far as :func:`_with_public_keys` reads it."""

    def params(self) -> Mapping[str, object]: ...


_Config = TypeVar("_Config", bound=_HasParams)


def _with_public_keys(ctx: Context, make: Callable[..., _Config], *args: Any) -> _Config:
    """``make(*args)``, and in a seeded run again with every public key of its params (any
    parameter named ``*_key``) derived from the seed, so that utility figures are reproducible
    whatever the library's default key is."""
    obj = make(*args)
    if ctx.seed is None:
        return obj
    keys: dict[str, bytes | int] = {}
    for name, value in obj.params().items():
        if name.endswith("_key"):
            key = ctx.public_key(name, 8 * len(value) if isinstance(value, (bytes, bytearray)) else 64)
            if key is None:  # unreachable: a seeded context derives every key
                continue
            if isinstance(value, (bytes, bytearray)):
                keys[name] = key.to_bytes(len(value), "big")
            elif isinstance(value, int):
                keys[name] = key
    return make(*args, **keys) if keys else obj


def _oracle(ctx: Context, name: str) -> Any:
    return _with_public_keys(ctx, ldp.FrequencyOracle, name, _epsilon(ctx), _LDP_D)


def _fo_client_state(name: str) -> Callable[[Context], dict[str, Any]]:
    def setup(ctx: Context) -> dict[str, Any]:
        fo = _oracle(ctx, name)
        p = math.exp(fo.epsilon) / (math.exp(fo.epsilon) + _LDP_D - 1)  # GRR keep probability (Wang et al. 2017)
        return {"client": fo.client(ctx.rng(), allow_insecure=ctx.allow_insecure),
                "items": zipf_items(_client_devices(ctx, name), _LDP_D, seed=1), "np": ctx.numpy_rng(), "p": p}
    return setup


def _numpy_grr(ctx: Context, s: dict[str, Any]) -> object:
    # the usual float way: keep with probability p, else a uniform other item
    items, r = s["items"], s["np"]
    other = r.integers(0, _LDP_D - 1, items.size)
    return np.where(r.random(items.size) < s["p"], items, other + (other >= items))


def _fo_server_state(name: str) -> Callable[[Context], dict[str, Any]]:
    def setup(ctx: Context) -> dict[str, Any]:
        fo = _oracle(ctx, name)
        items = zipf_items(_server_devices(ctx, name), _LDP_D, seed=1)
        reports = fo.client(ctx.rng(), allow_insecure=ctx.allow_insecure).privatize(items)
        return {"fo": fo, "reports": reports, "true": np.bincount(items, minlength=_LDP_D)}
    return setup


def _fo_aggregate(ctx: Context, s: dict[str, Any]) -> object:
    return s["fo"].aggregator().add(s["reports"]).estimate()


def _fo_utility(ctx: Context, s: dict[str, Any]) -> dict[str, float]:
    agg = s["fo"].aggregator().add(s["reports"])
    est, se = agg.estimate(), agg.stderr()
    return {"rms_error": float(np.sqrt(np.mean((est - s["true"]) ** 2))),
            "ci_coverage": float(np.mean(np.abs(est - s["true"]) <= 1.96 * se))}


def _fo_client_size(ctx: Context, name: str) -> str:
    return f"{_client_devices(ctx, name):,} devices, Zipf(1.1) over d={_LDP_D}"


def _fo_server_size(ctx: Context, name: str) -> str:
    return f"{_server_devices(ctx, name):,} reports, d={_LDP_D}"


def _register_frequency_oracles() -> None:
    for name in ldp.protocols():
        register(Workload(
            name=f"ldp {name} client: devices, d={_LDP_D}", unit="ops", epsilon=2.0,
            family=f"ldp frequency oracle clients, d={_LDP_D}",
            items=partial(_client_devices, name=name), setup=_fo_client_state(name),
            run=lambda ctx, s: s["client"].privatize(s["items"]),
            # like for like only for k-ary randomized response itself
            reference_name="numpy float k-ary RR" if name == "grr" else None,
            reference=_numpy_grr if name == "grr" else None,
            size=partial(_fo_client_size, name=name),
        ))
        register(Workload(
            name=f"ldp {name} server: add + estimate all, d={_LDP_D}", unit="ops", epsilon=2.0,
            family=f"ldp frequency oracle servers, d={_LDP_D}",
            items=partial(_server_devices, name=name),
            setup=_fo_server_state(name), run=_fo_aggregate,
            metrics=("rms_error", "ci_coverage"), utility=_fo_utility,
            size=partial(_fo_server_size, name=name),
        ))


# -- local DP: heavy hitters --------------------------------------------------------------------

def _hh_devices(ctx: Context) -> int:
    return ctx.devices


def _hh_items(ctx: Context) -> np.ndarray:
    """The heavy-hitters workload of issue #13: 32-bit IDs, Zipf(1.1) over 10^6 distinct ones
    (10^5 in --quick), one item per device."""
    return id_workload(32, n_items=100_000 if ctx.quick else 1_000_000, n_users=_hh_devices(ctx))


def _hh_state(method: str) -> Callable[[Context], dict[str, Any]]:
    def setup(ctx: Context) -> dict[str, Any]:
        hh = _with_public_keys(ctx, ldp.HeavyHitters, method, _epsilon(ctx), 32)
        items = _hh_items(ctx)
        return {"hh": hh, "client": hh.client(ctx.rng(), allow_insecure=ctx.allow_insecure), "items": items}
    return setup


def _hh_end_to_end(ctx: Context, s: dict[str, Any]) -> Any:
    return s["hh"].aggregator().add(s["client"].privatize(s["items"])).top(10)


def _hh_recall(ctx: Context, s: dict[str, Any]) -> dict[str, float]:
    found = {r.item for r in _hh_end_to_end(ctx, s)}
    return {"recall": len(found & true_top(s["items"], 10)) / 10}


def _register_heavy_hitters() -> None:
    """Local-DP heavy hitters (docs/heavy_hitters.md): one op = one device, 32-bit IDs, the client
    alone and clients + aggregation + top(10) end to end (no like-for-like NumPy reference:
    exact counting is not the same job)."""
    for method in ldp.heavy_hitters.methods():
        register(Workload(
            name=f"ldp heavy hitters {method} client: devices, 32-bit IDs", unit="ops", epsilon=4.0,
            family="ldp heavy hitters clients, 32-bit IDs",
            items=_hh_devices, setup=_hh_state(method), run=lambda ctx, s: s["client"].privatize(s["items"]),
            size=lambda ctx: f"{_hh_devices(ctx):,} devices, 32-bit IDs",
        ))
        register(Workload(
            name=f"ldp heavy hitters {method}: clients + add + top(10), 32-bit IDs", unit="ops", epsilon=4.0,
            family="ldp heavy hitters end to end, 32-bit IDs",
            items=_hh_devices, setup=_hh_state(method), run=_hh_end_to_end, in_quick=False,
            metrics=("recall",), utility=_hh_recall,
            size=lambda ctx: f"{_hh_devices(ctx):,} devices, 32-bit IDs",
        ))


# -- bit sources and accounting -------------------------------------------------------------------

def _register_streams_and_accounting() -> None:
    def numpy_via_chacha(ctx: Context) -> dict[str, Any]:
        import dpnoise

        # ChaCha20 is a bit generator by protocol (capsule + lock), not a subclass of NumPy's
        chacha = np.random.Generator(dpnoise.ChaCha20())  # type: ignore[arg-type]
        return {"chacha": chacha, "pcg": np.random.Generator(np.random.PCG64(1))}

    register(Workload(
        name="numpy Generator(dpnoise.ChaCha20()).random", items=lambda ctx: ctx.samples, setup=numpy_via_chacha,
        run=lambda ctx, s: s["chacha"].random(ctx.samples),
        reference_name="numpy Generator(PCG64()).random", reference=lambda ctx, s: s["pcg"].random(ctx.samples),
    ))

    # Accounting: one op = a fresh accountant, `count` compositions, one epsilon query.
    def pld_count(ctx: Context) -> int:
        return 10 if ctx.quick else 100

    def dpa_pld(dpa: Any, ctx: Context, state: Any) -> tuple[Callable[[], object], int]:
        pld = importlib.import_module("dp_accounting.pld.pld_privacy_accountant")

        def call() -> float:
            acc = pld.PLDAccountant()
            acc.compose(dpa.LaplaceDpEvent(2.0), pld_count(ctx))
            return acc.get_epsilon(1e-6)
        return call, 1

    def dpa_rdp(dpa: Any, ctx: Context, state: Any) -> tuple[Callable[[], object], int]:
        rdp = importlib.import_module("dp_accounting.rdp.rdp_privacy_accountant")

        def call() -> float:
            acc = rdp.RdpAccountant()
            acc.compose(dpa.GaussianDpEvent(2.0), 1000)
            return acc.get_epsilon(1e-6)
        return call, 1

    def accounting_run(kind: str) -> Callable[[Context, Any], object]:
        def call(ctx: Context, state: Any) -> float:
            from dpnoise.accounting import Accountant, Gaussian, Laplace

            if kind == "pld":
                return Accountant("pld").compose(Laplace(2.0), pld_count(ctx)).get_epsilon(1e-6)
            return Accountant("rdp").compose(Gaussian(2.0), 1000).get_epsilon(1e-6)
        return call

    register(Workload(
        name="PLD accountant: Laplace(b=2) x10/x100, eps@1e-6", unit="ops", items=lambda ctx: 1,
        setup=lambda ctx: None, run=accounting_run("pld"),
        size=lambda ctx: f"{pld_count(ctx)} compositions",
        peers=(Peer("dp_accounting", "dp-accounting PLDAccountant", dpa_pld),),
    ))
    register(Workload(
        name="RDP accountant: Gaussian(sigma=2) x1000, eps@1e-6", unit="ops", items=lambda ctx: 1,
        setup=lambda ctx: None, run=accounting_run("rdp"), size=lambda ctx: "1000 compositions",
        peers=(Peer("dp_accounting", "dp-accounting RdpAccountant", dpa_rdp),),
    ))


# -- per-call (scalar) costs ------------------------------------------------------------------------

_PER_CALL = "per call (one scalar or one report per Python call)"


def _calls(ctx: Context) -> int:
    """Python-level calls per timed batch of the per-call rows."""
    return 2_000 if ctx.quick else 20_000


def _per_call_state(ctx: Context) -> dict[str, Any]:
    from dpnoise.mechanisms import LaplaceMechanism

    state: dict[str, Any] = {"rng": ctx.rng(), "np": ctx.numpy_rng(), "n": _calls(ctx)}
    if ctx.epsilon is not None:
        eps = float(ctx.epsilon)
        state["mech"] = LaplaceMechanism(eps, 1.0, rng=ctx.rng("mech"), allow_insecure=ctx.allow_insecure)
        state["width"] = 1.0 / eps  # b = sensitivity / epsilon
        state["variance"], state["metric"] = 2 * state["width"] ** 2, "mse_over_2b2"  # Var Laplace(b) = 2b^2
    return state


def _scalar_draws(ctx: Context, s: dict[str, Any]) -> list[np.int64]:
    draw = s["rng"].discrete_laplace
    return [draw(10) for _ in range(s["n"])]


def _scalar_releases(ctx: Context, s: dict[str, Any]) -> list[float]:
    mech = s["mech"]
    return [mech(3.2) for _ in range(s["n"])]


def _one_report_state(ctx: Context) -> dict[str, Any]:
    fo = _oracle(ctx, "grr")
    items = zipf_items(_calls(ctx), _LDP_D, seed=1)
    p = math.exp(fo.epsilon) / (math.exp(fo.epsilon) + _LDP_D - 1)  # GRR keep probability (Wang et al. 2017)
    return {"fo": fo, "client": fo.client(ctx.rng(), allow_insecure=ctx.allow_insecure),
            "items": [int(x) for x in items], "true": np.bincount(items, minlength=_LDP_D), "np": ctx.numpy_rng(),
            "p": p}


def _one_report_each(ctx: Context, s: dict[str, Any]) -> list[ldp.Reports]:
    privatize = s["client"].privatize
    return [privatize(x) for x in s["items"]]


def _numpy_one_report_each(ctx: Context, s: dict[str, Any]) -> list[int]:
    # the usual float way, one device per call: keep with probability p, else a uniform other item
    r, p = s["np"], s["p"]
    out: list[int] = []
    for x in s["items"]:
        other = int(r.integers(0, _LDP_D - 1))
        out.append(x if r.random() < p else other + (other >= x))
    return out


def _one_report_utility(ctx: Context, s: dict[str, Any]) -> dict[str, float]:
    agg = s["fo"].aggregator()
    for report in _one_report_each(ctx, s):
        agg.add(report)
    est, se = agg.estimate(), agg.stderr()
    return {"rms_error": float(np.sqrt(np.mean((est - s["true"]) ** 2))),
            "ci_coverage": float(np.mean(np.abs(est - s["true"]) <= 1.96 * se))}


def _register_per_call() -> None:
    """What one Python call costs (issue 38 item 3): a scalar draw, a scalar release, one LDP
    report; one op = one call, timed over a batch of calls (the fast path of docs/ml.md and the
    scalar path of NumPy's Generator are the yardsticks)."""
    register(Workload(
        name="per call: one discrete-Laplace draw (scale 10), rng scalar path", unit="ops", items=_calls,
        setup=_per_call_state, run=_scalar_draws, family=_PER_CALL,
        reference_name="numpy Generator.laplace(0, 10), one scalar",
        reference=lambda ctx, s: [s["np"].laplace(0.0, 10.0) for _ in range(s["n"])],
        metrics=("variance_ratio",),
        utility=lambda ctx, s: {"variance_ratio": float(np.var(_scalar_draws(ctx, s)) / _laplace_variance(10.0))},
        size=lambda ctx: f"{_calls(ctx):,} calls of one sample",
    ))
    register(Workload(
        name="per call: one Laplace mechanism release of a scalar (3.2)", unit="ops", items=_calls,
        setup=_per_call_state, run=_scalar_releases, epsilon=1.0, family=_PER_CALL,
        reference_name="3.2 + numpy laplace(0, b), one scalar",
        reference=lambda ctx, s: [3.2 + s["np"].laplace(0.0, s["width"]) for _ in range(s["n"])],
        metrics=("mse_over_2b2",),
        utility=lambda ctx, s: {"mse_over_2b2": float(np.mean((np.asarray(_scalar_releases(ctx, s)) - 3.2) ** 2)
                                                      / s["variance"])},
        size=lambda ctx: f"{_calls(ctx):,} calls of one value",
        peers=(Peer("diffprivlib", "diffprivlib Laplace.randomise (per scalar)", _diffprivlib_scalar("laplace"),
                    _diffprivlib_error("laplace")),),
    ))
    register(Workload(
        name=f"per call: ldp grr client, one report, d={_LDP_D}", unit="ops", items=_calls,
        setup=_one_report_state, run=_one_report_each, epsilon=2.0, family=_PER_CALL,
        reference_name="numpy float k-ary RR, one device per call", reference=_numpy_one_report_each,
        metrics=("rms_error", "ci_coverage"), utility=_one_report_utility,
        size=lambda ctx: f"{_calls(ctx):,} calls of one device, Zipf(1.1) over d={_LDP_D}",
    ))


# -- constant-time samplers and a DP-SGD step ------------------------------------------------------

def _variance_ratio(ctx: Context, s: dict[str, Any], draw: Callable[[Context, dict[str, Any]], np.ndarray],
                    exact: float) -> dict[str, float]:
    return {"variance_ratio": float(draw(ctx, s).var() / exact)}


def _register_constant_time_and_sgd() -> None:
    """The constant-time samplers against the default path of the same generator (the ratio is
    the price of branching on nothing secret, docs/security.md), and one DP-SGD noise step on a
    float32 gradient in place against NumPy's float normal."""
    for kind, exact in (("laplace", _laplace_variance(10.0)), ("gaussian", 100.0)):
        def draw(ctx: Context, s: dict[str, Any], kind: str = kind, constant_time: bool = True) -> np.ndarray:
            f = s["rng"].discrete_laplace if kind == "laplace" else s["rng"].discrete_gaussian
            return f(10, ctx.samples, threads=ctx.threads, constant_time=constant_time)

        register(Workload(
            name=f"constant-time discrete {kind.capitalize()} ({'scale' if kind == 'laplace' else 'sigma'}=10)",
            items=lambda ctx: ctx.samples, setup=_sampler_state, run=draw, family="exact samplers",
            reference_name="the default (variable-time) path, same generator",
            reference=partial(draw, constant_time=False),
            metrics=("variance_ratio",), utility=partial(_variance_ratio, draw=draw, exact=exact),
        ))

    def sgd_state(ctx: Context) -> dict[str, Any]:
        from dpnoise.mechanisms import GaussianMechanism

        mech = GaussianMechanism(noise_multiplier=1.1, sensitivity=1.0, rng=ctx.rng(), threads=ctx.threads,
                                 allow_insecure=ctx.allow_insecure)
        grad = ctx.numpy_rng("grad").standard_normal(ctx.values).astype(np.float32)
        return {"mech": mech, "grad": grad, "g": grad.copy(), "np": ctx.numpy_rng()}

    def sgd_step(ctx: Context, s: dict[str, Any]) -> object:
        return s["mech"](s["g"], out=s["g"])

    def numpy_step(ctx: Context, s: dict[str, Any]) -> object:
        g = s["g"]
        return np.add(g, s["np"].standard_normal(g.size, dtype=np.float32) * np.float32(1.1), out=g)

    def sgd_utility(ctx: Context, s: dict[str, Any]) -> dict[str, float]:
        # noise of sigma = noise_multiplier x sensitivity (Abadi et al. 2016, Algorithm 1)
        noisy = s["mech"](s["grad"])
        return {"mse_over_sigma2": float(np.mean((noisy.astype(np.float64) - s["grad"]) ** 2) / 1.1**2)}

    register(Workload(
        name="DP-SGD step: GaussianMechanism(noise_multiplier=1.1)(g, out=g), float32", items=lambda ctx: ctx.values,
        setup=sgd_state, run=sgd_step, family="DP-SGD step",
        reference_name="numpy g += 1.1 * standard_normal(float32)", reference=numpy_step,
        metrics=("mse_over_sigma2",), utility=sgd_utility,
        size=lambda ctx: f"a gradient of {ctx.values:,} float32",
    ))


# -- local DP: mean oracles -------------------------------------------------------------------------

_MEAN_DIMS = 8


def _mean_state(method: str) -> Callable[[Context], dict[str, Any]]:
    def setup(ctx: Context) -> dict[str, Any]:
        mo = ldp.MeanOracle(method, _epsilon(ctx), (0.0, 1.0), dimensions=_MEAN_DIMS)
        r = ctx.numpy_rng("values")
        # coordinate j ~ Beta(2 + j, 5): means from 0.29 to 0.6 (values in the bounds [0, 1])
        values = np.stack([r.beta(2 + j, 5, ctx.devices) for j in range(_MEAN_DIMS)], axis=1)
        return {"mo": mo, "client": mo.client(ctx.rng(), allow_insecure=ctx.allow_insecure), "values": values,
                "true": values.mean(axis=0)}
    return setup


def _mean_end_to_end(ctx: Context, s: dict[str, Any]) -> Any:
    agg = s["mo"].aggregator().add(s["client"].privatize(s["values"]))
    return agg.estimate(), agg.stderr()


def _mean_utility(ctx: Context, s: dict[str, Any]) -> dict[str, float]:
    est, se = _mean_end_to_end(ctx, s)
    err = np.asarray(est) - s["true"]
    return {"rms_error": float(np.sqrt(np.mean(err**2))),
            "ci_coverage": float(np.mean(np.abs(err) <= 1.96 * np.asarray(se)))}


def _register_mean_oracles() -> None:
    """Local-DP mean oracles (docs/ldp_numeric.md): every registered method, devices with one
    8-dimensional vector in [0, 1] each (each reports one coordinate), clients + add + estimate."""
    from dpnoise.ldp.numeric.mean import MeanConfiguration

    for method in MeanConfiguration.registered():
        register(Workload(
            name=f"ldp mean oracle {method}: clients + add + estimate, {_MEAN_DIMS} dims", unit="ops", epsilon=1.0,
            items=lambda ctx: ctx.devices, setup=_mean_state(method), run=_mean_end_to_end,
            family=f"ldp mean oracles, {_MEAN_DIMS} dims in [0, 1]",
            metrics=("rms_error", "ci_coverage"), utility=_mean_utility,
            size=lambda ctx: f"{ctx.devices:,} devices, {_MEAN_DIMS} dims",
        ))


_register_samplers()
_register_mechanisms()
_register_selection()
_register_frequency_oracles()
_register_heavy_hitters()
_register_streams_and_accounting()
_register_per_call()
_register_constant_time_and_sgd()
_register_mean_oracles()


# -- local DP: heavy hitters over strings -----------------------------------------------------------

_STRING_MAX = 64
_STRING_NAMES = 1_000


def _string_devices(ctx: Context) -> int:
    """Devices of the string rows: 10^5 in --quick (5 x ctx.devices: over 65 levels, 2·10^4 devices
    leave about 300 per level, too few to find anything), ctx.devices otherwise."""
    return 5 * ctx.devices if ctx.quick else ctx.devices


def _string_options(ctx: Context) -> dict[str, Any]:
    # --quick: fewer public hash functions and survivors per level (the server's cost is
    # levels x 257 x keep candidates x k_prime, whatever the number of devices); full: the defaults
    return {"k_prime": 256, "keep": 16} if ctx.quick else {}


def _string_size(ctx: Context) -> str:
    opts = _string_options(ctx)
    config = f"k_prime={opts['k_prime']}, keep={opts['keep']}" if opts else "default k_prime and keep"
    return (f"{_string_devices(ctx):,} devices, Zipf(1.1) over {_STRING_NAMES:,} names of 12-39 bytes, "
            f"max_length={_STRING_MAX}, {config}")


def _string_state(ctx: Context) -> dict[str, Any]:
    from dpnoise.demos.data import package_names, zipf_ranks

    hh = _with_public_keys(ctx, lambda **kw: ldp.HeavyHitters("string_pem", _epsilon(ctx),
                                                              max_length=_STRING_MAX, **_string_options(ctx), **kw))
    names = package_names(_STRING_NAMES, seed=2031, max_bytes=_STRING_MAX)
    ranks = zipf_ranks(_STRING_NAMES, _string_devices(ctx), 1.1, seed=ctx.numpy_rng("ranks"))
    items = [names[r] for r in ranks]
    return {"hh": hh, "client": hh.client(ctx.rng(), allow_insecure=ctx.allow_insecure), "items": items,
            "truth": true_top(ranks, 10), "names": names}


def _string_recall(ctx: Context, s: dict[str, Any]) -> dict[str, float]:
    found = {r.item for r in _hh_end_to_end(ctx, s)}
    return {"recall": len(found & {s["names"][r] for r in s["truth"]}) / 10}


def _register_string_heavy_hitters() -> None:
    """Heavy hitters over strings with no dictionary (docs/heavy_hitters.md, "Long strings"):
    ``string_pem`` on str items of up to 64 bytes, the client alone and clients + add + top(10)
    with its recall of the true top 10 (exact names)."""
    family = f"ldp heavy hitters over strings of up to {_STRING_MAX} bytes"
    register(Workload(
        name=f"ldp heavy hitters string_pem client: devices, strings of up to {_STRING_MAX} bytes", unit="ops",
        epsilon=4.0, family=family + ", clients", items=_string_devices, setup=_string_state,
        run=lambda ctx, s: s["client"].privatize(s["items"]), size=_string_size,
    ))
    register(Workload(
        name=f"ldp heavy hitters string_pem: clients + add + top(10), strings of up to {_STRING_MAX} bytes",
        unit="ops", epsilon=4.0, family=family, items=_string_devices, setup=_string_state, run=_hh_end_to_end,
        metrics=("recall",), utility=_string_recall, size=_string_size,
    ))


# -- local DP: daily collection ---------------------------------------------------------------------

_DAYS = 30
_DAILY_EPS1 = 1.0
_DAILY = {"fresh": "fresh randomness every day", "memo+inst": "memoised + instantaneous_epsilon=1"}


def _attack_devices(ctx: Context) -> int:
    """Devices whose 30 days of reports the attacker sees (the utility's sample, O(devices x d))."""
    return 500 if ctx.quick else 2_000


def _daily_oracle(ctx: Context, setting: str) -> Any:
    eps = _epsilon(ctx)
    if setting == "fresh":
        return _with_public_keys(ctx, ldp.FrequencyOracle, "olh", eps, _LDP_D)
    return _with_public_keys(ctx, lambda *a, **kw: ldp.FrequencyOracle(*a, instantaneous_epsilon=_DAILY_EPS1, **kw),
                             "olh", eps, _LDP_D)


def _daily_state(setting: str) -> Callable[[Context], dict[str, Any]]:
    def setup(ctx: Context) -> dict[str, Any]:
        fo = _daily_oracle(ctx, setting)
        items = zipf_items(ctx.devices, _LDP_D, seed=ctx.numpy_rng("items"))
        # the devices' secret keys (a simulation: drawn from the run's data generator)
        keys = ctx.numpy_rng("device keys").integers(0, 256, (ctx.devices, 32), dtype=np.uint8)
        prior = np.arange(1, _LDP_D + 1, dtype=np.float64) ** -1.1  # zipf_items' law, known to the attacker
        return {"fo": fo, "client": fo.client(ctx.rng(), allow_insecure=ctx.allow_insecure), "items": items,
                "keys": keys if setting != "fresh" else None, "prior": prior / prior.sum(),
                "one_shot": _with_public_keys(ctx, ldp.FrequencyOracle, "olh", _epsilon(ctx), _LDP_D),
                "true": np.bincount(items, minlength=_LDP_D)}
    return setup


def _one_day(ctx: Context, s: dict[str, Any], n: int | None = None) -> Any:
    """One day's reports of the first ``n`` devices (all by default)."""
    items, keys = s["items"][:n], s["keys"]
    if keys is None:
        return s["client"].privatize(items)
    return s["client"].privatize(items, device_keys=keys[:n])


def _rms(fo: Any, reports: Any, true: np.ndarray) -> float:
    est = fo.aggregator().add(reports).estimate()
    return float(np.sqrt(np.mean((est - true) ** 2)))


def _daily_utility(ctx: Context, s: dict[str, Any]) -> dict[str, float]:
    from dpnoise.ldp.longitudinal import averaging_attack

    memoised = s["keys"] is not None
    a = _attack_devices(ctx)
    days = [_one_day(ctx, s, a) for _ in range(_DAYS)]
    # per device, its 30 reports as one batch (the attacker links a device's days)
    per_device = [ldp.Reports(days[0].protocol, days[0].params, _DAYS,
                              {k: np.stack([d.data[k][i] for d in days]) for k in days[0].data})
                  for i in range(a)]
    guesses = averaging_attack(s["fo"], per_device, s["prior"], memoised=memoised)
    one_shot = s["one_shot"].client(ctx.rng("one shot"), allow_insecure=ctx.allow_insecure).privatize(s["items"])
    return {"attack_success_30d": float(np.mean(guesses == s["items"][:a])),
            "rms_over_one_shot": _rms(s["fo"], _one_day(ctx, s), s["true"]) / _rms(s["one_shot"], one_shot, s["true"])}


def _register_daily_collection() -> None:
    """Daily collection (docs/ldp.md, "Daily collection"): OLH at ε∞ = 2 reported every day, with
    fresh randomness or memoised with an instantaneous layer at ε₁ = 1 (RAPPOR's two layers,
    Erlingsson, Pihur & Korolova 2014, §3). Timed: one day's reports of every device. Utility:
    the maximum-posterior attacker's success after 30 days (a sample of devices), and the RMS
    error of one day's frequency estimate over that of a one-shot OLH collection at ε∞."""
    for setting, what in _DAILY.items():
        register(Workload(
            name=f"ldp daily collection olh, {what}: one day of devices, d={_LDP_D}", unit="ops", epsilon=2.0,
            family=f"ldp daily collection (olh, d={_LDP_D}, {_DAYS} days)", items=lambda ctx: ctx.devices,
            setup=_daily_state(setting), run=lambda ctx, s: _one_day(ctx, s),
            metrics=("attack_success_30d", "rms_over_one_shot"), utility=_daily_utility,
            size=lambda ctx: (f"{ctx.devices:,} devices a day, Zipf(1.1) over d={_LDP_D}; attack on "
                              f"{_attack_devices(ctx):,} devices x {_DAYS} days"),
        ))


_register_string_heavy_hitters()
_register_daily_collection()
