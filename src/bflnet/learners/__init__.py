"""Learners: the maths of Bayesian federated learning, blind to SimPy, graphs and channels.

Names are imported lazily, so that ``import bflnet.learners.base`` (the interfaces) costs
nothing and only the learners a program uses load torch or scipy.
"""

from __future__ import annotations

from bflnet.lazy import lazy_exports

_HOMES = {
    "Array": "base", "ConsensusLearner": "base", "GlobalStateLearner": "base",
    "NO_WORK": "base", "Payload": "base", "PerNeighbour": "base", "Update": "base",
    "Work": "base",
    "ConsensusAveraging": "averaging",
    "BETA": "expfam", "GAMMA": "expfam", "GAUSSIAN": "expfam", "BernoulliLikelihood": "expfam",
    "ConjugateLikelihood": "expfam", "ExpFam": "expfam", "ExpFamily": "expfam",
    "ExponentialLikelihood": "expfam", "GaussianLikelihood": "expfam", "Likelihood": "expfam",
    "PoissonLikelihood": "expfam",
    "GFVL": "gfvl", "GFVLAgent": "gfvl",
    "DSVGD": "dsvgd", "AgentFactor": "dsvgd", "DSVGDParams": "hyper", "FedAvgParams": "hyper",
    "GroupFedAvgParams": "hyper", "GroupFedAvg": "group_baselines", "DenseMLP": "group_baselines",
    "FedAvg": "fedavg", "DSGLD": "dsgld", "CDBFL": "cdbfl", "CFFL": "cffl",
    "LangevinParams": "hyper", "CDBFLParams": "hyper",
}

__getattr__, __dir__, __all__ = lazy_exports(__name__, _HOMES, globals())
