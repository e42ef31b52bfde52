"""The data plane: GPU and system node groups, their fabric (EFA, InfiniBand, RoCE), NCCL settings,
the GPU Operator and the cluster-autoscaler."""
