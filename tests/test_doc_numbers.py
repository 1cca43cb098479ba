"""Every number that docs/wireless-medium.md, the shared-medium section of
docs/reproductions/studies.md and docs/reproductions/ota.md quote from a study is read
here from the summary the study's script stored in docs/tables (``bflnet summarize`` of
its runs): a re-run that changes a number fails here until the text says the new one, and
a number in a marked passage that no table gives fails too (tests/doc_numbers.py)."""

from __future__ import annotations

import itertools
import math
import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pandas as pd
import pytest

import bflnet

sys.path.insert(0, str(Path(__file__).parent))  # the helper module beside the tests
from doc_numbers import Claim, problems

ROOT = Path(__file__).resolve().parents[1]
TABLES = ROOT / "docs" / "tables"
WIRELESS = ROOT / "docs" / "wireless-medium.md"
STUDIES = ROOT / "docs" / "reproductions" / "studies.md"
WORKING = ("tdma", "csma", "aloha")


# --- d2d-medium: docs/tables/d2d_medium.csv ------------------------------------------

@cache
def d2d() -> pd.DataFrame:
    return pd.read_csv(TABLES / "d2d_medium.csv")


def pick(task: str | None = None, mac: str | tuple[str, ...] | None = None,
         broadcast: bool | None = None, K: int | None = None,
         phy: str = "ideal") -> pd.DataFrame:
    """The rows of the d2d-medium summary with these settings (``None``: any) at ``phy``
    (``ideal``: the study before the ``phy`` axis, which the studies page quotes)."""
    t = d2d()
    keep = t["phy"] == phy
    if task is not None:
        keep &= t["task"] == task
    if mac is not None:
        keep &= t["mac"].isin([mac] if isinstance(mac, str) else mac)
    if broadcast is not None:
        keep &= t["broadcast"] == broadcast
    if K is not None:
        keep &= t["K"] == K
    return t[keep]


def one(column: str, **where: object) -> float:
    (value,) = pick(**where)[column]  # type: ignore[arg-type]
    return float(value)


TIME = "time_s_ratio_to_reference_median"
BITS = "cum_bits_ratio_to_reference_median"
COLLIDE = "collision_rate_last_median"


def span(values: pd.Series, fmt: str, scale: float = 1.0) -> tuple[str, str]:
    return format(values.min() * scale, fmt), format(values.max() * scale, fmt)


def unicast_over_broadcast(task: str, mac: str) -> list[float]:
    return [one(TIME, task=task, mac=mac, broadcast=False, K=k)
            / one(TIME, task=task, mac=mac, broadcast=True, K=k) for k in (10, 30, 100)]


def growing(values: list[float]) -> bool:
    return all(a < b for a, b in itertools.pairwise(values))


def by_k(column: str, **where: object) -> list[float]:
    return [one(column, K=k, **where) for k in (10, 30, 100)]


def slowest(task: str, k: int) -> str:
    rows = pick(task=task, mac=WORKING, broadcast=False, K=k)
    return str(rows.loc[rows[TIME].idxmax(), "mac"])


def fastest(task: str, k: int, broadcast: bool | None = True) -> str:
    rows = pick(task=task, mac=WORKING, broadcast=broadcast, K=k)
    return str(rows.loc[rows[TIME].idxmin(), "mac"])


def _factor_4_to_471():
    return span(pick(mac=WORKING)[TIME], ".0f")


def _consensus_factors():
    return (*span(pick("consensus", WORKING, True)[TIME], ".0f"),
            *span(pick("consensus", WORKING, False)[TIME], ".0f"))


def _grows_with_k():
    for mac, cast in (("tdma", False), ("tdma", True), ("csma", False)):
        assert growing(by_k(TIME, task="consensus", mac=mac, broadcast=cast)), (mac, cast)
    return ()


def _cdbfl_factors():
    return (*span(pick("cdbfl", WORKING, True)[TIME], ".0f"),
            *span(pick("cdbfl", WORKING, False)[TIME], ".0f"))


def _broadcast_bits():
    return (*span(pick("consensus", ("tdma", "csma"), True)[BITS], ".2f"),
            *span(pick("cdbfl", ("none", *WORKING), True)[BITS], ".2f"))


def _broadcast_time_saving():
    saving = [*unicast_over_broadcast("consensus", "tdma"),
              *unicast_over_broadcast("consensus", "csma")]
    return format(min(saving), ".0f"), format(max(saving), ".0f")


def _broadcast_collisions():
    return span(pick(mac=("csma", "aloha"), broadcast=True)[COLLIDE], ".0f", 100)


def _broadcast_stalls():
    def missed(mac: str, k: int) -> tuple[str, str]:
        row = pick("consensus", mac, True, k).iloc[0]
        return str(row["runs"] - row["reached"]), str(row["runs"])

    assert missed("aloha", 100) == missed("aloha", 10)
    stalled = pick("consensus", WORKING, True)
    stalled = stalled[stalled["reached"] < stalled["runs"]]
    assert sorted(zip(stalled["mac"], stalled["K"], strict=True)) == [
        ("aloha", 10), ("aloha", 100), ("csma", 10)]
    return (*missed("aloha", 10), *missed("csma", 10))


def _aloha_saving():
    aloha = unicast_over_broadcast("consensus", "aloha")
    others = [*unicast_over_broadcast("consensus", "tdma"),
              *unicast_over_broadcast("consensus", "csma")]
    assert max(aloha) < min(others)  # "saves less"
    return format(min(aloha), ".1f"), format(max(aloha), ".1f")


def _tdma_unicast():
    assert slowest("consensus", 100) == slowest("cdbfl", 100) == slowest("cdbfl", 30) == "tdma"
    k10 = {mac: one(TIME, task="consensus", mac=mac, broadcast=False, K=10) for mac in WORKING}
    assert k10["csma"] > k10["tdma"] and k10["aloha"] > k10["tdma"]
    assert slowest("cdbfl", 10) == "aloha"
    return (format(one(TIME, task="consensus", mac="tdma", broadcast=False, K=100), ".0f"),
            format(one(TIME, task="cdbfl", mac="tdma", broadcast=False, K=100), ".0f"),
            format(one(TIME, task="cdbfl", mac="tdma", broadcast=False, K=30), ".0f"),
            format(k10["csma"], ".0f"), format(k10["aloha"], ".0f"), format(k10["tdma"], ".0f"),
            format(one(TIME, task="cdbfl", mac="aloha", broadcast=False, K=10), ".0f"),
            format(one(TIME, task="cdbfl", mac="tdma", broadcast=False, K=10), ".0f"))


def _tdma_broadcast():
    def r(mac: str, k: int) -> float:
        return one(TIME, task="consensus", mac=mac, broadcast=True, K=k)

    def t(mac: str, k: int) -> float:
        return one("time_s_to_target_median", task="consensus", mac=mac, broadcast=True, K=k)

    assert fastest("consensus", 10) == "tdma" and fastest("consensus", 100) == "csma"
    assert abs(r("tdma", 30) / r("csma", 30) - 1) < 0.1  # "about as long"
    assert abs(t("tdma", 30) / t("csma", 30) - 1) < 0.1
    return (format(r("tdma", 10), ".1f"), format(r("csma", 10), ".1f"),
            format(r("aloha", 10), ".1f"), format(r("tdma", 30), ".1f"),
            format(r("csma", 30), ".1f"), format(t("tdma", 30), ".3g"),
            format(t("csma", 30), ".3g"), format(r("csma", 100), ".1f"),
            format(r("tdma", 100), ".1f"))


