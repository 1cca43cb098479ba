"""A saved state is verified before anything runs from it.

Its files carry checksums (a hand edit or one flipped byte: "was changed after it was
saved"); ``state.json`` follows a schema checked against the config and the network (every
field of a real state changed in turn, the checksums written again, is refused in one line
naming the field); the headers of ``arrays.npz`` are checked against the shapes the run
needs before any data are read; and a run may load and save at once, into the same
directory or another."""

from __future__ import annotations

import copy
import hashlib
import json
import math
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bflnet.cli.main import main
from bflnet.runs.registry import get_scenario

LATENCY = "unlearning-latency"
LATENCY_SETS = {"runs": 1, "learn_rounds": 6, "K": 3, "channel": "gilbert-elliott",
                "ge_p_good_to_bad": 0.3}
UNLEARNING = "gfvl-unlearning"
UNLEARNING_SETS = {"runs": 1, "K": 3, "learn_rounds": 8, "rounds": 6, "samples": 4,
                   "eval_every": 2}
SVGD = "forget-svgd"
SVGD_SETS = {"points_per_agent": 20, "eval_size": 300, "hidden": 16, "local_steps": 2,
             "particles": 4, "pretrain_rounds": 2, "pretrain_local_steps": 2,
             "learn_rounds": 3, "unlearn_rounds": 3, "scratch_rounds": 2, "eval_every": 2,
             "rate_multiples": "1"}
CHANGED = "was changed after it was saved"


# --------------------------------------------------------------------------- helpers
def _reseal(state: Path) -> None:
    """Write ``checksums.json`` again for the files as they are now: a hand edit that
    also updates the checksums, so that the schema itself must refuse what is wrong."""
    digests = {name: hashlib.sha256((state / name).read_bytes()).hexdigest()
               for name in ("arrays.npz", "state.json")}
    (state / "checksums.json").write_text(json.dumps(
        {"format": "bflnet-state-checksums/1", "sha256": digests}))


def _save(tmp_path: Path, name: str, sets: dict[str, Any], seed: int = 3) -> Path:
    scenario = get_scenario(name)
    scenario.run(scenario.config(sets), seed=seed, save_state=tmp_path / "saved")
    return tmp_path / "saved"


def _load_error(name: str, sets: dict[str, Any], state: Path, seed: int = 3) -> str:
    """The one-line error of loading ``state``."""
    scenario = get_scenario(name)
    with pytest.raises(ValueError) as info:
        scenario.run(scenario.config(sets), seed=seed, load_state=state)
    message = str(info.value)
    assert "\n" not in message and message.startswith("--load-state")
    return message


def _key_path(parts: tuple[Any, ...]) -> str:
    """A value's key path as the errors name it: ``runs[0].checkpoint.streams['agent.0']``."""
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.isidentifier():
            out += f".{part}" if out else part
        else:
            out += f"[{part!r}]"
    return out


def _leaves(value: Any, parts: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    """Every leaf of a JSON value with its path."""
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in _leaves(v, (*parts, k))]
    if isinstance(value, list):
        return [leaf for i, v in enumerate(value) for leaf in _leaves(v, (*parts, i))]
    return [(parts, value)]


