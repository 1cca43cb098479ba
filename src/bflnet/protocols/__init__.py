"""Protocols: topologies, walks, mixing, codecs, and the three communication patterns.

The patterns are SimPy process factories that move messages between nodes and call the
learner's hooks: :class:`ParameterServerProtocol`, :class:`RandomWalkProtocol` and
:class:`ConsensusProtocol`.

Names are imported lazily: importing one submodule loads only what it needs.
"""

from bflnet.lazy import lazy_exports

_HOMES = {
    "Codec": "coding.codec_base",
    "Encoded": "coding.codec_base",
    "ConsensusProtocol": "consensus",
    "ParameterServerProtocol": "parameter_server",
    "RandomWalkProtocol": "random_walk",
    "AgentSelector": "scheduling",
    "AllAgents": "scheduling",
    "RoundRobinSelector": "scheduling",
    "UniformSelector": "scheduling",
    "make_selector": "scheduling",
    "StopRule": "stopping",
    "AirCompUplink": "uplink",
    "DigitalUplink": "uplink",
    "IdealUplink": "uplink",
}
__getattr__, __dir__, __all__ = lazy_exports(__name__, _HOMES, globals())