def _tdma_bits():
    for k in (10, 30, 100):
        rows = pick("consensus", WORKING, True, k)
        assert rows.loc[rows[BITS].idxmin(), "mac"] == "tdma", k
    return tuple(format(v, ".2f") for v in by_k(BITS, task="consensus", mac="tdma",
                                                 broadcast=True))


def _csma_losses():
    return span(pick(mac="csma")[COLLIDE], ".0f", 100)


def _aloha_unicast():
    for task in ("consensus", "cdbfl"):
        assert growing(by_k(COLLIDE, task=task, mac="aloha", broadcast=False)), task
        for k in (10, 30, 100):
            rows = pick(task, WORKING, None, k)
            assert rows.loc[rows[BITS].idxmax(), "mac"] == "aloha", (task, k)
    rows = pick(mac="aloha", broadcast=False)
    return (*span(rows[COLLIDE], ".0f", 100), *span(rows[BITS], ".1f"))


def _csma_broadcast_fastest():
    for k in (10, 30, 100):
        assert fastest("cdbfl", k, None) == "csma", k
        assert pick("cdbfl", "csma", True, k)[TIME].item() < pick("cdbfl", "csma", False,
                                                                  k)[TIME].item()
    assert fastest("consensus", 100, None) == "csma"
    return (*span(pick("cdbfl", "csma", True)[TIME], ".0f"),
            format(one(TIME, task="consensus", mac="csma", broadcast=True, K=100), ".0f"))


def _no_mac_collisions():
    unicast = span(pick(mac="none", broadcast=False)[COLLIDE], ".0f", 100)
    assert unicast[0] == unicast[1]
    assert (pick(mac="none", broadcast=True)[COLLIDE] == 1.0).all()
    return unicast[:1]


def _no_mac_consensus():
    rows = pick("consensus", "none")
    assert (rows["reached"] == 0).all() and rows["runs"].nunique() == 1
    return "0", str(rows["runs"].iloc[0])


def _no_mac_cdbfl_sooner():
    rows = pick("cdbfl", "none")
    assert (rows["reached"] == rows["runs"]).all()
    return span(pick("cdbfl", "none", True)[TIME], ".2f")


def _consensus_error():
    rows = pick("cdbfl")
    spread = max(g.max() / g.min() - 1 for _, g in
                 rows.groupby("K")["consensus_error_last_mean"])
    return (*span(rows["consensus_error_last_mean"], ".0f"),
            format(math.ceil(spread * 1000) / 10, "g"))


def _no_mac_accuracy():
    lost = -pick("cdbfl", "none")["accuracy_last_diff_to_reference_mean"]
    return (*span(lost, ".3f"), *span(pick("cdbfl")["accuracy_last_mean"], ".2f"))


def _no_mac_collision_rates():
    _no_mac_consensus()
    return span(pick(mac="none")[COLLIDE], ".2f")


def _links_accuracy():
    return (format(one("accuracy_last_mean", task="cdbfl", mac="links", K=10), ".2f"),)


def _seeds():
    return tuple(str(pick(task)["runs"].unique().item()) for task in ("consensus", "cdbfl"))


REAL = "80211b"


def _real(**where: object) -> pd.DataFrame:
    return pick(phy=REAL, **where)  # type: ignore[arg-type]


def _phy_slowdown(**where: object) -> pd.Series:
    """Median time to target at 80211b over that at ideal, per matching row (finite
    only)."""
    keys = ["task", "K", "mac", "broadcast"]
    real = _real(**where).set_index(keys)["time_s_to_target_median"]
    ideal = pick(**where).set_index(keys)["time_s_to_target_median"]  # type: ignore[arg-type]
    ratio = real / ideal
    return ratio[ratio.notna() & (ratio != float("inf"))]


def _real_factors():
    return (*span(_real(task="consensus", mac=WORKING)[TIME], ".0f"),
            *span(pick("consensus", WORKING)[TIME], ".0f"))


def _phy_slowdowns():
    return span(_phy_slowdown(task="consensus", mac=WORKING), ".1f")


def _tdma_shrinks():
    tdma = _phy_slowdown(task="consensus", mac="tdma", broadcast=False)
    values = [tdma.loc[("consensus", k, "tdma", False)] for k in (10, 30, 100)]
    assert all(a > b for a, b in itertools.pairwise(values))
    assert (pick("consensus", "tdma")[COLLIDE] == 0).all()
    return (*(format(v, ".1f") for v in values),
            *span(_real(task="consensus", mac="tdma")[COLLIDE], ".1f", 100))


def _real_fastest():
    def r(mac: str, cast: bool, k: int) -> float:
        return one(TIME, task="consensus", mac=mac, broadcast=cast, K=k, phy=REAL)

    def fastest_real(cast: bool, k: int) -> str:
        rows = _real(task="consensus", mac=WORKING, broadcast=cast, K=k)
        return str(rows.loc[rows[TIME].idxmin(), "mac"])

    assert all(fastest_real(True, k) == "tdma" for k in (10, 30, 100))
    assert fastest_real(False, 10) == fastest_real(False, 30) == "tdma"
    assert fastest_real(False, 100) == "aloha"
    return (*(format(r("tdma", True, k), ".0f") for k in (10, 30, 100)),
            format(r("tdma", False, 10), ".0f"), format(r("tdma", False, 30), ".0f"),
            format(r("aloha", False, 100), ".0f"), format(r("tdma", False, 100), ".0f"),
            *span(_real(task="consensus", mac="tdma", broadcast=True)[BITS], ".2f"))


def _real_csma():
    for k in (10, 30, 100):
        rows = _real(task="consensus", mac=WORKING, broadcast=False, K=k)
        assert rows.loc[rows[TIME].idxmax(), "mac"] == "csma", k
    reached = [_real(task="consensus", mac="csma", broadcast=True, K=k).iloc[0]
               for k in (10, 30, 100)]
    assert reached[1]["reached"] == reached[2]["reached"] == 0
    return (*span(_real(task="consensus", mac="csma", broadcast=False)[COLLIDE], ".0f", 100),
            *span(_real(task="consensus", mac="csma", broadcast=True)[COLLIDE], ".0f", 100),
            *span(pick("consensus", "csma")[COLLIDE], ".0f", 100),
            str(reached[0]["reached"]), str(reached[0]["runs"]))


def _real_aloha():
    real = _real(task="consensus", mac="aloha")[COLLIDE]
    ideal = pick("consensus", "aloha")[COLLIDE]
    assert real.max() < ideal.max() and real.min() < ideal.min()
    return (*span(real, ".0f", 100), *span(ideal, ".0f", 100))


def _no_mac_both():
    rows = pd.concat([pick("consensus", "none"), _real(task="consensus", mac="none")])
    assert (rows["reached"] == 0).all() and rows["runs"].nunique() == 1
    assert (rows.loc[rows["broadcast"], COLLIDE] == 1.0).all()
    return (*span(rows.loc[~rows["broadcast"], COLLIDE], ".0f", 100), "0",
            str(rows["runs"].iloc[0]))


