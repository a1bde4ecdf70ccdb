"""Smoke suite for an installed dpnoise wheel (.ci/wheel runs it from outside the source tree).

It checks what a user of the wheel meets first: the compiled extension loads without a compiler
on the machine, the secure samplers, a mechanism with a budget, an accountant, a local-DP round
trip, and the C++ headers and CMake package that ship inside the wheel. Exit status 0 on success;
any failure raises.
"""

import os
import shutil
import sys
from fractions import Fraction

import numpy as np

import dpnoise

here = os.path.dirname(os.path.abspath(dpnoise.__file__))
assert "site-packages" in here, f"dpnoise was imported from {here}, not from an installed wheel"
for compiler in ("cc", "c++", "gcc", "g++", "clang", "clang++"):
    assert shutil.which(compiler) is None, f"a compiler ({compiler}) is on PATH: the smoke run must not have one"

# Samplers: secure generator, exact laws, reproducible seeded stream.
rng = dpnoise.default_rng()
assert rng.is_secure
lap = rng.discrete_laplace(10, size=100_000)
assert lap.dtype == np.int64 and abs(lap.mean()) < 1.0
gauss = rng.discrete_gaussian(Fraction(7, 3), size=1000)
assert gauss.shape == (1000,)
a = dpnoise.default_rng(seed=7).discrete_laplace(3, size=10)
b = dpnoise.default_rng(seed=7).discrete_laplace(3, size=10)
assert (a == b).all()

# A mechanism charged to a budget.
budget = dpnoise.PrivacyBudget(epsilon=2.0, delta=1e-6, accountant="pld")
mech = dpnoise.LaplaceMechanism(epsilon=0.5, sensitivity=1.0, budget=budget)
released = mech(np.arange(10.0))
assert released.shape == (10,) and np.isfinite(released).all()
assert 0 < budget.spent_epsilon <= 2.0

# An accountant.
from dpnoise.accounting import Accountant, Gaussian, PoissonSampled

eps = Accountant("rdp").compose(PoissonSampled(Gaussian(1.0), rate=0.01), 1000).get_epsilon(1e-5)
assert 0 < eps < 10

# A local-DP round trip.
fo = dpnoise.ldp.FrequencyOracle("olh", epsilon=2.0, domain_size=1024)
items = np.arange(5000) % 16
agg = fo.aggregator().add(fo.client().privatize(items))
est = agg.estimate()
assert est.shape == (1024,) and agg.n == 5000
assert est[:16].sum() > est[16:].sum() - 5000  # mass sits on the sent items (loose, never flaky)

# The C++ package inside the wheel.
include = dpnoise.get_include()
assert os.path.isfile(os.path.join(include, "dpnoise", "dpnoise.hpp")), include
assert os.path.isfile(os.path.join(include, "dpnoise", "capi.h")), include
cmake_dir = dpnoise.get_cmake_dir()
assert os.path.isfile(os.path.join(cmake_dir, "dpnoiseConfig.cmake")), cmake_dir
with open(os.path.join(cmake_dir, "dpnoiseConfigVersion.cmake")) as f:
    assert dpnoise.__version__ in f.read()

print(f"wheel smoke suite passed: dpnoise {dpnoise.__version__} on Python {sys.version.split()[0]} ({here})")
