"""EM-TDAMP's clients of a round in groups, the groups on several threads.

The clients are cut into ``ceil(K / client_group)`` contiguous groups, sizes within one
(:func:`client_groups`, a function of ``K`` and ``client_group`` only). Each group runs
:func:`~.tdamp_client.tdamp_clients` (one batched computation) with one torch thread;
``threads`` only decides how many groups run at once: one after the other on the calling
thread (``threads = 1``), or on ``min(threads, groups)`` Python threads (the kernels
release the GIL), the results put back in client order. A client's result can depend on
the batch it is computed in (its last bits, for some small shapes) but not on the thread
or on how many groups run at the same time, so the results do not depend on ``threads``.

Why groups on threads rather than torch's intra-op threads: each of the ≈ 700 operations
of a DAMP sweep would be split between the threads and end at a barrier; most take
10-300 µs, so the threads spend much of their time waking and waiting (OpenMP spins
while it waits), and on a loaded machine a descheduled thread stalls the other at every
barrier. An exception in one group (or an interrupt of the waiting thread) stops the
other groups before their next minibatch; the first group's error (in client order) is
raised.
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
from .tdamp_client import Cancelled, ClientResult, client_generators, tdamp_clients

__all__ = ["client_groups", "tdamp_clients_grouped"]


def client_groups(clients: int, group: int) -> list[slice]:
    """``ceil(clients / group)`` contiguous groups of ``clients``, sizes within one (at
    most ``group`` each); one group when ``clients <= group``."""
    count = max(1, -(-clients // max(1, group)))
    bounds = [clients * g // count for g in range(count + 1)]
    return [slice(a, b) for a, b in itertools.pairwise(bounds)]


def _one_thread(*args: Any, **kwargs: Any) -> list[ClientResult]:
    """:func:`tdamp_clients` with one torch thread on this thread (MKL's and OpenMP's
    thread counts are per thread once set here)."""
    torch.set_num_threads(1)
    return tdamp_clients(*args, **kwargs)


def tdamp_clients_grouped(
    inputs: Sequence[Tensor],
    targets: Sequence[Tensor],
    priors: list,
    noise_var: float,
    *,
    client_group: int,
    threads: int = 1,
    generators: Sequence[torch.Generator | None] | None = None,
    **kwargs: Any,
) -> list[ClientResult]:
    """:func:`~.tdamp_client.tdamp_clients` (same arguments) with the clients in groups of
    at most ``client_group``, each group one batch on one torch thread, ``threads`` groups
    at once (module docs); the results in client order. Torch's thread count of the
    calling thread is restored afterwards."""
    gens = client_generators(inputs, targets, generators)
    groups = client_groups(len(inputs), client_group)
    workers = max(1, min(threads, len(groups)))
    previous = torch.get_num_threads()
    torch.set_num_threads(1)  # new threads start from this count too (torch's lazy init)
    try:
        if workers == 1:  # one after the other, here
            return [result for g in groups
                    for result in tdamp_clients(inputs[g], targets[g], priors, noise_var,
                                                generators=gens[g], **kwargs)]
        return _on_threads(groups, workers, inputs, targets, priors, noise_var, gens,
                           **kwargs)
    finally:
        torch.set_num_threads(previous)


def _on_threads(groups: list[slice], workers: int, inputs: Sequence[Tensor],
                targets: Sequence[Tensor], priors: list, noise_var: float,
                gens: list, **kwargs: Any) -> list[ClientResult]:
    """The groups on ``workers`` threads, the results in client order."""
    keep_freed_memory()  # before the threads allocate (one heap for all, .heap)
    cancel = threading.Event()
    with ThreadPoolExecutor(workers, thread_name_prefix="emtdamp-clients") as pool:
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
