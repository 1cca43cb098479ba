"""Writing results through the CLI: a bad --out is refused in one line before the run,
an existing file only with --force, and an operating-system error while writing (a full
disk, a read-only file system, Ctrl-C) leaves nothing half-written: one line naming the
file and the reason, no truncated table, no table without its sidecar, no temporary file.
Also the --config file's size and nesting bounds."""

import errno
import os

import pandas as pd
import pytest

from bflnet.cli.main import main
from bflnet.files.atomic import temporary_name
from bflnet.runs import registry
from bflnet.runs.config_file import MAX_CONFIG_BYTES, MAX_CONFIG_DEPTH
from bflnet.runs.output import sidecar_path

NAME = "consensus-averaging"
QUICK = [NAME, "--set", "K=5", "--set", "rounds=3", "--no-progress"]


def one_line(capsys, argv, code, *texts):
    """Run the CLI; its exit code is ``code`` and stderr one line holding ``texts``."""
    assert main(argv) == code, argv
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("bflnet: error: "), err
    assert "Traceback" not in err and "aborted" not in err
    for text in texts:
        assert text in err, (text, err)
    return err


@pytest.fixture
def no_run(monkeypatch):
    """Any attempt to run a scenario fails the test (refusals must come before)."""
    monkeypatch.setattr(registry.Scenario, "run",
                        lambda *a, **k: pytest.fail("the run started"))


def listing(directory):
    return sorted(p.name for p in directory.iterdir())


# --- refused before the run: exit 2, one line, nothing created ----------------------------

def _file_parent(tmp_path):
    (tmp_path / "plain").write_text("x")
    return tmp_path / "plain" / "r.csv", "is not a directory"


def _directory(tmp_path):
    (tmp_path / "r.csv").mkdir()
    return tmp_path / "r.csv", "is a directory"


def _long_name(tmp_path):
    return tmp_path / ("x" * 300 + ".csv"), "at most 255"


def _long_sidecar(tmp_path):  # the table's name fits, its .csv.json sidecar's does not
    return tmp_path / ("x" * 248 + ".csv"), "at most 255"


def _long_directory(tmp_path):
    return tmp_path / ("d" * 300) / "r.parquet", "at most 255"


def _long_path(tmp_path):
    return tmp_path.joinpath(*["d" * 200] * 25, "r.csv"), "bytes long"


def _existing(tmp_path):
    (tmp_path / "r.csv").write_text("old")
    return tmp_path / "r.csv", "--force"


def _sidecar_directory(tmp_path):
    (tmp_path / "r.csv.json").mkdir()
    return tmp_path / "r.csv", "where the table's record goes"


BAD_TARGETS = {"parent is a file": _file_parent, "a directory": _directory,
               "the sidecar a directory": _sidecar_directory,
               "300-character name": _long_name, "sidecar name too long": _long_sidecar,
               "300-character directory": _long_directory, "path too long": _long_path,
               "existing file": _existing}


@pytest.mark.parametrize("case", BAD_TARGETS)
def test_a_bad_out_is_refused_before_the_run(case, tmp_path, capsys, no_run):
    target, text = BAD_TARGETS[case](tmp_path)
    before = listing(tmp_path)
    one_line(capsys, ["run", *QUICK, "--out", str(target)], 2, "--out", text)
    assert listing(tmp_path) == before
    if case == "existing file":
        assert target.read_text() == "old"


def test_a_non_regular_out_is_refused_even_with_force(tmp_path, capsys, no_run):
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    one_line(capsys, ["run", *QUICK, "--out", str(fifo), "--force"], 2,
             "not a regular file")


@pytest.mark.parametrize("code", [errno.EROFS, errno.EACCES], ids=["EROFS", "EACCES"])
def test_a_read_only_directory_is_refused_before_the_run(code, tmp_path, capsys, no_run,
                                                         deny_access):
    deny_access(tmp_path, code, writes_only=True)
    one_line(capsys, ["run", *QUICK, "--out", str(tmp_path / "r.csv")], 2,
             "--out: cannot write in", os.strerror(code))
    assert listing(tmp_path) == []


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                    reason="root writes into a read-only directory; the case above fakes it")
def test_a_really_read_only_directory_is_refused_before_the_run(tmp_path, capsys, no_run):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    try:
        one_line(capsys, ["run", *QUICK, "--out", str(locked / "r.csv")], 2,
                 "Permission denied")
    finally:
        locked.chmod(0o755)


def test_a_config_files_out_over_an_existing_file_is_refused(tmp_path, capsys, no_run):
    (tmp_path / "r.csv").write_text("old")
    config = tmp_path / "run.toml"
    config.write_text(f'scenario = "{NAME}"\nout = "{tmp_path / "r.csv"}"\n')
    one_line(capsys, ["run", "--config", str(config)], 2, "already exists", "--force")
    assert (tmp_path / "r.csv").read_text() == "old"


