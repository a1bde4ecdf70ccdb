"""File-backed budgets (PrivacyBudget.open): shared by processes, durable, checked on open; and
insecure releases marked in the ledger."""
import json
import multiprocessing
import os

import pytest

import dpnoise
from dpnoise.accounting import Gaussian, PrivacyBudget, PureDP


def _spend_many(path, attempts, queue):
    """Worker (spawned): open the shared budget and try to spend 0.1 `attempts` times."""
    budget = PrivacyBudget.open(path, 1.0)
    made = 0
    for _ in range(attempts):
        try:
            budget.spend(PureDP(0.1), label=f"pid{os.getpid()}")
            made += 1
        except dpnoise.BudgetExceededError:
            pass
    queue.put(made)


def test_processes_sharing_a_file_never_overspend(tmp_path):
    path = str(tmp_path / "budget.json")
    PrivacyBudget.open(path, 1.0)
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    workers = [ctx.Process(target=_spend_many, args=(path, 8, queue)) for _ in range(4)]
    for w in workers:
        w.start()
    made = [queue.get(timeout=120) for _ in workers]
    for w in workers:
        w.join(timeout=60)
        assert w.exitcode == 0
    assert sum(made) == 10  # 32 attempts, exactly 10 fit 1.0 across all processes
    again = PrivacyBudget.open(path, 1.0)
    assert len(again.ledger) == 10
    assert again.spent_epsilon == pytest.approx(1.0)
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    assert data["totals"]["releases"] == 10 and data["version"] == 2
    with pytest.raises(dpnoise.BudgetExceededError):
        again.spend(PureDP(0.01))


def test_open_creates_then_reopens_and_sees_other_handles(tmp_path):
    path = tmp_path / "b.json"
    one = PrivacyBudget.open(path, 2.0, 1e-6, accountant="rdp")
    assert path.exists() and one.ledger == [] and one.path == str(path)
    two = PrivacyBudget.open(str(path), 2.0, 1e-6, accountant="rdp")
    one.spend(Gaussian(10.0), label="a")
    assert len(two.ledger) == 1  # reads re-read the file
    two.spend(Gaussian(10.0), 2, label="b")
    assert [e["label"] for e in one.ledger] == ["a", "b"]
    assert one.spent_epsilon == pytest.approx(two.spent_epsilon)
    loaded = PrivacyBudget.load(path)  # the same file is an ordinary saved budget too
    assert loaded.spent_epsilon == pytest.approx(one.spent_epsilon)
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]  # no temp files left


@pytest.mark.parametrize("kwargs, names", [
    (dict(epsilon=1.5), ["epsilon"]),
    (dict(delta=1e-9), ["delta"]),
    (dict(accountant="pld"), ["accountant"]),
    (dict(epsilon=1.5, accountant="zcdp"), ["epsilon", "accountant"]),
    (dict(neighbours="replace"), ["neighbours"]),
])
def test_open_refuses_different_parameters_naming_them(tmp_path, kwargs, names):
    path = tmp_path / "b.json"
    PrivacyBudget.open(path, 1.0, 1e-6, accountant="rdp")
    args = dict(epsilon=1.0, delta=1e-6, accountant="rdp")
    args.update(kwargs)
    eps, delta = args.pop("epsilon"), args.pop("delta")
    with pytest.raises(ValueError) as info:
        PrivacyBudget.open(path, eps, delta, **args)
    for name in names:
        assert name in str(info.value)


@pytest.mark.parametrize("corrupt", [
    lambda text: text[: len(text) // 2],                                     # truncated
    lambda text: "[]",                                                       # not a budget
    lambda text: text.replace('"count": 3', '"count": 1'),                   # hand-edited count
    lambda text: text.replace('"releases": 2', '"releases": 1'),             # edited totals
    lambda text: text.replace('"version": 2', '"version": 7'),               # unknown version
])
def test_corrupted_or_hand_edited_file_is_refused(tmp_path, corrupt):
    path = tmp_path / "b.json"
    budget = PrivacyBudget.open(path, 1.0)
    budget.spend(PureDP(0.1), 3)
    budget.spend(PureDP(0.2))
    text = path.read_text(encoding="utf-8")
    path.write_text(corrupt(text), encoding="utf-8")
    with pytest.raises(ValueError):
        PrivacyBudget.open(path, 1.0)
    with pytest.raises(ValueError):
        budget.spend(PureDP(0.01))  # the open handle re-reads and refuses too


def test_refused_spend_leaves_the_file_unchanged(tmp_path):
    path = tmp_path / "b.json"
    budget = PrivacyBudget.open(path, 0.5)
    budget.spend(PureDP(0.4))
    before = path.read_bytes()
    mtime = os.stat(path).st_mtime_ns
    with pytest.raises(dpnoise.BudgetExceededError):
        budget.spend(PureDP(0.2))
    assert path.read_bytes() == before and os.stat(path).st_mtime_ns == mtime
    assert len(budget.ledger) == 1


def test_open_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="epsilon"):
        PrivacyBudget.open(tmp_path / "x.json", -1.0)
    with pytest.raises(ValueError, match="kind"):
        PrivacyBudget.open(tmp_path / "x.json", 1.0, accountant="nope")
    assert not (tmp_path / "x.json").exists()  # nothing written for refused arguments
    with pytest.raises(OSError):
        PrivacyBudget.open(tmp_path / "missing-dir" / "x.json", 1.0)


# ------------------------------------------------------------------ insecure releases
def test_insecure_releases_are_marked_and_survive_serialisation(tmp_path):
    budget = PrivacyBudget(1.0)
    budget.spend(PureDP(0.1), label="ok")
    budget.spend(PureDP(0.1), label="fast", insecure=True)
    budget.spend(PureDP(0.1), 2, insecure=True)
    assert [e["insecure"] for e in budget.ledger] == [False, True, True]
    assert budget.insecure_releases == 2
    assert "insecure_releases=2" in repr(budget)
    assert "2 of them used a NON-SECURE generator" in budget.summary()
    again = PrivacyBudget.from_dict(json.loads(json.dumps(budget.to_dict())))
    assert again.insecure_releases == 2 and again.ledger == budget.ledger
    path = tmp_path / "b.json"
    shared = PrivacyBudget.open(path, 1.0)
    shared.spend(PureDP(0.1), insecure=True)
    assert PrivacyBudget.open(path, 1.0).insecure_releases == 1
    assert json.loads(path.read_text())["ledger"][0]["insecure"] is True
    assert "NON-SECURE" not in PrivacyBudget(1.0).summary()


def test_spend_argument_types():
    budget = PrivacyBudget(1.0)
    with pytest.raises(TypeError, match="insecure"):
        budget.spend(PureDP(0.1), insecure=1)
    with pytest.raises(TypeError, match="label"):
        budget.spend(PureDP(0.1), label=3)
    assert budget.ledger == []
