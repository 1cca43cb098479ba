"""The CD-BFL family: ``cdbfl-local-steps``, ``cdbfl-shift`` and ``d2d-medium`` (CD-BFL and
consensus on a shared radio medium)."""
