"""Every figure that README.md and the command-line pages of the docs (docs/index.md,
docs/plots.md, docs/faults.md) show is made by a `bflnet plot` / `bflnet plot-network`
command the same page gives (writing that very file); each is rendered here at small size
from a small run of the command that makes its table (the plot command runs as written,
only its --out, --size and --dpi changed), and its labels and data are checked. The
figures of the other docs pages (docs/**/*.md): each names the command (a reproduction
script or `bflnet run`) that writes it, and its plotting code (the script's or the
scenario's default plot) is rendered here from a small table (a short run, or for the
derived tables of EM-TDAMP and the D2D medium a tiny synthetic one), its labels and data
checked."""

import itertools
import re
import shlex
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import LineCollection, PathCollection, PolyCollection

import bflnet.analysis.plots as plots
from bflnet.cli.main import main
from bflnet.runs.registry import get_scenario
from bflnet.scenarios import run_scenario

ROOT = Path(__file__).resolve().parents[1]
#: The pages whose figures are drawn by `bflnet plot` / `plot-network` commands they give.
CLI_PAGES = ["README.md", "docs/index.md", "docs/plots.md", "docs/faults.md"]
PLOT_COMMANDS = ("plot", "plot-network", "draw")
#: Settings that make each table's run small for the test (the rest of its command as
#: the page gives it).
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


def page_images(page: str, text: str) -> list[str]:
    """The PNG images ``page`` shows, as paths from the repository's root."""
    base = (ROOT / page).parent
    return [(base / link).resolve().relative_to(ROOT).as_posix()
            for link in re.findall(r"!\[[^\]]*\]\(([^)]+\.png)\)", text)]


def figure_cases() -> list[tuple[str, list[str], list[str]]]:
    """``(image, plot command, command that writes its table)`` per image the command-line
    pages show (an image two pages show is one case)."""
    cases: dict[str, tuple[str, list[str], list[str]]] = {}
    for page in CLI_PAGES:
        text = (ROOT / page).read_text()
        cmds = commands(text)
        writers = {option(c, "--out"): c for c in cmds if c[0] in ("run", "sweep")}
        for image in page_images(page, text):
            plot = [c for c in cmds if c[0] in PLOT_COMMANDS and option(c, "--out") == image]
            assert plot, f"{page} shows {image} but gives no command that writes it"
            assert plot[0][1] in writers, f"{page}: no command writes {plot[0][1]}"
            cases.setdefault(image, (image, plot[0], writers[plot[0][1]]))
    return list(cases.values())


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


def test_the_docs_show_the_three_kinds_of_figure():
    kinds = {Path(image).name for image, _, _ in CASES}
    assert {"plot_curves.png", "plot_per_run.png", "plot_network.png"} <= kinds


@pytest.mark.parametrize("image, plot, writer", CASES, ids=[Path(c[0]).name for c in CASES])
def test_each_command_line_figure_renders_with_labels_and_data(image, plot, writer, tmp_path,
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


# ------------------------------------------------------------- docs/**/*.md figures

#: Every docs page but the command-line pages (whose figures are checked above).
DOCS = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*.md")
              if p.relative_to(ROOT).as_posix() not in CLI_PAGES)
sys.path.insert(0, str(ROOT / "scripts"))

