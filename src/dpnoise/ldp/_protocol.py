"""The shape every local-DP frequency oracle shares: a protocol (parameters), a client
(randomizer) and an aggregator (streaming counts, merge, serialisation, estimates).

A protocol module subclasses :class:`Protocol` and :class:`Aggregator`, implements the
randomizer in :meth:`Protocol._privatize`, and registers itself with :func:`register`::

    fo = dpnoise.ldp.FrequencyOracle("grr", epsilon=2.0, domain_size=100)
    reports = fo.client().privatize(items)
    agg = fo.aggregator(); agg.add(reports); agg.estimate(); agg.stderr()

Reports carry the protocol's fingerprint (name and parameters); an aggregator refuses reports
and states of any other configuration. Serialised states are versioned and checksummed
(SHA-256), so a corrupt or truncated state is refused, never half-loaded.
"""
from __future__ import annotations

import hashlib
import json
import math
import struct
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, ClassVar, Dict, List, Optional, Tuple, Type

import numpy as np

from .. import _rational as R
from .._errors import InsecureGeneratorError
from .._validate import integer, positive
from ..accounting.losses import PrivacyLoss, PureDP
from ..generator import Generator, default_rng

# ε above this is no privacy at all (and e^ε overflows float arithmetic near 709)
MAX_EPSILON = 100.0
# ε below this cannot be held as an exact rational with the core's 62-bit parts (and its
# variance, ~4/ε² per user, would need more users than exist)
MIN_EPSILON = 2.0 ** -50
MAX_DOMAIN = 1 << 40
# the most reports one aggregator may count: sums of int64 counters stay far from overflow
MAX_REPORTS = R.MAX_PART

_MAGIC = b"DPNOISE-LDP\x00"
_REPORTS_MAGIC = b"DPNOISE-LDPR"
_FORMAT = 1
_REGISTRY: Dict[str, Type["Protocol"]] = {}


def register(cls: Type["Protocol"]) -> Type["Protocol"]:
    """Class decorator: make a protocol available to :func:`FrequencyOracle` by its ``name``."""
    _REGISTRY[cls.name] = cls
    return cls


def protocols() -> List[str]:
    """The names of the registered protocols."""
    return sorted(_REGISTRY)


def check_epsilon(value: Any) -> float:
    try:
        eps = positive(value, "epsilon")
    except OverflowError:  # an int beyond the largest double
        raise ValueError(f"epsilon must be at most {MAX_EPSILON:g}") from None
    if eps > MAX_EPSILON:
        raise ValueError(f"epsilon must be at most {MAX_EPSILON:g}, got {eps!r}")
    if eps < MIN_EPSILON:
        raise ValueError(f"epsilon must be at least 2**-50, got {eps!r}")
    return eps


def check_domain_size(value: Any) -> int:
    d = integer(value, "domain_size")
    if d < 2:
        raise ValueError(f"domain_size must be at least 2, got {d}")
    if d > MAX_DOMAIN:
        raise ValueError(f"domain_size must be at most 2^40, got {d}")
    return d


def exact_gamma(epsilon: float) -> Fraction:
    """ε as the exact rational the randomizers use, rounded down (toward more privacy) when its
    exact binary value does not fit the core's 62-bit parts."""
    fr = Fraction(epsilon)
    if fr.numerator <= R.MAX_PART and fr.denominator <= R.MAX_PART:
        return fr
    num, den = R.round_up(1 / fr, "1/epsilon")  # 1/ε rounded up: ε rounded down
    return Fraction(den, num)


def check_items(items: Any, domain_size: int, name: str = "items") -> np.ndarray:
    """A 1-D int64 array of items in [0, domain_size): TypeError for a non-integer dtype,
    ValueError (naming the range, never a value) for items outside it."""
    arr = np.asarray(items)
    if arr.size == 0 and not isinstance(items, np.ndarray):
        arr = arr.astype(np.int64)  # an empty list or tuple is an empty batch, not float64
    if arr.dtype.kind not in "iub":  # not object, float, timedelta (a NumPy integer subtype) ...
        raise TypeError(f"{name} must be integers, got dtype {arr.dtype}")
    if arr.ndim != 1:
        arr = arr.reshape(-1) if arr.ndim == 0 else arr
        if arr.ndim != 1:
            raise ValueError(f"{name} must be a 1-D array, got {arr.ndim}-D")
    if arr.size:
        lo, hi = arr.min(), arr.max()
        if (np.issubdtype(arr.dtype, np.signedinteger) and int(lo) < 0) or int(hi) >= domain_size:
            raise ValueError(f"{name} must be in [0, {domain_size}) (domain_size)")
    return arr.astype(np.int64, copy=False)


