"""Langevin learners: DSGLD, CD-BFL (compressed gossip of samples) and CF-FL, and
federated averaged Langevin dynamics (FALD / WFALD), with their chunked and sparse
mixing helpers."""
