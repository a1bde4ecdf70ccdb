"""``dpnoise bench``: built-in workloads, timed against a reference measured in the same run.

Each workload times dpnoise's own call and, in the same process and run, a reference doing the
same job the usual way (NumPy's floating-point samplers, which are neither exact nor secure: they
are the speed yardstick, not an alternative). The ratio dpnoise / reference (> 1: dpnoise is
faster) is what to compare across machines; absolute numbers depend on the machine and its load.
With ``peers=True`` installed DP libraries (OpenDP, diffprivlib, dp-accounting) are timed on the
same jobs, side by side; they are imported lazily and skipped with a note when absent (never a
dependency of dpnoise).

Adding a workload (later issues do this) is one call, anywhere before :func:`run` is called::

    from dpnoise.bench import Workload, register
    register(Workload(
        name="report_noisy_max(1000x100)", unit="ops",
        items=lambda ctx: 1000,                      # work items per timed call
        setup=lambda ctx: make_scores(ctx),          # untimed; returns the state
        run=lambda ctx, state: rnm(state),           # timed: dpnoise
        reference_name="numpy argmax(x + gumbel)",
        reference=lambda ctx, state: baseline(state),  # timed: the yardstick (optional)
        peers=(Peer("opendp", "OpenDP ...", make_opendp_call),),  # optional
    ))

JSON record (``dpnoise bench --json``), schema ``"dpnoise-bench/1"``::

    {
      "schema": "dpnoise-bench/1",
      "created": "2026-11-22T13:00:00Z",          # UTC, ISO 8601
      "dpnoise_version": "0.4.0",
      "machine": {"cpu": str, "cores": int, "usable_cores": int, "platform": str,
                  "python": str, "numpy": str, "chacha20_backend": str, "dpnoise": str,
                  "load_average": [float, float, float] | null},
      "settings": {"quick": bool, "threads": int, "repeats": int, "peers": bool,
                   "filter": str | null},
      "results": [
        {"workload": str, "unit": "samples" | "ops", "items": int,
         "seconds": float,                    # best of `repeats` timed calls
         "throughput": float,                 # items / seconds
         "reference": {"name": str, "seconds": float, "throughput": float} | null,
         "ratio": float | null,               # throughput / reference throughput
         "peers": [{"library": str, "version": str, "name": str, "items": int,
                    "seconds": float, "throughput": float, "ratio": float}
                   | {"library": str, "name": str, "skipped": str}]}
      ],
      "notes": [str]
    }
"""
from __future__ import annotations

import datetime as _dt
import importlib
import math
import os
import platform
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

SCHEMA = "dpnoise-bench/1"


@dataclass(frozen=True)
class Context:
    """What every workload is sized and run with."""

    quick: bool
    threads: int
    repeats: int
    samples: int        # samples per timed call for the sampler workloads
    values: int         # query values per release for the mechanism workloads

    def rng(self) -> Any:
        """A secure dpnoise generator (what users draw from)."""
        import dpnoise

        return dpnoise.default_rng()

    def numpy_rng(self) -> np.random.Generator:
        """NumPy's default generator (PCG64), seeded: the reference's bit source."""
        return np.random.default_rng(20261122)


@dataclass(frozen=True)
class Peer:
    """Another DP library doing the workload's job. ``make(module, ctx, state)`` returns
    ``(call, items)``: a zero-argument callable to time and how many items one call does."""

    library: str                 # import name, e.g. "opendp.prelude", "diffprivlib", "dp_accounting"
    name: str                    # what is timed, e.g. "OpenDP make_laplace (int vector)"
    make: Callable[[Any, Context, Any], Tuple[Callable[[], object], int]]


@dataclass(frozen=True)
class Workload:
    """One benchmark row: dpnoise's call, timed against ``reference`` in the same run."""

    name: str
    items: Callable[[Context], int]
    setup: Callable[[Context], Any]
    run: Callable[[Context, Any], object]
    unit: str = "samples"
    reference_name: Optional[str] = None
    reference: Optional[Callable[[Context, Any], object]] = None
    peers: Tuple[Peer, ...] = field(default_factory=tuple)


_REGISTRY: Dict[str, Workload] = {}