def _jsonable(params: Dict[str, Any]) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for k, v in params.items():
        if isinstance(v, Fraction):
            out[k] = {"fraction": [v.numerator, v.denominator]}
        elif isinstance(v, (bytes, bytearray)):
            out[k] = {"hex": bytes(v).hex()}
        else:
            out[k] = v
    return out


def _from_jsonable(params: Dict[str, Any]) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for k, v in params.items():
        if isinstance(v, dict) and set(v) == {"fraction"}:
            out[k] = Fraction(int(v["fraction"][0]), int(v["fraction"][1]))
        elif isinstance(v, dict) and set(v) == {"hex"}:
            out[k] = bytes.fromhex(v["hex"])
        else:
            out[k] = v
    return out


def _frame(magic: bytes, header: Dict[str, Any], arrays: List[Tuple[str, np.ndarray]]) -> bytes:
    """magic, a little-endian u32 header length, a JSON header (with the arrays' names, dtypes
    and shapes), the arrays' bytes, and a SHA-256 of everything before it."""
    arrays = [(k, np.ascontiguousarray(v)) for k, v in arrays]
    head = json.dumps({**header, "format": _FORMAT,
                       "arrays": [[k, v.dtype.str, list(v.shape)] for k, v in arrays]}, sort_keys=True).encode()
    body = magic + struct.pack("<I", len(head)) + head + b"".join(v.tobytes() for _, v in arrays)
    return body + hashlib.sha256(body).digest()


def _unframe(blob: Any, magic: bytes, what: str) -> Tuple[Dict[str, Any], Dict[str, np.ndarray]]:
    """The header and arrays of a :func:`_frame` blob; ValueError naming ``what`` for anything
    corrupt or truncated, TypeError for a non-bytes argument. Only plain numeric dtypes are
    accepted (never object arrays), and every array must fit the blob exactly."""
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise TypeError(f"{what} must be bytes, got {type(blob).__name__}")
    blob = bytes(blob)
    if len(blob) < len(magic) + 4 + 32 or not blob.startswith(magic):
        raise ValueError(f"not a serialised dpnoise {what} (bad magic or too short)")
    body, digest = blob[:-32], blob[-32:]
    if hashlib.sha256(body).digest() != digest:
        raise ValueError(f"corrupt {what}: checksum mismatch")
    (hlen,) = struct.unpack_from("<I", body, len(magic))
    start = len(magic) + 4
    if start + hlen > len(body):
        raise ValueError(f"corrupt {what}: truncated header")
    try:
        header = json.loads(body[start:start + hlen].decode())
        if header["format"] != _FORMAT:
            raise ValueError(f"{what} format {header['format']!r} is not supported (this is {_FORMAT})")
        specs = [(str(name), np.dtype(dtype), tuple(_dimension(x) for x in shape))
                 for name, dtype, shape in header["arrays"]]
    except (KeyError, TypeError, ValueError, IndexError, RecursionError, UnicodeDecodeError) as exc:
        raise ValueError(f"corrupt {what}: bad header ({type(exc).__name__})") from None
    pos = start + hlen
    arrays: Dict[str, np.ndarray] = {}
    for name, dtype, shape in specs:
        if dtype.kind not in "biuf" or dtype.hasobject or any(x < 0 for x in shape) or name in arrays:
            raise ValueError(f"corrupt {what}: array {name!r} has an unsupported dtype or shape")
        count = math.prod(shape)  # Python ints: a forged shape cannot overflow
        size = count * dtype.itemsize
        if pos + size > len(body):
            raise ValueError(f"corrupt {what}: truncated arrays")
        arrays[name] = np.frombuffer(body, dtype=dtype, count=count, offset=pos).reshape(shape).copy()
        pos += size
    if pos != len(body):
        raise ValueError(f"corrupt {what}: trailing bytes after the arrays")
    return header, arrays


def _dimension(x: Any) -> int:
    if not isinstance(x, int) or isinstance(x, bool) or x < 0:
        raise ValueError("array dimensions must be non-negative integers")
    return x


