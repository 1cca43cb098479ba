"""TOML config files for `bflnet run --config` and `bflnet sweep --config`: the same files as
the same --set flags, the command line overriding the file, one-line errors for bad files."""

import pandas as pd
import pytest

from bflnet.cli.main import main
from bflnet.runs.config import parse_value
from bflnet.runs.config_file import sweep_request, toml_value
from bflnet.scenarios import get_scenario

NAME = "consensus-averaging"
CLS = get_scenario(NAME).config_cls

# the same run as a TOML file and as command-line flags; the file's values are typed TOML:
# an int for a float field, a whole float for an int field, a bool, "none" for an optional
RUN_TOML = """
scenario = "consensus-averaging"
seed = 3

[params]
graph = "torus"
K = 9
rate_bps = 2000000
rounds = 2e1
loss_prob = 0.125
record_messages = false
max_attempts = "none"
"""
RUN_FLAGS = ["--set", "graph=torus", "--set", "K=9", "--set", "rate_bps=2e6",
             "--set", "rounds=20", "--set", "loss_prob=0.125", "--set", "record_messages=no",
             "--set", "max_attempts=none", "--seed", "3"]


def write(tmp_path, text, name="exp.toml"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def file_bytes(path):
    """A result file's bytes, with its CSV sidecar's if there is one."""
    sidecar = path.with_name(path.name + ".json")
    return path.read_bytes(), sidecar.read_bytes() if sidecar.exists() else None


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_toml_file_and_the_same_set_flags_give_identical_files(tmp_path, suffix):
    config = write(tmp_path, RUN_TOML)
    from_file, from_flags = tmp_path / f"file{suffix}", tmp_path / f"flags{suffix}"
    assert main(["run", "--config", config, "--out", str(from_file)]) == 0
    assert main(["run", NAME, *RUN_FLAGS, "--out", str(from_flags)]) == 0
    assert file_bytes(from_file) == file_bytes(from_flags)
    frame = pd.read_csv(from_file) if suffix == ".csv" else pd.read_parquet(from_file)
    # the settings took effect: 20 rounds on a 3 x 3 torus (degree 4: 36 messages of 64
    # bits a round), all delivered (unlimited ARQ) after some losses
    first = frame.iloc[1]
    assert frame["iteration"].max() == 20 and first["cum_bits_delivered"] == 36 * 64
    assert frame["cum_bits"].iloc[-1] > frame["cum_bits_delivered"].iloc[-1]


def test_the_command_line_overrides_the_file(tmp_path):
    out_in_file = tmp_path / "from-file.csv"
    config = write(tmp_path, RUN_TOML.replace("seed = 3", f'seed = 3\nout = "{out_in_file}"'))
    assert main(["run", "--config", config]) == 0  # the file alone writes where `out` says
    assert out_in_file.exists()
    overridden, expected = tmp_path / "overridden.csv", tmp_path / "expected.csv"
    assert main(["run", NAME, "--config", config, "--set", "K=6", "--set", "rounds=5",
                 "--seed", "4", "--out", str(overridden)]) == 0
    flags = [*RUN_FLAGS, "--set", "K=6", "--set", "rounds=5", "--seed", "4"]
    assert main(["run", NAME, *flags, "--out", str(expected)]) == 0
    assert file_bytes(overridden) == file_bytes(expected)
    assert file_bytes(overridden) != file_bytes(out_in_file)
    # a file without a scenario takes the one named on the command line
    nameless = write(tmp_path, RUN_TOML.replace(f'scenario = "{NAME}"', ""), "nameless.toml")
    assert main(["run", NAME, "--config", nameless, "--out", str(tmp_path / "n.csv")]) == 0
    assert main(["run", NAME, *RUN_FLAGS, "--out", str(tmp_path / "f.csv")]) == 0
    assert file_bytes(tmp_path / "n.csv") == file_bytes(tmp_path / "f.csv")


@pytest.mark.parametrize(("value", "text"), [
    (("K", 7), "7"), (("K", 7.0), "7"), (("K", 2e3), "2000"),
    (("rate_bps", 3), "3"), (("rate_bps", 0.1), "0.1"), (("rate_bps", 1e300), "1e300"),
    (("record_messages", False), "false"), (("graph", "ring"), "ring"),
    (("max_attempts", "none"), "none"), (("max_attempts", 4), "4"),
    (("graph_file", "g.graphml"), "g.graphml"), (("graph_file", "None"), "none"),
])
def test_toml_values_are_typed_exactly_as_set_types_the_same_text(value, text):
    name, toml = value
    typed = toml_value(CLS, name, toml)
    assert typed == parse_value(CLS, name, text)
    assert type(typed) is type(parse_value(CLS, name, text))


@pytest.mark.parametrize(("name", "toml", "message"), [
    ("K", "20", "K: must be an integer >= 2 and <= 1000000, got '20'"),
    ("K", 2.5, "K: must be an integer >= 2 and <= 1000000, got 2.5"),
    ("K", True, "K: must be an integer >= 2 and <= 1000000, got True"),
    ("K", [4, 6], "K: must be an integer >= 2 and <= 1000000, got [4, 6]"),
    ("rate_bps", "1e6", "rate_bps: must be a finite number >= 0.001 and <= 1e+15, got '1e6'"),
    ("record_messages", 1, "record_messages: must be true or false, got 1"),
    ("graph", 3, "graph: must be one of complete, star"),
    ("max_attempts", "4", "max_attempts: must be an integer >= 1 and <= 1000000 or none, got '4'"),
    ("colour", "red", "unknown parameter 'colour'; allowed: graph, K"),
])
def test_a_toml_value_of_the_wrong_type_is_refused_naming_the_field(name, toml, message):
    with pytest.raises(ValueError) as caught:
        toml_value(CLS, name, toml)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def one_line_error(capsys, argv, *texts):
    assert main(argv) == 2, argv
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("bflnet: error: "), err
    for text in texts:
        assert text in err, (text, err)


def test_bad_config_files_give_one_line_errors_with_exit_code_2(tmp_path, capsys):
    head = 'scenario = "consensus-averaging"\n'
    cases = [  # (file text, extra arguments, texts the error must hold)
        (head + "[params\nK = 3\n", [], ["bad.toml: invalid TOML: ", "line 2"]),
        (head + 'colour = "red"\n', [],
         ["bad.toml: unknown key 'colour'; allowed: scenario, seed, out, params"]),
        (head + "grid = {K = [4, 6]}\n", [], ["unknown key 'grid'"]),
        (head + '[params]\nK = "20"\n', [],
         ["bad.toml: K: must be an integer >= 2 and <= 1000000, got '20'"]),
        (head + "[params]\nK = 1\n", [],
         ["K: must be an integer >= 2 and <= 1000000, got 1"]),  # as --set
        (head + "[params]\nrounds = 1.5\n", [],
         ["rounds: must be an integer >= 1 and <= 100000000, got 1.5"]),
        (head + "[params]\ncolour = 1\n", [], ["unknown parameter 'colour'"]),
        ('scenario = "nope"\n', [], ["bad.toml: unknown scenario 'nope'; known: "]),
        ("scenario = 3\n", [], ["bad.toml: scenario: must be a string, got 3"]),
        ("seed = -1\n", [], ["bad.toml: seed: must be a non-negative integer, got -1"]),
        ("params = 3\n", [], ["bad.toml: params: must be a table"]),
        (head, ["cover-time"],
         ["scenario: 'cover-time' on the command line but 'consensus-averaging' in"]),
    ]
    for text, extra, texts in cases:
        config = write(tmp_path, text, "bad.toml")
        one_line_error(capsys, ["run", *extra, "--config", config], *texts)
    one_line_error(capsys, ["run", "--config", str(tmp_path / "missing.toml")],
                   "--config: no file")
    one_line_error(capsys, ["run", "--config", str(tmp_path)], "is a directory")
    (tmp_path / "binary.toml").write_bytes(b"\xff\xfe\x00")
    one_line_error(capsys, ["run", "--config", str(tmp_path / "binary.toml")],
                   "binary.toml: not a UTF-8 text file")


SWEEP_TOML = """
scenario = "consensus-averaging"
seeds = [0, 2]

[params]
rounds = 10
loss_prob = 0.25

[grid]
graph = ["ring", "complete"]
K = [4, 6]
"""


def test_sweep_request_merges_the_file_and_the_command_line(tmp_path):
    config = write(tmp_path, SWEEP_TOML)
    request = sweep_request(None, config, [], [], None, str(tmp_path / "s"))
    assert request.scenario == NAME and request.seeds == [0, 2]
    assert request.grid == {"graph": ["ring", "complete"], "K": [4, 6]}
    assert request.fixed == {"rounds": 10, "loss_prob": 0.25}
    # --set K fixes K (off the grid); --grid loss_prob sweeps it (out of the fixed params)
    request = sweep_request(NAME, config, ["loss_prob=0,0.5"], ["K=5", "rounds=3"], 3,
                            str(tmp_path / "s"))
    assert request.grid == {"graph": ["ring", "complete"], "loss_prob": [0.0, 0.5]}
    assert request.fixed == {"rounds": 3, "K": 5} and request.seeds == 3
    with pytest.raises(ValueError, match="--out: give a directory"):
        sweep_request(None, config, [], [], None, None)


def test_bad_sweep_files_fail_before_any_cluster_starts(tmp_path, capsys, monkeypatch):
    import distributed

    from bflnet.runs import sweep as sweep_module

    def no_cluster(*args, **kwargs):
        raise AssertionError("a cluster was started")

    monkeypatch.setattr(distributed, "Client", no_cluster)
    monkeypatch.setattr(sweep_module, "WorkerPool", no_cluster)
    out = ["--out", str(tmp_path / "never")]
    cases = [
        ('scenario = "consensus-averaging"\nseed = 3\n',
         "unknown key 'seed'; did you mean 'seeds'? allowed: scenario, seeds, out, params, grid"),
        ('scenario = "consensus-averaging"\n[grid]\nK = 4\n',
         "bad.toml: grid: K must be a non-empty list of values, got 4"),
        ('scenario = "consensus-averaging"\n[grid]\nK = [4, "6"]\n',
         "bad.toml: K: must be an integer >= 2 and <= 1000000, got '6'"),
        ('scenario = "consensus-averaging"\n[grid]\nK = [4, 1]\n',
         "K: must be an integer >= 2 and <= 1000000, got 1"),
        ('scenario = "consensus-averaging"\nseeds = "3"\n',
         "seeds: must be a positive count or a list"),
        ('scenario = "consensus-averaging"\n[params]\nK = 4\n[grid]\nK = [4, 6]\n',
         "grid: K is both swept and fixed"),
        ('[grid]\nK = [4, 6]\n', "scenario: name one on the command line"),
    ]
    for text, message in cases:
        one_line_error(capsys, ["sweep", "--config", write(tmp_path, text, "bad.toml"), *out],
                       message)
    assert not (tmp_path / "never").exists()


def test_a_sweep_file_and_the_same_flags_give_identical_tables(tmp_path, capsys):
    config = write(tmp_path, f'out = "{tmp_path / "file.parquet"}"\n' + SWEEP_TOML)
    assert main(["sweep", "--config", config, "--workers", "1", "--no-progress"]) == 0
    flags = ["--grid", "graph=ring,complete", "--grid", "K=4,6", "--set", "rounds=10",
             "--set", "loss_prob=0.25"]
    # a seed list is a file-only option; the same seeds from the command line: --seeds 3
    # gives 0, 1, 2, so compare the rows of seeds 0 and 2
    assert main(["sweep", NAME, *flags, "--seeds", "3", "--workers", "1", "--no-progress",
                 "--out", str(tmp_path / "flags.parquet")]) == 0
    capsys.readouterr()
    from_file = pd.read_parquet(tmp_path / "file.parquet")
    from_flags = pd.read_parquet(tmp_path / "flags.parquet")
    assert sorted(set(from_file["seed"])) == [0, 2] and len(set(from_file["run_id"])) == 8
    kept = from_flags[from_flags["seed"].isin([0, 2])].reset_index(drop=True)
    pd.testing.assert_frame_equal(from_file, kept)
    # with the file's seeds as a count, the two tables are the same bytes
    write(tmp_path, SWEEP_TOML.replace("seeds = [0, 2]", "seeds = 3"), "count.toml")
    assert main(["sweep", "--config", str(tmp_path / "count.toml"), "--workers", "1",
                 "--no-progress", "--out", str(tmp_path / "count.parquet")]) == 0
    assert (tmp_path / "count.parquet").read_bytes() == \
        (tmp_path / "flags.parquet").read_bytes()


LEARNER_TOML = """
scenario = "custom-learner"

[params]
K = 4
rounds = 8

[learner]
noise_var = 2          # an integer for a number setting, as in [params]
prior_var = 0.5
"""


def test_a_learner_table_is_the_same_as_its_dotted_set_flags(tmp_path, capsys):
    from_file, from_flags = tmp_path / "file.csv", tmp_path / "flags.csv"
    assert main(["run", "--config", write(tmp_path, LEARNER_TOML), "--out",
                 str(from_file)]) == 0
    assert main(["run", "custom-learner", "--set", "K=4", "--set", "rounds=8", "--set",
                 "learner.noise_var=2.0", "--set", "learner.prior_var=0.5", "--out",
                 str(from_flags)]) == 0
    assert file_bytes(from_file) == file_bytes(from_flags)
    assert b'"learner.noise_var": 2.0' in file_bytes(from_file)[1]
    capsys.readouterr()
    head = 'scenario = "custom-learner"\n'
    for text, message in [
        (head + "[learner]\nnoise_var = [1]\n",
         "bad.toml: learner.noise_var: must be a number, a string or true / false, got [1]"),
        (head + "[learner]\nnoise_var = 0\n",
         "learner.noise_var: must be a finite number > 0 and <= 1e+12, got 0.0"),
        (head + "[learner]\ncolour = 1\n", "learner.colour: unknown setting of learner "
         "'gaussian-mean'; allowed: learner.theta, learner.noise_var, learner.prior_var"),
        (head + "learner = 3\n", "bad.toml: learner: must be a table ([learner]), got 3"),
        ('scenario = "consensus-averaging"\n[learner]\nnoise_var = 1\n',
         "bad.toml: [learner]: scenario consensus-averaging has no learner settings"),
    ]:
        one_line_error(capsys, ["run", "--config", write(tmp_path, text, "bad.toml")],
                       message)
    request = sweep_request(None, write(tmp_path, head + '[learner]\nprior_var = 2\n[grid]\n'
                                        '"learner.noise_var" = [0.5, 1]\n'), [], [], None,
                            str(tmp_path / "s"))
    assert request.grid == {"learner.noise_var": [0.5, 1]}
    assert request.fixed == {"learner.prior_var": 2}