def test_force_overwrites_and_the_result_is_whole(tmp_path, capsys):
    target = tmp_path / "r.csv"
    assert main(["run", *QUICK, "--out", str(target)]) == 0
    first = target.read_bytes(), (tmp_path / "r.csv.json").read_bytes()
    target.write_text("old")
    assert main(["run", *QUICK, "--out", str(target), "--force"]) == 0
    assert (target.read_bytes(), (tmp_path / "r.csv.json").read_bytes()) == first
    assert listing(tmp_path) == ["r.csv", "r.csv.json"]
    assert oct(target.stat().st_mode & 0o777) == oct(0o666 & ~_umask())


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_sweep_out_under_a_file_is_one_line_before_any_cluster(tmp_path, capsys,
                                                                 monkeypatch):
    from bflnet.runs import sweep as sweep_mod

    monkeypatch.setattr(sweep_mod, "WorkerPool",
                        lambda *a, **k: pytest.fail("a worker started"))
    (tmp_path / "plain").write_text("x")
    one_line(capsys, ["sweep", NAME, "--grid", "K=5,6", "--out",
                      str(tmp_path / "plain" / "sw")], 2, "Not a directory")


# --- errors while writing, after the run: exit 1, one line, nothing half-written ----------

def _enospc(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _truncating(real, limit=64 * 1024):
    """A writer that puts ``limit`` bytes of the real output on disk, then finds the disk
    full: what a full disk did to a CSV before."""
    def write(self_or_table, path, *args, **kwargs):
        import io

        buffer = io.BytesIO()
        real(self_or_table, buffer, *args, **kwargs)
        with open(path, "wb") as handle:
            handle.write(buffer.getvalue()[:limit])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    return write


def _full_at_flush(monkeypatch, suffix):
    monkeypatch.setattr(os, "fsync", _enospc)


def _full_mid_table(monkeypatch, suffix):
    if suffix == ".csv":
        monkeypatch.setattr(pd.DataFrame, "to_csv", _truncating(pd.DataFrame.to_csv))
    else:
        import pyarrow.parquet as pq

        monkeypatch.setattr(pq, "write_table", _truncating(pq.write_table, 100))


def _full_at_sidecar(monkeypatch, suffix):
    from pathlib import Path

    real = Path.write_text

    def write_text(self, *args, **kwargs):
        real(self, "{", **kwargs)  # a torn sidecar
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(Path, "write_text", write_text)


def _read_only_at_the_end(monkeypatch, suffix, deny_access=None, directory=None):
    deny_access(directory, errno.EROFS, writes_only=True)


def _interrupted(monkeypatch, suffix):
    def stop(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(os, "fsync", stop)


FAILURES = {"disk full at flush": (_full_at_flush, errno.ENOSPC),
            "disk full mid-table": (_full_mid_table, errno.ENOSPC),
            "disk full at the sidecar": (_full_at_sidecar, errno.ENOSPC),
            "read-only at the end": (_read_only_at_the_end, errno.EROFS)}


WRITE_CASES = [(failure, suffix) for failure in FAILURES for suffix in (".csv", ".parquet")
               if not (failure == "disk full at the sidecar" and suffix == ".parquet")]


@pytest.mark.parametrize(("failure", "suffix"), WRITE_CASES)
@pytest.mark.parametrize("existing", [False, True], ids=["new", "over-old"])
def test_a_failed_write_leaves_nothing_half_written(failure, suffix, existing, tmp_path,
                                                    capsys, monkeypatch, deny_access):
    out = tmp_path / "out"
    out.mkdir()
    target = out / f"r{suffix}"
    old = {}
    if existing:  # --force over a whole earlier result: it must survive a failed write
        assert main(["run", *QUICK, "--out", str(target)]) == 0
        old = {name: (out / name).read_bytes() for name in listing(out)}
    capsys.readouterr()

    real_run = registry.Scenario.run
    inject, code = FAILURES[failure]

    def run_then_fail(self, *args, **kwargs):  # the disk fails once the run is done
        frame = real_run(self, *args, **kwargs)
        if inject is _read_only_at_the_end:
            inject(monkeypatch, suffix, deny_access, out)
        else:
            inject(monkeypatch, suffix)
        return frame
    monkeypatch.setattr(registry.Scenario, "run", run_then_fail)
    argv = ["run", *QUICK, "--out", str(target), *(["--force"] if existing else [])]
    named = sidecar_path(target) if failure == "disk full at the sidecar" else target
    one_line(capsys, argv, 1, f"cannot write {str(named)!r}", os.strerror(code),
             "nothing was written")
    monkeypatch.undo()
    assert {name: (out / name).read_bytes() for name in listing(out)} == old


def test_ctrl_c_while_writing_leaves_no_temporary_file(tmp_path, capsys, monkeypatch):
    real_run = registry.Scenario.run

    def run_then_interrupt(self, *args, **kwargs):
        frame = real_run(self, *args, **kwargs)
        _interrupted(monkeypatch, ".csv")
        return frame
    monkeypatch.setattr(registry.Scenario, "run", run_then_interrupt)
    assert main(["run", *QUICK, "--out", str(tmp_path / "r.csv")]) == 130
    monkeypatch.undo()
    assert listing(tmp_path) == []


def test_a_sweep_table_that_cannot_be_written_is_one_line(tmp_path, capsys, monkeypatch):
    from bflnet.runs import output as output_mod

    real = output_mod.write_parquet

    def write_parquet(frame, path, metadata=None):
        if "table.parquet" in str(path):  # the parts go through; the final table fails
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(frame, path, metadata)
    monkeypatch.setattr("bflnet.runs.sweep.write_parquet", write_parquet)
    out = tmp_path / "sw"
    one_line(capsys, ["sweep", NAME, "--grid", "K=5,6", "--set", "rounds=3", "--workers",
                      "1", "--no-progress", "--out", str(out)], 1,
             f"cannot write {str(out / 'table.parquet')!r}", "No space left on device")
    assert "table.parquet" not in listing(out)
    assert not [p for p in out.rglob("*.tmp")]


def test_temporary_names_fit_wherever_the_target_name_does(tmp_path):
    for length in (1, 40, 200, 255):
        name = temporary_name(tmp_path / ("y" * length)).name
        assert len(name.encode()) <= 255 and name.startswith(".y") and name.endswith(".tmp")


# --- config files: bounded size and nesting -----------------------------------------------

def _huge(tmp_path):
    path = tmp_path / "huge.toml"
    path.write_text("# padding\n" * (MAX_CONFIG_BYTES // 10 + 1))
    return path, "larger than"


def _deep_arrays(tmp_path):
    path = tmp_path / "deep.toml"
    path.write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")
    return path, "nested more than"


def _deep_tables(tmp_path):
    path = tmp_path / "deep.toml"
    path.write_text("a = " + "{b = " * 3000 + "1" + "}" * 3000 + "\n")
    return path, "nested more than"


def _just_too_deep(tmp_path):
    depth = MAX_CONFIG_DEPTH  # [params] is one level, then the arrays
    path = tmp_path / "deep.toml"
    path.write_text("[params]\nK = " + "[" * depth + "1" + "]" * depth + "\n")
    return path, "nested more than"


def _binary(tmp_path):
    path = tmp_path / "bin.toml"
    path.write_bytes(b"\xff\xfe\x00garbage")
    return path, "not a UTF-8"


CONFIGS = {"/dev/zero": lambda tmp_path: ("/dev/zero", "larger than 1048576 bytes"),
           "2 MiB file": _huge, "5000-deep arrays": _deep_arrays,
           "3000-deep inline tables": _deep_tables, "one level too deep": _just_too_deep,
           "binary": _binary}


@pytest.mark.parametrize("command", ["run", "sweep"])
@pytest.mark.parametrize("case", CONFIGS)
def test_a_config_file_too_large_or_too_deep_is_refused_in_one_line(case, command, tmp_path,
                                                                     capsys, no_run):
    path, text = CONFIGS[case](tmp_path)
    argv = [command, "--config", str(path)]
    if command == "sweep":
        argv += [NAME, "--out", str(tmp_path / "sw")]
    one_line(capsys, argv, 2, text)


def test_a_config_file_nested_as_deep_as_allowed_is_read(tmp_path):
    from bflnet.runs.config_file import RUN_KEYS, read_config_file

    path = tmp_path / "ok.toml"
    depth = MAX_CONFIG_DEPTH - 1
    path.write_text("[params]\nK = " + "[" * depth + "1" + "]" * depth + "\n")
    assert read_config_file(path, RUN_KEYS).params["K"] is not None


def test_a_figure_that_cannot_be_written_is_one_line(tmp_path, capsys, deny_access):
    table = tmp_path / "r.csv"
    assert main(["run", *QUICK, "--out", str(table)]) == 0
    capsys.readouterr()
    figures = tmp_path / "figures"
    figures.mkdir()
    deny_access(figures, errno.EROFS, writes_only=True)
    one_line(capsys, ["plot", str(table), "--y", "max_deviation", "--out",
                      str(figures / "f.png")], 1, "cannot write", "Read-only file system")
    assert listing(figures) == []
