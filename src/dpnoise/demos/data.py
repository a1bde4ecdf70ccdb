"""Made-up data for the demos and the benchmarks: people, clinics, app usage, app names, web
addresses, minutes of use, Zipf items and the heavy-hitters ID workload. Every generator is deterministic for a given seed (a
NumPy seed or Generator: these are public test data, not privacy noise) and is not real data.

The benchmark suites (benchmarks/) and the built-in ``dpnoise bench`` workloads draw their
items here, so that a workload is defined once.
"""
from __future__ import annotations

from typing import Any

import numpy as np

STATES = ("Gorenjska", "Goriška", "Koroška", "Notranjska", "Obalno-kraška", "Osrednjeslovenska",
          "Podravska", "Pomurska", "Savinjska", "Zasavska")


def synthetic_people(n: int = 1000, seed: int = 2018) -> dict[str, np.ndarray]:
    """``n`` synthetic people: salary (EUR/month, log-normal), height (cm, by sex) and state
    (index into STATES, non-uniform). Deterministic for a given seed; not real data.

    Parameters
    ----------
    n : int, default 1000
        How many people.
    seed : int, default 2018
        NumPy seed.

    Returns
    -------
    dict of str to numpy.ndarray
        ``salary`` and ``height`` (float64) and ``state`` (int64), each of shape (n,).
    """
    r = np.random.default_rng(seed)
    female = r.random(n) < 0.5
    height = np.where(female, r.normal(166.0, 6.5, n), r.normal(180.0, 7.0, n))
    salary = np.exp(r.normal(7.35, 0.45, n))
    weights = np.array([10, 6, 4, 3, 6, 26, 16, 6, 13, 2], dtype=float)
    state = r.choice(len(STATES), size=n, p=weights / weights.sum())
    return {"salary": salary, "height": height, "state": state}


DIAGNOSES = ("influenza", "common cold", "hypertension", "back pain", "migraine", "asthma",
             "type 2 diabetes", "anxiety", "eczema", "bronchitis", "sinusitis", "otitis",
             "gastritis", "tonsillitis", "conjunctivitis", "urinary infection", "sprain",
             "insomnia", "allergy", "anaemia")


def synthetic_diagnoses(clinics: int = 2000, patients: int = 200, seed: int = 2026) -> np.ndarray:
    """Diagnosis counts (clinics x len(DIAGNOSES), int32) of made-up patients: each clinic has
    ``patients`` patients, one diagnosis each, drawn from a clinic-specific mix of a shared
    Zipf-like profile. Deterministic for a given seed; not real data.

    Parameters
    ----------
    clinics, patients : int
        Rows, and patients per row.
    seed : int, default 2026
        NumPy seed.

    Returns
    -------
    numpy.ndarray of int32
        Shape (clinics, len(DIAGNOSES)); each row sums to ``patients``.
    """
    r = np.random.default_rng(seed)
    d = len(DIAGNOSES)
    base = 1.0 / np.arange(1, d + 1) ** 0.8
    mix = r.dirichlet(base * 20, size=clinics)  # each clinic's own proportions
    return np.stack([r.multinomial(patients, p) for p in mix]).astype(np.int32)


# -- Zipf items ---------------------------------------------------------------------------------

def zipf_items(n: int, d: int, exponent: float = 1.1, seed: Any = 0) -> np.ndarray:
    """``n`` items in [0, d), P(k) proportional to (k + 1)^-exponent (Zipf truncated to d ranks):
    the telemetry workload of the LDP benchmarks and demos.

    Parameters
    ----------
    n, d : int
        How many items, and the domain size.
    exponent : float
        The Zipf exponent (1.1 in every dpnoise benchmark).
    seed : int or numpy.random.Generator
        NumPy seed, or a Generator to draw from (it is advanced).

    Returns
    -------
    numpy.ndarray of int64
    """
    w = 1.0 / np.arange(1, d + 1) ** exponent
    return np.random.default_rng(seed).choice(d, size=n, p=w / w.sum()).astype(np.int64)


