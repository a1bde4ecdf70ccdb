"""A built-in synthetic data set for the demo: people with a salary, a height and a state,
made up for the demo (1000 synthetic people with salary, height and state)."""
from __future__ import annotations

from typing import Dict

import numpy as np

STATES = ("Gorenjska", "Goriška", "Koroška", "Notranjska", "Obalno-kraška", "Osrednjeslovenska",
          "Podravska", "Pomurska", "Savinjska", "Zasavska")


def synthetic_people(n: int = 1000, seed: int = 2018) -> Dict[str, np.ndarray]:
    """``n`` synthetic people: salary (EUR/month, log-normal), height (cm, by sex) and state
    (index into STATES, non-uniform). Deterministic for a given seed; not real data."""
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
    Zipf-like profile. Deterministic for a given seed; not real data."""
    r = np.random.default_rng(seed)
    d = len(DIAGNOSES)
    base = 1.0 / np.arange(1, d + 1) ** 0.8
    mix = r.dirichlet(base * 20, size=clinics)  # each clinic's own proportions
    return np.stack([r.multinomial(patients, p) for p in mix]).astype(np.int32)


def synthetic_app_usage(devices: int = 1_000_000, apps: int = 1024, exponent: float = 1.1,
                        seed: int = 2027) -> np.ndarray:
    """Each made-up device's most-used app (int32 in [0, apps)): app ranks Zipf(``exponent``),
    truncated to the ``apps`` apps, in a fixed shuffled order (so that popular apps are not simply
    the lowest numbers). Deterministic for a given seed; not real data."""
    r = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, apps + 1) ** exponent
    ranks = r.choice(apps, size=devices, p=weights / weights.sum())
    return r.permutation(apps).astype(np.int32)[ranks]


_SYLLABLES = ("ka", "lo", "mi", "zu", "ve", "ra", "to", "ni", "pe", "su", "da", "go", "fy", "bo", "xi", "qu")


def synthetic_app_names(devices: int = 1_000_000, names: int = 5000, exponent: float = 1.1,
                        seed: int = 2028) -> list:
    """Each made-up device's most-used app NAME (a made-up str of 4 to 8 ASCII bytes, e.g.
    "kaloqu"): ``names`` distinct names, ranks Zipf(``exponent``). The server of the heavy-hitters
    demo is never given this list. Deterministic for a given seed; not real data."""
    r = np.random.default_rng(seed)
    vocab: list = []
    seen: set = set()
    while len(vocab) < names:
        word = "".join(_SYLLABLES[int(i)] for i in r.integers(0, len(_SYLLABLES), size=int(r.integers(2, 5))))
        if word not in seen:
            seen.add(word)
            vocab.append(word)
    weights = 1.0 / np.arange(1, names + 1) ** exponent
    ranks = r.choice(names, size=devices, p=weights / weights.sum())
    return [vocab[i] for i in ranks]
