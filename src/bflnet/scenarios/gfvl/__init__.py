"""The G-FVL family: ``gfvl-beta-bernoulli``, ``gfvl-beta-exponential``,
``gfvl-unlearning``, ``churn-gfvl`` and ``unlearning-latency``."""
