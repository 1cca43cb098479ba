"""``--set uplink=aircomp`` on the FedAvg scenarios of the parameter server: rows for the
devices heard, the channel noise and the energy; DSVGD, FedBuff and stray uplink
settings refused in one line (exit 2, nothing written)."""

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
CHEAP = ["points_per_agent=40", "eval_size=100", "hidden=8"]


def cli(tmp_path, scenario, *settings):
    out = tmp_path / "out.csv"
    args = [a for s in settings for a in ("--set", s)]
    done = subprocess.run([sys.executable, "-m", "bflnet.cli", "run", scenario, *args,
                           "--out", str(out)], capture_output=True, text=True, timeout=300,
                          cwd=ROOT)
    return done, out


def test_async_fedavg_over_the_air_has_rows_for_devices_heard_noise_and_energy(tmp_path):
    done, out = cli(tmp_path, "async-fedavg", "uplink=aircomp", "methods=sync,deadline",
                    "duration_s=1.5", "K=4", "uplink_snr_db=10", *CHEAP)
    assert done.returncode == 0, done.stderr
    frame = pd.read_csv(out)
    rounds = frame[frame.event == "iteration"]
    assert set(rounds.method) == {"sync", "deadline"}
    assert (rounds.k_active <= 4).all() and (rounds.k_active == rounds.updates).all()
    assert (rounds.k_active + rounds.silent <= 4).all()
    heard = rounds[rounds.k_active > 0]
    assert len(heard) and (heard.channel_var > 0).all() and (heard.round_energy_j > 0).all()
    assert (rounds.cum_channel_uses > 0).all() and (rounds.cum_bits_up == 0).all()
    assert frame.accuracy.notna().any()


@pytest.mark.parametrize("scenario, settings, message", [
    ("dsvgd-vs-fedavg", ["uplink=aircomp"],
     "uplink: aircomp cannot carry learner DSVGD: it cannot take a noisy mean of the "
     "updates: each agent "
     "keeps a kernel density fit"),
    ("async-fedavg", ["uplink=digital"], "uplink: digital is the parameter server's"),
    ("async-fedavg", ["uplink_snr_db=5"],
     "uplink_snr_db: read only with uplink=aircomp or digital"),
    ("async-fedavg", ["uplink=aircomp", "uplink_truncation=best"],
     "uplink_truncation: must be one of authors, consistent"),
])
def test_refusals_are_one_line_with_exit_2_and_nothing_written(tmp_path, scenario, settings,
                                                               message):
    done, out = cli(tmp_path, scenario, *settings)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"bflnet: error: {message}"), done.stderr
    assert not out.exists()


def test_dsvgd_vs_fedavg_runs_fedavg_over_the_air(tmp_path):
    done, out = cli(tmp_path, "dsvgd-vs-fedavg", "uplink=aircomp", "methods=fedavg",
                    "rounds=2", "rate_multiples=1", "eval_every=2", "K=3", *CHEAP)
    assert done.returncode == 0, done.stderr
    rounds = pd.read_csv(out).query("event == 'iteration'")
    assert rounds.k_active.tolist() == [1, 1] and (rounds.cum_energy_j > 0).all()


def test_the_digital_uplink_adapts_its_rate_and_its_operating_point(tmp_path):
    """``uplink=digital`` is the fair baseline: at 0 dB its devices are still heard (bits
    from the channel's rate, not a fixed quantiser in outage), and the energy-minimising
    point sends no more than ``uplink_digital_bits`` per coordinate for less energy than
    the full budget, in the same air time."""
    runs = {}
    for point in ("full", "min-energy"):
        done, out = cli(tmp_path / point, "async-fedavg", "uplink=digital", "methods=sync",
                        "duration_s=1.0", "K=3", "uplink_snr_db=0",
                        f"uplink_digital_point={point}", "uplink_digital_bits=2", *CHEAP)
        assert done.returncode == 0, done.stderr
        runs[point] = pd.read_csv(out).query("event == 'iteration'").reset_index(drop=True)
    full, low = runs["full"], runs["min-energy"]
    assert (full.k_active > 0).any() and (full.cum_bits_up > 0).any()
    n = min(len(full), len(low))
    assert n > 0 and (low.time_s[:n].to_numpy() == full.time_s[:n].to_numpy()).all()
    assert low.cum_energy_j.iloc[n - 1] < full.cum_energy_j.iloc[n - 1]
    assert low.cum_bits_up.iloc[n - 1] <= full.cum_bits_up.iloc[n - 1]
