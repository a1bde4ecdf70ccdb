"""Variants as axes (issue 34): constant time and daily collection are declared once, on the
envelope. A class's kernel table says which variants it supports and what they cost; no
protocol module branches on ``constant_time``; no list of protocol names is typed in src/; the
ldp package imports without a circle or a function-level import hiding one; the names of the
families follow one scheme, and the old names warn for one release. No randomness here."""
import ast
import math
import pathlib
import sys
import warnings

import pytest

import dpnoise
from dpnoise import ldp
from dpnoise.accounting import ApproxDP
from dpnoise.ldp._kernels import Kernels, KernelTable
from dpnoise.ldp.grr import GRR
from dpnoise.ldp.hadamard import Hadamard

SRC = pathlib.Path(dpnoise.__file__).parent
LDP = SRC / "ldp"
FAMILY_MODULES = {base.__module__ for base in ldp.Configuration.families().values()}
PROTOCOL_MODULES = sorted({cls.__module__ for base in ldp.Configuration.families().values()
                           for cls in base.registered().values()} - FAMILY_MODULES)
NAMES = {n for base in ldp.Configuration.families().values() for n in base.registered()}


def _module_path(module):
    return pathlib.Path(sys.modules[module].__file__)


def _in_kernel_table(tree):
    """The ids of every node inside a ``KernelTable(...)`` call (a class's table)."""
    inside = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "KernelTable":
            inside.update(id(n) for n in ast.walk(node))
    return inside


@pytest.mark.parametrize("module", PROTOCOL_MODULES)
def test_no_protocol_module_names_constant_time_outside_its_kernel_table(module):
    tree = ast.parse(_module_path(module).read_text())
    table = _in_kernel_table(tree)
    uses = [node.lineno for node in ast.walk(tree) if id(node) not in table and (
        (isinstance(node, ast.Name) and node.id == "constant_time")
        or (isinstance(node, ast.Attribute) and node.attr == "constant_time")
        or (isinstance(node, ast.Constant) and node.value == "constant_time")
        or (isinstance(node, ast.keyword) and node.arg == "constant_time"))]
    assert uses == [], f"{module} branches on constant_time at lines {uses}"


def test_no_hand_typed_list_of_protocol_names_in_src():
    found = []
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and len(node.elts) >= 2:
                values = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
                if len(values) == len(node.elts) and sum(v in NAMES for v in values) >= 2:
                    found.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert found == []


def test_ldp_imports_no_circle_and_no_function_level_import():
    """Module-level imports between ldp's modules form no cycle, and no module imports another
    of the package inside a function (which would hide one)."""
    modules = {}
    for path in sorted(LDP.rglob("*.py")):
        parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    edges, hidden = {}, []
    for name, path in modules.items():
        tree = ast.parse(path.read_text())
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        in_function = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                       for n in ast.walk(f)}
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom) or not node.level:
                continue
            base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
            targets = {f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names}
            for target in targets & set(modules):
                if id(node) in in_function:
                    hidden.append(f"{name} -> {target}")
                elif target != name:
                    edges.setdefault(name, set()).add(target)
    assert hidden == []

    def reaches(start, goal, seen):
        return any(t == goal or (t not in seen and not seen.add(t) and reaches(t, goal, seen))
                   for t in edges.get(start, ()))
    circles = [m for m in edges if reaches(m, m, set())]
    assert circles == []


def test_support_for_a_variant_is_read_from_the_kernel_table():
    """A class without a constant-time row refuses constant_time=True (naming the argument and
    the classes that take it), one with a row takes it: nothing else is edited."""
    class NoConstantTime(GRR):
        kernel_table = KernelTable(GRR.kernel_table.variable_time)

    class WithConstantTime(NoConstantTime):
        kernel_table = GRR.kernel_table

    assert GRR.supports("constant_time") and not NoConstantTime.supports("constant_time")
    with pytest.raises(ValueError, match=r"constant_time=True is not supported by protocol 'grr'.*frequency: 'cms'"):
        NoConstantTime(1.0, 8, constant_time=True)
    assert "constant_time" not in NoConstantTime(1.0, 8, constant_time=False).params()
    assert WithConstantTime(1.0, 8, constant_time=True).kernels is GRR.kernel_table.constant_time
    assert GRR.supports("daily") and not Hadamard.supports("daily")
    with pytest.raises(ValueError, match="variant"):
        GRR.supports("shuffled")