def _cdbfl_real():
    aloha = _phy_slowdown(task="cdbfl", mac="aloha")
    tdma = _phy_slowdown(task="cdbfl", mac="tdma")
    assert (tdma.xs(100, level="K") < 1).all() and (tdma.xs(10, level="K") > 1).all()
    cast = _phy_slowdown(task="cdbfl", mac="csma", broadcast=True)
    assert (cast < 1).all() and len(cast) == 3
    return (*span(aloha, ".1f"), *span(tdma.xs(100, level="K"), ".1f"), *span(cast, ".1f"),
            *span(_real(task="cdbfl", mac="csma")[COLLIDE], ".0f", 100))


WIRELESS_CLAIMS = [
    Claim(r"consensus at `phy=80211b` needs (\d+) to (\d+) times longer than over "
          r"independent links to reach the same deviation \(at `phy=ideal` (\d+) to (\d+) "
          r"times\)", _real_factors),
    Claim(r"802\.11b's timing alone slows each MAC down ([\d.]+) to ([\d.]+) times",
          _phy_slowdowns),
    Claim(r"\(with unicast ([\d.]+), ([\d.]+) and ([\d.]+) at K = 10, 30, 100\).*?under "
          r"Rayleigh fading ([\d.]+) to ([\d.]+) % of TDMA's receptions are lost at "
          r"`phy=80211b` \(none at `phy=ideal`\)", _tdma_shrinks),
    Claim(r"with broadcast at every K \((\d+), (\d+) and (\d+) × links\) and with unicast at "
          r"K = 10 and 30 \((\d+) and (\d+) ×\); at K = 100 ALOHA is faster with unicast "
          r"\((\d+) against (\d+) ×\)\. TDMA's broadcast needs ([\d.]+) to ([\d.]+) of the "
          r"links reference's bits", _real_fastest),
    Claim(r"(\d+) to (\d+) % of unicast receptions and (\d+) to (\d+) % of broadcast ones are "
          r"lost at `phy=80211b`, against (\d+) to (\d+) % at `phy=ideal`; with broadcast, "
          r"consensus reached the target in (\d+) of (\d+) seeds at K = 10 and in none at "
          r"K = 30 and 100, and CSMA with unicast is the slowest MAC at every K", _real_csma),
    Claim(r"ALOHA loses fewer receptions at the real PHY\*\* \((\d+) to (\d+) %, against "
          r"(\d+) to (\d+) % at `phy=ideal`\)", _real_aloha),
    Claim(r"with `mac=none` (\d+) to (\d+) % of unicast receptions and all broadcast ones "
          r"collide, and consensus never reaches the target \((\d+) of (\d+) seeds at every "
          r"K\)", _no_mac_both),
    Claim(r"With ALOHA, `phy=80211b` takes ([\d.]+) to ([\d.]+) times as long as "
          r"`phy=ideal`.*?outweighs that at K = 100 \(([\d.]+) to ([\d.]+) ×\), and with CSMA "
          r"and broadcast CD-BFL reaches its target sooner than at `phy=ideal` \(([\d.]+) to "
          r"([\d.]+) ×\) although (\d+) to (\d+) % of CSMA's "
          r"receptions are lost", _cdbfl_real),
]
#: Fixed settings of the d2d-medium study that its passages may quote.
D2D_SETTINGS = [r"d2d-medium", r"K = (?:10, 30, 100|10 and 30|30 and 100|10|30|100)\b",
                r"\b32 µs", r"2\.5 ms", r"64-bit", r"802\.11b", r"80211b", r"[12] Mbit/s",
                r"5 086-bit",
                r"\(60 m\)", r"\(158 m\)", r"up to 158 m", r"20 µs", r"ζ = 0\.03",
                r"after 40 rounds", r"distance-2", r"5 % of the initial deviation"]
WIRELESS_EVERYWHERE = [
    Claim(r"the links reference ends at about ([\d.]+) after 40 rounds at K = 10",
          _links_accuracy),
    Claim(r"\*\*Seeds\.\*\* (\d+) for consensus, (\d+) for CD-BFL", _seeds),
]
STUDIES_CLAIMS = [
    Claim(r"optimistic by a factor of (\d+) to (\d+) in time with a MAC that works",
          _factor_4_to_471),
    Claim(r"TDMA unicast ([\d.]+)-([\d.]+) × the links' time, CSMA ([\d.]+)-([\d.]+) ×",
          lambda: (*span(pick("consensus", "tdma", False)[TIME], ".1f"),
                   *span(pick("consensus", "csma", False)[TIME], ".1f"))),
    Claim(r"without a MAC nearly every reception collides \(collision rate ([\d.]+)-"
          r"([\d.]+)\) and consensus never reaches its target",
          _no_mac_collision_rates),
    Claim(r"cuts the bits to target to ([\d.]+)-([\d.]+) × the links'",
          lambda: span(pick("consensus", WORKING, True)[BITS], ".2f")),
    Claim(r"the time to target by (\d+)-(\d+) × against unicast", _broadcast_time_saving),
]


def test_the_wireless_medium_reading_is_the_table():
    assert problems(WIRELESS.read_text(), "d2d_medium", WIRELESS_CLAIMS, D2D_SETTINGS,
                    WIRELESS_EVERYWHERE) == []


def test_the_studies_page_shared_medium_section_is_the_table():
    assert problems(STUDIES.read_text(), "d2d_medium", STUDIES_CLAIMS, D2D_SETTINGS) == []


