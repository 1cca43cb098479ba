"""What a disk or a wrong address can do to a sweep, through the command line: damaged
parts are found and computed again (one warning each), and an unusable ``--scheduler``
fails at once in one line, with nothing written."""

import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from bflnet.cli.main import main
from bflnet.runs import sweep as sweep_module
from bflnet.runs.output import read_metadata, write_parquet
from bflnet.runs.sweep import load_manifest, sweep_paths

NAME = "consensus-averaging"
ARGS = ["sweep", NAME, "--grid", "K=4,6", "--set", "rounds=30", "--workers", "1",
        "--no-progress"]


def stamps(out):
    """(inode, mtime) of every part: a recomputed part is a new file."""
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns)
            for p in sweep_paths(out).runs.glob("*.parquet")}


def one_line(err):
    return err.count("\n") == 1 and "Traceback" not in err


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished 2 sizes x 4 seeds sweep (8 runs) and its table."""
    out = tmp_path_factory.mktemp("finished") / "sweep"
    assert main([*ARGS, "--seeds", "4", "--out", str(out)]) == 0
    return out, pd.read_parquet(out / "table.parquet")


def copy_sweep(source, target):
    target.mkdir()
    for path in source.rglob("*"):
        if path.is_file():
            (target / path.relative_to(source)).parent.mkdir(parents=True, exist_ok=True)
            (target / path.relative_to(source)).write_bytes(path.read_bytes())
    return target


def damage(parts):
    """Six kinds of damage, one part each: {file name: kind}."""
    a, b, c, d, e, f = parts
    data = a.read_bytes()
    a.write_bytes(data[: len(data) // 2])  # cut by a full disk
    b.write_bytes(b"")  # created, never written
    c.write_bytes(b"PAR1" + os.urandom(3000) + b"PAR1")  # looks like Parquet, is not
    d.write_bytes(e.read_bytes())  # another run's part under this name
    frame = pd.read_parquet(e)
    write_parquet(frame.iloc[:10], e, read_metadata(e))  # its record, but rows are missing
    pq.write_table(pq.read_table(f).replace_schema_metadata({}), f)  # no record at all
    return {a.name: "does not read back", b.name: "does not read back",
            c.name: "does not read back", d.name: "stored record is not that of this run",
            e.name: "it has 10 rows, the manifest recorded 31",
            f.name: "stored record is not that of this run"}


def test_damaged_parts_are_recomputed_with_one_warning_each(finished, tmp_path, capsys):
    out = copy_sweep(finished[0], tmp_path / "sweep")
    parts = sorted(sweep_paths(out).runs.glob("*.parquet"))
    kinds = damage(parts[:6])
    intact = {name: stamp for name, stamp in stamps(out).items() if name not in kinds}
    with sweep_paths(out).manifest.open("ab") as manifest:  # and lines no sweep wrote
        manifest.write(b"\xff\xfe\x00garbage\n5\n{\"run_id\": [1]}\n[]\n")
    assert main([*ARGS, "--seeds", "4", "--out", str(out)]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 7 and "Traceback" not in "".join(lines)
    for name, kind in kinds.items():
        warning = [line for line in lines if name in line]
        assert len(warning) == 1 and warning[0].startswith("bflnet: warning: the part ")
        assert kind in warning[0] and warning[0].endswith("computing it again")
    assert lines[-1].startswith("8 runs: 6 computed, 2 already done, 0 failed")
    after = stamps(out)
    assert len(after) == 8 and all(after[n] == s for n, s in intact.items())
    pd.testing.assert_frame_equal(pd.read_parquet(out / "table.parquet"), finished[1])
    manifest = load_manifest(out)
    assert len(manifest) == 8 and set(manifest["status"]) == {"ok"}
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]
    # the next resume finds every part sound: nothing to say, nothing computed
    assert main([*ARGS, "--seeds", "4", "--out", str(out)]) == 0
    assert capsys.readouterr().err.startswith("8 runs: 0 computed, 8 already done")


def test_a_directory_in_place_of_a_part_is_refused_and_nothing_changes(finished, tmp_path,
                                                                        capsys):
    out = copy_sweep(finished[0], tmp_path / "sweep")
    part = sorted(sweep_paths(out).runs.glob("*.parquet"))[0]
    part.unlink()
    part.mkdir()
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*")}
    assert main([*ARGS, "--seeds", "4", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert one_line(err) and f"--out: '{part}' is a directory, not a run's part" in err
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*")} == before


def serve(reply):
    """A local TCP server that answers every connection with ``reply`` bytes (None: says
    nothing) and keeps it open; its address."""
    server = socket.create_server(("127.0.0.1", 0))
    held = []

    def loop():
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            held.append(connection)
            if reply is not None:
                connection.sendall(reply)

    threading.Thread(target=loop, daemon=True).start()
    return server, f"tcp://127.0.0.1:{server.getsockname()[1]}"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unusable_scheduler_fails_in_one_line_and_writes_nothing(tmp_path, monkeypatch,
                                                                capsys):
    monkeypatch.setattr(sweep_module, "CONNECT_TIMEOUT_S", 1.0)
    http, http_address = serve(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
    silent, silent_address = serve(None)
    cases = {"http://host:8786": "unknown address scheme 'http'",
             "tcp://[::1:8786": "invalid address",
             "": "missing port number",
             "tcp://" + "9" * 5000: "cannot connect to",
             f"tcp://127.0.0.1:{free_port()}": "Timed out trying to connect",
             http_address: "something answers there, but not a Dask scheduler",
             silent_address: "no answer in 1 s"}
    try:
        for address, reason in cases.items():
            out = tmp_path / "never"
            assert main([*ARGS, "--seeds", "1", "--scheduler", address, "--out",
                         str(out)]) == 2
            err = capsys.readouterr().err
            assert one_line(err) and len(err) < 600, (address[:40], err)
            assert err.startswith("bflnet: error: --scheduler: cannot connect to ")
            assert reason in err, (address[:40], err)
            assert not out.exists()
    finally:
        http.close()
        silent.close()


def test_unusable_scheduler_leaves_a_finished_sweep_as_it_was(finished, tmp_path,
                                                            monkeypatch, capsys):
    monkeypatch.setattr(sweep_module, "CONNECT_TIMEOUT_S", 1.0)
    out = copy_sweep(finished[0], tmp_path / "sweep")
    before = {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in out.rglob("*") if p.is_file()}
    # one more seed, so there is something to compute
    assert main([*ARGS, "--seeds", "5", "--scheduler", "nonsense", "--out", str(out)]) == 2
    assert one_line(capsys.readouterr().err)
    assert {p: (p.stat().st_mtime_ns, p.read_bytes()) for p in out.rglob("*")
            if p.is_file()} == before


def test_scheduler_nonsense_from_the_shell_does_not_stall(tmp_path):
    """The whole process: no 40 s stall and no message from the client's clean-up at exit."""
    out = tmp_path / "never"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).parents[2] / "src"), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "bflnet.cli", *ARGS, "--seeds",
                           "1", "--scheduler", "nonsense", "--out", str(out)],
                          capture_output=True, text=True, timeout=30, env=env)
    assert done.returncode == 2
    assert done.stderr == ("bflnet: error: --scheduler: cannot connect to 'nonsense' "
                           "(ValueError: missing port number in address 'nonsense')\n")
    assert not out.exists()


def test_plot_of_an_unfinished_sweep_with_a_damaged_part_is_one_line(finished, tmp_path,
                                                                     capsys):
    out = copy_sweep(finished[0], tmp_path / "sweep")
    (out / "table.parquet").unlink()  # unfinished: the plot assembles the parts
    part = sorted(sweep_paths(out).runs.glob("*.parquet"))[0]
    part.write_bytes(b"PAR1")
    figure = tmp_path / "figure.png"
    assert main(["plot", str(out), "--y", "max_deviation", "--out", str(figure)]) == 2
    err = capsys.readouterr().err
    assert one_line(err) and f"'{part}' does not read back" in err
    assert "run the sweep again" in err and not figure.exists()
