"""The storage plane: shared data (FSx for Lustre or CephFS through Rook) and the local NVMe
cache."""
