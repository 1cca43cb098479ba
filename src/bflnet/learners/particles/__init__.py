"""Particle learners: SVGD and distributed SVGD (DSVGD, compressed DSVGD, Forget-SVGD)."""
