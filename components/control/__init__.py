"""The control plane: the network, the cluster (EKS or an existing one) and its namespaces."""