def _protocol_of(header: Dict[str, Any], what: str) -> "Protocol":
    """The protocol a serialised header names, rebuilt from its parameters; ValueError for an
    unknown protocol or parameters that are missing, extra, malformed or inconsistent."""
    try:
        proto_cls = _REGISTRY[header["protocol"]]
        if not isinstance(header["params"], dict):
            raise TypeError("params must be a JSON object")
        params = _from_jsonable(header["params"])
        return proto_cls.from_params(params)
    except (KeyError, TypeError, ValueError, IndexError, ZeroDivisionError, AttributeError, OverflowError,
            RecursionError) as exc:
        raise ValueError(f"corrupt {what}: unknown protocol or bad parameters ({type(exc).__name__})") from None


@dataclass(frozen=True)
class Reports:
    """A batch of randomized reports: the protocol fingerprint, the number of users and the
    protocol's arrays (for example ``values`` int64, packed ``bits`` uint64, ``seeds`` uint64).
    Reports reveal nothing beyond what the LDP guarantee allows; send them as they are."""

    protocol: str
    params: Tuple[Tuple[str, Any], ...]
    n: int
    data: Dict[str, np.ndarray] = field(compare=False)

    def __post_init__(self) -> None:
        n = self.n
        if isinstance(n, np.integer):
            n = int(n)
        if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= MAX_REPORTS:
            raise TypeError(f"Reports.n must be an int in [0, 2^62], got {type(self.n).__name__}")
        object.__setattr__(self, "n", n)
        if not isinstance(self.data, dict) or not all(
                isinstance(k, str) and isinstance(v, np.ndarray) for k, v in self.data.items()):
            raise TypeError("Reports.data must be a dict of NumPy arrays by name")

    def __len__(self) -> int:
        return self.n

    def to_bytes(self) -> bytes:
        """The batch as bytes, to send from devices to a server: versioned and SHA-256-checked
        like an aggregator's state (see :meth:`Aggregator.to_bytes`)."""
        header = {"protocol": self.protocol, "n": self.n, "params": _jsonable(dict(self.params))}
        return _frame(_REPORTS_MAGIC, header, sorted(self.data.items()))

    @classmethod
    def from_bytes(cls, blob: bytes) -> "Reports":
        """A batch serialised by :meth:`to_bytes`; ValueError for anything corrupt, truncated,
        of another format version or of an unknown protocol. The arrays are checked against the
        protocol when an aggregator adds them."""
        header, arrays = _unframe(blob, _REPORTS_MAGIC, "report batch")
        protocol = _protocol_of(header, "report batch")
        n = header.get("n")
        if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= MAX_REPORTS:
            raise ValueError("corrupt report batch: bad number of reports")
        return cls(protocol.name, protocol.fingerprint(), n, arrays)


class Protocol:
    """Base class: the parameters of one frequency-oracle configuration (ε, domain size and
    the protocol's options). Subclasses set ``name``, implement ``_privatize`` (the client),
    ``variance_per_user`` (the estimator's variance formula) and ``aggregator_class``."""

    name: ClassVar[str] = ""
    aggregator_class: ClassVar[Type["Aggregator"]]

    def __init__(self, epsilon: float, domain_size: int, **options: Any) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.domain_size = check_domain_size(domain_size)
        self.gamma = exact_gamma(self.epsilon)
        self.options = self._check_options(options)

    # -- to override -----------------------------------------------------------------------
    def _check_options(self, options: Dict[str, Any]) -> Dict[str, Any]:
        """Validate protocol options (default: none accepted)."""
        if options:
            raise TypeError(f"protocol {self.name!r} takes no option {sorted(options)[0]!r}")
        return {}

    def _privatize(self, rng: Generator, items: np.ndarray, threads: int) -> Dict[str, np.ndarray]:
        raise NotImplementedError

    def variance_per_user(self) -> float:
        """The variance of one user's contribution to an item's count estimate, for an item the
        user does not hold (the protocol's formula; Wang et al. 2017, Table 1, and the papers
        cited by each protocol)."""
        raise NotImplementedError

    def variance(self, n: int, counts: Optional[np.ndarray] = None) -> np.ndarray:
        """Per-item variance of the count estimate over ``n`` users (terms that depend on the
        true count are added by protocols where they matter, from ``counts``)."""
        return np.full(self.domain_size, n * self.variance_per_user())

    # -- shared --------------------------------------------------------------------------------
    def params(self) -> Dict[str, Any]:
        """Everything that must agree between clients, aggregators and serialised states."""
        return {"epsilon": self.epsilon, "gamma": self.gamma, "domain_size": self.domain_size, **self.options}

    def fingerprint(self) -> Tuple[Tuple[str, Any], ...]:
        return tuple(sorted((k, v if not isinstance(v, np.ndarray) else v.tobytes()) for k, v in self.params().items()))

    def privacy_loss(self) -> PrivacyLoss:
        """Each user's report is ε-LDP (pure ε for that user's data)."""
        return PureDP(self.epsilon)

    def client(self, rng: Optional[Generator] = None, *, allow_insecure: bool = False) -> "Client":
        """A randomizer. ``rng`` must be secure (the default) unless ``allow_insecure=True``."""
        return Client(self, rng, allow_insecure=allow_insecure)

    def aggregator(self) -> "Aggregator":
        return self.aggregator_class(self)

    def __eq__(self, other: Any) -> bool:
        return type(other) is type(self) and other.fingerprint() == self.fingerprint()

    def __hash__(self) -> int:
        return hash((self.name, self.fingerprint()))

    def __repr__(self) -> str:
        opts = "".join(f", {k}={v!r}" for k, v in self.options.items() if not isinstance(v, (bytes, np.ndarray)))
        return f"FrequencyOracle({self.name!r}, epsilon={self.epsilon}, domain_size={self.domain_size}{opts})"