def register(workload: Workload) -> Workload:
    """Add a workload to ``dpnoise bench`` (a name may be registered once)."""
    if not isinstance(workload, Workload):
        raise TypeError(f"workload must be a dpnoise.bench.Workload, got {type(workload).__name__}")
    if workload.name in _REGISTRY:
        raise ValueError(f"a workload named {workload.name!r} is already registered")
    if workload.unit not in ("samples", "ops"):
        raise ValueError(f"unit must be 'samples' or 'ops', got {workload.unit!r}")
    _REGISTRY[workload.name] = workload
    return workload


def workloads() -> List[Workload]:
    """The registered workloads, in registration order."""
    return list(_REGISTRY.values())


# -- timing ----------------------------------------------------------------------------------

def best_time(call: Callable[[], object], repeats: int) -> float:
    """The least wall time of ``repeats`` calls (best-of-k damps a shared machine's noise)."""
    best = math.inf
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - t0)
    return max(best, 1e-9)


# -- machine information ---------------------------------------------------------------------

def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def machine_info() -> Dict[str, Any]:
    import dpnoise
    from dpnoise import _core

    try:
        usable = len(os.sched_getaffinity(0))  # type: ignore[attr-defined]
    except (AttributeError, OSError):
        usable = os.cpu_count() or 1
    try:
        load: Optional[List[float]] = [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        load = None
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count() or 1,
        "usable_cores": usable,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "chacha20_backend": str(_core.chacha20_backend()),
        "dpnoise": dpnoise.__version__,
        "load_average": load,
    }


# -- running ---------------------------------------------------------------------------------

def _version_of(library: str, module: Any) -> str:
    from importlib import metadata

    top = library.split(".")[0]
    for dist in (top, top.replace("_", "-")):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return str(getattr(module, "__version__", "unknown"))


def _run_peer(peer: Peer, ctx: Context, state: Any, ours: float) -> Dict[str, Any]:
    try:
        module = importlib.import_module(peer.library)
    except Exception:  # noqa: BLE001 - any import failure means "not usable here"
        return {"library": peer.library, "name": peer.name, "skipped": "not installed"}
    try:
        call, items = peer.make(module, ctx, state)
        seconds = best_time(call, ctx.repeats)
    except Exception as exc:  # noqa: BLE001 - a peer's API drift must not stop the run
        return {"library": peer.library, "name": peer.name,
                "skipped": f"failed: {type(exc).__name__}: {str(exc)[:120]}"}
    thr = items / seconds
    return {"library": peer.library, "version": _version_of(peer.library, module),
            "name": peer.name, "items": int(items), "seconds": seconds, "throughput": thr,
            "ratio": ours / thr}


def run_workload(w: Workload, ctx: Context, peers: bool = False) -> Dict[str, Any]:
    """Time one workload (and its reference, and with ``peers`` its installed peers)."""
    state = w.setup(ctx)
    items = int(w.items(ctx))
    w.run(ctx, state)  # warm-up: tables, caches, first-touch of pages
    seconds = best_time(lambda: w.run(ctx, state), ctx.repeats)
    thr = items / seconds
    row: Dict[str, Any] = {"workload": w.name, "unit": w.unit, "items": items,
                           "seconds": seconds, "throughput": thr, "reference": None,
                           "ratio": None, "peers": []}
    if w.reference is not None:
        ref = w.reference
        ref(ctx, state)
        rsec = best_time(lambda: ref(ctx, state), ctx.repeats)
        row["reference"] = {"name": w.reference_name or "reference", "seconds": rsec,
                            "throughput": items / rsec}
        row["ratio"] = thr / (items / rsec)
    if peers:
        row["peers"] = [_run_peer(p, ctx, state, thr) for p in w.peers]
    return row


def make_context(quick: bool = False, threads: int = 1, repeats: Optional[int] = None) -> Context:
    if quick:
        return Context(quick=True, threads=threads, repeats=repeats or 5, samples=1_000_000, values=200_000)
    return Context(quick=False, threads=threads, repeats=repeats or 5, samples=2_000_000, values=1_000_000)


