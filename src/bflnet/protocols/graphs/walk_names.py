"""The names of the built-in random walks (a light module: configs list them as choices
without loading NetworkX)."""

WALK_NAMES: tuple[str, ...] = ("metropolis-hastings", "uniform-neighbour", "round-robin")
"""Names accepted by :func:`bflnet.protocols.graphs.walks.make_walk`."""
