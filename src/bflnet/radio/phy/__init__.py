"""The 802.11 physical layer of the shared medium: DCF timing presets
(:mod:`bflnet.radio.phy.timing`)."""

from bflnet.radio.phy.timing import PHYS, Phy, phy_preset

__all__ = ["PHYS", "Phy", "phy_preset"]
