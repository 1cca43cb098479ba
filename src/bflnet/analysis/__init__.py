"""Analysis: metrics and theory (calibration, KL, cover time, unlearning latency) and plots.

The sweep runner is not here: it runs scenarios, so it lives beside them in
:mod:`bflnet.runs.sweep` (layers import one way: scenarios use analysis, not back).
"""