def run(quick: bool = False, threads: int = 1, peers: bool = False, repeats: Optional[int] = None,
        only: Optional[str] = None) -> Dict[str, Any]:
    """Run the registered workloads (those whose name contains ``only``, if given) and return
    the JSON record described in the module docstring."""
    ctx = make_context(quick, threads, repeats)
    chosen = [w for w in workloads() if only is None or only in w.name]
    notes = ["ratio = dpnoise throughput / reference throughput, both measured in this run "
             "(> 1: dpnoise is faster); NumPy references are floating-point, not exact or secure"]
    if only is not None and not chosen:
        notes.append(f"no workload name contains {only!r}")
    results = [run_workload(w, ctx, peers) for w in chosen]
    if peers:
        missing = sorted({p["library"] for r in results for p in r["peers"] if p.get("skipped") == "not installed"})
        if missing:
            notes.append("peers not installed (skipped): " + ", ".join(missing))
    return {
        "schema": SCHEMA,
        "created": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "dpnoise_version": machine_info()["dpnoise"],
        "machine": machine_info(),
        "settings": {"quick": quick, "threads": threads, "repeats": ctx.repeats, "peers": peers,
                     "filter": only},
        "results": results,
        "notes": notes,
    }


def _rate(thr: float, unit: str) -> str:
    if unit == "samples":
        return f"{thr / 1e6:9.2f} M/s"
    return f"{thr / 1e6:7.2f} Mop/s" if thr >= 1e6 else f"{thr:9.1f} op/s"


def format_table(record: Dict[str, Any]) -> str:
    """The human-readable report of a :func:`run` record."""
    m = record["machine"]
    lines = [
        f"dpnoise {record['dpnoise_version']} bench ({'quick' if record['settings']['quick'] else 'full'}, "
        f"best of {record['settings']['repeats']}, threads={record['settings']['threads']})",
        f"  cpu: {m['cpu']} ({m['cores']} cores, {m['usable_cores']} usable; load {m['load_average']})",
        f"  python {m['python']}, numpy {m['numpy']}, ChaCha20 backend {m['chacha20_backend']}, {m['platform']}",
        "",
        f"  {'workload':50s} {'dpnoise':>13s}   {'reference':36s} {'reference':>13s} {'ratio':>7s}",
    ]
    for r in record["results"]:
        ref = r["reference"]
        if ref is None:
            lines.append(f"  {r['workload']:50s} {_rate(r['throughput'], r['unit'])}   {'-':36s} {'':>13s} {'-':>7s}")
        else:
            lines.append(f"  {r['workload']:50s} {_rate(r['throughput'], r['unit'])}   {ref['name'][:36]:36s} "
                         f"{_rate(ref['throughput'], r['unit'])} {r['ratio']:6.2f}x")
        for p in r["peers"]:
            if "skipped" in p:
                lines.append(f"      peer {p['name']}: skipped ({p['skipped']})")
            else:
                lines.append(f"      peer {p['name']} {p['version']}: {_rate(p['throughput'], r['unit']).strip()}, "
                             f"dpnoise/peer {p['ratio']:.2f}x")
    lines.append("")
    lines.extend(f"  note: {n}" for n in record["notes"])
    return "\n".join(lines)


# -- the built-in workloads ------------------------------------------------------------------

def _sampler_state(ctx: Context) -> Dict[str, Any]:
    return {"rng": ctx.rng(), "np": ctx.numpy_rng()}


def _opendp_vector_noise(kind: str, scale: float) -> Callable[[Any, Context, Any], Tuple[Callable[[], object], int]]:
    """OpenDP's sampler on an int vector of zeros (discrete noise, like dpnoise's)."""
    def make(dp: Any, ctx: Context, state: Any) -> Tuple[Callable[[], object], int]:
        dp.enable_features("contrib")
        n = 10_000 if ctx.quick else 50_000  # OpenDP draws ~10^5 samples/s: keep runs short
        space = (dp.vector_domain(dp.atom_domain(T=int)),
                 dp.l1_distance(T=int) if kind == "laplace" else dp.l2_distance(T=int))
        meas = (dp.m.make_laplace if kind == "laplace" else dp.m.make_gaussian)(*space, scale=scale)
        data = [0] * n
        return (lambda: meas(data)), n
    return make


def _diffprivlib_scalar(kind: str) -> Callable[[Any, Context, Any], Tuple[Callable[[], object], int]]:
    """diffprivlib's mechanisms randomise one scalar per call; time a loop over a few."""
    def make(lib: Any, ctx: Context, state: Any) -> Tuple[Callable[[], object], int]:
        mechs = importlib.import_module("diffprivlib.mechanisms")
        if kind == "laplace":
            mech = mechs.Laplace(epsilon=1.0, sensitivity=1.0)
        else:
            mech = mechs.GaussianAnalytic(epsilon=1.0, delta=1e-6, sensitivity=1.0)
        n = 2_000 if ctx.quick else 20_000
        return (lambda: [mech.randomise(0.5) for _ in range(n)]), n
    return make


