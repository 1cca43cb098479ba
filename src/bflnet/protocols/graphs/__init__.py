"""Graphs the protocols run on: topologies (NetworkX builders and graph files), mixing
matrices and Metropolis-Hastings random walks."""
