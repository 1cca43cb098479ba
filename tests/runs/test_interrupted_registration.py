"""Ctrl-C while ``bflnet.run()`` imports the scenario modules (library use, no command
line): Python forgets the module whose import it cut, and a retry in the same interpreter
runs that module again. The scenarios it had registered before the cut are forgotten with
it: the retry used to get the half-run module's scenario ("NameError: name 'ClassVar' is
not defined" from its config) and any look-up that loads the modules again failed with
"scenario ... is registered twice"."""

import os
import subprocess
import sys
from pathlib import Path

import bflnet

#: ``bflnet.run`` with a Ctrl-C (KeyboardInterrupt, as the default SIGINT handler raises)
#: inside the import of consensus-averaging's module, just after its scenario registered;
#: then the same call again, and the registry's names.
CHILD = """
import bflnet
from bflnet.runs import registry

register, cut = registry.register, []

def register_then_cut(name, *args, **kwargs):
    wrap = register(name, *args, **kwargs)
    def wrap_then_cut(fn):
        out = wrap(fn)
        if name == "consensus-averaging" and not cut:
            cut.append(name)
            raise KeyboardInterrupt  # in the module's body: its import fails
        return out
    return wrap_then_cut

registry.register = register_then_cut
try:
    bflnet.run("consensus-averaging", K=4, rounds=2)
except KeyboardInterrupt:
    print("interrupted")
frame = bflnet.run("consensus-averaging", K=4, rounds=2)
print(len(frame), frame["event"].iloc[-1])
print(len(registry.scenario_names()) >= len(registry.SCENARIO_MODULES))
"""


def test_a_retry_after_an_interrupted_registration_runs():
    src = str(Path(bflnet.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, *sys.path])}
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "interrupted\n3 round\nTrue\n"