def client_rng(rng: Optional[Generator], allow_insecure: Any) -> Generator:
    """The generator a randomizer draws from: ``rng`` (default: a fresh secure one), which must
    be a dpnoise Generator and secure unless ``allow_insecure=True``."""
    if rng is None:
        rng = default_rng()
    if not isinstance(rng, Generator):
        raise TypeError(f"rng must be a dpnoise.Generator (dpnoise.default_rng()), got {type(rng).__name__}")
    if not isinstance(allow_insecure, (bool, np.bool_)):
        raise TypeError(f"allow_insecure must be a bool, got {type(allow_insecure).__name__}")
    if not rng.is_secure and not allow_insecure:
        raise InsecureGeneratorError(
            "rng is not secure (seeded: its randomness can be reproduced); use dpnoise.default_rng() "
            "with no seed, or pass allow_insecure=True for tests")
    return rng


class Client:
    """The randomizer side of a protocol: ``privatize(items)`` -> :class:`Reports`."""

    def __init__(self, protocol: Protocol, rng: Optional[Generator], *, allow_insecure: bool = False) -> None:
        self.protocol = protocol
        self.rng = client_rng(rng, allow_insecure)

    def privatize(self, items: Any, *, threads: Optional[int] = None) -> Reports:
        """One ε-LDP report per item (each item one user's value in [0, domain_size))."""
        from .._validate import check_threads

        t = check_threads(threads)
        arr = check_items(items, self.protocol.domain_size)
        data = self.protocol._privatize(self.rng, arr, t)
        return Reports(self.protocol.name, self.protocol.fingerprint(), int(arr.size), data)


