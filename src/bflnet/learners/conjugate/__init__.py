"""Conjugate exponential-family learners: G-FVL and its unlearning, the exponential
families and likelihoods, and the Gaussian-mean example."""
