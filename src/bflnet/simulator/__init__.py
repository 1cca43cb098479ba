"""Simulator core: clock, randomness, nodes, links, messages and the record of a run."""

from bflnet.simulator.compute import NO_WORK, ComputeModel, FixedStepTime, FlopsTime, Work
from bflnet.simulator.link import Link, Medium
from bflnet.simulator.message import Delivery, Message
from bflnet.simulator.network import Network
from bflnet.simulator.node import SERVER, Node
from bflnet.simulator.recorder import Recorder
from bflnet.simulator.rng import RngStreams
from bflnet.simulator.simulation import Outcome, RunResult, Simulation, SimulationError

__all__ = [
    "NO_WORK", "SERVER", "ComputeModel", "Delivery", "FixedStepTime", "FlopsTime", "Link",
    "Medium", "Message", "Network", "Node", "Outcome", "Recorder", "RngStreams", "RunResult",
    "Simulation", "SimulationError", "Work",
]
