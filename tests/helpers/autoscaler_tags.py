"""The tag prefix cluster-autoscaler reads a node group's labels, taints and resources from
while the group is at zero."""

# cluster-autoscaler cloudprovider/aws/README.md, "Scaling a node group to 0".
NODE_TEMPLATE = "k8s.io/cluster-autoscaler/node-template"