def _register_builtins() -> None:
    register(Workload(
        name="discrete_laplace(scale=10)",
        items=lambda ctx: ctx.samples,
        setup=_sampler_state,
        run=lambda ctx, s: s["rng"].discrete_laplace(10, ctx.samples, threads=ctx.threads),
        reference_name="numpy laplace(scale=10)",
        reference=lambda ctx, s: s["np"].laplace(0.0, 10.0, ctx.samples),
        peers=(Peer("opendp.prelude", "OpenDP make_laplace (int vector)", _opendp_vector_noise("laplace", 10.0)),),
    ))
    register(Workload(
        name="discrete_gaussian(sigma=10)",
        items=lambda ctx: ctx.samples,
        setup=_sampler_state,
        run=lambda ctx, s: s["rng"].discrete_gaussian(10, ctx.samples, threads=ctx.threads),
        reference_name="numpy normal(scale=10)",
        reference=lambda ctx, s: s["np"].normal(0.0, 10.0, ctx.samples),
        peers=(Peer("opendp.prelude", "OpenDP make_gaussian (int vector)", _opendp_vector_noise("gaussian", 10.0)),),
    ))

    def mech_state(kind: str) -> Callable[[Context], Dict[str, Any]]:
        def setup(ctx: Context) -> Dict[str, Any]:
            from dpnoise.mechanisms import GaussianMechanism, LaplaceMechanism

            rng = ctx.rng()
            if kind == "laplace":
                mech = LaplaceMechanism(1.0, 1.0, rng=rng, threads=ctx.threads)
                width = 1.0  # b = sensitivity / epsilon
            else:
                mech = GaussianMechanism(1.0, 1e-6, 1.0, rng=rng, threads=ctx.threads)
                k, _, sigma_units = mech.grid(ctx.values)
                width = sigma_units * 2.0**k  # the same sigma the mechanism adds
            x = np.random.default_rng(1).random(ctx.values) * 100.0
            return {"mech": mech, "x": x, "np": ctx.numpy_rng(), "width": width}
        return setup

    register(Workload(
        name="LaplaceMechanism(eps=1) on floats",
        items=lambda ctx: ctx.values,
        setup=mech_state("laplace"),
        run=lambda ctx, s: s["mech"](s["x"]),
        reference_name="x + numpy laplace(0, b, n)",
        reference=lambda ctx, s: s["x"] + s["np"].laplace(0.0, s["width"], s["x"].size),
        peers=(Peer("diffprivlib", "diffprivlib Laplace.randomise (per scalar)", _diffprivlib_scalar("laplace")),),
    ))
    register(Workload(
        name="GaussianMechanism(eps=1, delta=1e-6) on floats",
        items=lambda ctx: ctx.values,
        setup=mech_state("gaussian"),
        run=lambda ctx, s: s["mech"](s["x"]),
        reference_name="x + numpy normal(0, sigma, n)",
        reference=lambda ctx, s: s["x"] + s["np"].normal(0.0, s["width"], s["x"].size),
        peers=(Peer("diffprivlib", "diffprivlib GaussianAnalytic.randomise (per scalar)", _diffprivlib_scalar("gaussian")),),
    ))

    # Selection: one op = one row (candidate set of 1,000 int32 scores) selected, epsilon = 1.
    def selection_state(noise: str) -> Callable[[Context], Dict[str, Any]]:
        def setup(ctx: Context) -> Dict[str, Any]:
            from dpnoise.selection import ReportNoisyMax

            rows = 1_000 if ctx.quick else 10_000
            scores = np.random.default_rng(0).integers(0, 1000, size=(rows, 1000), dtype=np.int32)
            mech = ReportNoisyMax(1.0, noise=noise, rng=ctx.rng(), threads=ctx.threads)
            return {"mech": mech, "scores": scores, "np": ctx.numpy_rng()}
        return setup

    def opendp_noisy_max(dp: Any, ctx: Context, state: Any) -> Tuple[Callable[[], object], int]:
        dp.enable_features("contrib")
        space = dp.vector_domain(dp.atom_domain(T=int)), dp.linf_distance(T=int)
        # make_noisy_max (0.16+): zCDP gives Gumbel noise (the exponential mechanism), scale 2Δ/ε
        meas = dp.m.make_noisy_max(*space, dp.zero_concentrated_divergence(), scale=2.0)
        vectors = [row.tolist() for row in state["scores"][:20 if ctx.quick else 100]]
        return (lambda: [meas(v) for v in vectors]), len(vectors)

    for noise in ("exponential", "gumbel", "laplace"):
        register(Workload(
            name=f"report_noisy_max {noise}: rows of 1000 int32",
            unit="ops", items=lambda ctx: 1_000 if ctx.quick else 10_000,
            setup=selection_state(noise),
            run=lambda ctx, s: s["mech"](s["scores"]),
            reference_name="numpy argmax(S*eps/2 + gumbel)",
            reference=lambda ctx, s: np.argmax(s["scores"] * 0.5 + s["np"].gumbel(size=s["scores"].shape), axis=1),
            peers=((Peer("opendp.prelude", "OpenDP noisy max (one vector per call)", opendp_noisy_max),)
                   if noise == "gumbel" else ()),
        ))

    _register_ldp()
    _register_ldp_heavy_hitters()

    def numpy_via_chacha(ctx: Context) -> Dict[str, Any]:
        import dpnoise

        return {"chacha": np.random.Generator(dpnoise.ChaCha20()), "pcg": np.random.Generator(np.random.PCG64(1))}

    register(Workload(
        name="numpy Generator(dpnoise.ChaCha20()).random",
        items=lambda ctx: ctx.samples,
        setup=numpy_via_chacha,
        run=lambda ctx, s: s["chacha"].random(ctx.samples),
        reference_name="numpy Generator(PCG64()).random",
        reference=lambda ctx, s: s["pcg"].random(ctx.samples),
    ))

    # Accounting: one op = a fresh accountant, `count` compositions, one epsilon query.
    def pld_count(ctx: Context) -> int:
        return 10 if ctx.quick else 100

    def dpa_pld(dpa: Any, ctx: Context, state: Any) -> Tuple[Callable[[], object], int]:
        pld = importlib.import_module("dp_accounting.pld.pld_privacy_accountant")

        def call() -> float:
            acc = pld.PLDAccountant()
            acc.compose(dpa.LaplaceDpEvent(2.0), pld_count(ctx))
            return acc.get_epsilon(1e-6)
        return call, 1

    def dpa_rdp(dpa: Any, ctx: Context, state: Any) -> Tuple[Callable[[], object], int]:
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
        name="PLD accountant: Laplace(b=2) x10/x100, eps@1e-6",
        unit="ops", items=lambda ctx: 1, setup=lambda ctx: None, run=accounting_run("pld"),
        peers=(Peer("dp_accounting", "dp-accounting PLDAccountant", dpa_pld),),
    ))
    register(Workload(
        name="RDP accountant: Gaussian(sigma=2) x1000, eps@1e-6",
        unit="ops", items=lambda ctx: 1, setup=lambda ctx: None, run=accounting_run("rdp"),
        peers=(Peer("dp_accounting", "dp-accounting RdpAccountant", dpa_rdp),),
    ))


