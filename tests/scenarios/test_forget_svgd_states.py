"""forget-svgd saves and loads its learnt state (the FedAvg pre-trained network): learn and
save, then load and unlearn, gives the table of learn-then-unlearn in one run, byte for
byte; a load may change the unlearning settings but not what the pre-training read."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from bflnet.cli.main import main
from bflnet.runs.registry import get_scenario

pytestmark = pytest.mark.usefixtures("use_tiny_fashion")

NAME = "forget-svgd"
TINY = {"points_per_agent": 20, "eval_size": 300, "hidden": 16, "local_steps": 2,
        "particles": 4, "pretrain_rounds": 2, "pretrain_local_steps": 2, "learn_rounds": 3,
        "unlearn_rounds": 3, "scratch_rounds": 2, "eval_every": 2, "rate_multiples": "1"}


def _csv(frame) -> str:
    return frame.to_csv(index=False)


def _savez(state: Path, **arrays: np.ndarray) -> None:
    """Replace the saved arrays by hand, and the checksums with them."""
    np.savez(state / "arrays.npz", **arrays)
    digests = {name: hashlib.sha256((state / name).read_bytes()).hexdigest()
               for name in ("arrays.npz", "state.json")}
    (state / "checksums.json").write_text(json.dumps(
        {"format": "bflnet-state-checksums/1", "sha256": digests}))


def test_learn_save_load_unlearn_is_the_one_run_table(tmp_path: Path) -> None:
    scenario = get_scenario(NAME)
    config = scenario.config(TINY)
    one_run = scenario.run(config, seed=4)
    saved = scenario.run(config, seed=4, save_state=tmp_path / "s")
    assert _csv(saved) == _csv(one_run)  # saving changes nothing
    loaded = scenario.run(config, seed=4, load_state=tmp_path / "s")
    assert _csv(loaded) == _csv(one_run)
    with np.load(tmp_path / "s" / "arrays.npz", allow_pickle=False) as npz:
        assert npz.files == ["pretrained.w"]
        w = npz["pretrained.w"]
    # the loaded network is what the run uses (not a pre-training run again)
    _savez(tmp_path / "s", **{"pretrained.w": np.zeros_like(w)})
    zeroed = scenario.run(config, seed=4, load_state=tmp_path / "s")
    assert zeroed["pretrain_accuracy"].iloc[0] != one_run["pretrain_accuracy"].iloc[0]
    _savez(tmp_path / "s", **{"pretrained.w": w})
    # another unlearning request from the same learnt network: as its own one run
    other = scenario.config({**TINY, "rate_multiples": "0.5", "unlearn_rounds": 2})
    again = scenario.run(other, seed=4, load_state=tmp_path / "s")
    assert _csv(again) == _csv(scenario.run(other, seed=4))


def test_a_load_may_not_change_what_the_pretraining_read(tmp_path: Path, capsys) -> None:
    base = ["run", NAME, *(f"--set={k}={v}" for k, v in TINY.items()), "--no-progress"]
    assert main([*base, "--save-state", str(tmp_path / "s")]) == 0
    capsys.readouterr()
    assert main([*base, "--set", "pretrain_lr=0.5", "--load-state",
                 str(tmp_path / "s")]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("bflnet: error: pretrain_lr: the state in ")
    assert "was saved with pretrain_lr=0.1, this run sets pretrain_lr=0.5" in err


def test_a_load_chooses_the_forgotten_labels(tmp_path: Path) -> None:
    """forget_classes is chosen on load: the data are split by it and the last layer
    learnt on the features of the saved network (checked as before: a tampered array is
    still refused)."""
    scenario = get_scenario(NAME)
    scenario.run(scenario.config(TINY), seed=4, save_state=tmp_path / "s")
    other = scenario.config({**TINY, "forget_classes": "1,3"})
    loaded = scenario.run(other, seed=4, load_state=tmp_path / "s")
    rows = loaded.dropna(subset=["acc_class_1"])
    assert np.allclose(rows["acc_unlearned"], rows[["acc_class_1", "acc_class_3"]].mean(axis=1))
    assert scenario.load_config(tmp_path / "s", {"forget_classes": "1,3"}) == (other, 4)
    with np.load(tmp_path / "s" / "arrays.npz", allow_pickle=False) as npz:
        w = npz["pretrained.w"]
    _savez(tmp_path / "s", **{"pretrained.w": np.full_like(w, np.nan)})
    with pytest.raises(ValueError, match="the array 'pretrained.w' holds nan"):
        scenario.run(other, seed=4, load_state=tmp_path / "s")
