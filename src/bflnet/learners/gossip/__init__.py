"""Gossip learners: consensus averaging, and the adapter that runs a global-state learner
under gossip."""