# Local DP: one op = one device. d = 1024, epsilon = 2, Zipf(1.1) items (the workload).
_LDP_D = 1024
_LDP_SERVER_HEAVY = {"olh": 10}  # O(n·d) servers time 1/10 of the devices, so a run stays short


def _ldp_devices(ctx: Context, name: str = "", side: str = "client") -> int:
    n = 100_000 if ctx.quick else 1_000_000
    return n // _LDP_SERVER_HEAVY.get(name, 1) if side == "server" else n


def _zipf_items(n: int, d: int, seed: int = 1) -> np.ndarray:
    """Zipf(1.1) ranks truncated to [0, d): the issue's telemetry workload."""
    w = 1.0 / np.arange(1, d + 1) ** 1.1
    return np.random.default_rng(seed).choice(d, size=n, p=w / w.sum()).astype(np.int64)


def _register_ldp() -> None:
    from dpnoise import ldp

    def client_state(name: str) -> Callable[[Context], Dict[str, Any]]:
        def setup(ctx: Context) -> Dict[str, Any]:
            fo = ldp.FrequencyOracle(name, epsilon=2.0, domain_size=_LDP_D)
            n = _ldp_devices(ctx)
            p = math.exp(2.0) / (math.exp(2.0) + _LDP_D - 1)
            return {"client": fo.client(ctx.rng()), "items": _zipf_items(n, _LDP_D), "np": ctx.numpy_rng(), "p": p}
        return setup

    def numpy_grr(ctx: Context, s: Dict[str, Any]) -> object:
        # the usual float way: keep with probability p, else a uniform other item
        items, r = s["items"], s["np"]
        other = r.integers(0, _LDP_D - 1, items.size)
        return np.where(r.random(items.size) < s["p"], items, other + (other >= items))

    def server_state(name: str) -> Callable[[Context], Dict[str, Any]]:
        def setup(ctx: Context) -> Dict[str, Any]:
            fo = ldp.FrequencyOracle(name, epsilon=2.0, domain_size=_LDP_D)
            items = _zipf_items(_ldp_devices(ctx, name, "server"), _LDP_D)
            return {"fo": fo, "reports": fo.client(ctx.rng()).privatize(items), "items": items}
        return setup

    def aggregate(ctx: Context, s: Dict[str, Any]) -> object:
        return s["fo"].aggregator().add(s["reports"]).estimate()

    for name in ("grr", "oue", "sue", "olh", "flh", "hadamard", "cms", "hcms", "zmatrix"):
        if name not in ldp.protocols():
            continue
        register(Workload(
            name=f"ldp {name} client: devices, d={_LDP_D}, eps=2", unit="ops",
            items=lambda ctx: _ldp_devices(ctx), setup=client_state(name),
            run=lambda ctx, s: s["client"].privatize(s["items"]),
            reference_name="numpy float k-ary RR (where(random < p, x, other))", reference=numpy_grr,
        ))
        register(Workload(
            name=f"ldp {name} server: add + estimate all, d={_LDP_D}", unit="ops",
            items=lambda ctx, name=name: _ldp_devices(ctx, name, "server"), setup=server_state(name),
            run=aggregate,
            reference_name="numpy bincount of the true items (no privacy)",
            reference=lambda ctx, s: np.bincount(s["items"], minlength=_LDP_D),
        ))


