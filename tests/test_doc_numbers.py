"""Every number that docs/wireless-medium.md, the shared-medium section of
docs/reproductions/studies.md and docs/reproductions/ota.md quote from a study is read
here from the summary the study's script stored in docs/tables (``bflnet summarize`` of
its runs): a re-run that changes a number fails here until the text says the new one, and
a number in a marked passage that no table gives fails too (tests/doc_numbers.py)."""

from __future__ import annotations

import itertools
import math
import os
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
         broadcast: bool | None = None, K: int | None = None) -> pd.DataFrame:
    """The rows of the d2d-medium summary with these settings (``None``: any)."""
    t = d2d()
    keep = pd.Series(True, index=t.index)
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


WIRELESS_CLAIMS = [
    Claim(r"optimistic by a factor of (\d+) to (\d+) in time", _factor_4_to_471),
    Claim(r"consensus needs (\d+) to (\d+) times longer with broadcast and (\d+) to (\d+) "
          r"times longer with unicast", _consensus_factors),
    Claim(r"for TDMA \(and CSMA with unicast\) the factor grows with K", _grows_with_k),
    Claim(r"shows the same ordering: (\d+) to (\d+) times longer with broadcast and (\d+) to "
          r"(\d+) times with unicast", _cdbfl_factors),
    Claim(r"it needs ([\d.]+) to ([\d.]+) of the links reference's bits to reach the "
          r"consensus target \(CD-BFL: ([\d.]+) to ([\d.]+) with every MAC\)", _broadcast_bits),
    Claim(r"with TDMA and CSMA, (\d+) to (\d+) times less time than unicast",
          _broadcast_time_saving),
    Claim(r"Under CSMA and ALOHA (\d+) to (\d+) % of broadcast receptions collide",
          _broadcast_collisions),
    Claim(r"stalled above the target with ALOHA in (\d+) of (\d+) seeds at K = 10 and at "
          r"K = 100, and with CSMA in (\d+) of (\d+) at K = 10", _broadcast_stalls),
    Claim(r"ALOHA with broadcast saves less time over ALOHA with unicast \(([\d.]+) to "
          r"([\d.]+) times\)", _aloha_saving),
    Claim(r"With unicast it is the slowest MAC at K = 100 \((\d+) × links for consensus, "
          r"(\d+) × for CD-BFL\) and for CD-BFL at K = 30 \((\d+) ×\), but not at K = 10, "
          r"where CSMA and ALOHA are slower for consensus \((\d+) and (\d+) × against "
          r"(\d+) ×\) and ALOHA for CD-BFL \((\d+) × against (\d+) ×\)", _tdma_unicast),
    Claim(r"it is the fastest MAC for consensus at K = 10 \(([\d.]+) × links, against "
          r"([\d.]+) × for CSMA and ([\d.]+) × for ALOHA\); at K = 30 TDMA and CSMA take "
          r"about as long \(([\d.]+) and ([\d.]+) × links; medians ([\d.]+) and ([\d.]+) s\),"
          r" and at K = 100 CSMA is faster \(([\d.]+) against ([\d.]+) ×\)", _tdma_broadcast),
    Claim(r"TDMA's broadcast needs the fewest bits at every K \(([\d.]+), ([\d.]+) and "
          r"([\d.]+) of the links reference's for consensus\)", _tdma_bits),
    Claim(r"Under CSMA (\d+) to (\d+) % of receptions are lost", _csma_losses),
    Claim(r"Slotted ALOHA with p = 0\.1 loses (\d+) to (\d+) % with unicast, growing with K, "
          r"and of the MACs that work spends the most bits \(([\d.]+) to ([\d.]+) times the "
          r"links reference\)", _aloha_unicast),
    Claim(r"CSMA with broadcast is the fastest working setting for CD-BFL \((\d+) to (\d+) "
          r"times links\) and for consensus at K = 100 \((\d+) times\)",
          _csma_broadcast_fastest),
    Claim(r"with `mac=none` (\d+) % of unicast receptions and all broadcast ones collide",
          _no_mac_collisions),
    Claim(r"consensus never reaches the target \((\d+) of (\d+) seeds at every K\)",
          _no_mac_consensus),
    Claim(r"even sooner than over links, ([\d.]+) to ([\d.]+) × links", _no_mac_cdbfl_sooner),
    Claim(r"`consensus_error` (\d+) to (\d+) at the end, within ([\d.]+) % across the "
          r"settings of one K", _consensus_error),
    Claim(r"the final accuracy without MAC is only ([\d.]+) to ([\d.]+) below the links "
          r"reference's \(([\d.]+) to ([\d.]+) in every setting, means over seeds\)",
          _no_mac_accuracy),
]
#: Fixed settings of the d2d-medium study that its passages may quote.
D2D_SETTINGS = [r"d2d-medium", r"K = (?:10, 30, 100|10 and 30|10|30|100)\b", r"\b32 µs", r"2\.5 ms",
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
    assert "settings (--by): K, mac, broadcast" in result.stderr
    stored = d2d()[d2d()["task"] == "consensus"].drop(columns="task")
    pd.testing.assert_frame_equal(pd.read_csv(out),
                                  stored.dropna(axis="columns", how="all")
                                  .reset_index(drop=True), check_dtype=False, rtol=1e-9)
    cdbfl = bflnet.summarize(TABLES / "d2d_medium_cdbfl_runs.parquet", "accuracy>=0.33",
                             x=["time_s", "cum_bits"], by=["K", "mac", "broadcast"],
                             reference=["mac=links", "broadcast=false"],
                             last=["collision_rate", "accuracy", "consensus_error"])
    stored = d2d()[d2d()["task"] == "cdbfl"].drop(columns="task").reset_index(drop=True)
    pd.testing.assert_frame_equal(cdbfl, stored[cdbfl.columns], check_dtype=False, rtol=1e-9)


@pytest.mark.parametrize(("old", "new"), [
    ("by a factor of 4 to 471 in time.", "by one to two and a half orders of magnitude in "
                                         "time."),
    ("42 to 471 times longer", "42 to 470 times longer"),
    ("(0.26, 0.18 and 0.14 of", "(0.26, 0.18 and 0.15 of"),
    ("Consensus is the task", "At 12 seeds, consensus is the task"),
    ("With broadcast (one frame a round) it is the fastest MAC for consensus at K = 10",
     "With broadcast (one frame a round) it is the fastest MAC for consensus at K = 30"),
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
