"""Ctrl-C (or SIGTERM) while the ``bflnet`` command is still starting up, its imports not
done: one line and exit code 128 + signal, as for the rest of the command line, never a
traceback; the same for ``python -m bflnet.cli``. The child blocks inside the
import of the command line (a finder that says so on stdout, then sleeps) and the signal
is sent only once it said so: no timing guess."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

import bflnet

ROOT = Path(__file__).resolve().parents[2]

#: A finder whose import of ``{module}`` says so on stdout, then blocks until a signal comes.
SLOW_IMPORT = """
import sys, time

class SlowImport:
    def find_spec(self, name, path=None, target=None):
        if name == {module!r}:
            print("importing", flush=True)
            time.sleep(60)
        return None
"""

#: The console script's code (``bflnet.cli.entry:main``), with an import of the command line
#: that blocks until a signal comes.
CHILD = SLOW_IMPORT.format(module="bflnet.cli.main") + """
from bflnet.cli.entry import main
sys.meta_path.insert(0, SlowImport())
sys.argv[1:] = ["list"]
sys.exit(main())
"""


#: ``python -m bflnet.cli list`` with the registry's import blocking until a
#: signal comes (a ``sitecustomize`` installs the finder before ``-m`` imports anything).
#: The package import that ``-m`` does first must not load the registry: there, before
#: the entry point's handlers, a Ctrl-C would print a traceback.
SITECUSTOMIZE = SLOW_IMPORT.format(module="bflnet.runs.registry") + """
sys.meta_path.insert(0, SlowImport())
"""


def test_the_console_script_is_the_entry_module():
    with open(ROOT / "pyproject.toml", "rb") as f:
        scripts = tomllib.load(f)["project"]["scripts"]
    assert scripts["bflnet"] == "bflnet.cli.entry:main"


def interrupt_while_importing(command: list[str], signum: int, *paths: str) -> None:
    """Start ``command`` with ``paths`` first on its import path, send ``signum`` once it
    says it is inside the blocking import, and check the one line and the exit code."""
    src = str(Path(bflnet.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*paths, src, *sys.path])}
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env)
    try:
        assert child.stdout.readline() == "importing\n"  # inside the import: send it now
        child.send_signal(signum)
        out, err = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == 128 + signum, err
    assert err == f"bflnet: interrupted ({signal.Signals(signum).name})\n"
    assert out == ""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_during_the_imports_ends_in_one_line(signum):
    interrupt_while_importing([sys.executable, "-c", CHILD], signum)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_the_module_entry_point_ends_in_one_line_too(tmp_path, signum):
    (tmp_path / "sitecustomize.py").write_text(SITECUSTOMIZE)
    interrupt_while_importing([sys.executable, "-m", "bflnet.cli", "list"], signum,
                              str(tmp_path))


#: The console script's code, with an import of the command line during which a generator
#: is finalized whose ``finally`` sends the signal to this process and runs on, so that the
#: handler runs inside the finalizer, where Python drops its exception; the import then
#: goes on for up to 30 s (the signal, sent again, comes there), saying nothing.
CHILD_FINALIZER = """
import os, sys, time

class FinalizerDuringImport:
    def find_spec(self, name, path=None, target=None):
        if name == "bflnet.cli.main":
            sys.meta_path.remove(self)
            def body():
                try:
                    yield
                finally:
                    os.kill(os.getpid(), {signum})
                    for _ in range(1000):  # bytecodes: the handler runs here
                        pass
            gen = body()
            next(gen)
            del gen  # finalized here: GeneratorExit, then the finally
            deadline = time.monotonic() + 30.0
            while time.monotonic() < deadline:
                pass
        return None

from bflnet.cli.entry import main
sys.meta_path.insert(0, FinalizerDuringImport())
sys.argv[1:] = ["list"]
sys.exit(main())
"""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_handled_inside_a_finalizer_during_the_imports_is_not_lost(signum):
    """Dropped inside the finalizer, the signal is sent again: one line and 128 + signal,
    not "Exception ignored in ..." and a listing 30 s later."""
    src = str(Path(bflnet.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, *sys.path])}
    done = subprocess.run([sys.executable, "-c", CHILD_FINALIZER.format(signum=int(signum))],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 128 + signum, done.stderr
    assert done.stderr == f"bflnet: interrupted ({signal.Signals(signum).name})\n"
    assert done.stdout == ""


def test_without_a_signal_the_command_runs():
    src = str(Path(bflnet.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, *sys.path])}
    done = subprocess.run([sys.executable, "-c", "import sys; from bflnet.cli.entry import main; "
                           "sys.argv[1:] = ['list']; sys.exit(main())"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "ota-langevin" in done.stdout


#: The console script, interrupted by SIGTERM inside ``bflnet list`` (the handler raises
#: in the loop, after some output waiting in stdout's buffer), with an ``atexit`` callback
#: that prints and an object that says so when the interpreter's tear-down frees it.
CHILD_TEARDOWN = """
import atexit, os, signal, sys, threading
from bflnet.runs import registry

class FreedAtTearDown:
    def __del__(self, write=os.write):
        write(1, b"teardown\\n")

KEEP = FreedAtTearDown()
atexit.register(print, "atexit")
if {thread}:  # not a daemon: runs until stdin is closed
    threading.Thread(target=sys.stdin.read).start()

def interrupted_listing():
    sys.stdout.write("before ")
    os.kill(os.getpid(), signal.SIGTERM)
    while True:  # the handler raises here
        pass

registry.scenario_lines = interrupted_listing
from bflnet.cli.entry import main
sys.argv[1:] = ["list"]
sys.exit(main())
"""


def wait_until_blocked(pid, timeout=60.0):
    """Until the process's main thread sleeps (or the process ended)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return
        if state in ("S", "D", "Z"):
            return
        time.sleep(0.01)


@pytest.mark.parametrize("thread", [False, True], ids=["alone", "thread-running"])
def test_an_interrupted_command_leaves_without_the_tear_down(thread):
    """Interrupted, the command leaves as soon as its ``finally`` blocks and ``atexit``
    callbacks ran and its output is flushed, without the interpreter's tear-down (which
    frees every object, a long run's records included, one by one); while a thread that is
    not a daemon runs, the interpreter ends the process (and waits for the thread) as
    before."""
    src = str(Path(bflnet.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, *sys.path])}
    child = subprocess.Popen([sys.executable, "-c", CHILD_TEARDOWN.format(thread=thread)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stderr.readline() == "bflnet: interrupted (SIGTERM)\n"
        if thread:  # the main thread waits for it (else it would not wait once it ended)
            wait_until_blocked(child.pid)
        child.stdin.close()  # the thread, if any, ends now
        out, err = child.stdout.read(), child.stderr.read()  # to the end: the process ended
        child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == 143 and err == ""
    assert out == ("before atexit\nteardown\n" if thread else "before atexit\n")