def test_the_wireless_medium_table_is_the_stored_summary():
    """Every row of the docs' table is the stored summary's, as the script writes it."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import reproduce_d2d_medium as script
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    table = script.markdown(script.docs_table(d2d())).splitlines()
    page = WIRELESS.read_text().splitlines()
    start = page.index(table[0])
    assert page[start:start + len(table)] == table


def _summarize_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, "-m", "bflnet.cli", "summarize", *args],
                          capture_output=True, text=True, env=env, timeout=120)


def test_bflnet_summarize_of_the_sweeps_rows_is_the_stored_summary(tmp_path):
    """``bflnet summarize`` on the d2d-medium sweeps' rows (stored beside the summary)
    gives the docs' table: the command the script runs, on the command line."""
    out = tmp_path / "consensus.csv"
    result = _summarize_cli(str(TABLES / "d2d_medium_consensus_runs.parquet"),
                            "--target", "max_deviation<=5%", "--x", "time_s", "--x",
                            "cum_bits", "--reference", "mac=links", "--reference",
                            "broadcast=false", "--last", "collision_rate", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "settings (--by): phy, K, mac, broadcast" in result.stderr
    stored = d2d()[d2d()["task"] == "consensus"].drop(columns="task")
    pd.testing.assert_frame_equal(pd.read_csv(out),
                                  stored.dropna(axis="columns", how="all")
                                  .reset_index(drop=True), check_dtype=False, rtol=1e-9)
    cdbfl = bflnet.summarize(TABLES / "d2d_medium_cdbfl_runs.parquet", "accuracy>=0.33",
                             x=["time_s", "cum_bits"], by=["phy", "K", "mac", "broadcast"],
                             reference=["mac=links", "broadcast=false"],
                             last=["collision_rate", "accuracy", "consensus_error"])
    stored = d2d()[d2d()["task"] == "cdbfl"].drop(columns="task").reset_index(drop=True)
    pd.testing.assert_frame_equal(cdbfl, stored[cdbfl.columns], check_dtype=False, rtol=1e-9)


@pytest.mark.parametrize(("old", "new"), [
    ("needs 124 to 4041 times longer", "needs one to three orders of magnitude longer"),
    ("slows each MAC down 5.5 to 28.0 times", "slows each MAC down 5.5 to 28.1 times"),
    ("(124, 163 and 209 × links)", "(124, 163 and 210 × links)"),
    ("TDMA is the fastest MAC at the real PHY", "At 12 seeds, TDMA is the fastest MAC at "
                                                "the real PHY"),
    ("at K = 100 ALOHA is faster with unicast", "at K = 100 CSMA is faster with unicast"),
])
def test_a_changed_or_unread_number_fails(old, new):
    """The checks catch a number that differs from its table, a sentence that no longer
    says what the table says, and a number that no table gives."""
    page = WIRELESS.read_text()
    flat_page = " ".join(page.split())
    assert old in flat_page
    changed = flat_page.replace(old, new)
    assert problems(changed, "d2d_medium", WIRELESS_CLAIMS, D2D_SETTINGS,
                    WIRELESS_EVERYWHERE) != []


# --- over the air: docs/tables/wflmc_gaussian.csv, ota_langevin.csv (and its runs) -----

OTA = ROOT / "docs" / "reproductions" / "ota.md"
SNR_WORDS = r"\b\d+(?:-\d+)?(?:(?:, | and )\d+)* dB"


def _script(name: str):
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        return __import__(name)
    finally:
        sys.path.remove(str(ROOT / "scripts"))


@cache
def wflmc() -> pd.DataFrame:
    return pd.read_csv(TABLES / "wflmc_gaussian.csv").set_index(["method", "snr_db"])


def w(column: str, method: str, snr: int, stat: str = "mean") -> float:
    return float(wflmc().loc[(method, snr), f"{column}_last_{stat}"])


def sci(value: float, digits: int = 1) -> str:
    """``2.3e-4`` (the docs' way: no exponent padding)."""
    mantissa, exponent = f"{value:.{digits}e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def same_at_precision(text: str, value: float) -> bool:
    """Whether ``value`` written as precisely as ``text`` is ``text``."""
    t = text.replace("−", "-").replace(" ", "")
    if "e" in t:
        mantissa = t.split("e")[0]
        digits = len(mantissa.split(".")[1]) if "." in mantissa else 0
        return math.isclose(float(f"{value:.{digits}e}"), float(t))
    digits = len(t.split(".")[1]) if "." in t else 0
    return f"{value:.{digits}f}" == t


def _wflmc_rows() -> dict[str, object]:
    paper = _script("plot_wflmc_gaussian")
    snrs = list(paper.PAPER_SNR_DB)
    return {
        "bflnet `wflmc` (W2²)": lambda s: w("w2", "wflmc", s),
        "bflnet `wflmc`: sd of W2² over 5 seeds": lambda s: w("w2", "wflmc", s, "sd"),
        "paper \"without DP\" (authors' figure file)": lambda s: paper.PAPER_W2[snrs.index(s)],
        "bflnet `noiseless` Langevin": lambda s: w("w2", "noiseless", s),
        "bflnet `noiseless`: sd over 5 seeds": lambda s: w("w2", "noiseless", s, "sd"),
        "paper noiseless LMC": lambda s: paper.PAPER_NOISELESS_W2,
        "bflnet `wflmc`: channel noise / 2η": lambda s: w("channel_noise_ratio", "wflmc", s),
        "bflnet `wflmc`: devices heard per round": lambda s: w("k_active_mean", "wflmc", s),
        "bflnet `wflmc-full`: energy per device per round (µJ at 1 MHz)":
            lambda s: 1e6 * w("energy_j", "wflmc-full", s),
        "bflnet `wflmc`: the same": lambda s: 1e6 * w("energy_j", "wflmc", s),
    }


def test_the_wflmc_table_is_the_stored_summary():
    """Every cell of the WFLMC table, at the precision it is written, is the summary's
    (or the paper's value as the plotting script holds it)."""
    rows = _wflmc_rows()
    lines = [line for line in OTA.read_text().splitlines()
             if line.startswith("| SNR (dB) |") or (line.split("|")[1:2] and
             line.split("|")[1].strip() in rows)]
    header, *body = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines]
    snrs = [int(c) for c in header[1:]]
    assert [cells[0] for cells in body] == list(rows)
    for label, *cells in body:
        for snr, cell in zip(snrs, cells, strict=True):
            if cell:
                value = rows[label](snr)
                assert same_at_precision(cell, value), (label, snr, cell, value)


def _paper_gap() -> tuple[str, str]:
    paper = _script("plot_wflmc_gaussian")
    gap = max(abs(w("w2", "wflmc", s) / p - 1) for s, p in zip(
        paper.PAPER_SNR_DB, paper.PAPER_W2, strict=True))
    noiseless = abs(w("w2", "noiseless", 5) / paper.PAPER_NOISELESS_W2 - 1)
    return str(math.ceil(gap * 100)), str(math.ceil(noiseless * 100))


def _channel_supplies_the_noise():
    assert all(w("added_noise_ratio", "wflmc", s) == 0 for s in range(5, 45, 5))
    high = {format(w("channel_noise_ratio", "wflmc", s), ".2f") for s in range(25, 45, 5)}
    assert len(high) == 1
    return format(w("channel_noise_ratio", "wflmc", 20), ".2f"), high.pop()


def _as_close_as_noiseless():
    gap = max(abs(w("w2", "wflmc", s) / w("w2", "noiseless", s) - 1) for s in range(20, 45, 5))
    return (str(math.ceil(gap * 100)),)


def _full_energy():
    ratios = [w("energy_j", "wflmc-full", s) / w("energy_j", "wflmc", s)
              for s in range(5, 45, 5)]
    assert max(ratios) == ratios[-1]
    return (format(ratios[-1], ".0f"),)


WFLMC_CLAIMS = [
    Claim(r"\((\d\.\d) and (\d\.\d) times 2η on average\)",
          lambda: (format(w("channel_noise_ratio", "wflmc", 5), ".1f"),
                   format(w("channel_noise_ratio", "wflmc", 10), ".1f"))),
    Claim(r"W2² is (\d+) and (\d+) times the noiseless one",
          lambda: tuple(format(w("w2", "wflmc", s) / w("w2", "noiseless", s), ".0f")
                        for s in (5, 10))),
    Claim(r"\(ratio ([\d.]+) at 20 dB, ([\d.]+) from 25 dB on; the learner adds none\)",
          _channel_supplies_the_noise),
    Claim(r"over-the-air Langevin is as close to the posterior as noiseless Langevin \(W2² "
          r"within (\d+) % of it, on the same random numbers\)", _as_close_as_noiseless),
    Claim(r"The exact W2² of the noiseless chain's law \(Gaussian, in closed form: the "
          r"scenario's `w2_exact`\) is ([\de.-]+)",
          lambda: (sci(w("w2_exact", "noiseless", 5)),)),
    Claim(r"Every over-the-air entry is within (\d+) % of the authors' curve \(the noiseless "
          r"one within (\d+) %\)", _paper_gap),
    Claim(r"the noiseless value is ([\de.-]+) here and ([\de.-]+) in the paper",
          lambda: (sci(w("w2", "noiseless", 5)),
                   sci(_script("plot_wflmc_gaussian").PAPER_NOISELESS_W2))),
]
WFLMC_SETTINGS = [r"\| SNR \(dB\) \| 5 \|.*?\| bflnet `wflmc`: the same(?: \| [\d.]+)+ \|",
                  SNR_WORDS, r"W2²",
                  r"100 runs", r"100-sample", r"d = 5", r"2η"]
