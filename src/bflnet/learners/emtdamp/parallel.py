"""EM-TDAMP's clients of a round on several threads, one group of clients per thread.

With torch's intra-op threads, each of the ≈ 700 operations of a DAMP sweep is split
between the threads and ends at a barrier; most of them take 10-300 µs, so the threads
spend much of their time waking and waiting (OpenMP spins while it waits, so the CPU time
grows too), and on a loaded machine a descheduled thread stalls the other at every
barrier. :func:`tdamp_clients_parallel` splits the clients instead: with ``threads``
torch threads, the clients are cut into ``threads`` contiguous groups, each group runs
:func:`~.tdamp_client.tdamp_clients` on its own Python thread with one torch thread
(the kernels release the GIL), and the results are put back in order. Every client's
result is bit for bit the one it gets alone (:mod:`.tdamp_client`), so the split does
not change a number. An exception in one group (or an interrupt of the waiting thread)
stops the other groups before their next minibatch; the first group's error (in client
order) is raised.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import Any

import torch
from torch import Tensor

from .heap import keep_freed_memory
from .tdamp_client import Cancelled, ClientResult, tdamp_clients

__all__ = ["client_groups", "tdamp_clients_parallel"]


def client_groups(clients: int, threads: int) -> list[slice]:
    """``min(threads, clients)`` contiguous groups of ``clients``, sizes within one."""
    groups = max(1, min(threads, clients))
    bounds = [clients * g // groups for g in range(groups + 1)]
    return [slice(a, b) for a, b in itertools.pairwise(bounds)]


def _one_thread(*args: Any, **kwargs: Any) -> list[ClientResult]:
    """:func:`tdamp_clients` with one torch thread on this thread (MKL's and OpenMP's
    thread counts are per thread once set here)."""
    torch.set_num_threads(1)
    return tdamp_clients(*args, **kwargs)


def tdamp_clients_parallel(
    inputs: Sequence[Tensor],
    targets: Sequence[Tensor],
    priors: list,
    noise_var: float,
    *,
    threads: int | None = None,
    generators: Sequence[torch.Generator | None] | None = None,
    **kwargs: Any,
) -> list[ClientResult]:
    """:func:`~.tdamp_client.tdamp_clients` (same arguments, same results) with the
    clients in ``threads`` groups on as many threads (module docs); ``threads``: torch's
    thread count by default. One group (one thread, or one client) runs here."""
    threads = torch.get_num_threads() if threads is None else threads
    clients = len(inputs)
    groups = client_groups(clients, threads)
    if len(groups) < 2:
        return tdamp_clients(inputs, targets, priors, noise_var, generators=generators,
                             **kwargs)
    if len(targets) != clients:
        raise ValueError("inputs: need at least one client, and one targets per client")
    gens = list(generators) if generators is not None else [None] * clients
    if len(gens) != clients:
        raise ValueError("generators: need one per client")
    keep_freed_memory()  # before the threads allocate (one heap for all, .heap)
    cancel = threading.Event()
    previous = torch.get_num_threads()
    torch.set_num_threads(1)  # new threads start from this count (torch's lazy init)
    try:
        with ThreadPoolExecutor(len(groups), thread_name_prefix="emtdamp-clients") as pool:
            futures: list[Future] = [
                pool.submit(_one_thread, inputs[g], targets[g], priors, noise_var,
                            generators=gens[g], cancel=cancel, **kwargs)
                for g in groups]
            try:
                wait(futures, return_when=FIRST_EXCEPTION)
            finally:  # an error, or an interrupt here: the others stop at their next minibatch
                if not all(f.done() and f.exception() is None for f in futures):
                    cancel.set()
        errors = [f.exception() for f in futures]
        real = [e for e in errors if e is not None and not isinstance(e, Cancelled)]
        if real:
            raise real[0]
        return [result for f in futures for result in f.result()]
    finally:
        torch.set_num_threads(previous)
