"""The text summary `bflnet run` prints without --out: one run, repeated runs per
setting, and runs named by run_id."""

import pandas as pd

from bflnet.runs.output import summary


def runs_frame(key):
    rows = []
    for graph, offset in (("ring", 0.0), ("star", 10.0)):
        for run in range(3):
            for it in range(4):
                rows.append({"graph": graph, key: run if key == "run" else f"{graph}-{run}",
                             "event": "iteration", "node": it % 2, "iteration": it,
                             "kl": offset + run + it, "const": 1.0})
    return pd.DataFrame(rows)


def test_one_run_shows_evenly_spaced_rows_and_the_last():
    frame = pd.DataFrame({"event": "round", "iteration": range(100), "x": range(100)})
    text = summary(frame, max_rows=5)
    lines = text.splitlines()
    assert len(lines) == 6 and lines[-1].split() == ["round", "99", "99"]


def test_repeated_runs_are_averaged_per_setting_at_their_last_row():
    text = summary(runs_frame("run"))
    lines = text.splitlines()
    assert lines[0].startswith("6 runs; mean of each run's last row per graph")
    header, ring, star = lines[1].split(), lines[2].split(), lines[3].split()
    assert header == ["graph", "iteration", "kl", "const", "runs"]   # no node, no run
    assert ring == ["ring", "3", "4", "1", "3"] and star == ["star", "3", "14", "1", "3"]


def test_runs_named_by_run_id_show_each_last_row():
    text = summary(runs_frame("run_id"), max_rows=4)
    lines = text.splitlines()
    assert lines[0].startswith("6 runs; the last row of each")
    assert lines[1].split()[:2] == ["graph", "run_id"]
    assert lines[2].split()[:2] == ["ring", "ring-0"] and lines[-1] == "(2 more)"


def test_every_setting_of_a_numeric_list_parameter_shows():
    """``local_steps_values=1,50``: a numeric setting column ``L`` before the repeat index
    ``run`` (both settings share run indices): one line per setting, each the mean of
    its own runs' last rows."""
    rows = []
    for L, last in ((1, 200), (50, 4)):
        for run in range(2):
            for it in range(last + 1):
                rows.append({"L": L, "run": run, "event": "iteration", "iteration": it,
                             "kl": L + run + it})
    lines = summary(pd.DataFrame(rows)).splitlines()
    assert lines[0].startswith("4 runs; mean of each run's last row per L")
    assert lines[1].split() == ["L", "iteration", "kl", "runs"]
    assert lines[2].split() == ["1", "200", "201.5", "2"]
    assert lines[3].split() == ["50", "4", "54.5", "2"]


def test_a_numeric_column_after_the_run_index_is_not_a_setting():
    frame = runs_frame("run").assign(const=lambda f: f["run"] * 1.0)
    assert "per graph:" in summary(frame).splitlines()[0]