#: Figure file -> (a text of the doc naming the command that writes it, the test below
#: that renders its plotting code).
MADE_BY = {
    **{f"gfvl_{s}.png": ("reproduce_gfvl.py --figures docs/figures", "gfvl") for s in (
        "fig3_beta_bernoulli", "fig4_beta_exponential", "fig4_beta_exponential_time",
        "fig4_beta_exponential_c0", "fig4_beta_exponential_c0_time", "fig5_unlearning",
        "fig5_unlearning_time", "unlearning_latency")},
    **{f"dsvgd_{s}.png": ("reproduce_dsvgd.py --figures docs/figures", "dsvgd") for s in (
        "fig3", "fig4", "fig4full", "fig5", "fig5a", "fig5b", "fig5c", "fig5d")},
    **{f"cdbfl_shift_s{s}.png": ("reproduce_cdbfl.py --figures docs/figures", "cdbfl")
       for s in range(3)},
    **{f"emtdamp_{s}.png": (
        f"cp out/emtdamp/{s.replace('_', '-')}.png docs/figures/emtdamp_{s}.png", "emtdamp")
       for s in ("boston_single", "boston_multi", "mnist_single", "mnist_multi")},
    "emtdamp_boston_single_paper.png": ("cp out/emtdamp-paper/boston-single.png docs/figures/"
                                        "emtdamp_boston_single_paper.png", "emtdamp"),
    "emtdamp_boston_multi_paper.png": ("cp out/emtdamp-paper/boston-multi.png docs/figures/"
                                       "emtdamp_boston_multi_paper.png", "emtdamp"),
    "emtdamp_mnist_single_paper.png": ("cp out/emtdamp-paper/mnist-single.png docs/figures/"
                                       "emtdamp_mnist_single_paper.png", "emtdamp"),
    "emtdamp_mnist_multi_paper.png": ("cp out/emtdamp-paper/mnist-multi.png docs/figures/"
                                      "emtdamp_mnist_multi_paper.png", "emtdamp"),
    "d2d_medium.png": ("scripts/reproduce_d2d_medium.py", "d2d"),
    "wflmc_gaussian.png": ("scripts/plot_wflmc_gaussian.py wflmc_s*.csv", "wflmc"),
    "wflmc_five_curves.png": ("scripts/wflmc_five_curves.py --run 5", "wflmc"),
    "ota_langevin.png": ("scripts/summarise_ota_langevin.py", "ota"),
    "async_fedavg.png": ("CLI", "the command-line pages (tests/test_doc_figures.py)"),
}


def check(fig, expected: set[str], min_points: int = 4) -> None:
    """``fig`` shows the ``expected`` texts, x and y labels on each axes, and data."""
    fig.set_size_inches(5, 3)
    fig.canvas.draw()
    missing = expected - texts(fig)
    assert not missing, f"missing {missing}; has {texts(fig)}"
    for ax in fig.axes:
        assert ax.get_xlabel() and ax.get_ylabel(), ax.get_title()
    assert data_points(fig) >= min_points


def doc_figures() -> dict[str, str]:
    """Figure file name -> the paragraph of docs/**/*.md that shows it and the next one."""
    out = {}
    for doc in DOCS:
        paragraphs = [*re.split(r"\n\s*\n", (ROOT / doc).read_text()), ""]
        for here, after in itertools.pairwise(paragraphs):
            for name in re.findall(r"figures/(\w+\.png)", here):
                out[name] = out.get(name, "") + here + " " + after
    return out


def test_every_docs_figure_names_its_command():
    figures = doc_figures()
    assert set(figures) == set(MADE_BY), set(figures) ^ set(MADE_BY)
    cli_pages = " ".join((ROOT / page).read_text() for page in CLI_PAGES)
    for name, (command, _) in MADE_BY.items():
        assert (ROOT / "docs/figures" / name).stat().st_size > 0
        if command == "CLI":
            assert f"--out docs/figures/{name}" in cli_pages
        else:
            assert command in " ".join(figures[name].split()), f"{name}: no `{command}`"


@pytest.mark.filterwarnings("ignore:runs cover different")
def test_gfvl_figures(tmp_path, monkeypatch):
    import reproduce_gfvl as gfvl

    figures = {}
    for name, small in (("gfvl-beta-bernoulli", {"runs": 2}),
                        ("gfvl-beta-exponential", {"runs": 2, "rounds": 100}),
                        ("gfvl-unlearning", {"runs": 2, "learn_rounds": 100, "rounds": 60}),
                        ("unlearning-latency", {"runs": 30})):
        monkeypatch.setitem(gfvl.QUICK, name, small)
    monkeypatch.setattr(gfvl, "DIRS", [tmp_path])
    monkeypatch.setattr(gfvl, "save_figure",
                        lambda fig, path, dpi: figures.setdefault(path.name, fig))
    for part in (gfvl.fig3, gfvl.fig4, gfvl.fig5, gfvl.latency):
        part(0, True, lambda text="": None)
    shown = {n for n, (_, family) in MADE_BY.items() if family == "gfvl"}
    assert set(figures) == shown
    kl, kl_forgotten = "KL(q ‖ posterior)", "KL(q ‖ posterior without the forgotten data)"
    expected = {"fig3_beta_bernoulli": {"iteration", "graph"},
                "fig4_beta_exponential": {"total local iterations L·i", kl, "L"},
                "fig4_beta_exponential_time": {"simulated seconds", kl, "L"},
                "fig5_unlearning": {"iterations since the forget request", kl_forgotten,
                                    "method"},
                "fig5_unlearning_time": {"seconds since the forget request", kl_forgotten,
                                         "method"},
                "unlearning_latency": {"iterations after the forget request (1-based)",
                                       "fraction of runs"}}
    expected["fig4_beta_exponential_c0"] = expected["fig4_beta_exponential"]
    expected["fig4_beta_exponential_c0_time"] = expected["fig4_beta_exponential_time"]
    for name, fig in figures.items():
        check(fig, expected[name.removeprefix("gfvl_").removesuffix(".png")])


