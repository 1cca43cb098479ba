"""Learners: the maths of Bayesian federated learning, blind to SimPy, graphs and channels.

Names are imported lazily, so that ``import bflnet.learners.base`` (the interfaces) costs
nothing and only the learners a program uses load torch or scipy.
"""

from __future__ import annotations

from bflnet.lazy import lazy_exports

_HOMES = {
    "Array": "base",
    "Combines": "base",
    "ConsensusLearner": "base",
    "GlobalStateLearner": "base",
    "NO_WORK": "base",
    "Payload": "base",
    "PerNeighbour": "base",
    "Update": "base",
    "Work": "base",
    "GossipAdapter": "gossip.gossip_adapter",
    "ConsensusAveraging": "gossip.averaging",
    "BETA": "conjugate.expfam",
    "GAMMA": "conjugate.expfam",
    "GAUSSIAN": "conjugate.expfam",
    "BernoulliLikelihood": "conjugate.expfam",
    "ConjugateLikelihood": "conjugate.expfam",
    "ExpFam": "conjugate.expfam",
    "ExpFamily": "conjugate.expfam",
    "ExponentialLikelihood": "conjugate.expfam",
    "GaussianLikelihood": "conjugate.expfam",
    "Likelihood": "conjugate.expfam",
    "PoissonLikelihood": "conjugate.expfam",
    "GFVL": "conjugate.gfvl",
    "GFVLAgent": "conjugate.gfvl",
    "DSVGD": "particles.dsvgd",
    "AgentFactor": "particles.dsvgd",
    "DSVGDParams": "hyper",
    "FedAvgParams": "hyper",
    "GroupFedAvgParams": "hyper",
    "GroupFedAvg": "federated.group_baselines",
    "DenseMLP": "federated.group_baselines",
    "FedAvg": "federated.fedavg",
    "DSGLD": "langevin.dsgld",
    "CDBFL": "langevin.cdbfl",
    "CFFL": "langevin.cffl",
    "LangevinParams": "hyper",
    "CDBFLParams": "hyper",
}

__getattr__, __dir__, __all__ = lazy_exports(__name__, _HOMES, globals())
