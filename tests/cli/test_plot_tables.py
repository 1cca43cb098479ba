"""``bflnet plot A.csv B.csv ...`` (or a glob): several tables in one figure, a column
``file`` (each file's stem) telling their rows apart."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bflnet.cli.main import main
from bflnet.runs.result_tables import read_tables


def curves(scale: float) -> pd.DataFrame:
    """Two runs (run_id 0 and 1, as in any one run's table): y = scale * (run + 1) * x."""
    return pd.DataFrame([{"run_id": r, "iteration": i, "y": scale * (r + 1) * i}
                         for r in range(2) for i in range(1, 4)])


@pytest.fixture
def tables(tmp_path: Path) -> Path:
    for name, scale in (("a", 1.0), ("b", 10.0), ("c", 100.0)):
        curves(scale).to_csv(tmp_path / f"{name}.csv", index=False)
    return tmp_path


def test_several_tables_are_one_with_a_file_column(tables: Path) -> None:
    frame, records = read_tables([str(tables / "b.csv"), str(tables / "a.csv")])
    assert list(frame.columns) == ["file", "run_id", "iteration", "y"]
    assert list(dict.fromkeys(frame["file"])) == ["b", "a"] and len(frame) == 12
    assert frame[frame["file"] == "a"].drop(columns="file").reset_index(drop=True).equals(
        curves(1.0))
    assert records == [None, None]
    globbed, _ = read_tables([str(tables / "*.csv")])  # sorted
    assert list(dict.fromkeys(globbed["file"])) == ["a", "b", "c"]
    one, _ = read_tables([str(tables / "a.csv")])  # one table: as it is
    assert one.equals(curves(1.0))
    (tables / "d").mkdir()
    curves(1.0).to_csv(tables / "d" / "a.csv", index=False)
    same_stem, _ = read_tables([str(tables / "a.csv"), str(tables / "d" / "a.csv")])
    assert list(dict.fromkeys(same_stem["file"])) == [str(tables / "a.csv"),
                                                      str(tables / "d" / "a.csv")]


def test_a_figure_of_three_tables(tables: Path, monkeypatch, capsys) -> None:
    """One line per file with --hue file; without it, the median over every file's runs,
    each run of each file its own curve (run 0 of a.csv is not run 0 of b.csv)."""
    import bflnet.analysis.plots as plots

    figures = []
    save = plots.save_figure
    monkeypatch.setattr(plots, "save_figure", lambda fig, out, **kw: (
        figures.append(fig), save(fig, out, **kw))[1])
    files = [str(tables / f"{n}.csv") for n in "abc"]
    assert main(["plot", *files, "--y", "y", "--x", "iteration", "--hue", "file", "--out",
                 str(tables / "f.png")]) == 0
    ax = figures[-1].axes[0]
    assert [line.get_label() for line in ax.lines] == ["a", "b", "c"]
    legend = ax.get_legend() or figures[-1].legends[0]  # beside the panels
    assert legend.get_title().get_text() == "file"
    np.testing.assert_allclose(ax.lines[1].get_ydata(), [15, 30, 45])  # median of 10x, 20x
    assert main(["plot", str(tables / "*.csv"), "--y", "y", "--x", "iteration", "--out",
                 str(tables / "g.png")]) == 0
    pooled = figures[-1].axes[0]
    title = pooled.get_title() or figures[-1]._suptitle.get_text()
    assert title.startswith("median over 6 runs"), title
    np.testing.assert_allclose(pooled.lines[0].get_ydata(), [15, 30, 45])  # of 1x..200x
    assert "warning" not in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "message"), [
    (["nope*.csv"], "FILE: no file or directory matches 'nope*.csv'"),
    (["a.csv", "./a.csv"], "FILE: './a.csv' is named twice (also as 'a.csv')"),
    (["a.csv", "clash.csv"], "FILE: 'clash.csv' has a column 'file'"),
    (["a.csv", "--hue", "run"], "--hue: unknown column 'run'; available: file, run_id,"),
])
def test_one_line_errors(tables: Path, monkeypatch, capsys, argv, message) -> None:
    curves(1.0).assign(file="x").to_csv(tables / "clash.csv", index=False)
    monkeypatch.chdir(tables)
    assert main(["plot", "b.csv", *argv, "--y", "y", "--out", "f.png"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and message in err
    assert not (tables / "f.png").exists()