WFLMC_EVERYWHERE = [Claim(r"samples the same law at up to (\d+) times the energy at 40 dB",
                          _full_energy)]


def test_the_wflmc_reading_is_the_table():
    assert problems(OTA.read_text(), "wflmc_gaussian", WFLMC_CLAIMS, WFLMC_SETTINGS,
                    WFLMC_EVERYWHERE) == []


# --- the five curves with privacy: docs/tables/wflmc_five_curves.csv ------------------

DP = ("wflmc-opt-dp", "wflmc-equal-dp", "noiseless-dp")
FIVE = ("noiseless", "wflmc", *DP)


@cache
def five() -> pd.DataFrame:
    return pd.read_csv(TABLES / "wflmc_five_curves.csv").set_index(["method", "snr_db"])


def v(column: str, method: str, snr: int, stat: str = "mean") -> float:
    return float(five().loc[(method, snr), f"{column}_last_{stat}"])


def paper_five(method: str, snr: int) -> float:
    paper = _script("wflmc_five_curves")
    return paper.PAPER_W2[method][list(paper.PAPER_SNR_DB).index(snr)]


def _five_rows() -> dict[str, object]:
    def pm(method):
        return lambda s: f"{sci(v('w2', method, s))} ± {sci(v('w2', method, s, 'sd'), 0)}"

    def paper(method):
        return lambda s: sci(paper_five(method, s))

    def eps(method):
        return lambda s: format(v("epsilon_spent", method, s), ".1f")

    return {
        "bflnet `noiseless`": pm("noiseless"), "paper: noiseless LMC": paper("noiseless"),
        "bflnet `wflmc` (without DP)": pm("wflmc"), "paper: without DP": paper("wflmc"),
        "bflnet `wflmc-opt-dp` (optimised PA)": pm("wflmc-opt-dp"),
        "paper: optimised PA": paper("wflmc-opt-dp"),
        "bflnet `wflmc-equal-dp` (equal PA)": pm("wflmc-equal-dp"),
        "paper: equal PA": paper("wflmc-equal-dp"),
        "bflnet `noiseless-dp`": pm("noiseless-dp"),
        "paper: noiseless LMC with DP": paper("noiseless-dp"),
        "ε spent, `wflmc-opt-dp`": eps("wflmc-opt-dp"),
        "ε spent, `wflmc-equal-dp`": eps("wflmc-equal-dp"),
    }


def test_the_five_curves_table_is_the_stored_summary():
    """Every cell of the five-curve table is the summary's mean ± sd over the seeds (or
    the paper's value as the script holds it, or the ε spent), as written."""
    rows = _five_rows()
    text = OTA.read_text()
    start = text.index("<!-- numbers: wflmc_five_curves")
    lines = [line for line in text[start:].splitlines()
             if line.startswith("| curve, at SNR (dB) |") or (line.split("|")[1:2] and
             line.split("|")[1].strip() in rows)]
    header, *body = [[c.strip() for c in line.strip().strip("|").split("|")]
                     for line in lines[:len(rows) + 1]]
    snrs = [int(c) for c in header[1:]]
    assert [cells[0] for cells in body] == list(rows)
    for label, *cells in body:
        for snr, cell in zip(snrs, cells, strict=True):
            if cell:
                assert cell == rows[label](snr), (label, snr, cell)
    assert (five()["seeds"] == 5).all() and (five()["runs"] == 5).all()  # "5 seeds"
    # the privacy held: no device of any run spent more than the ε asked
    assert max(v("epsilon_spent", m, s) for m in DP for s in snrs) <= 15 * (1 + 1e-9)


def _opt_over_equal():
    ours = v("w2", "wflmc-equal-dp", 40) / v("w2", "wflmc-opt-dp", 40)
    paper = paper_five("wflmc-equal-dp", 40) / paper_five("wflmc-opt-dp", 40)
    return format(ours, ".1f"), format(paper, ".1f")


def _dp_gap():
    gaps = [v("w2", m, s) / paper_five(m, s) - 1 for m in DP for s in range(5, 45, 5)]
    assert min(gaps) > 0  # ours above the paper's everywhere
    return (str(math.ceil(max(gaps) * 100)),)


def _absolute_gaps():
    gaps = [v("w2", m, 40) - paper_five(m, 40) for m in FIVE]
    assert min(gaps) > 0
    for m in DP:  # "for the three curves with DP the gap is less than the sd"
        assert v("w2", m, 40) - paper_five(m, 40) < v("w2", m, 40, "sd"), m
    return sci(min(gaps)), sci(max(gaps))


FIVE_CLAIMS = [
    Claim(r"at 40 dB the optimised allocation is ([\d.]+) times closer to the posterior "
          r"than the equal one \(paper: ([\d.]+)\)", _opt_over_equal),
    Claim(r"comes within (\d+) % of noiseless Langevin with DP at 40 dB",
          lambda: (str(math.ceil(abs(v("w2", "wflmc-opt-dp", 40)
                                     / v("w2", "noiseless-dp", 40) - 1) * 100)),)),
    Claim(r"Every entry of the three curves with DP is above the paper's, by at most "
          r"(\d+) %", _dp_gap),
    Claim(r"at 40 dB the five curves are ([\de.-]+) to ([\de.-]+) above the paper's",
          _absolute_gaps),
    Claim(r"the noiseless chain's exact W2² \(`w2_exact`\) is ([\de.-]+)",
          lambda: (sci(v("w2_exact", "noiseless", 5)),)),
    Claim(r"the equal allocation's channel noise is ([\d.]+) times 2η on average at 40 dB",
          lambda: (two_digits(v("channel_noise_ratio", "wflmc-equal-dp", 40)),)),
]
FIVE_SETTINGS = [r"\| curve, at SNR \(dB\) \| 5 \|.*?"
                 r"\| ε spent, `wflmc-equal-dp`(?: \| [\d.]+)+ \|",
                 SNR_WORDS, r"W2²", r"\(ε, δ\) = \(15, 0\.01\)", r"ε = 15", r"100 runs",
                 r"5 seeds", r"2η", r"100-sample"]


def test_the_five_curves_reading_is_the_table():
    assert problems(OTA.read_text(), "wflmc_five_curves", FIVE_CLAIMS, FIVE_SETTINGS) == []


@cache
def ota() -> pd.DataFrame:
    return pd.read_csv(TABLES / "ota_langevin.csv")


def o(column: str, method: str, snr: int = 10, ref: str = "fald") -> float:
    t = ota()
    row = t[(t["reference"] == ref) & (t["method"] == method) & (t["snr_db"] == snr)]
    return float(row[column].item())


def margin(metric: str, snr: int, stat: str = "mean", method: str = "wfald",
           ref: str = "fald") -> float:
    return o(f"{metric}_last_diff_to_reference_{stat}", method, snr, ref)


@cache
def last_rows() -> pd.DataFrame:
    runs = pd.read_parquet(TABLES / "ota_langevin_runs.parquet")
    return runs[runs["iteration"] == runs["iteration"].max()].set_index(
        ["method", "snr_db", "seed"])