def zipf_ranks(n_items: int, n_users: int, exponent: float = 1.1, seed: Any = 0) -> np.ndarray:
    """Ranks (0-based) of ``n_users`` users, P(rank r) proportional to (r + 1)^-exponent, by
    inversion of the cumulative weights (fast for millions of ranks).

    Parameters
    ----------
    n_items, n_users : int
        The number of ranks, and of draws.
    exponent : float, default 1.1
        The Zipf exponent.
    seed : int or numpy.random.Generator
        NumPy seed.

    Returns
    -------
    numpy.ndarray of int64
        Shape (n_users,), values in [0, n_items).
    """
    w = np.arange(1, n_items + 1, dtype=np.float64) ** -exponent
    rng = np.random.default_rng(seed)
    return np.searchsorted(np.cumsum(w / w.sum()), rng.random(n_users), side="right").clip(0, n_items - 1)


def id_workload(bits: int, n_items: int = 10**6, n_users: int = 10**6, seed: int = 13) -> np.ndarray:
    """The heavy-hitters workload (issue #13): ``n_items`` distinct random ``bits``-bit IDs (a
    fixed-seed draw without replacement), Zipf(1.1) popularity over their ranks, ``n_users`` users;
    uint64.

    Parameters
    ----------
    bits : int
        Width of the IDs (up to 64).
    n_items, n_users : int
        Distinct IDs, and users (one ID each).
    seed : int, default 13
        NumPy seed.

    Returns
    -------
    numpy.ndarray of uint64
        Shape (n_users,).
    """
    rng = np.random.default_rng(seed)
    if bits <= 32:
        ids = rng.choice(1 << bits, size=n_items, replace=False).astype(np.uint64)
    else:  # distinct 64-bit IDs: draw, then drop the (unlikely) duplicates' later copies
        ids = np.unique(rng.integers(0, 1 << 63, size=n_items, dtype=np.uint64) * np.uint64(2)
                        + rng.integers(0, 2, size=n_items, dtype=np.uint64))
        ids = rng.permutation(ids)
    return ids[zipf_ranks(ids.size, n_users, 1.1, seed + 1)]


def word_workload(n_words: int = 2000, n_users: int = 200_000, seed: int = 17) -> list[str]:
    """String heavy hitters: ``n_words`` random lowercase words of 3..8 bytes, Zipf(1.1),
    ``n_users`` users.

    Parameters
    ----------
    n_words, n_users : int
        Vocabulary size, and users (one word each).
    seed : int, default 17
        NumPy seed.

    Returns
    -------
    list of str
        ``n_users`` words.
    """
    rng = np.random.default_rng(seed)
    words: set[str] = set()
    while len(words) < n_words:
        length = int(rng.integers(3, 9))
        words.add("".join(chr(97 + int(c)) for c in rng.integers(0, 26, size=length)))
    vocab = sorted(words)
    vocab = [vocab[i] for i in rng.permutation(len(vocab))]
    return [vocab[r] for r in zipf_ranks(len(vocab), n_users, 1.1, seed + 1)]


def true_top(items: Any, k: int = 10) -> set[Any]:
    """The ``k`` most frequent items (ties broken by value order), as a set of Python values.

    Parameters
    ----------
    items : array_like
        The items (any sortable dtype).
    k : int, default 10
        How many.

    Returns
    -------
    set
        At most ``k`` items.
    """
    vals, counts = np.unique(np.asarray(items), return_counts=True)
    order = np.argsort(-counts, kind="stable")[:k]
    return {v.item() if hasattr(v, "item") else v for v in vals[order]}


# -- apps ---------------------------------------------------------------------------------------

_SYLLABLES = ("ka", "lo", "mi", "zu", "ve", "ra", "to", "ni", "pe", "su", "da", "go", "fy", "bo", "xi", "qu")


def _made_up_names(count: int, r: np.random.Generator) -> list[str]:
    """``count`` distinct made-up words of 2 to 4 syllables (4 to 8 ASCII bytes), e.g. "kaloqu"."""
    vocab: list[str] = []
    seen: set[str] = set()
    while len(vocab) < count:
        word = "".join(_SYLLABLES[int(i)] for i in r.integers(0, len(_SYLLABLES), size=int(r.integers(2, 5))))
        if word not in seen:
            seen.add(word)
            vocab.append(word)
    return vocab


