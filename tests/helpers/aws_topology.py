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

# EKS user guide, "Place distributed AI/ML workloads with network topology labels": EKS puts
# topology.k8s.aws/network-node-layer-1 (top) to -3 (-4) on nodes of the types with an EC2
# topology; EC2 User Guide, "Prerequisites for Amazon EC2 topology": g6e, p3dn, p4d, p4de, p5,
# p5e, p5en and p6e-gb200 report three network nodes, p6-b200 four (the AWS Containers blog on
# P6e-GB200 lists a fourth there; shared/FACTS.md). By instance family.
EKS_LAYERS = {"g6e": 3, "p3dn": 3, "p4d": 3, "p4de": 3, "p5": 3, "p5e": 3, "p5en": 3,
              "p6-b200": 4, "p6e-gb200": 3}  # fmt: skip

# GPU Feature Discovery labels the nodes of one multi-node NVLink domain with the same
# `nvidia.com/gpu.clique`, `<ClusterUUID>.<CliqueID>` (dra-driver-nvidia-gpu v0.4.1
# docs/prerequisites.md); families whose nodes sit in such domains: P6e-GB200 (EKS User Guide,
# "Use P6e-GB200 UltraServers with Amazon EKS").
CLIQUE = "nvidia.com/gpu.clique"
NVLINK_FAMILIES = ("p6e-gb200",)
# Nodes of one u-p6e-gb200x72 UltraServer, one NVL72 domain (EKS UltraServer page).
NVL72_NODES = 18


def eks_gfd_labels(instance_type: str, index: int, per_domain: int = NVL72_NODES) -> dict[str, str]:
    """What EKS and GFD put on node `index` of a pool of `instance_type`: the network layers
    (every node under one network node, layer by layer), and on NVLink families the clique of
    the UltraServer the node is in, `per_domain` nodes to an UltraServer."""
    family = instance_type.split(".")[0]
    labels = {
        f"topology.k8s.aws/network-node-layer-{n}": f"nn-{n}"
        for n in range(1, EKS_LAYERS.get(family, 0) + 1)
    }
    if family in NVLINK_FAMILIES:
        labels[CLIQUE] = f"6f1c2a9e-cluster.{index // per_domain}"
    return labels
