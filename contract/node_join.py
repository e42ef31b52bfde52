"""How a GPU node joins (components/selftest/node_join.py declares the check, components/data
/gpu_node_group.py the taint and label on AWS; an admin sets both on an existing cluster's
nodes, docs/selftest.md): every new GPU node carries the startup taint and the label below, and
takes no job until the self-test's node set has passed on it. The check (bootstrap/selftest
/node_join.py) then removes the taint and sets the label to PASSED; on a FAIL it quarantines the
node, keeps the taint and sets the label to FAILED. Either way the node no longer matches the
check's DaemonSet, whose pod on it then goes.

The taint's prefix makes cluster-autoscaler treat it as a startup taint: the node counts as one
that will be ready shortly, not as one that cannot take the pending pods (kubernetes/autoscaler
cluster-autoscaler/FAQ.md, "Startup taints": "all taints with the prefix
`startup-taint.cluster-autoscaler.kubernetes.io/`"; utils/taints/taints.go StartupTaintPrefix;
at cluster-autoscaler-1.35.0, the chart's appVersion, and at 1.36.1)."""

from __future__ import annotations

TAINT_KEY = "startup-taint.cluster-autoscaler.kubernetes.io/gpu-platform-node-join"
TAINT_VALUE = "pending"
TAINT_EFFECT = "NoSchedule"
LABEL = "gpu-platform/node-join"
PENDING = "pending"
PASSED = "passed"
FAILED = "failed"
# A FAIL past the pool's breaker (selftest.node_join.max_failed_share): released untested.
RELEASED = "released"
