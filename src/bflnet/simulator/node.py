"""Nodes: agents and the optional server, each with an inbox and a compute-time model."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import simpy

from bflnet.simulator.compute import ComputeModel, FixedStepTime, Work

SERVER = "server"


@dataclass(eq=False)
class Node:
    """A device in the network. ``inbox`` is a SimPy ``Store`` that links deliver into;
    ``state`` and ``rng`` are the agent's private learner state and random stream."""

    id: Any
    inbox: simpy.Store
    compute: ComputeModel = field(default_factory=FixedStepTime)
    #: The agent's private learner state, kept here by the protocol (see ``has_state``).
    state: Any = None
    #: Whether ``state`` has been initialised (by ``learner.init_agent``).
    has_state: bool = False
    #: The agent's own random stream (created on first use).
    rng: np.random.Generator | None = None
    #: When the node is down in this run (a ``faults`` timeline), or ``None``: never.
    outages: Any = None
    #: The node's battery in this run (a ``faults.energy.Tank``), or ``None``: mains power.
    battery: Any = None
    #: Makes the node's compute stream ``compute.<id>`` (set by the network when the
    #: compute model draws); the stream itself is made on the first computation.
    compute_stream: Callable[[], np.random.Generator] | None = None
    compute_rng: np.random.Generator | None = None

    @property
    def is_server(self) -> bool:
        return self.id == SERVER

    def compute_time(self, work: Work) -> float:
        """Simulated seconds ``work`` takes on this node (a model that draws gets the
        node's own stream). A node with a battery is charged for the work now."""
        if self.battery is not None:
            self.battery.spend_work(work.steps, work.flops)
        model = self.compute
        if not model.draws:
            return model.duration(work)
        if self.compute_rng is None:
            if self.compute_stream is None:
                raise ValueError(f"node {self.id!r}: its compute model draws but the node "
                                 "has no compute stream")
            self.compute_rng = self.compute_stream()
        return model.duration(work, self.compute_rng)