@pytest.fixture(scope="module")
def dsvgd_frames():
    import reproduce_dsvgd as dsvgd

    small = {"rounds": 4, "eval_every": 2, "points_per_agent": 40, "eval_size": 100}
    fig3 = run_scenario("dsvgd-sparsifiers", {**dsvgd.QUICK["fig3"], **small}, seed=0)
    fig4 = run_scenario("dsvgd-vs-fedavg", {**dsvgd.QUICK["fig4"], **small,
                                            "rate_multiples": "1,5"}, seed=0)
    fig5 = run_scenario("forget-svgd", {**dsvgd.QUICK["fig5"], "pretrain_rounds": 2,
                                        "learn_rounds": 4, "unlearn_rounds": 4,
                                        "scratch_rounds": 4, "eval_every": 2,
                                        "points_per_agent": 40, "eval_size": 100}, seed=0)
    return dsvgd, fig3, fig4, fig5


def test_dsvgd_figures(dsvgd_frames):
    dsvgd, fig3, fig4, fig5 = dsvgd_frames
    check(dsvgd.plot_fig3(fig3), {"iteration", "test accuracy", "ECE"})
    check(dsvgd.plot_fig4(fig4), {"ECE", "test accuracy"})
    check(dsvgd.plot_fig5(fig5), {"iterations since the request", "test accuracy"})


def test_cdbfl_figures():
    import reproduce_cdbfl as cdbfl

    from bflnet.scenarios.cdbfl.shift import default_plot

    frame = run_scenario("cdbfl-shift", {**cdbfl.QUICK, "rounds": 4, "burn_in": 2,
                                         "eval_every": 2}, seed=0)
    assert set(frame["method"]) == set(cdbfl.METHODS)  # a complete seed: the figure is drawn
    check(default_plot(frame), set())


def test_emtdamp_figures(tmp_path, monkeypatch):
    """The per-(task, setting) figure from a tiny synthetic table of the columns the
    script's runs give (the real runs take minutes)."""
    import reproduce_emtdamp as emtdamp

    rng = np.random.default_rng(0)
    rows = [dict(stage="test", task=task, setting="single", label="", seed=seed,
                 target_density=rho, method=method, event="iteration", iteration=it,
                 cum_bits_up=1e4 * it, **{emtdamp.METRIC[task]: rng.uniform(0.1, 1.0)})
            for task in ("boston", "mnist") for seed in (0, 1) for rho in (1.0, 0.5, 0.2)
            for method in emtdamp.METHODS for it in range(1, 4)]
    figures = []
    monkeypatch.setattr("matplotlib.figure.Figure.savefig",
                        lambda fig, path, **kw: figures.append((Path(path).name, fig)))
    emtdamp.save_figures(pd.DataFrame(rows), tmp_path)
    assert [n for n, _ in figures] == ["boston-single.png", "mnist-single.png"]
    for (_, fig), metric in zip(figures, ("test nmse", "test error"), strict=True):
        check(fig, {"round", "cumulative uplink bits", "target density ρ", metric}, 20)


def test_d2d_medium_figure(tmp_path, monkeypatch):
    """The slow-down figure from a tiny synthetic summary (its columns as ``summarise``
    gives them)."""
    import matplotlib.figure
    import reproduce_d2d_medium as d2d

    figures = []
    save = matplotlib.figure.Figure.savefig
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig",
                        lambda fig, path, **kw: figures.append(fig) or save(fig, path, **kw))
    rows = [dict(task=task, phy=phy, K=k, mac=mac, broadcast=cast, time_ratio=1.0 + k / 50,
                 bits_ratio=1.5, collision_rate=0.01 * k / 10)
            for task in ("cdbfl", "consensus") for phy in ("80211b", "ideal")
            for k in (10, 30, 100)
            for mac, cast in (("links", False), ("csma", False), ("csma", True),
                              ("aloha", False))]
    d2d.figure(pd.DataFrame(rows), tmp_path / "d2d.png")
    assert (tmp_path / "d2d.png").stat().st_size > 0
    (fig,) = figures
    check(fig, {"K devices", "time to target / links", "bits to target / links",
                "collisions / receptions"}, 12 * 3)


