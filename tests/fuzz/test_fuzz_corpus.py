"""Replays every fuzz target's seeds and corpus (tests/fuzz/corpus/<name>/) in the normal suite,
so a crash once found by `.ci/fuzz` (and added to the corpus) stays fixed. No atheris needed."""
import pytest

from fuzzing import corpus_inputs, targets

CASES = [(name, i, data) for name, mod in targets().items() for i, data in enumerate(corpus_inputs(name, mod))]


def test_every_target_has_a_corpus():
    found = targets()
    assert {"parameters", "budget_ledger"} <= set(found)
    for name, mod in found.items():
        assert corpus_inputs(name, mod), f"target {name} has no seeds"


@pytest.mark.parametrize("name,index,data", CASES, ids=[f"{n}-{i}" for n, i, _ in CASES])
def test_corpus_input_is_handled(name, index, data):
    targets()[name].one_input(data)
