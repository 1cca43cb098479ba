"""The compressed-DSVGD family: ``dsvgd-sparsifiers``, ``dsvgd-vs-fedavg``, ``forget-svgd``
and ``async-fedavg``."""
