"""The shared radio medium: positions, path loss, SINR at the end of each packet,
half-duplex radios, broadcast and MACs (none, TDMA, CSMA, slotted ALOHA).

``Network(medium=SharedMediumSpec(RadioSpec(...), mac=Csma()))`` switches a network from
independent links (the default, ``medium=None``) to one shared medium.
"""

from bflnet.radio.air import Air, SharedMediumSpec
from bflnet.radio.mac import MACS, Aloha, Csma, NoMac, Tdma, distance2_colouring, make_mac
from bflnet.radio.medium import SharedMedium
from bflnet.radio.pathloss import LogDistance, noise_dbm
from bflnet.radio.positions import LAYOUTS, node_positions
from bflnet.radio.spec import FADINGS, RECEPTIONS, RadioSpec, packet_error_rate

__all__ = ["FADINGS", "LAYOUTS", "MACS", "RECEPTIONS", "Air", "Aloha", "Csma", "LogDistance",
           "NoMac", "RadioSpec", "SharedMedium", "SharedMediumSpec", "Tdma",
           "distance2_colouring", "make_mac", "node_positions", "noise_dbm",
           "packet_error_rate"]
