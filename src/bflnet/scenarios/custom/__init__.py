"""``custom-learner``: any registered learner under a random walk, a parameter server or
gossip."""
