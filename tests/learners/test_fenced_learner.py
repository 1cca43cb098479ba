"""The fence around a plugin's learner (:mod:`bflnet.learners.fenced`), in process: what
its hooks return is checked, what they raise becomes one ``PluginError`` naming the
plugin and the hook; a learner that keeps the contract runs unchanged."""

from __future__ import annotations

import numpy as np
import pytest

from bflnet.learners.base import (
    Combines,
    GlobalStateLearner,
    Update,
    Work,
    supports_weighted_merge,
)
from bflnet.learners.conjugate.gaussian_mean import GaussianMean
from bflnet.learners.fenced import fenced_learner
from bflnet.runtime.fence import shown
from bflnet.validation.errors import PluginError

WHO = "plugin learner 'x' (pkg.mod:make, from pkg)"


class Scripted(GlobalStateLearner):
    """Returns what the test sets: ``update`` from local_update, ``metrics`` from
    evaluate; ``error`` is raised by merge."""

    def __init__(self, update=None, metrics=None, error=None):
        self.update, self.metrics, self.error = update, metrics, error

    def init(self, rng):
        return np.zeros(1)

    def local_update(self, agent, state, agent_state, rng):
        return self.update

    def merge(self, state, updates):
        if self.error is not None:
            raise self.error
        return state

    def evaluate(self, state):
        return self.metrics


def test_a_learner_that_keeps_the_contract_gives_the_same_results():
    data = {0: np.array([1.0, 2.0]), 1: np.array([3.0])}
    plain, fenced = GaussianMean(data), fenced_learner(GaussianMean(data), WHO)
    assert fenced.combines is Combines.ADDITIVE and not fenced.uses_agent_streams
    assert fenced.label == WHO
    s, t = plain.init(None), fenced.init(None)
    for k in (0, 1):
        s = plain.merge(s, [plain.local_update(k, s, False, None)])
        t = fenced.merge(t, [fenced.local_update(k, t, False, None)])
    assert fenced.evaluate(t) == plain.evaluate(s)
    assert not supports_weighted_merge(fenced)


@pytest.mark.parametrize("metrics, kept", [
    ({"a": np.float64(0.5), "b": np.int64(3), "c": 2}, {"a": 0.5, "b": 3, "c": 2}),
    ({}, {}),
])
def test_evaluate_gives_a_plain_dict_of_numbers(metrics, kept):
    out = fenced_learner(Scripted(metrics=metrics), WHO).evaluate(None)
    assert out == kept and type(out) is dict
    assert all(type(v) in (float, int) for v in out.values())


@pytest.mark.parametrize("metrics, why", [
    ("abc", "evaluate returned str 'abc'; it must return a mapping of str to finite real "
     "numbers"),
    ([("a", 1.0)], "evaluate returned list [('a', 1.0)]; it must return"),
    ({"a": float("inf")}, "('a' is inf)"),
    ({"a": True}, "('a' is a bool)"),
    ({"a": np.bool_(True)}, "('a' is a bool"),
    ({"a": "1.0"}, "('a' is a str)"),
    ({"a": 10**30}, "('a' is an integer outside the int64 range)"),
    ({"a": 1j}, "('a' is a complex)"),
    ({1: 1.0}, "(key 1 is not a non-empty string)"),
    ({"": 1.0}, "(key '' is not a non-empty string)"),
    ({"time_s": 1.0}, "('time_s' is a column the run writes itself)"),
])
def test_evaluate_refuses_anything_but_finite_numbers_by_name(metrics, why):
    learner = fenced_learner(Scripted(metrics=metrics), WHO, frozenset({"time_s"}))
    with pytest.raises(PluginError) as caught:
        learner.evaluate(None)
    assert str(caught.value).startswith(f"{WHO}: evaluate returned ")
    assert why in str(caught.value)


@pytest.mark.parametrize("update, why", [
    ("u", "local_update returned str 'u'; it must return a bflnet.learners.base.Update"),
    (Update(np.zeros(1), work=3), "(its work is an int, not a Work)"),
    (Update(np.zeros(1), work=Work(steps=-1)), "(its work's steps are -1"),
    (Update(np.zeros(1), work=Work(flops=float("nan"))), "(its work's flops are nan"),
    (Update(np.zeros(1), event=5), "(its event is an int, not a string)"),
    (Update(np.zeros(1), metrics={"a": float("nan")}),
     "(its metrics are not a mapping of str to finite real numbers: 'a' is nan)"),
])
def test_local_update_must_return_an_update_of_the_documented_types(update, why):
    with pytest.raises(PluginError) as caught:
        fenced_learner(Scripted(update=update), WHO).local_update(0, None, None, None)
    assert str(caught.value).startswith(f"{WHO}: local_update returned ")
    assert why in str(caught.value)


@pytest.mark.parametrize("error, text", [
    (KeyError("k"), "merge raised KeyError: 'k'"),
    (SystemExit(2), "merge raised SystemExit: 2"),
    (GeneratorExit(), "merge raised GeneratorExit"),
])
def test_what_a_hook_raises_is_one_plugin_error_with_its_cause(error, text):
    with pytest.raises(PluginError) as caught:
        fenced_learner(Scripted(error=error), WHO).merge(None, [])
    assert str(caught.value) == f"{WHO}: {text}"
    assert caught.value.__cause__ is error


def test_a_weighted_merge_is_kept_only_where_the_plugin_has_one():
    class Weighted(Scripted):
        def merge_weighted(self, state, updates, weights):
            return "weighted"

    fenced = fenced_learner(Weighted(), WHO)
    assert supports_weighted_merge(fenced)
    assert fenced.merge_weighted(None, [], []) == "weighted"


def test_a_value_whose_repr_fails_is_still_shown():
    class Bad:
        def __repr__(self):
            raise SystemExit(1)

    assert shown(Bad()) == "Bad (its repr failed)"
    assert len(shown("x" * 10**6)) < 120


@pytest.mark.parametrize("declared, kept", [
    (Combines.AVERAGED, Combines.AVERAGED), ("additive", Combines.ADDITIVE), (None, None)])
def test_the_combines_declaration_is_read_once_and_kept(declared, kept):
    class Declared(Scripted):
        combines = declared

    assert fenced_learner(Declared(), WHO).combines is kept


@pytest.mark.parametrize("declared, why", [
    ("sum", "combines is str 'sum'"), (True, "combines is bool True")])
def test_a_combines_that_is_no_declaration_is_one_plugin_error(declared, why):
    class Declared(Scripted):
        combines = declared

    with pytest.raises(PluginError) as caught:
        fenced_learner(Declared(), WHO)
    assert str(caught.value) == (f"{WHO}: {why}; it must be one of Combines.ADDITIVE, "
                                 f"Combines.AVERAGED, Combines.PARTICLES, "
                                 f"Combines.SEQUENTIAL (bflnet.learners.base.Combines) or "
                                 f"None")
