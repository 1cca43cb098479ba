"""Studies of the network alone: ``cover-time``."""
