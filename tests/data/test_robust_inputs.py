"""Input files a user names or points at: binary, non-UTF-8, oversized fields, unreadable
directories and files, data files that are not what their name says, and values that
cannot be used (non-finite edge weights, a Boston set with nothing to learn). Each ends in
one line naming the file (exit 2 through the CLI), never a traceback, and never the
"aborted" / exit 130 of a Ctrl-C."""

import dataclasses
import errno
import gzip
import os

import pytest

from bflnet.cli.main import main
from bflnet.data import digits
from bflnet.data.vision import ENV_VAR, MNIST
from bflnet.faults.availability import read_trace
from bflnet.runs import registry
from bflnet.simulator.compute import read_compute_trace

ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def one_line(capsys, argv, *texts):
    """The CLI exits 2 with one line on stderr holding ``texts``."""
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, (argv, code, err)
    assert err.count("\n") == 1 and err.startswith("bflnet: error: "), err
    assert "aborted" not in err
    for text in texts:
        assert text in err, (text, err)


def refused(call, *texts):
    """``call()`` raises a one-line ``ValueError`` holding ``texts``."""
    with pytest.raises(ValueError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message, message
    for text in texts:
        assert text in message, (text, message)


# --- trace files (read by the library: no command reads them) -----------------------------

def _binary(path, header):
    path.write_bytes(header.encode() + b"\n\x00\x01\x02,1,2\n")
    return "binary file"


def _latin1(path, header):
    path.write_bytes(header.encode() + b"\nn\xe9ud,1,2\n")
    return "not UTF-8"


def _long_field(path, header):
    path.write_text(f"{header}\n0,{'9' * 200_000},2\n")
    return "line 2: not a valid CSV line (field larger than field limit"


def _long_header(path, header):
    path.write_text(f"{'h' * 200_000},{header}\n0,1,2\n")
    return "line 1: not a valid CSV line"


def _directory(path, header):
    path.mkdir()
    return "no such file"


TRACE_FILES = {"binary": _binary, "latin-1": _latin1, "a 200 kB field": _long_field,
               "a 200 kB header": _long_header, "a directory": _directory}
READERS = {"read_trace": (read_trace, "component,start,end"),
           "read_compute_trace": (read_compute_trace, "node,duration")}


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("case", TRACE_FILES)
def test_a_bad_trace_file_is_one_line(case, reader, tmp_path):
    read, header = READERS[reader]
    path = tmp_path / "trace.csv"
    text = TRACE_FILES[case](path, header)
    refused(lambda: read(path), "trace", text)


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("whole_directory", [False, True], ids=["file", "directory"])
def test_an_unreadable_trace_is_one_line(reader, whole_directory, tmp_path, deny_access):
    read, header = READERS[reader]
    path = tmp_path / "trace.csv"
    path.write_text(f"{header}\n0,1,2\n")
    deny_access(tmp_path if whole_directory else path)
    refused(lambda: read(path), "trace", "cannot read", "Permission denied")


# --- graph files, through the CLI ---------------------------------------------------------

GRAPHS = {
    "weight nan": ("g.txt", b"0 1 nan\n1 2 1\n", "must be a finite number, got nan"),
    "weight inf": ("g.txt", b"0 1 1\n1 2 inf\n", "must be a finite number, got inf"),
    "weight -inf": ("g.csv", b"u,v,w\n0,1,-inf\n1,2,1\n", "got -inf"),
    "weight 1e400": ("g.txt", b"0 1 1e400\n1 2 1\n", "got inf"),
    "weight NaN in GraphML": ("g.graphml", (
        b'<?xml version="1.0"?><graphml xmlns="http://graphml.graphdrawing.org/xmlns">'
        b'<key id="w" for="edge" attr.name="weight" attr.type="double"/>'
        b'<graph edgedefault="undirected"><node id="0"/><node id="1"/><node id="2"/>'
        b'<edge source="0" target="1"><data key="w">NaN</data></edge>'
        b'<edge source="1" target="2"><data key="w">1</data></edge></graph></graphml>'),
        "must be a finite number"),
    "binary": ("g.txt", b"0 1\n\x00\xff\n", "binary file"),
    "latin-1": ("g.txt", b"0 1\n1 n\xe9ud\n", "not UTF-8"),
}


@pytest.mark.parametrize("case", GRAPHS)
def test_a_bad_graph_file_is_one_line(case, tmp_path, capsys):
    name, content, text = GRAPHS[case]
    path = tmp_path / name
    path.write_bytes(content)
    one_line(capsys, ["run", "consensus-averaging", "--set", "graph=file", "--set",
                      f"graph_file={path}", "--set", "rounds=2", "--no-progress"], text)


def test_an_unreadable_graph_file_is_one_line(tmp_path, capsys, deny_access):
    path = tmp_path / "g.txt"
    path.write_text("0 1\n1 2\n")
    deny_access(tmp_path)
    one_line(capsys, ["run", "consensus-averaging", "--set", "graph=file", "--set",
                      f"graph_file={path}", "--set", "rounds=2", "--no-progress"],
             "Permission denied")


def test_finite_edge_weights_still_load(tmp_path):
    from bflnet.protocols.graphs.topologies import load_graph

    path = tmp_path / "g.txt"
    path.write_text("0 1 0.5\n1 2 1e300\n")
    assert sorted(w for _, _, w in load_graph(path).edges(data="weight")) == [0.5, 1e300]


# --- data sets: BFLNET_DATA, the MNIST subset, the Boston CSV -----------------------------

MNIST_RUN = ["run", "emtdamp-mnist", "--set", "rounds=1", "--no-progress"]
BOSTON_RUN = ["run", "emtdamp-boston", "--set", "rounds=1", "--no-progress"]
FASHION_RUN = ["run", "dsvgd-sparsifiers", "--set", "K=2", "--no-progress"]


@pytest.fixture
def no_mnist_idx(monkeypatch):
    """MNIST's IDX files are found nowhere, so its 5 000-image subset is read."""
    monkeypatch.setattr(digits, "MNIST", dataclasses.replace(MNIST, system_dirs=()))


def _csv_rows(n=20, label=lambda i: i % 10):
    return "\n".join(",".join(["0"] * 784 + [str(label(i))]) for i in range(n)) + "\n"


def _not_gzip(tmp_path):
    return os.urandom(4096), "not gzip data"


def _truncated(tmp_path):
    whole = gzip.compress(_csv_rows().encode())
    return whole[: len(whole) // 2], "corrupt or truncated"


def _gzip_of_binary(tmp_path):
    return gzip.compress(b"\x00\xff" * 1000), "not a numeric CSV"


def _gzip_of_wrong_columns(tmp_path):
    return gzip.compress(b"1,2,3\n4,5,6\n"), "expected at least 2 rows of 785 columns"


def _gzip_of_bad_labels(tmp_path):
    return gzip.compress(_csv_rows(label=lambda i: 12).encode()), "labels must be in 0..9"


def _empty(tmp_path):
    return gzip.compress(b"\n"), "not a numeric CSV (no rows)"


SUBSETS = {"not gzip": _not_gzip, "truncated": _truncated, "gzip of binary": _gzip_of_binary,
           "wrong columns": _gzip_of_wrong_columns, "bad labels": _gzip_of_bad_labels,
           "empty": _empty}


@pytest.mark.parametrize("case", SUBSETS)
def test_a_broken_mnist_subset_is_one_line_not_an_abort(case, tmp_path, capsys, monkeypatch,
                                                        no_mnist_idx):
    content, text = SUBSETS[case](tmp_path)
    (tmp_path / digits.MNIST_5K_FILE).write_bytes(content)
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    one_line(capsys, MNIST_RUN, digits.MNIST_5K_FILE, text)


def _unreadable_directory(tmp_path, deny):
    deny(tmp_path)


def _unreadable_file(tmp_path, deny):
    deny(tmp_path / digits.MNIST_5K_FILE)
    deny(tmp_path / "boston_housing.csv")


def _unreadable_subdirectory(tmp_path, deny):
    (tmp_path / digits.MNIST_5K_FILE).unlink()  # the files are looked for in these first
    (tmp_path / "boston_housing.csv").unlink()
    (tmp_path / "mnist").mkdir()
    (tmp_path / "boston").mkdir()
    (tmp_path / "fashion-mnist").mkdir()
    deny(tmp_path / "mnist")
    deny(tmp_path / "boston")
    deny(tmp_path / "fashion-mnist")


UNREADABLE = {"directory": _unreadable_directory, "file": _unreadable_file,
              "subdirectory": _unreadable_subdirectory}
RUNS = {"mnist": MNIST_RUN, "boston": BOSTON_RUN, "fashion-mnist": FASHION_RUN}


# (Fashion-MNIST has no single file of its own directly in BFLNET_DATA to deny)
DATA_CASES = [(case, run) for case in UNREADABLE for run in RUNS
              if (case, run) != ("file", "fashion-mnist")]


@pytest.mark.parametrize(("case", "run"), DATA_CASES)
def test_an_unreadable_bflnet_data_is_one_line(case, run, tmp_path, capsys, monkeypatch,
                                               deny_access, no_mnist_idx):
    (tmp_path / digits.MNIST_5K_FILE).write_bytes(gzip.compress(_csv_rows().encode()))
    (tmp_path / "boston_housing.csv").write_text("1," * 13 + "5\n")
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    UNREADABLE[case](tmp_path, deny_access)
    one_line(capsys, RUNS[run], "cannot read", "Permission denied")


@pytest.mark.skipif(ROOT, reason="root reads any file; the case above fakes the denial")
def test_a_really_unreadable_data_file_is_one_line(tmp_path, capsys, monkeypatch,
                                                   no_mnist_idx):
    path = tmp_path / digits.MNIST_5K_FILE
    path.write_bytes(gzip.compress(_csv_rows().encode()))
    path.chmod(0)
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    one_line(capsys, MNIST_RUN, "cannot read", "Permission denied")


def _boston(rows):
    return "\n".join(",".join(map(str, row)) for row in rows) + "\n"


BOSTONS = {
    "every row the same": (_boston([[1] * 13 + [5]] * 30), "the same in every row"),
    "the target constant": (_boston([[i] * 13 + [5] for i in range(30)]),
                            "the target MEDV is the same in every row"),
    "every feature constant": (_boston([[1] * 13 + [i] for i in range(30)]),
                               "every feature is the same in every row"),
    "binary": ("\x00\x01" * 100, "no data rows"),
    "too few rows": (_boston([[i] * 14 for i in range(50)]), "has 50 rows; at least 104"),
    "nan": (_boston([[1] * 13 + ["nan"]] + [[i] * 14 for i in range(30)]), "non-finite"),
}


@pytest.mark.parametrize("case", BOSTONS)
def test_a_boston_csv_with_nothing_to_learn_is_refused(case, tmp_path, capsys):
    text, message = BOSTONS[case]
    path = tmp_path / "boston.csv"
    path.write_text(text)
    one_line(capsys, [*BOSTON_RUN, "--set", f"boston_csv={path}"], message)


def test_a_corrupt_gzipped_idx_file_is_one_line(tmp_path, capsys, monkeypatch):
    for stem in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                 "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        (tmp_path / f"{stem}.gz").write_bytes(b"\x1f\x8b" + os.urandom(100))
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    one_line(capsys, FASHION_RUN, "idx", "corrupt or truncated")


def test_an_end_of_file_error_anywhere_is_an_error_not_an_abort(capsys, monkeypatch):
    def run(*args, **kwargs):
        raise EOFError("Compressed file ended before the end-of-stream marker was reached")
    monkeypatch.setattr(registry.Scenario, "run", run)
    assert main(["run", "consensus-averaging", "--no-progress"]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert lines == ["bflnet: error: unexpected end of data (Compressed file ended before "
                     "the end-of-stream marker was reached)"]


def test_an_os_error_with_a_file_is_one_line(capsys, monkeypatch):
    def run(*args, **kwargs):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), "/some/file")
    monkeypatch.setattr(registry.Scenario, "run", run)
    one_line(capsys, ["run", "consensus-averaging", "--no-progress"],
             "'/some/file': Permission denied")
