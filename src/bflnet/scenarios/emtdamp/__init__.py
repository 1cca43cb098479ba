"""EM-TDAMP: ``emtdamp`` and the comparisons ``emtdamp-boston`` / ``emtdamp-mnist``."""
