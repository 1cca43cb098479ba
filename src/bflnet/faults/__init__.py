"""Faults: when devices and links are down (availability processes and traces)."""
