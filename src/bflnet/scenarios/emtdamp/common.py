"""What the EM-TDAMP scenarios share: clients' shards centred by their pooled mean, and
``rounds`` rounds of one learner under the parameter server (round-robin, every client)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from bflnet.scenarios.shared.network_settings import NetworkSettings
    from bflnet.simulator.simulation import Simulation

#: Which clients the server schedules (``bflnet describe``): not the parameter server's
#: default of one agent per iteration.
ALL_CLIENTS = ("every client every round (RoundRobinSelector(K), not the parameter server's "
               "default of one agent per iteration)")

#: The frame rows the scenarios keep: the initial model and one row per round.
ROW_EVENTS = ("init", "iteration")


def centred_shards(images: np.ndarray, labels: np.ndarray, parts: list[np.ndarray],
                   test: tuple[np.ndarray, np.ndarray]
                   ) -> tuple[list[tuple[Any, Any]], tuple[Any, Any]]:
    """Each client's ``(images[p] - mean, labels[p])`` and the test set minus the same
    mean: the pooled training mean (TDAMP needs centred inputs, docs/em-tdamp.md Sec. 6.6),
    computed as the mean of the shards' means (the shards are of equal size)."""
    import numpy as np

    mean = np.mean([images[p].mean(0) for p in parts], axis=0)
    return [(images[p] - mean, labels[p]) for p in parts], (test[0] - mean, test[1])


def run_server_rounds(sim: Simulation, learner: Any, clients: int, settings: NetworkSettings,
                      *, rounds: int, uplink_codec: Any, downlink_codec: Any,
                      eval_every: int = 1, progress: bool = False) -> pd.DataFrame:
    """``rounds`` parameter-server rounds of ``learner`` over ``clients`` clients (nodes
    ``0 .. clients−1``, every one every round, links from ``settings``: with
    ``medium=shared`` and ``broadcast=true`` the state goes down in one broadcast a round);
    the ``init`` and ``iteration`` rows of the frame."""
    import networkx as nx

    from bflnet.protocols.parameter_server import ParameterServerProtocol
    from bflnet.protocols.scheduling import RoundRobinSelector
    from bflnet.protocols.stopping import StopRule

    graph = nx.Graph()
    graph.add_nodes_from(range(clients))
    sim.build_network(graph, server=True, **settings.network_kwargs(graph))
    protocol = ParameterServerProtocol(
        learner, StopRule(max_iterations=rounds), selector=RoundRobinSelector(clients),
        uplink_codec=uplink_codec, downlink_codec=downlink_codec, eval_every=eval_every,
        progress=progress, broadcast=settings.broadcast)
    frame = sim.run(protocol).frame
    return frame[frame["event"].isin(ROW_EVENTS)].reset_index(drop=True)