#: The seeds of the ota-langevin study, its rounds and its model's parameters.
OTA_SEEDS, OTA_ROUNDS, OTA_DIM = (0, 1, 2, 3, 4), 200, 79_510
SNRS = (40, 30, 20, 10)


def per_seed(column: str, method: str, snr: int) -> list[float]:
    return [float(last_rows().loc[(method, snr, s), column]) for s in OTA_SEEDS]


def _at_40_db():
    assert all(abs(margin(m, 40)) < margin(m, 40, "sd") for m in ("accuracy", "ece", "nll"))
    return (format(o("channel_noise_ratio_last_mean", "wfald", 40), ".2f"),
            format(abs(margin("accuracy", 40)) * 100, ".1f"),
            format(abs(margin("ece", 40)), ".3f"), format(abs(margin("nll", 40)), ".3f"),
            format(margin("accuracy", 40, "sd") * 100, ".1f"))


def two_digits(value: float) -> str:
    """2 significant digits, whole numbers above 100 (``1.9``, ``14``, ``143``)."""
    return f"{value:.2g}" if abs(value) < 100 else f"{value:.0f}"


def _hotter():
    noise = [two_digits(o("channel_noise_ratio_last_mean", "wfald", s)) for s in (30, 20, 10)]
    loss = [format(margin("accuracy", s) * 100, ".1f").replace("-", "−") for s in (30, 20,
                                                                                    10)]
    nll = [format(margin("nll", s), ".2f") for s in (20, 10)]
    return (*noise, *loss, *nll)


def _calibration():
    worst = max(abs(margin("ece", s)) for s in SNRS)
    eces = {format(o("ece_last_mean", "wfald", s), ".3f") for s in SNRS}
    assert len(eces) == 1
    return (format(math.ceil(worst * 1000) / 1000, ".3f"), eces.pop(),
            format(o("ece_last_mean", "fald"), ".3f"))


def _truncation():
    heard = [o("k_active_mean_last_mean", "wfald", s) for s in (10, 20)]
    assert heard[0] < heard[1] < 10
    return tuple(format(h, ".1f") for h in heard)


def _digital_accuracy():
    digital = [o("accuracy_last_mean", "digital", s) for s in (10, 20, 30, 40)]
    wfald = [o("accuracy_last_mean", "wfald", s) for s in (10, 20, 30, 40)]
    assert all(d < w for d, w in zip(digital, wfald, strict=True))
    nll = [o("nll_last_mean", m, 10) for m in ("digital", "wfald")]
    return (*(format(v, ".2f") for v in digital), *(format(v, ".2f") for v in wfald),
            *(format(v, ".2f") for v in nll))


def bits_per_coordinate(snr: int) -> float:
    """Mean payload bits per coordinate of a device heard by ``digital`` at ``snr``."""
    return (o("cum_bits_last_mean", "digital", snr)
            / (OTA_ROUNDS * o("k_active_mean_last_mean", "digital", snr) * OTA_DIM))


def _digital_bits():
    return tuple(two_digits(bits_per_coordinate(s)) for s in (10, 20, 30, 40))


def _digital_cost():
    for method in ("digital", "digital-min"):  # "No round is silent"
        assert all(v == 0 for s in SNRS for v in per_seed("silent_rounds", method, s))
    air = {format(o("time_s_last_mean", "digital", s) / o("time_s_last_mean", "wfald", s),
                  ".0f") for s in SNRS}
    assert len(air) == 1
    energy = [o("energy_j_last_mean", "digital", s) / o("energy_j_last_mean", "wfald", s)
              for s in SNRS]
    return air.pop(), format(min(energy), ".0f"), format(max(energy), ".0f")


def _digital_min():
    for s in SNRS:  # the same payloads: the same rows but the energy
        assert o("accuracy_last_mean", "digital-min", s) == o("accuracy_last_mean", "digital", s)
        assert o("cum_bits_last_mean", "digital-min", s) == o("cum_bits_last_mean", "digital", s)
    saved = [100 * (1 - o("energy_j_last_mean", "digital-min", s)
                    / o("energy_j_last_mean", "digital", s)) for s in (10, 20, 30, 40)]
    ratio = [o("energy_j_last_mean", "digital-min", s) / o("energy_j_last_mean", "wfald", s)
             for s in SNRS]
    return (*(two_digits(v) for v in saved), format(min(ratio), ".0f"),
            format(max(ratio), ".0f"))


def _fedavg_margins():
    close = max(abs(margin("accuracy", s, method="ota-fedavg", ref="fedavg")) for s in SNRS)
    return (format(close * 100, ".1f"),
            format(-margin("accuracy", 10, method="ota-fedavg", ref="fedavg") * 100, ".1f"),
            format(margin("accuracy", 10, "sd", "ota-fedavg", "fedavg") * 100, ".1f"),
            format(margin("nll", 10, method="ota-fedavg", ref="fedavg"), ".3f"),
            format(margin("nll", 10, "sd", "ota-fedavg", "fedavg"), ".3f"))


def _clips():
    """WFALD's payload clip from the settings (η = 1e-4, K = 10, 2 local steps, gradient
    clip 1000, d = 79 510), and the measured noise ratio its square predicts at 10 dB,
    where both transmit at their full budget."""
    eta_k, d = 1e-4 * 10, OTA_DIM
    noise = 1.5 * math.sqrt(2 * eta_k * (2 - 1) * d)
    clip = eta_k * 2 * 1000 + noise
    ratio = (o("channel_noise_ratio_last_mean", "wfald", 10)
             / o("channel_noise_ratio_last_mean", "ota-fedavg", 10))
    assert abs(ratio / clip**2 - 1) < 0.01
    return f"{float(f'{ratio:.2g}'):.0f}", format(clip, ".1f"), format(noise, ".0f")


def _fedavg_vs_fald():
    return (format(o("nll_last_mean", "fedavg"), ".3f"), format(o("nll_last_mean", "fald"),
                                                                ".3f"),
            format(o("accuracy_last_mean", "fedavg"), ".3f"),
            format(o("ece_last_mean", "fedavg"), ".3f"),
            format(o("accuracy_last_mean", "fald"), ".3f"),
            format(o("ece_last_mean", "fald"), ".3f"))


def _fedavg_energy():
    return (format(o("energy_j_last_mean", "ota-fedavg", 40), ".0f"),
            format(o("energy_j_last_mean", "wfald", 40), ".0f"),
            format(o("energy_j_last_mean", "ota-fedavg", 10), ".1f"),
            format(o("energy_j_last_mean", "wfald", 10), ".0f"))


