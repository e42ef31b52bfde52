"""The scheduling plane: priorities, Kueue queues and flavors, MultiKueue, topology, KEDA, and the
training job builder."""
