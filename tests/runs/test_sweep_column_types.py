"""A sweep's table has one type per column whatever its grid: where runs disagree about
what a column holds (node ids: numbers under a random walk, "server" under a parameter
server), the column is text; a table whose runs agree is written as before."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from bflnet.runs.column_types import as_text, kinds, one_type_per_column
from bflnet.runs.output import write_parquet
from bflnet.runs.registry import run_scenario

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(Path(__file__).parents[2] / "src"), os.environ.get("PYTHONPATH", "")])}


def test_columns_of_one_kind_are_left_as_they_are():
    table = pd.concat([
        pd.DataFrame({"a": [1, 2], "b": [0.5, 1.0], "c": ["x", "y"], "d": [True, False],
                      "e": [[1, 2], [3]]}),
        pd.DataFrame({"a": [3], "c": [None], "d": [np.nan], "e": [None]}),  # b absent
    ], ignore_index=True)
    assert one_type_per_column(table) is table  # nothing to change: the same object
    assert kinds(table["d"]) == {"flag"} and kinds(table["e"]) == {"other"}


def test_a_column_of_several_kinds_becomes_text_and_missing_stays_missing():
    parts = [pd.DataFrame({"node": [14, 13], "flag": [True, False], "x": [1.0, 2.0]}),
             pd.DataFrame({"node": ["server", None], "flag": [1, np.nan], "x": [3.0, 4.0]}),
             pd.DataFrame({"node": [np.float64(2.0), 2.5], "x": [5.0, 6.0]})]
    table = one_type_per_column(pd.concat(parts, ignore_index=True))
    assert list(table["node"].fillna("<missing>")) == ["14", "13", "server", "<missing>",
                                                       "2", "2.5"]
    assert list(table["flag"].fillna("<missing>")) == ["True", "False", "1", "<missing>",
                                                       "<missing>", "<missing>"]
    assert table["x"].dtype == np.float64 and table["node"].dtype == pd.Series(["x"]).dtype
    assert [as_text(v) for v in (np.int64(3), 2.0**60, np.bool_(True), float("nan"))] == [
        "3", repr(2.0**60), "True", None]


def test_a_sweep_across_protocols_writes_one_table(tmp_path):
    """The command as a user types it: every run computed, then one table."""
    out = tmp_path / "protocols"
    done = subprocess.run(
        [sys.executable, "-m", "bflnet.cli", "sweep", "custom-learner", "--grid",
         "protocol=random-walk,parameter-server,gossip", "--set", "rounds=5", "--set", "K=4",
         "--out", str(out), "--no-progress"], capture_output=True, text=True, env=ENV,
        timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("\n") == 1 and "3 runs: 3 computed" in done.stderr
    schema = pq.read_schema(out / "table.parquet")
    assert str(schema.field("node").type) in ("string", "large_string")
    table = pd.read_parquet(out / "table.parquet")
    assert list(table.drop_duplicates("run_id")["protocol"]) == [
        "random-walk", "parameter-server", "gossip"]
    for protocol in ("random-walk", "parameter-server", "gossip"):
        alone = run_scenario("custom-learner", {"protocol": protocol, "rounds": 5, "K": 4})
        mine = table[table.protocol == protocol].dropna(axis="columns", how="all")
        mine = mine.iloc[:, 4:].reset_index(drop=True)  # after protocol, seed, run_id, hash
        assert set(mine.columns) == set(alone.columns)  # the others' columns are empty
        for column in alone.columns:  # node ids as text, every other column as it was
            expected = alone[column].map(as_text) if column == "node" else alone[column]
            pd.testing.assert_series_equal(mine[column], expected, check_dtype=False,
                                           check_names=False)
    record = json.loads(pq.read_schema(out / "table.parquet").metadata[b"bflnet"])
    assert record["grid"] == {"protocol": ["random-walk", "parameter-server", "gossip"]}


def test_a_parquet_file_has_one_type_per_column_and_is_otherwise_as_before(tmp_path):
    """A run's table whose node column mixes "server" and node numbers (forget-svgd's)
    is written, the column as text; a table of one kind per column gives pyarrow's own
    bytes, as before."""
    write_parquet(pd.DataFrame({"node": ["server", 1, 2], "x": [1.0, 2.0, 3.0]}),
                  tmp_path / "mixed.parquet")
    assert list(pd.read_parquet(tmp_path / "mixed.parquet")["node"]) == ["server", "1", "2"]
    plain = pd.DataFrame({"x": [1.0, np.nan], "n": [1, 2], "s": ["a", None],
                          "f": [True, False]})
    write_parquet(plain, tmp_path / "ours.parquet")
    pq.write_table(pa.Table.from_pandas(plain, preserve_index=False),
                   tmp_path / "pyarrow.parquet")
    assert (tmp_path / "ours.parquet").read_bytes() == \
        (tmp_path / "pyarrow.parquet").read_bytes()
