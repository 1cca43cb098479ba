"""The recorder's blocks of iteration rows give the same rows and the same DataFrame as
one dict per row (``DataFrame.from_records``), whatever rows are mixed in."""

import numpy as np
import pandas as pd
import pytest
import simpy

from bflnet.simulator.recorder import BASE_COLUMNS, DIRECTION_COLUMNS, Recorder


def reference_frame(rows, has_server=False):
    """The recorder's frame as it was built before blocks: one dict per row."""
    frame = pd.DataFrame.from_records(rows)
    if frame.empty:
        cols = list(BASE_COLUMNS) + (list(DIRECTION_COLUMNS) if has_server else [])
        return pd.DataFrame(columns=cols)
    first = [c for c in (*BASE_COLUMNS, *DIRECTION_COLUMNS) if c in frame.columns]
    return frame[first + [c for c in frame.columns if c not in first]]


VALUES = [1, 2.5, np.nan, "a", True, None, np.float64(3.0), np.int64(4), 2**70, -7]


def random_run(seed, has_server=False, context=False):
    """A recorder fed a random mix of rows, and the dicts those rows are."""
    rng = np.random.default_rng(seed)
    env = simpy.Environment()
    rec = Recorder(env, has_server=has_server)
    if context:
        rec.context = {"run": 3}
    expected = []
    for _ in range(int(rng.integers(0, 60))):
        rec.iteration += int(rng.integers(0, 2))
        rec.cum_bits += int(rng.integers(0, 100))
        env._now += float(rng.random())
        kind = rng.integers(0, 10)
        if kind < 2:
            fields = {"peer": int(rng.integers(5)), "kind": "x"} if kind else {}
            rec.record("fault", **fields)
        else:
            keys = [["accuracy"], ["accuracy", "nll"], ["nll"], []][int(rng.integers(4))]
            metrics = {k: VALUES[int(rng.integers(len(VALUES)))] for k in keys}
            if rng.random() < 0.5:
                metrics = {k: float(rng.random()) for k in keys}
            node = VALUES[int(rng.integers(len(VALUES)))] if rng.random() < 0.1 else \
                int(rng.integers(5))
            rec.record_iteration("iteration", node, metrics, env.now)
            fields = {"node": node, **metrics}
            row = {"time_s": env.now, "iteration": rec.iteration, "event": "iteration",
                   "cum_bits": rec.cum_bits, "cum_bits_delivered": rec.cum_bits_delivered}
            if has_server:
                row |= {"cum_bits_up": 0, "cum_bits_down": 0}
            expected.append(row | rec.context | fields)
            continue
        row = {"time_s": env.now, "iteration": rec.iteration, "event": "fault",
               "cum_bits": rec.cum_bits, "cum_bits_delivered": rec.cum_bits_delivered}
        if has_server:
            row |= {"cum_bits_up": 0, "cum_bits_down": 0}
        expected.append(row | rec.context | fields)
    return rec, expected


@pytest.mark.parametrize("seed", range(300))
def test_frame_and_rows_equal_one_dict_per_row(seed):
    rec, expected = random_run(seed, has_server=seed % 7 == 0, context=seed % 5 == 0)
    frame = rec.to_frame()
    reference = reference_frame(expected, has_server=seed % 7 == 0)
    assert frame.equals(reference) and list(frame.columns) == list(reference.columns)
    assert list(frame.dtypes) == list(reference.dtypes)
    if expected:
        assert rec.last_row().keys() == expected[-1].keys()
        assert all(a is b or a == b for a, b in zip(rec.last_row().values(),
                                                    expected[-1].values(), strict=True))
    rows = rec.rows
    assert len(rows) == len(expected)
    assert [list(r) for r in rows] == [list(r) for r in expected]
    assert rec.to_frame().equals(reference)


def test_a_long_walk_record_is_one_block():
    env = simpy.Environment()
    rec = Recorder(env)
    rec.record("init", node=0)
    for i in range(1, 1001):
        rec.iteration = i
        rec.record_iteration("iteration", i % 7, {} if i % 10 else {"accuracy": 0.5}, i * 0.1)
    assert rec.block is not None and len(rec.block) == 1000
    frame = rec.to_frame()
    assert frame["accuracy"].notna().sum() == 100
    assert frame.equals(reference_frame(rec.rows))


@pytest.mark.parametrize("first", [0, 2**53, 2**60, -(2**53) - 1, 2**70, True, "a", None])
def test_a_column_of_floats_after_other_values_in_dict_rows(first):
    """The clock's initial 0 (an int) before float times, and values pandas infers
    otherwise (large ints, bools, strings, None) in the dict rows before a block."""
    env = simpy.Environment()
    rec = Recorder(env)
    rec.record("init", node=0, accuracy=first)
    expected = [{"time_s": 0, "iteration": 0, "event": "init", "cum_bits": 0,
                 "cum_bits_delivered": 0, "node": 0, "accuracy": first}]
    for i in range(1, 6):
        rec.iteration = i
        rec.record_iteration("iteration", i, {"accuracy": i / 7}, i * 0.1)
        expected.append({"time_s": i * 0.1, "iteration": i, "event": "iteration",
                         "cum_bits": 0, "cum_bits_delivered": 0, "node": i,
                         "accuracy": i / 7})
    frame, reference = rec.to_frame(), reference_frame(expected)
    assert frame.equals(reference) and list(frame.dtypes) == list(reference.dtypes)
