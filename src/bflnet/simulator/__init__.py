"""Simulator core: clock, randomness, nodes, links, messages and the record of a run.
Names are imported lazily."""

from bflnet.lazy import lazy_exports

_HOMES = {
    "NO_WORK": "compute",
    "ComputeModel": "compute",
    "FixedStepTime": "compute",
    "FlopsTime": "compute",
    "LogNormalTime": "compute",
    "TraceTime": "compute",
    "read_compute_trace": "compute",
    "Work": "compute",
    "Link": "link",
    "Medium": "link",
    "Delivery": "message",
    "Message": "message",
    "Network": "network",
    "SERVER": "node",
    "Node": "node",
    "Recorder": "recorder",
    "RngStreams": "rng",
    "Outcome": "simulation",
    "RunResult": "simulation",
    "Simulation": "simulation",
    "SimulationError": "simulation",
}
__getattr__, __dir__, __all__ = lazy_exports(__name__, _HOMES, globals())
