"""Gossip averaging: ``consensus-averaging`` and ``mobile-gossip``."""