class Aggregator:
    """The server side: ``add`` report batches (streaming), ``merge`` other aggregators of the
    same configuration, serialise with ``to_bytes`` / ``from_bytes``, and ``estimate`` counts
    with ``variance`` / ``stderr``. Subclasses keep their state in named NumPy arrays
    (``_state``) and implement ``_check_batch`` (validate, before any change), ``_ingest`` and
    ``_estimate``."""

    def __init__(self, protocol: Protocol) -> None:
        self.protocol = protocol
        self.n = 0
        self._state: Dict[str, np.ndarray] = self._empty_state()
        self._estimates_cache: Optional[np.ndarray] = None  # the estimates of this state (see _estimates)

    # -- to override -----------------------------------------------------------------------
    def _empty_state(self) -> Dict[str, np.ndarray]:
        raise NotImplementedError

    def _check_batch(self, reports: Reports) -> None:
        """Raise ValueError/TypeError for malformed report arrays (dtype, shape, range); called
        before the state changes."""
        raise NotImplementedError

    def _ingest(self, reports: Reports) -> None:
        raise NotImplementedError

    def _estimate(self) -> np.ndarray:
        """Unbiased count estimates (float64) for every item."""
        raise NotImplementedError

    #: state arrays whose first axis may grow with the reports (e.g. packed columns)
    _growable: ClassVar[frozenset] = frozenset()
    #: the names of the arrays a report batch holds (exactly these; checked before _check_batch)
    _report_keys: ClassVar[frozenset] = frozenset()

    def _check_state(self, state: Dict[str, np.ndarray], n: int) -> None:
        """Validate a loaded state beyond names, dtypes and shapes (ValueError if inconsistent
        with the protocol or with ``n``); default: nothing more to check."""

    def _merge_state(self, other: "Aggregator") -> None:
        """Default: states add up element-wise."""
        for k, v in other._state.items():
            self._state[k] = self._state[k] + v

    # -- shared --------------------------------------------------------------------------------
    def _same_protocol(self, what: str, name: str, fingerprint: Any) -> None:
        if name != self.protocol.name or fingerprint != self.protocol.fingerprint():
            raise ValueError(f"{what} come from a different configuration ({name!r}); this aggregator is "
                             f"{self.protocol!r}")

    def add(self, reports: Reports) -> "Aggregator":
        """Ingest a batch; a rejected batch leaves the aggregator unchanged. Returns self."""
        if not isinstance(reports, Reports):
            raise TypeError(f"reports must be dpnoise.ldp.Reports (from a client's privatize), got "
                            f"{type(reports).__name__}")
        self._same_protocol("reports", reports.protocol, reports.params)
        if self._report_keys and set(reports.data) != self._report_keys:
            raise ValueError(f"{self.protocol.name} reports must hold exactly the arrays {sorted(self._report_keys)}, "
                             f"got {sorted(reports.data)}")
        self._check_room(reports.n)
        self._check_batch(reports)
        self._estimates_cache = None
        self._ingest(reports)
        self.n += reports.n
        return self

    def merge(self, other: "Aggregator") -> "Aggregator":
        """Add another aggregator's reports (same configuration only, else ValueError). Returns self."""
        if not isinstance(other, Aggregator):
            raise TypeError(f"can only merge an Aggregator, got {type(other).__name__}")
        self._same_protocol("the other aggregator's reports", other.protocol.name, other.protocol.fingerprint())
        self._check_room(other.n)
        self._estimates_cache = None
        self._merge_state(other)
        self.n += other.n
        return self

    def _check_room(self, more: int) -> None:
        if self.n + more > MAX_REPORTS:
            raise ValueError(f"an aggregator counts at most 2^62 reports; it has {self.n}, {more} more refused")

    def _estimates(self) -> np.ndarray:
        """All d estimates, computed once per state: estimate, variance and stderr share them
        until the next add or merge (which drop the cache)."""
        cached = getattr(self, "_estimates_cache", None)
        if cached is None:
            cached = np.asarray(self._estimate(), dtype=np.float64)
            cached.flags.writeable = False
            self._estimates_cache = cached
        return cached

    def estimate(self, items: Any = None) -> np.ndarray:
        """Unbiased estimates of how many users hold each item (all items, or ``items``)."""
        est = self._estimates()
        return est.copy() if items is None else est[check_items(items, self.protocol.domain_size)]

    def variance(self, items: Any = None) -> np.ndarray:
        """Per-item variance of the estimates, from the protocol's formula (count-dependent terms
        use the clipped estimates as the counts)."""
        counts = np.clip(self._estimates(), 0, self.n) if self.n else np.zeros(self.protocol.domain_size)
        var = self.protocol.variance(self.n, counts)
        return var if items is None else var[check_items(items, self.protocol.domain_size)]

    def stderr(self, items: Any = None) -> np.ndarray:
        return np.sqrt(self.variance(items))

    # -- serialisation ---------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """The state as bytes: magic, format version, a JSON header (protocol, parameters, n,
        array names/dtypes/shapes), the arrays, and a SHA-256 of everything before it."""
        header = {"protocol": self.protocol.name, "params": _jsonable(self.protocol.params()), "n": self.n}
        return _frame(_MAGIC, header, sorted(self._state.items()))

    @classmethod
    def from_bytes(cls, blob: bytes) -> "Aggregator":
        """The aggregator serialised by ``to_bytes``; ValueError for anything corrupt,
        truncated, of another format version or of an unknown protocol. Arrays must have the
        protocol's names and dtypes, and its shapes except along the axes a protocol declares
        growable (``_growable``), which its ``_check_state`` then validates."""
        header, state = _unframe(blob, _MAGIC, "aggregator state")
        protocol = _protocol_of(header, "aggregator state")
        n = header.get("n")
        if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= MAX_REPORTS:
            raise ValueError("corrupt aggregator state: bad number of reports")
        agg = protocol.aggregator()
        if cls is not Aggregator and not isinstance(agg, cls):
            raise ValueError(f"the state is of protocol {protocol.name!r}, not a {cls.__name__}")
        empty = agg._state
        if set(state) != set(empty):
            raise ValueError("corrupt aggregator state: arrays do not match the protocol")
        for name, arr in state.items():
            want = empty[name]
            same_shape = arr.shape == want.shape or (
                name in agg._growable and arr.ndim == want.ndim and arr.shape[1:] == want.shape[1:])
            if arr.dtype != want.dtype or not same_shape:
                raise ValueError(f"corrupt aggregator state: array {name!r} does not match the protocol")
        agg._check_state(state, n)
        agg._state = state
        agg.n = n
        agg._after_load()
        return agg

    def _after_load(self) -> None:
        """Hook for protocols with derived state."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.protocol!r}, n={self.n})"