OTA_CLAIMS = [
    Claim(r"At 40 dB the channel supplies the Langevin noise \(([\d.]+) × 2η on average\) and "
          r"WFALD matches noiseless FALD: margins of ([\d.]+) accuracy points, ([\d.]+) ECE "
          r"and ([\d.]+) NLL, .*?\(an sd of ([\d.]+) points of accuracy\)", _at_40_db),
    Claim(r"\(([\d.]+), ([\d.]+) and (\d+) times at 30, 20 and 10 dB\), the chain runs hot, "
          r"and accuracy and NLL degrade \(([−\d.]+), ([−\d.]+) and ([−\d.]+) points of "
          r"accuracy; NLL \+([\d.]+) and \+([\d.]+) at 20 and 10 dB\)", _hotter),
    Claim(r"the ECE stays within ([\d.]+) of FALD's \(([\d.]+) at every SNR against "
          r"([\d.]+)\)", _calibration),
    Claim(r"\(([\d.]+) devices heard per round at 10 dB, ([\d.]+) at 20 dB\)", _truncation),
    Claim(r"less accurate than WFALD: ([\d.]+), ([\d.]+), ([\d.]+) and ([\d.]+) at 10, 20, 30 "
          r"and 40 dB against WFALD's ([\d.]+), ([\d.]+), ([\d.]+) and ([\d.]+), with an NLL "
          r"of ([\d.]+) against ([\d.]+) at 10 dB", _digital_accuracy),
    Claim(r"carries on average ([\d.]+), ([\d.]+), ([\d.]+) and ([\d.]+) bits per coordinate",
          _digital_bits),
    Claim(r"No round is silent: rate adaptation sends less through a deep fade rather than "
          r"nothing\. Each digital round takes (\d+) times WFALD's air time \(a slot of d "
          r"channel uses per device heard\) and, at full energy, (\d+)-(\d+) times WFALD's "
          r"energy",
          _digital_cost),
    Claim(r"for ([\d.]+), ([\d.]+), ([\d.]+) and ([\d.]+) % less energy at 10, 20, 30 and 40 "
          r"dB: .*? That is still (\d+)-(\d+) times WFALD's energy", _digital_min),
    Claim(r"`ota-fedavg` is within ([\d.]+) points of `fedavg` over ideal links at every SNR "
          r"and loses ([\d.]+) ± ([\d.]+) points of accuracy and ([\d.]+) ± ([\d.]+) NLL at "
          r"10 dB", _fedavg_margins),
    Claim(r"its channel noise is (\d+) times smaller than WFALD's, the square of the ratio of "
          r"the payload clips: 1 for FedAvg against WFALD's ([\d.]+), most of which "
          r"\(1\.5·√\(2ηK·d\) ≈ (\d+)\)", _clips),
    Claim(r"\(([\d.]+) against ([\d.]+)\) at about the same accuracy and ECE \(([\d.]+) and "
          r"([\d.]+) against ([\d.]+) and ([\d.]+)\)", _fedavg_vs_fald),
    Claim(r"at 40 dB it uses more energy than WFALD \((\d+) against (\d+)\), at 10 dB far less "
          r"\(([\d.]+) against (\d+):", _fedavg_energy),
]


def _ota_tables() -> list[str]:
    script = _script("summarise_ota_langevin")
    return [*script.markdown(ota()).splitlines(), *script.markdown_margins(ota()).splitlines()]


def test_the_ota_tables_are_the_stored_summary():
    page = OTA.read_text().splitlines()
    for table in (_script("summarise_ota_langevin").markdown(ota()),
                  _script("summarise_ota_langevin").markdown_margins(ota())):
        lines = table.splitlines()
        start = page.index(lines[0])
        assert page[start:start + len(lines)] == lines


#: Fixed settings of the ota-langevin study that its passages may quote.
OTA_SETTINGS = [SNR_WORDS, r"[Rr]ound 200", r"200 rounds", r"\b5 seeds", r"N_0 = 1 W and 1 MHz",
                r"2η", r"more than 4 bits per coordinate", r"below 2,"]


def test_the_ota_reading_is_the_table():
    """The tables' lines are checked above; every other number is a claim or a setting."""
    tables = [re.escape(" ".join(line.split())) for line in _ota_tables()]
    assert problems(OTA.read_text(), "ota_langevin", OTA_CLAIMS, [*tables, *OTA_SETTINGS]) == []


def test_the_ota_summary_is_bflnet_summarize_of_the_stored_runs():
    runs = pd.read_parquet(TABLES / "ota_langevin_runs.parquet")
    again = _script("summarise_ota_langevin").summary(runs)
    pd.testing.assert_frame_equal(again, ota(), check_dtype=False, rtol=1e-9)


@pytest.mark.parametrize(("old", "new"), [
    ("against WFALD's 0.75, 0.81", "against WFALD's 0.76, 0.81"),
    ("(the noiseless one within 30 %)", "(the noiseless one within 25 %)"),
    ("the chain is too hot and W2² is 42 and 9 times", "the chain is too hot and W2² is 40 and 9 "
                                                       "times"),
    ("| 10 dB | −0.0742 ± 0.0098 |", "| 10 dB | −0.0752 ± 0.0098 |"),
    ("7-109 times WFALD's energy", "7-110 times WFALD's energy"),
    ("Over the air the Bayesian", "Over the air (3.5 times) the Bayesian"),
])
def test_a_changed_or_unread_ota_number_fails(old, new):
    flat_page = " ".join(OTA.read_text().split())
    assert old in flat_page
    changed = flat_page.replace(old, new)
    tables = [re.escape(" ".join(line.split())) for line in _ota_tables()]
    found = [*problems(changed, "wflmc_gaussian", WFLMC_CLAIMS, WFLMC_SETTINGS),
             *problems(changed, "ota_langevin", OTA_CLAIMS, [*tables, *OTA_SETTINGS])]
    assert found != []


# --- TDMA spatial reuse and round starts: docs/tables/tdma_reuse.csv, round_jitter.csv --

@cache
def tdma_reuse() -> pd.DataFrame:
    return pd.read_csv(TABLES / "tdma_reuse.csv")


def _slots(K: int, schedule: str, margin: float = 0.0, phy: str = "ideal") -> str:
    t = tdma_reuse()
    (value,) = t[(t["K"] == K) & (t["schedule"] == schedule) & (t["margin_db"] == margin)
                 & (t["phy"] == phy)]["frame_slots"]
    return str(int(value))


TDMA_REUSE_CLAIMS = [
    Claim(r"The frame shrinks from (\d+) to (\d+) slots at K = 100 and from (\d+) to (\d+) "
          r"slots at K = 1600 \(with a 3 dB margin (\d+) and (\d+) slots, with 10 dB (\d+) "
          r"and (\d+)\)",
          lambda: (_slots(100, "distance2"), _slots(100, "sinr"), _slots(1600, "distance2"),
                   _slots(1600, "sinr"), _slots(100, "sinr", 3.0), _slots(1600, "sinr", 3.0),
                   _slots(100, "sinr", 10.0), _slots(1600, "sinr", 10.0))),
    Claim(r"With `phy=80211b`, whose ACKs the schedule checks too, it takes (\d+) and (\d+) "
          r"slots",
          lambda: (_slots(100, "sinr", phy="80211b"), _slots(1600, "sinr", phy="80211b"))),
]
TDMA_REUSE_SETTINGS = [r"K = (100|1600)", r"\d+ dB", r"`phy=80211b`"]


def test_the_tdma_reuse_reading_is_the_table():
    assert problems(WIRELESS.read_text(), "tdma_reuse", TDMA_REUSE_CLAIMS,
                    TDMA_REUSE_SETTINGS) == []


