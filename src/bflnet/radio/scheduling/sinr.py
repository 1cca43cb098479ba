"""A TDMA schedule with spatial reuse: slots from the SINR of their transmissions.

Every node ``t`` transmits to its receivers (its neighbours in the communication graph:
its broadcast set, or the one it unicasts to). Two transmissions may share a slot if both
still decode: at every receiver ``r`` of a transmission ``t`` whose mean SNR alone
passes the threshold, the mean SINR with all the other transmissions of the slot stays
at or above it,

    S(t, r) >= threshold * (noise + M * I(r)),

``S`` the mean received power (path loss and shadowing, no fading), ``I(r)`` the sum of
the mean powers at ``r`` of the slot's other transmitters (each counted as the medium
counts it: within its interference range), and ``M = 10^(margin_db / 10)`` a margin on
the interference (0 dB: exactly the mean SINR; a fading margin above it). A node never
shares a slot with one of its receivers or senders (half-duplex). A receiver whose SNR
alone fails is lost to the channel in any slot and constrains nothing.

The check is cumulative, not pairwise: nodes are taken one by one (most receivers
first, then by index) and put in the first slot in which the newcomer's receivers and
the receivers of every transmission already there still decode with everyone in it;
else in a new slot. Each slot keeps the total power at every node and, per node, the
largest total its receptions tolerate, so one candidate is checked against every slot
at once (numpy) over the nodes within its interference range: K = 1600 takes well under
a second.

With ``acks`` (a PHY preset: a unicast frame is acknowledged SIFS after it ends) the
ACKs of a slot, sent at once by the receivers, are checked the same way: each sender
must decode the ACK of its weakest protected receiver (mean powers are reciprocal, so
it arrives with that receiver's own signal power) with, from every other transmission
of the slot, the strongest ACK any of its protected receivers may send (which one
answers depends on the message: the worst case is counted). A broadcast has no ACK, so
its schedule is then a little longer than it needs to be.

>>> import numpy as np
>>> # three nodes on a line, 0 -> 1 and 2 -> 1 would collide at 1; 0 -> 1 alone is fine
>>> around = [(np.array([1, 2]), np.array([1e-6, 1e-9])), (np.array([0, 2]),
...           np.array([1e-6, 1e-6])), (np.array([0, 1]), np.array([1e-9, 1e-6]))]
>>> receivers = [np.array([1]), np.array([0, 2]), np.array([1])]
>>> colours, slots = sinr_schedule(around, receivers, noise_mw=1e-10, threshold=10.0)
>>> slots, len(set(colours.values()))
(3, 3)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: Relative slack kept below the largest tolerated interference (rounding of the sums).
_SLACK = 1e-9


def sinr_schedule(around: Sequence[tuple[np.ndarray, np.ndarray]],
                  receivers: Sequence[np.ndarray], *, noise_mw: float, threshold: float,
                  margin_db: float = 0.0,
                  signals: Sequence[np.ndarray | None] | None = None,
                  frame_slots: int | None = None, acks: bool = False
                  ) -> tuple[dict[int, int], int]:
    """``({node: slot}, slots in a frame)`` of the greedy SINR schedule (module docstring).

    ``around[t]``: ``(nodes, mean powers in mW)`` of node ``t``'s transmission at the other
    nodes where the medium counts it; ``receivers[t]``: its receivers' indices;
    ``signals[t]`` (optional): the mean power at each receiver not in ``around[t]`` (a far
    receiver, whose signal the medium does not count as interference), ``NaN`` for those in
    it. ``acks``: check the ACKs too (module docstring). One-line error when
    ``frame_slots`` is fewer than the schedule needs."""
    k = len(around)
    margin = 10.0 ** (margin_db / 10.0)
    budget = (1.0 - _SLACK) / margin
    # half-duplex: a node and its receivers or senders never share a slot
    pairs = [(t, int(r)) for t in range(k) for r in np.asarray(receivers[t]).tolist()
             if r != t]
    partners: list[list[int]] = [[] for _ in range(k)]
    for t, r in pairs:
        partners[t].append(r)
        partners[r].append(t)
    hd = [np.unique(np.asarray(p, dtype=np.int64)) for p in partners]
    # per transmission: its protected receivers, the interference each tolerates, and
    # the own power counted in that receiver's total (0 for a far receiver)
    rx_nodes, rx_allow, rx_cap = [], [], []
    for t in range(k):
        near, power = around[t]
        rx = np.asarray(receivers[t], dtype=np.int64)
        rx = rx[rx != t]
        inside, own = _counted(near, power, rx)
        signal = own
        if signals is not None and signals[t] is not None:
            signal = np.where(inside, own, np.asarray(signals[t], dtype=np.float64))
        allow = (signal / threshold - noise_mw) * budget
        keep = allow >= 0.0  # decodes alone: protected
        rx_nodes.append(rx[keep])
        rx_allow.append(allow[keep])
        rx_cap.append(allow[keep] + own[keep])
    if acks:
        ack_nodes, ack_power, ack_allow, ack_own = _ack_footprints(around, rx_nodes,
                                                                   rx_allow)
    order = np.lexsort((np.arange(k), -np.array([len(r) for r in receivers], dtype=np.int64)))
    size = 8
    total = np.zeros((size, k))  # per slot: the summed mean power at every node
    cap = np.full((size, k), np.inf)  # per slot: the largest total each node tolerates
    member = np.zeros((size, k), dtype=bool)
    ack_total = np.zeros((size if acks else 0, k))  # the same for the ACKs
    ack_cap = np.full((size if acks else 0, k), np.inf)
    colour = np.full(k, -1, dtype=np.int64)
    slots = 0
    for v in order.tolist():
        near, power = around[v]
        rx, allow = rx_nodes[v], rx_allow[v]
        if slots:
            t_near = total[:slots][:, near]
            ok = ((t_near + power) <= cap[:slots][:, near]).all(axis=1)
            if rx.size:
                ok &= (total[:slots][:, rx] <= allow).all(axis=1)
            if hd[v].size:
                ok &= ~member[:slots][:, hd[v]].any(axis=1)
            if acks and ack_nodes[v].size:
                a_near = ack_nodes[v]
                ok &= ((ack_total[:slots][:, a_near] + ack_power[v])
                       <= ack_cap[:slots][:, a_near]).all(axis=1)
                ok &= ack_total[:slots, v] <= ack_allow[v]
            fits = np.flatnonzero(ok)
        else:
            fits = np.empty(0, dtype=np.int64)
        if fits.size:
            s = int(fits[0])
        else:
            s = slots
            slots += 1
            if slots > size:
                size *= 2
                total = np.vstack([total, np.zeros((size - total.shape[0], k))])
                cap = np.vstack([cap, np.full((size - cap.shape[0], k), np.inf)])
                member = np.vstack([member, np.zeros((size - member.shape[0], k), bool)])
                if acks:
                    more = size - ack_total.shape[0]
                    ack_total = np.vstack([ack_total, np.zeros((more, k))])
                    ack_cap = np.vstack([ack_cap, np.full((more, k), np.inf)])
        colour[v] = s
        member[s, v] = True
        total[s, near] += power
        if rx.size:
            cap[s, rx] = np.minimum(cap[s, rx], rx_cap[v])
        if acks and ack_nodes[v].size:
            ack_total[s, ack_nodes[v]] += ack_power[v]
            ack_cap[s, v] = min(ack_cap[s, v], ack_allow[v] + ack_own[v])
    used = max(slots, 1)
    if frame_slots is not None and used > frame_slots:
        raise ValueError(f"tdma_frame_slots: the SINR schedule of this network needs {used} "
                         f"slots, got {frame_slots}")
    return ({v: int(c) for v, c in enumerate(colour.tolist())},
            used if frame_slots is None else frame_slots)


def _counted(near: np.ndarray, power: np.ndarray, rx: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray]:
    """Which of the receivers ``rx`` are among ``near`` (sorted), and the power counted
    at each (0 where it is not)."""
    if not near.size:
        return np.zeros(rx.size, dtype=bool), np.zeros(rx.size)
    place = np.minimum(np.searchsorted(near, rx), near.size - 1)
    inside = near[place] == rx
    return inside, np.where(inside, power[place], 0.0)


def _ack_footprints(around: Sequence[tuple[np.ndarray, np.ndarray]],
                    rx_nodes: list[np.ndarray], rx_allow: list[np.ndarray]
                    ) -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray, np.ndarray]:
    """Per transmission ``t``: the nodes its ACKs reach and, at each, the strongest of
    its protected receivers' ACK powers (any of them may answer); the interference the
    ACK of its weakest protected receiver tolerates at ``t`` (mean powers are
    reciprocal: that ACK arrives with the frame's own mean power), and the power of its
    own ACKs counted at ``t``."""
    k = len(around)
    nodes, power = [], []
    allow = np.full(k, np.inf)
    own = np.zeros(k)
    for t in range(k):
        rx = rx_nodes[t]
        if not rx.size:
            nodes.append(np.empty(0, dtype=np.int64))
            power.append(np.empty(0))
            continue
        got_n = np.concatenate([around[r][0] for r in rx.tolist()])
        got_p = np.concatenate([around[r][1] for r in rx.tolist()])
        uniq, inverse = np.unique(got_n, return_inverse=True)
        strongest = np.zeros(uniq.size)
        np.maximum.at(strongest, inverse, got_p)
        nodes.append(uniq)
        power.append(strongest)
        allow[t] = float(rx_allow[t].min())  # the weakest receiver's (its ACK's) margin
        place = np.searchsorted(uniq, t)
        if place < uniq.size and uniq[place] == t:
            own[t] = strongest[place]
    return nodes, power, allow, own
