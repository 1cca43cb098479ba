"""The exceptions a run or a sweep ends with (a light module: the CLI catches them
without loading SimPy or pandas)."""


class SimulationError(RuntimeError):
    """A run ended by an error; the message names the scenario, node and iteration."""


class PluginError(RuntimeError):
    """A plugin (another distribution's scenario or learner) failed or broke its contract:
    raised, exited or returned the wrong thing. The message names the plugin, the hook and
    what it raised or returned (the CLI exits with code 4)."""


class SweepError(RuntimeError):
    """No run of a sweep succeeded."""


class WriteError(OSError):
    """A result file could not be written (a full disk, a read-only directory, ...); the
    message names the file and the reason, and nothing half-written was left behind."""
