"""The network levels EKS labels the nodes of topology-reporting EC2 types with."""

# EKS user guide, "Place distributed AI/ML workloads with network topology labels": the labels
# topology.k8s.aws/network-node-layer-1 (top) to -3; EC2 User Guide, "Prerequisites for Amazon
# EC2 topology": p4d.24xlarge and p5.48xlarge report 3 network nodes. Kueue requires
# kubernetes.io/hostname, where used, at the lowest level.
THREE_LAYERS = [
    "topology.k8s.aws/network-node-layer-1",
    "topology.k8s.aws/network-node-layer-2",
    "topology.k8s.aws/network-node-layer-3",
    "kubernetes.io/hostname",
]