def test_the_loss_rule_reads_the_rows_draws():
    """privacy_loss() is one rule for every family: a constant-time row declaring m decisions a
    report makes it ApproxDP(ε, (1 + e^ε)·m·2^-64) (_release/constant_time.py); with daily
    collection the two layers' m∞ + m₁."""
    class Seven(GRR):
        kernel_table = KernelTable(GRR.kernel_table.variable_time,
                                   Kernels(rr=dpnoise._core.randomized_response_constant_time, draws=7,
                                           instantaneous_draws=lambda c: c.domain_size))

    loss = Seven(1.5, 8, constant_time=True).privacy_loss()
    assert isinstance(loss, ApproxDP) and loss.delta == pytest.approx((1 + math.exp(1.5)) * 7 * 2.0**-64, rel=1e-12)
    both = Seven(1.5, 8, constant_time=True, instantaneous_epsilon=1.0).privacy_loss()
    assert both.total_variation == (7 + 8) * 2.0**-64 and both.loss.permanent_epsilon == 1.5
    for family, base in ldp.Configuration.families().items():  # every family: the same rule
        for name, cls in base.registered().items():
            if cls.supports("constant_time") and family != "frequency":
                config = cls._construct({**cls.example().params(), "constant_time": True})
                loss = config.privacy_loss()
                assert isinstance(loss, ApproxDP) and loss.epsilon == config.epsilon
                assert loss.delta == pytest.approx((1 + math.exp(config.epsilon)) * 2.0**-64, rel=1e-12)


def test_one_naming_scheme_and_deprecated_aliases():
    """<Family>Configuration for every family base; 0.7's Protocol and HHProtocol are the same
    classes (plain aliases: Spark imports them); register and HHClient warn for one release."""
    assert {c.__name__ for c in ldp.Configuration.families().values()} == {
        "FrequencyConfiguration", "HeavyHittersConfiguration", "MeanConfiguration"}
    for name in ("FrequencyConfiguration", "HeavyHittersConfiguration", "MeanConfiguration", "MeanOracle",
                 "MeanAggregator"):
        assert name in ldp.__all__ and hasattr(ldp, name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ldp.Protocol is ldp.FrequencyConfiguration
        assert ldp.heavy_hitters.HHProtocol is ldp.HeavyHittersConfiguration
        exec("from dpnoise.ldp import *", {})
        exec("from dpnoise.ldp.heavy_hitters import *", {})
    with pytest.warns(DeprecationWarning, match=r"dpnoise\.ldp\.register is deprecated"):
        register = ldp.register
    assert register(GRR) is GRR
    with pytest.warns(DeprecationWarning, match=r"HHClient is deprecated.*dpnoise\.ldp\.Client"):
        assert ldp.heavy_hitters.HHClient is ldp.Client
    assert "register" not in ldp.__all__ and "HHClient" not in ldp.heavy_hitters.__all__
    with pytest.raises(AttributeError):
        ldp.client_rng
    from dpnoise.ldp import _protocol, _schema
    assert not hasattr(_protocol, "client_rng") and not hasattr(_schema, "empty_arrays")
    assert not hasattr(_protocol, "CONSTANT_TIME_PROTOCOLS")


def test_heavy_hitters_estimators_live_on_the_aggregator():
    """The estimators read the counts where they are kept: no heavy-hitters module touches an
    aggregator's ``_state`` outside the aggregator classes, whose methods the methods call."""
    from dpnoise.ldp.heavy_hitters import _base

    for path in sorted((LDP / "heavy_hitters").glob("*.py")):
        tree = ast.parse(path.read_text())
        inside = {id(n) for c in ast.walk(tree) if isinstance(c, ast.ClassDef) and c.name.endswith("Aggregator")
                  for n in ast.walk(c)}
        outside = [n.lineno for n in ast.walk(tree)
                   if isinstance(n, ast.Attribute) and n.attr == "_state" and id(n) not in inside]
        assert outside == [], f"{path.name} reads _state at lines {outside}"
    for name in ("group_estimates", "count_estimates", "pooled_estimates", "find_string_prefixes", "level_counts"):
        assert callable(getattr(ldp.HHAggregator, name))
        assert not hasattr(ldp.HeavyHittersConfiguration, name)
    hh = ldp.HeavyHitters("pem", 4.0, 16, k=2, k_prime=64, pool_key=3)
    agg = hh.aggregator().add(hh.client(dpnoise.default_rng(1), allow_insecure=True).privatize([5] * 400 + [9] * 200))
    l = hh._item_group()
    est, var = agg.group_estimates(l, hh._group_keys(l, hh.codec.encode([5, 9])))
    assert list(est) == list(agg.estimate([5, 9])) and list(var) == list(agg.variance([5, 9]))
    assert agg.level_counts(l).shape == (hh.groups[l].k_prime, hh.g)
    assert _base.HHAggregator.top is not ldp.Aggregator.__dict__.get("top")


def test_top_and_above_live_on_the_families_that_rank():
    from dpnoise.ldp._frequency import FrequencyAggregator

    assert "top" not in vars(ldp.Aggregator) and "above" not in vars(ldp.Aggregator)
    for cls in ldp.FrequencyConfiguration.registered().values():
        assert issubclass(cls.aggregator_class, FrequencyAggregator)
    assert not hasattr(ldp.MeanAggregator, "top") and not hasattr(ldp.MeanAggregator, "above")
    fo = ldp.FrequencyOracle("grr", 2.0, 8)
    agg = fo.aggregator().add(fo.client(dpnoise.default_rng(2), allow_insecure=True).privatize([3] * 50 + [1] * 5))
    assert agg.top(1)[0].item == 3 and [h.item for h in agg.above(20)] == [3]
