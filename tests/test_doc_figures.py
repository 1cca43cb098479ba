"""Every figure README.md shows is made by a `bflnet plot` / `bflnet plot-network` command
the README gives (writing that very file); each is rendered here at small size from a
small run of the command that makes its table (the plot command runs as written, only
its --out, --size and --dpi changed), and its labels and data are checked."""

import re
import shlex
from pathlib import Path

import numpy as np
import pytest
from matplotlib.collections import LineCollection, PathCollection, PolyCollection

import bflnet.analysis.plots as plots
from bflnet.scenarios.cli import main

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PLOT_COMMANDS = ("plot", "plot-network", "draw")
#: Settings that make each table's run small for the test (the rest of its command as
#: the README gives it).
SMALL = {"churn-gfvl": {"runs": "2"}, "unlearning-latency": {"runs": "60"},
         "async-fedavg": {"duration_s": "4", "eval_size": "100"},
         "consensus-averaging": {"rounds": "10", "K": "8"}}
SMALL_SWEEP = ["--seeds", "2", "--workers", "1"]
#: Texts each figure must show (axis labels, legend titles, colour-bar labels, ticks).
EXPECTED = {
    "plot_curves.png": {"time (s)", "KL to the exact posterior (nats)", "downtime",
                        "node_down"},
    "plot_per_run.png": {"unlearn iterations", "runs"},
    "plot_network.png": {"x (m)", "y (m)", "time (s)", "node", "mean SNR of the link (dB)"},
    "sweep-example.png": {"time (s)", "max deviation from the mean", "graph"},
    "async_fedavg.png": {"time (s)", "test accuracy", "method"},
}


def commands(text: str) -> list[list[str]]:
    """The ``bflnet`` commands of the bash blocks of ``text``, continuation lines joined."""
    out = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split("#")[0].strip()
            if line.startswith("bflnet "):
                out.append(shlex.split(line)[1:])
    return out


def option(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def figure_cases() -> list[tuple[str, list[str], list[str]]]:
    """``(image, plot command, command that writes its table)`` per image README shows."""
    text = README.read_text()
    images = re.findall(r"!\[[^\]]*\]\((docs/[^)]+\.png)\)", text)
    cmds = commands(text)
    writers = {option(c, "--out"): c for c in cmds if c[0] in ("run", "sweep")}
    cases = []
    for image in images:
        plot = [c for c in cmds if c[0] in PLOT_COMMANDS and option(c, "--out") == image]
        assert plot, f"README shows {image} but gives no command that writes it"
        cases.append((image, plot[0], writers[plot[0][1]]))
    return cases


def small(argv: list[str]) -> list[str]:
    """``argv`` with the :data:`SMALL` settings of its scenario (replacing or adding)."""
    changes = dict(SMALL.get(argv[1], {}))
    out = []
    for i, word in enumerate(argv):
        if i and argv[i - 1] == "--set" and word.split("=")[0] in changes:
            key = word.split("=")[0]
            word = f"{key}={changes.pop(key)}"
        out.append(word)
    for key, value in changes.items():
        out += ["--set", f"{key}={value}"]
    if argv[0] == "sweep":
        out = [w for i, w in enumerate(out) if not (
            w in ("--seeds", "--workers") or (i and out[i - 1] in ("--seeds", "--workers")))]
        out += SMALL_SWEEP
    return [*out, "--no-progress"]


def texts(fig) -> set[str]:
    """Axis labels, titles, legend titles and tick labels of every axes of ``fig``."""
    found = set()
    for ax in fig.axes:
        found |= {ax.get_xlabel(), ax.get_ylabel(), ax.get_title()}
        found |= {t.get_text() for t in ax.get_yticklabels()}
        legend = ax.get_legend()
        if legend is not None:
            found.add(legend.get_title().get_text())
    for legend in fig.legends:
        found.add(legend.get_title().get_text())
    return found - {""}


def data_points(fig) -> int:
    """Finite points drawn: line vertices, bars (histogram steps), scatter points, line
    segments."""
    n = 0
    for ax in fig.axes:
        for line in ax.lines:
            n += int(np.isfinite(np.asarray(line.get_ydata(), dtype=float)).sum())
        n += sum(max(1, len(patch.get_path().vertices) // 2) for patch in ax.patches)
        for c in ax.collections:
            if isinstance(c, LineCollection):
                n += len(c.get_segments())
            elif isinstance(c, PathCollection | PolyCollection):
                n += len(c.get_paths())
    return n


CASES = figure_cases()


def test_readme_shows_the_three_kinds_of_figure():
    kinds = {Path(image).name for image, _, _ in CASES}
    assert {"plot_curves.png", "plot_per_run.png", "plot_network.png"} <= kinds


@pytest.mark.parametrize("image, plot, writer", CASES, ids=[Path(c[0]).name for c in CASES])
def test_each_readme_figure_renders_with_labels_and_data(image, plot, writer, tmp_path,
                                                         monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(small(writer)) == 0, capsys.readouterr().err
    figures = []
    save = plots.save_figure
    monkeypatch.setattr(plots, "save_figure",
                        lambda fig, path, dpi=150: figures.append(fig) or save(fig, path, dpi))
    out = tmp_path / "figure.png"
    argv = list(plot)
    argv[argv.index("--out") + 1] = str(out)
    assert main([*argv, "--size", "5,4", "--dpi", "50"]) == 0, capsys.readouterr().err
    (fig,) = figures
    assert out.stat().st_size > 0
    missing = EXPECTED.get(Path(image).name, set()) - texts(fig)
    assert not missing, f"{image}: missing {missing}; has {texts(fig)}"
    assert data_points(fig) >= 10
    assert any(ax.get_xlabel() for ax in fig.axes) and any(ax.get_ylabel() for ax in fig.axes)
