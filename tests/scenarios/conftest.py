"""Fixtures of the scenario tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bflnet.cli.main import main


@pytest.fixture
def settings_error(capsys, tmp_path) -> Callable[[list[str], str], None]:
    """``check(sets, text)``: ``bflnet run consensus-averaging`` with each of ``sets`` as a
    ``--set`` exits with code 2, one line on stderr containing ``text``, and writes
    nothing."""
    def check(sets: list[str], text: str) -> None:
        out = tmp_path / "r.csv"
        argv = ["run", "consensus-averaging", *(a for s in sets for a in ("--set", s)),
                "--no-progress", "--out", str(out)]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and text in err, err
        assert not out.exists()
    return check