def test_the_tdma_reuse_table_at_k_100_is_the_script_s():
    """The K = 100 rows rebuilt now (the K = 1600 ones take the script's seconds)."""
    again = _script("tdma_reuse").rows((100,))
    stored = tdma_reuse()
    pd.testing.assert_frame_equal(again, stored[stored["K"] == 100].reset_index(drop=True),
                                  check_dtype=False)
    t = stored.set_index(["K", "schedule", "margin_db", "phy"])["frame_slots"]
    for k in (100, 1600):  # spatial reuse: fewer slots, more with a larger margin or ACKs
        assert t[(k, "sinr", 0.0, "ideal")] < t[(k, "sinr", 3.0, "ideal")] \
            < t[(k, "sinr", 10.0, "ideal")] < t[(k, "distance2", 0.0, "ideal")]
        assert t[(k, "sinr", 0.0, "ideal")] < t[(k, "sinr", 0.0, "80211b")]


@cache
def round_jitter() -> pd.DataFrame:
    return pd.read_csv(TABLES / "round_jitter.csv")


@cache
def round_jitter_80211b() -> pd.DataFrame:
    return pd.read_csv(TABLES / "round_jitter_80211b.csv")


def _losses(fmt: str, csma: str, jitter: float, broadcast: bool | None = None,
            phy: str = "ideal") -> tuple[str, str]:
    t = round_jitter() if phy == "ideal" else round_jitter_80211b()
    keep = (t["csma"] == csma) & (t["round_jitter_s"] == jitter)
    if broadcast is not None:
        keep &= t["broadcast"] == broadcast
    return span(t[keep]["loss_rate_mean"], fmt, 100)


def _jitter_cause():
    t = round_jitter()
    at_once = t[t["round_jitter_s"] == 0]
    default = at_once[at_once["csma"] == "default"].set_index(["K", "broadcast"])
    wide = at_once[at_once["csma"] == "cw_min=256"].set_index(["K", "broadcast"])
    assert (wide["loss_rate_max"] < default["loss_rate_min"] / 5).all()  # the window
    spread = t[(t["round_jitter_s"] == 0.01) & (t["csma"] == "default")]
    assert (spread.set_index(["K", "broadcast"])["loss_rate_mean"]
            < default["loss_rate_mean"] / 1.5).all()  # synchronised starts
    return ()


ROUND_JITTER_CLAIMS = [
    Claim(r"With every device starting at once CSMA loses (\d+) to (\d+) % of receptions",
          lambda: _losses(".0f", "default", 0.0)),
    Claim(r"with `cw_min = 256` ([\d.]+) to ([\d.]+) %", lambda: _losses(".1f", "cw_min=256", 0.0)),
    Claim(r"where nobody is hidden, (\d+) to (\d+) %",
          lambda: _losses(".0f", "sense_range_m=1000", 0.0)),
    Claim(r"The losses come from CW 16 with synchronised starts, not from hidden terminals",
          _jitter_cause),
    Claim(r"cuts broadcast losses to ([\d.]+) to ([\d.]+) % and unicast ones to (\d+) to "
          r"(\d+) %", lambda: (*_losses(".1f", "default", 0.01, True),
                               *_losses(".0f", "default", 0.01, False))),
]
ROUND_JITTER_SETTINGS = [r"K = 10 and 30", r"`cw_min = 256`", r"`sense_range_m = 1000`",
                         r"over 10 ms", r"CW 16"]


def _real_cause():
    t = round_jitter_80211b()
    at_once = t[t["round_jitter_s"] == 0].set_index(["K", "broadcast", "csma"])
    default = at_once.xs("default", level="csma")
    everyone = at_once.xs("sense_range_m=1000", level="csma")
    wide = at_once.xs("cw_min=256", level="csma")
    assert (everyone["loss_rate_max"] < default["loss_rate_min"] / 3).all()  # sensing
    assert (wide["loss_rate_min"] > default["loss_rate_max"] / 3).all()  # not the window
    return ()


REAL_CAUSE_CLAIMS = [
    Claim(r"with every device starting at once CSMA loses (\d+) to (\d+) % of receptions",
          lambda: _losses(".0f", "default", 0.0, phy="80211b")),
    Claim(r"with `cw_min = 256` still (\d+) to (\d+) %",
          lambda: _losses(".0f", "cw_min=256", 0.0, phy="80211b")),
    Claim(r"where every device senses every other, (\d+) to (\d+) %",
          lambda: _losses(".0f", "sense_range_m=1000", 0.0, phy="80211b")),
    Claim(r"The losses come from transmitters that carrier sense by received power does not "
          r"hear", _real_cause),
    Claim(r"cuts broadcast losses to (\d+) to (\d+) %, unicast ones only to (\d+) to (\d+) %",
          lambda: (*_losses(".0f", "default", 0.01, True, "80211b"),
                   *_losses(".0f", "default", 0.01, False, "80211b"))),
]
REAL_CAUSE_SETTINGS = [*ROUND_JITTER_SETTINGS, r"`phy=80211b`", r"--phy 80211b --jitters "
                       r"0,0\.01", r"round_jitter_80211b\.csv", r"0 dBm", r"1 MHz"]


def test_the_round_jitter_at_80211b_reading_is_the_table():
    assert problems(WIRELESS.read_text(), "round_jitter_80211b", REAL_CAUSE_CLAIMS,
                    REAL_CAUSE_SETTINGS) == []


def test_the_round_jitter_80211b_table_at_k_10_without_jitter_is_the_script_s():
    """One cell rebuilt now: K = 10, CSMA's defaults at phy=80211b, every device at once."""
    study = _script("round_jitter_study")
    runs = pd.DataFrame([row for seed in study.SEEDS
                         for row in study.loss_rates(10, 0.0, "default", seed, "80211b")])
    stored = round_jitter_80211b()
    stored = stored[(stored["K"] == 10) & (stored["csma"] == "default")
                    & (stored["round_jitter_s"] == 0)].reset_index(drop=True)
    pd.testing.assert_frame_equal(study.table(runs), stored, check_dtype=False)


def test_the_round_jitter_reading_is_the_table():
    assert problems(WIRELESS.read_text(), "round_jitter", ROUND_JITTER_CLAIMS,
                    ROUND_JITTER_SETTINGS) == []


def test_the_round_jitter_table_at_k_10_without_jitter_is_the_script_s():
    """One cell rebuilt now: K = 10, CSMA's defaults, every device at once, 3 seeds."""
    study = _script("round_jitter_study")
    runs = pd.DataFrame([row for seed in study.SEEDS
                         for row in study.loss_rates(10, 0.0, "default", seed)])
    again = study.table(runs)
    t = round_jitter()
    stored = t[(t["K"] == 10) & (t["csma"] == "default") & (t["round_jitter_s"] == 0)]
    pd.testing.assert_frame_equal(again.reset_index(drop=True),
                                  stored.reset_index(drop=True), check_dtype=False)


@pytest.mark.parametrize(("old", "new"), [
    ("from 100 to 19 slots", "from 100 to 18 slots"),
    ("with `cw_min = 256` 2.6 to 3.7 %", "with `cw_min = 256` 2.6 to 3.9 %"),
    ("not from hidden terminals.", "not from hidden terminals (4 of them)."),
])
def test_a_changed_tdma_or_jitter_number_fails(old, new):
    flat_page = " ".join(WIRELESS.read_text().split())
    assert old in flat_page
    changed = flat_page.replace(old, new)
    found = [*problems(changed, "tdma_reuse", TDMA_REUSE_CLAIMS, TDMA_REUSE_SETTINGS),
             *problems(changed, "round_jitter", ROUND_JITTER_CLAIMS, ROUND_JITTER_SETTINGS)]
    assert found != []