_PACKAGE_SYLLABLES = ("mi", "ne", "vi", "lo", "ra", "ke", "ka", "zu", "to", "pe", "su", "da", "go", "bo", "xi", "qu")
_PACKAGE_TLDS = ("org", "com", "io", "net", "app", "de")
_PACKAGE_WORDS = ("keyboard", "shop", "mail", "lite", "pro", "music", "photo", "game", "chat", "news")


def package_names(count: int, seed: int = 2031, max_bytes: int = 40) -> list[str]:
    """``count`` distinct made-up package names of 11 to ``max_bytes`` ASCII bytes
    (tld.word.word[.word][.suffix], e.g. "com.kalo.mizuta.shop"): the long strings of the
    heavy-hitters benchmarks and tests. Deterministic for a given seed; not real data.

    Parameters
    ----------
    count : int
        How many names.
    seed : int, default 2031
        NumPy seed.
    max_bytes : int, default 40
        The longest name.

    Returns
    -------
    list of str
        Distinct names.

    Raises
    ------
    ValueError
        For ``count`` < 0 or above 10^6, or ``max_bytes`` below 11 (no name would fit).
    TypeError
        For a non-integer ``count`` or ``max_bytes``.
    """
    for name, value in (("count", count), ("max_bytes", max_bytes)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if not 0 <= count <= 10**6:
        raise ValueError(f"count must be in [0, 10^6], got {count}")
    if max_bytes < 11:
        raise ValueError(f"max_bytes must be at least 11 (the shortest name), got {max_bytes}")
    r = np.random.default_rng(seed)
    names: list[str] = []
    seen: set[str] = set()
    while len(names) < count:
        parts = [_PACKAGE_TLDS[r.integers(len(_PACKAGE_TLDS))]]
        parts += ["".join(_PACKAGE_SYLLABLES[i] for i in r.integers(0, len(_PACKAGE_SYLLABLES), size=r.integers(2, 5)))
                  for _ in range(int(r.integers(2, 4)))]
        if r.random() < 0.5:
            parts.append(_PACKAGE_WORDS[r.integers(len(_PACKAGE_WORDS))])
        name = ".".join(parts)
        if 11 <= len(name) <= max_bytes and name not in seen:
            seen.add(name)
            names.append(name)
    return names


def app_names(apps: int = 1024, seed: int = 2029) -> list[str]:
    """Names of the ``apps`` made-up apps of :func:`synthetic_app_usage` (app i is called
    ``app_names(apps)[i]``), so that the demos show names, not integer IDs.

    Parameters
    ----------
    apps : int, default 1024
        How many names.
    seed : int, default 2029
        NumPy seed.

    Returns
    -------
    list of str
        Distinct names of 4 to 8 ASCII bytes.
    """
    return _made_up_names(apps, np.random.default_rng(seed))


def synthetic_app_usage(devices: int = 1_000_000, apps: int = 1024, exponent: float = 1.1,
                        seed: int = 2027) -> np.ndarray:
    """Each made-up device's most-used app (int32 in [0, apps); its name is
    ``app_names(apps)[i]``): app ranks Zipf(``exponent``), truncated to the ``apps`` apps, in a
    fixed shuffled order (so that popular apps are not simply the lowest numbers). Deterministic
    for a given seed; not real data.

    Parameters
    ----------
    devices, apps : int
        How many devices (draws) and apps.
    exponent : float, default 1.1
        The Zipf exponent.
    seed : int, default 2027
        NumPy seed.

    Returns
    -------
    numpy.ndarray of int32
        Shape (devices,).
    """
    r = np.random.default_rng(seed)
    ranks = zipf_items(devices, apps, exponent, r)
    return r.permutation(apps).astype(np.int32)[ranks]


def synthetic_app_names(devices: int = 1_000_000, names: int = 5000, exponent: float = 1.1,
                        seed: int = 2028) -> list[str]:
    """Each made-up device's most-used app NAME (a made-up str of 4 to 8 ASCII bytes, e.g.
    "kaloqu"): ``names`` distinct names, ranks Zipf(``exponent``). The server of the heavy-hitters
    demo is never given this list. Deterministic for a given seed; not real data.

    Parameters
    ----------
    devices, names : int
        How many devices (draws) and distinct names.
    exponent : float, default 1.1
        The Zipf exponent.
    seed : int, default 2028
        NumPy seed.

    Returns
    -------
    list of str
        ``devices`` names.
    """
    r = np.random.default_rng(seed)
    vocab = _made_up_names(names, r)
    return [vocab[i] for i in zipf_items(devices, names, exponent, r)]


def synthetic_urls(count: int = 500, seed: int = 2033, max_bytes: int = 64) -> list[str]:
    """``count`` distinct made-up web addresses of 25 to ``max_bytes`` ASCII bytes, e.g.
    "https://kalo.example/zuve/ratoni/pesu": the long strings of the heavy-hitters demo.
    Deterministic for a given seed; not real data.

    Parameters
    ----------
    count : int, default 500
        How many addresses, in [0, 10^5].
    seed : int, default 2033
        NumPy seed.
    max_bytes : int, default 64
        The longest address, at least 25.

    Returns
    -------
    list of str
        Distinct addresses.

    Raises
    ------
    ValueError
        For ``count`` outside [0, 10^5] or ``max_bytes`` below 25.
    TypeError
        For a non-integer ``count`` or ``max_bytes``.
    """
    for name, value in (("count", count), ("max_bytes", max_bytes)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if not 0 <= count <= 10**5:
        raise ValueError(f"count must be in [0, 10^5], got {count}")
    if max_bytes < 25:
        raise ValueError(f"max_bytes must be at least 25 (the shortest address), got {max_bytes}")
    r = np.random.default_rng(seed)
    words = _made_up_names(400, r)
    urls: list[str] = []
    seen: set[str] = set()
    while len(urls) < count:
        path = "/".join(words[int(i)] for i in r.integers(0, len(words), size=int(r.integers(1, 6))))
        url = f"https://{words[int(r.integers(len(words)))]}.example/{path}"
        if 25 <= len(url) <= max_bytes and url not in seen:
            seen.add(url)
            urls.append(url)
    return urls


def synthetic_url_visits(devices: int = 100_000, urls: int = 500, exponent: float = 1.1,
                         seed: int = 2034) -> list[str]:
    """Each made-up device's most-visited web address (of :func:`synthetic_urls` ``(urls)``, 25 to
    64 bytes): address ranks Zipf(``exponent``), so ``synthetic_urls(urls)[:10]`` are the ten most
    visited in law. The server of the heavy-hitters demo is never given the list. Deterministic for
    a given seed; not real data.

    Parameters
    ----------
    devices, urls : int
        How many devices (draws) and distinct addresses.
    exponent : float, default 1.1
        The Zipf exponent.
    seed : int, default 2034
        NumPy seed.

    Returns
    -------
    list of str
        ``devices`` addresses.
    """
    vocab = synthetic_urls(urls)
    return [vocab[int(i)] for i in zipf_ranks(len(vocab), devices, exponent, seed)]


def synthetic_minutes(devices: int = 100_000, seed: int = 2035) -> np.ndarray:
    """Minutes of app use per day of made-up devices (float64, Gamma(2, 40): mean 80, a long
    right tail, a few values above the mean oracle's bound of 600). Not real data.

    Parameters
    ----------
    devices : int, default 100,000
        How many devices.
    seed : int, default 2035
        NumPy seed.

    Returns
    -------
    numpy.ndarray of float64
        Shape (devices,), non-negative.
    """
    return np.random.default_rng(seed).gamma(2.0, 40.0, size=devices)


__all__ = ["DIAGNOSES", "STATES", "app_names", "id_workload", "synthetic_app_names", "synthetic_app_usage",
           "synthetic_diagnoses", "synthetic_minutes", "synthetic_people", "synthetic_url_visits", "synthetic_urls",
           "true_top", "word_workload", "zipf_items", "zipf_ranks"]
