"""EM-TDAMP (Xu, Liu, Zhang, Lau): Bayesian federated learning by server EM and client TDAMP.

Submodules, each with one job (import them directly; this package imports nothing heavy):

* :mod:`.moments` — posterior moments of the nonlinear nodes: ReLU in precision form,
  probit tilts, the probit-product and Gaussian output nodes.
* :mod:`.group_sparse` — Module B, exact sum-product over the group-sparse
  Bernoulli-Gaussian prior (eqs. 25-26).
* :mod:`.server_em` — the server's E-step aggregation (eqs. 12-15), the noise-variance
  M-step (eqs. 18-23) and the target-sparsity rule.
* :mod:`.damp` — Module A, first piece: GAMP for one linear layer with known inputs.
* :mod:`.damp_mlp` — Module A over a ReLU MLP with biases: BiG-AMP layers, forward and
  backward sweeps, Module B as the weights' prior.
* :mod:`.tdamp_client` — client TDAMP (Algorithm 1): minibatches, sweeps, PasP with the
  extrinsic reset; returns ``φ^k`` and ``σ^k`` for the server.
* :mod:`.heap` — keeps freed heap memory mapped (glibc), so that the sweeps' temporaries
  do not page-fault on every pass.

The derivation and the deviations from the paper are in ``docs/em-tdamp.md``.
"""
