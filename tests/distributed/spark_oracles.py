"""One small configuration per registered protocol, for the Spark tests."""
import dpnoise
from dpnoise.ldp import FrequencyOracle


def oracles():
    return {
        "grr": FrequencyOracle("grr", 2.0, 20),
        "oue": FrequencyOracle("oue", 1.0, 100),
        "sue": FrequencyOracle("sue", 1.0, 70),
        "olh": FrequencyOracle("olh", 1.0, 300),
        "flh": FrequencyOracle("flh", 1.0, 300),
        "hadamard": FrequencyOracle("hadamard", 1.0, 1000),
        "cms": FrequencyOracle("cms", 2.0, 500, hashes=16, width=64),
        "hcms": FrequencyOracle("hcms", 2.0, 500, hashes=16, width=64),
        "zmatrix": FrequencyOracle("zmatrix", 1.0, 1000),
    }


def reports(fo, n, seed=7):
    import numpy as np

    items = np.random.default_rng(seed).integers(0, fo.domain_size, n)
    return fo.client(dpnoise.default_rng(seed), allow_insecure=True).privatize(items)