def _protocol_from_params(cls: Type[Protocol], params: Dict[str, Any]) -> Protocol:
    """The protocol whose ``params()`` are exactly ``params``: a missing parameter is never
    filled with a default (a dropped public key would silently give another configuration)."""
    p = dict(params)
    eps = p.pop("epsilon")
    p.pop("gamma")
    d = p.pop("domain_size")
    proto = cls(eps, d, **p)
    if proto.params() != params:
        raise ValueError("the parameters are incomplete or inconsistent (epsilon and its exact rational, "
                         "or an option filled with its default)")
    return proto


Protocol.from_params = classmethod(_protocol_from_params)  # type: ignore[attr-defined]


def FrequencyOracle(protocol: str, epsilon: float, domain_size: int, **options: Any) -> Protocol:
    """A local-DP frequency oracle: ``protocol`` one of :func:`protocols` (``"grr"``,
    ``"oue"``, ``"sue"``, ``"olh"``, ``"flh"``, ``"hadamard"``, ``"cms"``, ``"hcms"``,
    ``"zmatrix"`` once built), ε per user, items in [0, domain_size), plus protocol options."""
    if not isinstance(protocol, str) or protocol not in _REGISTRY:
        raise ValueError(f"protocol must be one of {protocols()}, got {protocol!r}")
    return _REGISTRY[protocol](epsilon, domain_size, **options)


# -- variance formulas (per user, for an item the user does not hold) -------------------------
def grr_variance(epsilon: float, d: int) -> float:
    """k-ary randomized response: (e^ε + d − 2)/(e^ε − 1)² (Wang et al. 2017, Eq. 2)."""
    em1 = math.expm1(epsilon)  # e^ε − 1, accurate for small ε
    return (em1 + d - 1) / em1 ** 2


def olh_variance(epsilon: float) -> float:
    """OUE and OLH: 4e^ε/(e^ε − 1)² (Wang et al. 2017, Eqs. 7 and 12)."""
    em1 = math.expm1(epsilon)
    return 4 * (em1 + 1) / em1 ** 2


def one_bit_variance(epsilon: float) -> float:
    """One kept-or-flipped ±1 bit per user (Hadamard, Z): ((e^ε + 1)/(e^ε − 1))²."""
    em1 = math.expm1(epsilon)
    return ((em1 + 2) / em1) ** 2


def recommend(epsilon: float, domain_size: int) -> str:
    """The registered protocol with the least variance per user at (ε, d) (ties: the cheaper
    one): GRR when d < 3e^ε + 2 (Wang et al. 2017, §5), else OLH (or OUE; OLH sends less)."""
    eps = check_epsilon(epsilon)
    d = check_domain_size(domain_size)
    candidates: List[Tuple[float, int, str]] = []
    costs = {"grr": 0, "olh": 1, "flh": 2, "oue": 3, "hadamard": 4, "zmatrix": 5}
    formulas: Dict[str, Callable[[], float]] = {
        "grr": lambda: grr_variance(eps, d), "olh": lambda: olh_variance(eps), "oue": lambda: olh_variance(eps),
        "hadamard": lambda: one_bit_variance(eps), "zmatrix": lambda: one_bit_variance(eps),
    }
    for name, f in formulas.items():
        if name not in _REGISTRY:
            continue
        try:  # a protocol may not support this domain (unary: d bits per report; hashing: 32-bit keys)
            _REGISTRY[name](eps, d)
        except ValueError:
            continue
        candidates.append((f(), costs[name], name))
    if not candidates:
        raise ValueError(f"no registered frequency-oracle protocol supports domain_size={d}")
    return min(candidates)[2]
