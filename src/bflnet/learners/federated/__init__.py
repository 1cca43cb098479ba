"""FedAvg and the baselines that share its rounds: group lasso / group SNIP and FedAvg over
the air."""