def _hh_items(n: int, distinct: int = 1_000_000, seed: int = 13) -> np.ndarray:
    """The heavy-hitters workload of issue #13: `distinct` random 32-bit IDs (fixed seed),
    Zipf(1.1) popularity over their ranks, n users."""
    rng = np.random.default_rng(seed)
    ids = rng.choice(1 << 32, size=distinct, replace=False).astype(np.uint64)
    w = np.arange(1, distinct + 1, dtype=np.float64) ** -1.1
    ranks = np.searchsorted(np.cumsum(w / w.sum()), rng.random(n), side="right").clip(0, distinct - 1)
    return ids[ranks]


def _register_ldp_heavy_hitters() -> None:
    """Local-DP heavy hitters (docs/heavy_hitters.md): one op = one device, 32-bit IDs, eps = 4;
    the client alone, and clients + aggregation + top(10) end to end, against exact counting of
    the true items (np.unique, no privacy)."""
    from dpnoise import ldp

    def state(method: str) -> Callable[[Context], Dict[str, Any]]:
        def setup(ctx: Context) -> Dict[str, Any]:
            hh = ldp.HeavyHitters(method, 4.0, item_bits=32)
            return {"hh": hh, "client": hh.client(ctx.rng()), "items": _hh_items(_ldp_devices(ctx))}
        return setup

    def end_to_end(ctx: Context, s: Dict[str, Any]) -> object:
        return s["hh"].aggregator().add(s["client"].privatize(s["items"])).top(10)

    def exact_top(ctx: Context, s: Dict[str, Any]) -> object:
        vals, counts = np.unique(s["items"], return_counts=True)
        return vals[np.argsort(-counts)[:10]]

    for method in ("pem", "bitstogram", "treehist"):
        register(Workload(
            name=f"ldp heavy hitters {method} client: devices, 32-bit IDs, eps=4", unit="ops",
            items=lambda ctx: _ldp_devices(ctx), setup=state(method),
            run=lambda ctx, s: s["client"].privatize(s["items"]),
            reference_name="numpy unique counts of the true items, top 10 (no privacy)", reference=exact_top,
        ))
        register(Workload(
            name=f"ldp heavy hitters {method}: clients + add + top(10), 32-bit IDs, eps=4", unit="ops",
            items=lambda ctx: _ldp_devices(ctx), setup=state(method), run=end_to_end,
            reference_name="numpy unique counts of the true items, top 10 (no privacy)", reference=exact_top,
        ))


_register_builtins()

__all__ = ["Context", "Peer", "SCHEMA", "Workload", "format_table", "machine_info", "register",
           "run", "run_workload", "workloads"]