def test_wflmc_gaussian_figure():
    frame = run_scenario("wflmc-gaussian", {"runs": 2, "rounds": 10, "burn_in": 5,
                                            "snr_db": "5,20"}, seed=0)
    check(get_scenario("wflmc-gaussian").plot(frame),
          {"SNR (dB)", "squared 2-Wasserstein distance"})
    import plot_wflmc_gaussian

    fig = plot_wflmc_gaussian.figure(frame, runs=2)
    check(fig, {"SNR (dB)", "squared 2-Wasserstein distance",
                "WFLMC, Bayesian linear regression (2 runs)"})
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert {"paper, without DP", "paper, noiseless LMC", "wflmc"} <= set(labels)


def test_wflmc_gaussian_summary_and_figure_over_seeds(tmp_path):
    """Several seeds' tables: the summary's W2² is their mean and sd (the seed read from
    each table's record), the figure's points the mean with ± one sd as error bars."""
    import plot_wflmc_gaussian

    small = {"runs": 3, "rounds": 10, "burn_in": 5, "snr_db": "5,20"}
    paths = []
    for seed in (3, 7):
        path = tmp_path / f"w{seed}.csv"
        run_scenario("wflmc-gaussian", small, seed=seed).to_csv(path, index=False)
        (tmp_path / f"w{seed}.csv.json").write_text(f'{{"seed": {seed}}}')
        paths.append(str(path))
    frame = plot_wflmc_gaussian.load(paths)
    assert sorted(set(frame["seed"])) == [3, 7]
    out = plot_wflmc_gaussian.summary(frame).set_index(["method", "snr_db"])
    w2 = frame.groupby(["method", "snr_db"])["w2"]
    assert (out["runs"] == 2).all()
    np.testing.assert_allclose(out["w2_last_mean"], w2.mean().reindex(out.index), rtol=1e-12)
    np.testing.assert_allclose(out["w2_last_sd"], w2.std().reindex(out.index), rtol=1e-9)
    fig = plot_wflmc_gaussian.figure(frame, runs=3)
    assert fig.axes[0].get_title().endswith("(3 runs, mean ± sd over 2 seeds)")
    assert any(isinstance(c, LineCollection) for c in fig.axes[0].collections)  # error bars


def test_wflmc_five_curves_figure_and_summary(tmp_path):
    """The five methods of two seeds: the summary over the seeds, the figure with ours and
    the paper's five curves."""
    import wflmc_five_curves as five
    from plot_wflmc_gaussian import load  # the tables reader both scripts share

    small = {"runs": 3, "rounds": 10, "burn_in": 5, "snr_db": "5,20",
             "methods": ",".join(five.METHODS)}
    paths = []
    for seed in (3, 7):
        path = tmp_path / f"f{seed}.csv"
        run_scenario("wflmc-gaussian", small, seed=seed).to_csv(path, index=False)
        (tmp_path / f"f{seed}.csv.json").write_text(f'{{"seed": {seed}}}')
        paths.append(str(path))
    frame = load(paths)
    out = five.summary(frame).set_index(["method", "snr_db"])
    assert set(out.index.get_level_values(0)) == set(five.METHODS) and (out["runs"] == 2).all()
    assert (out.loc["wflmc-opt-dp", "epsilon_spent_last_mean"] <= 15 * (1 + 1e-9)).all()
    fig = five.figure(frame, runs=3)
    check(fig, {"SNR (dB)", "squared 2-Wasserstein distance to the posterior"})
    labels = set(fig.axes[0].get_legend_handles_labels()[1])
    assert {*five.METHODS.values(), *(f"paper: {v}" for v in five.METHODS.values())} <= labels
    assert any(isinstance(c, LineCollection) for c in fig.axes[0].collections)  # error bars


def test_ota_langevin_figure(tmp_path):
    frame = run_scenario("ota-langevin", {"rounds": 4, "burn_in": 2, "eval_every": 2,
                                          "points_per_agent": 30, "eval_size": 60,
                                          "snr_db": "10,40", "K": 4}, seed=0)
    check(get_scenario("ota-langevin").plot(frame),
          {"SNR (dB)", "accuracy", "ECE", "energy per device (J)"})
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import summarise_ota_langevin as summary
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    out = tmp_path / "ota.png"
    summary.figure(frame.assign(seed=0), str(out))
    assert out.stat().st_size > 0