def _objects(value: Any, parts: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], dict]]:
    """Every object (dict) of a JSON value with its path."""
    out = []
    if isinstance(value, dict):
        out.append((parts, value))
        for k, v in value.items():
            out += _objects(v, (*parts, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _objects(v, (*parts, i))
    return out


def _bad_values(leaf: Any) -> list[Any]:
    """A value of the wrong type, then out-of-range ones, for a leaf like ``leaf``."""
    if isinstance(leaf, bool):
        return ["yes", 2]
    if isinstance(leaf, int):
        return ["7", -1, 2**130]
    if isinstance(leaf, float):
        return ["0.5", math.nan, math.inf, -1e300, 1e300]
    if isinstance(leaf, str):
        return [5, "", "no such value!"]
    assert leaf is None
    return [[], "x", -1]


def _set(record: Any, parts: tuple[Any, ...], value: Any) -> Any:
    record = copy.deepcopy(record)
    target = record
    for part in parts[:-1]:
        target = target[part]
    target[parts[-1]] = value
    return record


def _write(state: Path, record: Any) -> None:
    (state / "state.json").write_text(json.dumps(record, indent=1))


def _cli(args: list[str], limit_bytes: int | None = None) -> subprocess.CompletedProcess:
    """``bflnet ARGS`` in a child process (optionally with its address space limited)."""
    def limit() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    return subprocess.run([sys.executable, "-m", "bflnet.cli", *args], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "COLUMNS": "200"},
                          preexec_fn=limit if limit_bytes else None)


def _sets(values: dict[str, Any]) -> list[str]:
    return [x for k, v in values.items() for x in ("--set", f"{k}={v}")]


# --------------------------------------------------------------------------- every field
@pytest.mark.parametrize(("name", "sets"), [(LATENCY, LATENCY_SETS),
                                            (UNLEARNING, UNLEARNING_SETS)])
def test_every_field_of_state_json_changed_is_refused(tmp_path: Path, name, sets) -> None:
    """Every leaf of a real saved ``state.json`` replaced in turn by a value of the wrong
    type and by out-of-range values: refused in one line naming the leaf's key path (the
    checksums written again: the schema refuses it), and refused as changed after saving
    (checksums not written again). Every key removed, and one added to every object:
    refused the same way."""
    state = _save(tmp_path, name, sets)
    original = json.loads((state / "state.json").read_text())
    sealed = (state / "checksums.json").read_text()
    leaves = _leaves(original)
    assert len(leaves) > 100  # config, checkpoint, agents, streams, links, extra values
    cases: list[tuple[Any, str]] = []
    for parts, leaf in leaves:
        for bad in _bad_values(leaf):
            if type(bad) is type(leaf) and (bad == leaf or (bad != bad and leaf != leaf)):
                continue
            cases.append((_set(original, parts, bad), _key_path(parts)))
    for parts, obj in _objects(original):
        for key in obj:
            if parts and parts[-1] == "streams" and key.startswith("link."):
                # which links have drawn yet is not in the file (a link's stream is made
                # when it first draws): a deleted one is caught by the checksum only
                continue
            smaller = copy.deepcopy(original)
            target = smaller
            for part in parts:
                target = target[part]
            del target[key]
            cases.append((smaller, _key_path((*parts, key))))
        cases.append((_set(original, (*parts, "zz_extra"), 1) if parts else
                      {**original, "zz_extra": 1}, _key_path((*parts, "zz_extra"))))
    refused_by_name = 0
    for record, path in cases:
        _write(state, record)
        (state / "checksums.json").write_text(sealed)
        assert CHANGED in _load_error(name, sets, state), path
        _reseal(state)
        message = _load_error(name, sets, state)
        assert path in message, (path, message)
        refused_by_name += 1
    assert refused_by_name == len(cases) > 3 * len(leaves)
    _write(state, original)  # and the untouched state still loads
    _reseal(state)
    scenario = get_scenario(name)
    scenario.run(scenario.config(sets), seed=3, load_state=state)


@pytest.mark.usefixtures("use_tiny_fashion")
def test_forget_svgd_fields_and_array_refused(tmp_path: Path) -> None:
    """forget-svgd saves its pre-trained network only: every field of its state.json
    changed is refused by name; a network of another shape, or holding NaN, too."""
    state = _save(tmp_path, SVGD, SVGD_SETS)
    original = json.loads((state / "state.json").read_text())
    for parts, leaf in _leaves(original):
        for bad in _bad_values(leaf):
            if type(bad) is type(leaf) and bad == leaf:
                continue
            _write(state, _set(original, parts, bad))
            _reseal(state)
            assert _key_path(parts) in _load_error(SVGD, SVGD_SETS, state, seed=3)
    _write(state, original)
    with np.load(state / "arrays.npz") as npz:
        w = npz["pretrained.w"]
    np.savez(state / "arrays.npz", **{"pretrained.w": w.reshape(-1)[:-1]})
    _reseal(state)
    assert "'pretrained.w' is float32 of shape" in _load_error(SVGD, SVGD_SETS, state)
    w = w.copy()
    w.flat[3] = np.nan
    np.savez(state / "arrays.npz", **{"pretrained.w": w})
    _reseal(state)
    assert "'pretrained.w' holds nan" in _load_error(SVGD, SVGD_SETS, state)
    np.savez(state / "arrays.npz", **{"pretrained.w": w, "other": w})
    _reseal(state)
    assert "an array 'other' that state.json does not name" in _load_error(
        SVGD, SVGD_SETS, state)


# --------------------------------------------------------------------------- the listed cases
def _checkpoint_case(tmp_path: Path, capsys, change, message: str) -> None:
    """Save a state, ``change(record)`` its first run's checkpoint, write the checksums
    again: the CLI refuses it in one line holding ``message``, exit code 2."""
    base = ["run", LATENCY, *_sets(LATENCY_SETS), "--no-progress"]
    state = tmp_path / "s"
    assert main([*base, "--save-state", str(state)]) == 0
    record = json.loads((state / "state.json").read_text())
    change(record["runs"][0]["checkpoint"])
    _write(state, record)
    _reseal(state)
    capsys.readouterr()
    assert main([*base, "--load-state", str(state), "--save-state", str(tmp_path / "new")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    assert message in err, err
    assert not (tmp_path / "new").exists()  # nothing written


def _agent(ck: dict) -> dict:
    return ck["agent_states"][0][1]["fields"]


@pytest.mark.parametrize(("change", "message"), [
    (lambda ck: _agent(ck)["status"].update(value="sleeping"),
     "agent_states[0][1].fields.status.value: must be one of learning, forgetting, "
     "forgotten, got 'sleeping'"),
    (lambda ck: _agent(ck)["unlearn_visits"].update(value=-3),
     "fields.unlearn_visits.value: must be a number in [0, 6], got -3"),
    (lambda ck: _agent(ck)["unlearn_visits"].update(value=7),
     "fields.unlearn_visits.value: must be a number in [0, 6], got 7"),
    (lambda ck: ck.update(iteration=1e299), "checkpoint.iteration: must be 6, got 1e+299"),
    (lambda ck: ck.update(iteration=7), "checkpoint.iteration: must be 6, got 7"),
    (lambda ck: ck.update(now=1e299), "checkpoint.now: must be a finite number in [0, "
     "1e+15], got 1e+299"),
    (lambda ck: ck.update(seen="0,1"), "checkpoint.seen: must be a list, got '0,1'"),
    (lambda ck: ck.update(seen=[0, 1, 7]), "checkpoint.seen[2]: must be an integer in"),
    (lambda ck: ck.update(seen=[1, 0, 2]), "checkpoint.seen[1]: must be above seen[0] = 1"),
    (lambda ck: ck.update(seen=[0, 0, 2]), "checkpoint.seen[1]: must be above seen[0] = 0"),
    (lambda ck: ck.update(seen=[0, 1]), "checkpoint.covered: must be false"),
    (lambda ck: ck.update(covered="yes"), "checkpoint.covered: must be "),
    (lambda ck: ck.update(covered=not ck["covered"]), "checkpoint.covered: must be "),
    (lambda ck: ck["counters"].update(cum_bits=1e30),
     "checkpoint.counters.cum_bits: must be an integer in 0..9007199254740992, got 1e+30"),
    (lambda ck: ck["counters"].update(cum_bits=10**30),
     "checkpoint.counters.cum_bits: must be an integer in 0..9007199254740992"),
    (lambda ck: ck["links"][0].__setitem__(2, math.nan),
     "checkpoint.links[0][2]: must be a finite number in [0, 1e+15], got nan"),
    (lambda ck: ck["links"][0].__setitem__(2, -1.0), "checkpoint.links[0][2]: must be"),
    (lambda ck: ck["links"].pop(), "checkpoint.links: must hold every link of this network"),
    (lambda ck: ck.update(current=[0, 1]), "checkpoint.current: must be an integer in "
     "0..2, got [0, 1]"),
    (lambda ck: ck.update(previous=3), "checkpoint.previous: must be an integer in 0..2"),
    (lambda ck: ck["agent_states"].append([0, ck["agent_states"][0][1]]),
     "agent_states: must have at most 3 items"),
    (lambda ck: ck["streams"].update({"agent.9": ck["streams"]["agent.0"]}),
     "checkpoint.streams['agent.9']: not a stream of this network"),
    (lambda ck: ck["streams"]["agent.0"]["state"].update(inc=2),
     "streams['agent.0'].state.inc: must be an odd integer"),
])
def test_the_listed_tampered_states(tmp_path: Path, capsys, change, message) -> None:
    _checkpoint_case(tmp_path, capsys, change, message)


def test_inf_in_an_agent_array_is_refused(tmp_path: Path, capsys) -> None:
    state = _save(tmp_path, LATENCY, LATENCY_SETS)
    with np.load(state / "arrays.npz") as npz:
        arrays = {k: npz[k] for k in npz.files}
    arrays["run0.agent.1.eta"] = arrays["run0.agent.1.eta"].copy()
    arrays["run0.agent.1.eta"][0] = np.inf
    np.savez(state / "arrays.npz", **arrays)
    assert "arrays.npz' " + CHANGED in _load_error(LATENCY, LATENCY_SETS, state)
    _reseal(state)
    assert ("arrays.npz: the array 'run0.agent.1.eta' holds inf"
            in _load_error(LATENCY, LATENCY_SETS, state))
    arrays["run0.agent.1.eta"] = np.zeros(3)
    np.savez(state / "arrays.npz", **arrays)
    _reseal(state)
    assert ("the array 'run0.agent.1.eta' is float64 of shape (3,); it must be float64 of "
            "shape (2,)" in _load_error(LATENCY, LATENCY_SETS, state))
    del arrays["run0.agent.1.eta"]
    np.savez(state / "arrays.npz", **arrays)
    _reseal(state)
    assert "has no array 'run0.agent.1.eta'" in _load_error(LATENCY, LATENCY_SETS, state)


# --------------------------------------------------------------------------- arrays.npz
def test_a_flipped_byte_in_arrays_npz_is_refused(tmp_path: Path) -> None:
    state = _save(tmp_path, LATENCY, LATENCY_SETS)
    data = (state / "arrays.npz").read_bytes()
    for at in (0, 40, len(data) // 2, len(data) - 30, len(data) - 1):
        flipped = bytearray(data)
        flipped[at] ^= 0x01
        (state / "arrays.npz").write_bytes(bytes(flipped))
        assert f"arrays.npz' {CHANGED}" in _load_error(LATENCY, LATENCY_SETS, state), at
    (state / "arrays.npz").write_bytes(data)
    (state / "state.json").write_text((state / "state.json").read_text() + " ")
    result = _cli(["run", LATENCY, *_sets(LATENCY_SETS), "--seed", "3", "--no-progress",
                   "--load-state", str(state)])
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and f"state.json' {CHANGED}" in result.stderr


def _npy_header(shape: tuple[int, ...], dtype: str = "<f8") -> bytes:
    """A version 1.0 ``.npy`` header claiming ``shape``."""
    text = repr({"descr": dtype, "fortran_order": False, "shape": shape})
    pad = 64 - (10 + len(text) + 1) % 64
    text = text + " " * pad + "\n"
    return b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text.encode()


def test_a_header_claiming_1e12_elements_allocates_nothing(tmp_path: Path) -> None:
    """An array whose header claims 10^12 float64 (7.28 TiB) over 16 bytes of data:
    refused from its header, in a process that could not allocate even 4 GiB."""
    state = _save(tmp_path, LATENCY, LATENCY_SETS)
    with np.load(state / "arrays.npz") as npz:
        arrays = {k: npz[k] for k in npz.files}
    with zipfile.ZipFile(state / "arrays.npz", "w") as archive:
        for key, value in arrays.items():
            body = (_npy_header((10**12,)) + value.tobytes() if key == "run0.state"
                    else _npy_header(value.shape) + value.tobytes())
            archive.writestr(f"{key}.npy", body)
    _reseal(state)
    started = time.perf_counter()
    result = _cli(["run", LATENCY, *_sets(LATENCY_SETS), "--seed", "3", "--no-progress",
                   "--load-state", str(state)], limit_bytes=4 * 2**30)
    assert time.perf_counter() - started < 60
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1
    assert ("the array 'run0.state''s header claims float64 of shape (1000000000000,) "
            "(8000000000000 bytes), its data are 16 bytes") in result.stderr
    started = time.perf_counter()
    message = _load_error(LATENCY, LATENCY_SETS, state)
    assert time.perf_counter() - started < 5 and "header claims" in message
    # a header that agrees with its data but not with what the run needs: refused before
    # the data are read
    with zipfile.ZipFile(state / "arrays.npz", "w") as archive:
        for key, value in arrays.items():
            value = np.zeros((4, 4)) if key == "run0.state" else value
            archive.writestr(f"{key}.npy", _npy_header(value.shape) + value.tobytes())
    _reseal(state)
    assert ("'run0.state' is float64 of shape (4, 4); it must be float64 of shape (2,)"
            in _load_error(LATENCY, LATENCY_SETS, state))
    with zipfile.ZipFile(state / "arrays.npz", "w") as archive:
        archive.writestr("run0.state.npy", _npy_header((2,), "|O") + b"x" * 16)
    _reseal(state)
    assert "holds object, not numbers" in _load_error(LATENCY, LATENCY_SETS, state)


# --------------------------------------------------------------------------- checksums
def test_a_state_without_or_with_bad_checksums(tmp_path: Path) -> None:
    state = _save(tmp_path, LATENCY, LATENCY_SETS)
    sealed = (state / "checksums.json").read_text()
    (state / "checksums.json").unlink()
    message = _load_error(LATENCY, LATENCY_SETS, state)
    assert "has no checksums.json (saved by an older bflnet" in message
    assert "save the state again with --save-state" in message
    for bad in ("", "{", "[]", '{"format": "bflnet-state-checksums/1"}',
                sealed.replace('"sha256"', '"md5"'), sealed.replace("arrays.npz", "x.npz")):
        (state / "checksums.json").write_text(bad)
        message = _load_error(LATENCY, LATENCY_SETS, state)
        assert "checksums.json" in message
    (state / "checksums.json").write_text(sealed)
    # a directory with checksums is not a fresh target: --force to save over it
    with pytest.raises(ValueError, match="already holds a saved state"):
        get_scenario(LATENCY).run(get_scenario(LATENCY).config(LATENCY_SETS), seed=3,
                                  save_state=state)


# --------------------------------------------------------------------------- empty paths
def test_an_empty_state_path_is_an_error(tmp_path: Path) -> None:
    base = ["run", LATENCY, *_sets(LATENCY_SETS), "--no-progress"]
    for option in ("--load-state", "--save-state"):
        result = _cli([*base, option, ""])
        assert result.returncode == 2
        assert result.stderr == (f"bflnet: error: {option}: must be a directory path, got an "
                                 f"empty one\n")
    scenario = get_scenario(LATENCY)
    config = scenario.config(LATENCY_SETS)
    for key in ("save_state", "load_state"):
        with pytest.raises(ValueError, match="must be a directory path, got an empty one"):
            scenario.run(config, **{key: ""})
        with pytest.raises(TypeError, match="must be a directory path"):
            scenario.run(config, **{key: b"path"})


# --------------------------------------------------------------------------- load and save
def _rows_from_the_request(frame, name: str):
    if name == UNLEARNING:
        return frame[(frame["method"] == "retraining") | (frame["since_request"] >= 0)]
    return frame


@pytest.mark.parametrize(("name", "sets"), [(LATENCY, LATENCY_SETS),
                                            (LATENCY, {"runs": 3, "learn_rounds": 0}),
                                            (UNLEARNING, UNLEARNING_SETS)])
def test_load_and_save_in_one_run(tmp_path: Path, capsys, name, sets) -> None:
    """``--load-state A --save-state B`` and ``--load-state A --save-state A --force``:
    the rows from the request on are the saving run's, byte for byte, and the state saved
    again is the one loaded (it loads again to the same rows)."""
    base = ["run", name, *_sets(sets), "--no-progress", "--seed", "4"]
    a, b = tmp_path / "a", tmp_path / "b"
    saving, other, same, again = (tmp_path / f"{x}.csv" for x in "1234")
    assert main([*base, "--save-state", str(a), "--out", str(saving)]) == 0
    files = {p.name: p.read_bytes() for p in a.iterdir()}
    assert main([*base, "--load-state", str(a), "--save-state", str(b),
                 "--out", str(other)]) == 0
    assert {p.name: p.read_bytes() for p in b.iterdir()} == files
    assert main([*base, "--load-state", str(a), "--save-state", str(a), "--force",
                 "--out", str(same)]) == 0
    assert {p.name: p.read_bytes() for p in a.iterdir()} == files
    assert main([*base, "--load-state", str(a), "--out", str(again)]) == 0
    import pandas as pd

    expected = _rows_from_the_request(pd.read_csv(saving), name).to_csv(index=False)
    for out in (other, same, again):
        assert pd.read_csv(out).to_csv(index=False) == expected
    capsys.readouterr()
    # without --force the loaded directory is not saved over
    assert main([*base, "--load-state", str(a), "--save-state", str(a)]) == 2
    assert "already holds a saved state; pass --force" in capsys.readouterr().err


@pytest.mark.usefixtures("use_tiny_fashion")
def test_forget_svgd_load_and_save_in_one_run(tmp_path: Path) -> None:
    scenario = get_scenario(SVGD)
    config = scenario.config(SVGD_SETS)
    a, b = tmp_path / "a", tmp_path / "b"
    one_run = scenario.run(config, seed=4, save_state=a).to_csv(index=False)
    files = {p.name: p.read_bytes() for p in a.iterdir()}
    other = scenario.run(config, seed=4, load_state=a, save_state=b)
    same = scenario.run(config, seed=4, load_state=a, save_state=a, force=True)
    assert other.to_csv(index=False) == same.to_csv(index=False) == one_run
    assert {p.name: p.read_bytes() for p in b.iterdir()} == files
    assert {p.name: p.read_bytes() for p in a.iterdir()} == files
