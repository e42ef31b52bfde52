"""The environment variables the program sets on a pod and the image side reads, each name
spelled here once: components/scheduling/training_job.py, components/selftest/ and jobs/ set
them; bootstrap/selftest, bootstrap/trainkit and recipes/ read them."""

from __future__ import annotations

# Set on every training pod by the job builder: who and where the pod is (downward API
# `fieldRef`), and its own requests and limits (`resourceFieldRef`, in the divisor's unit).
NODE_NAME = "NODE_NAME"
POD_NAME = "POD_NAME"
POD_NAMESPACE = "POD_NAMESPACE"
CPU_REQUEST_MILLICORES = "CPU_REQUEST_MILLICORES"
CPU_LIMIT_MILLICORES = "CPU_LIMIT_MILLICORES"
MEMORY_REQUEST_MIB = "MEMORY_REQUEST_MIB"
MEMORY_LIMIT_MIB = "MEMORY_LIMIT_MIB"

# The self-test's settings (components/selftest/job.py, schedule.py, access.py set them; each
# is a default of a `python -m selftest` flag, bootstrap/selftest/runner.py).
SELFTEST_RUN_ID = "SELFTEST_RUN_ID"
SELFTEST_IMAGE = "SELFTEST_IMAGE"
SELFTEST_OUT = "SELFTEST_OUT"
SELFTEST_SHARED_DATA = "SELFTEST_SHARED_DATA"
SELFTEST_NVME_CACHE = "SELFTEST_NVME_CACHE"
SELFTEST_EXPECTED_GPUS = "SELFTEST_EXPECTED_GPUS"
SELFTEST_FABRIC = "SELFTEST_FABRIC"
SELFTEST_EXPECTED_FABRIC_DEVICES = "SELFTEST_EXPECTED_FABRIC_DEVICES"
SELFTEST_INSTANCE_TYPE = "SELFTEST_INSTANCE_TYPE"
SELFTEST_FLOORS = "SELFTEST_FLOORS"
SELFTEST_FLOOR_SOURCES = "SELFTEST_FLOOR_SOURCES"
SELFTEST_DCGM_URL = "SELFTEST_DCGM_URL"
# The node's own DCGM host engine (`host:port`) that `dcgmi diag` asks; unset: the diagnostic
# SKIPs. And the diagnostic's level (contract/dcgm.py), where a run sets its own instead of its
# check set's (the node-join check: the pool's, selftest.node_join.dcgm_level).
SELFTEST_DCGM_HOSTENGINE = "SELFTEST_DCGM_HOSTENGINE"
SELFTEST_DCGM_LEVEL = "SELFTEST_DCGM_LEVEL"
SELFTEST_PROMETHEUS_URL = "SELFTEST_PROMETHEUS_URL"
# "true" where the GPU autoscalers read DCGM_FI_DEV_GPU_UTIL: the run checks that it is served for
# its own pod. Its own switch, not the URL's presence: a canary reads its baseline from
# Prometheus on stacks that scale nothing on GPU utilisation.
SELFTEST_AUTOSCALER_METRIC = "SELFTEST_AUTOSCALER_METRIC"
SELFTEST_PUSHGATEWAY_URL = "SELFTEST_PUSHGATEWAY_URL"
SELFTEST_CHECKS = "SELFTEST_CHECKS"
SELFTEST_TOPOLOGY_LABELS = "SELFTEST_TOPOLOGY_LABELS"
SELFTEST_CORDON_ON_FAIL = "SELFTEST_CORDON_ON_FAIL"
SELFTEST_CORDON_LABEL = "SELFTEST_CORDON_LABEL"
# The node-join check (components/selftest/node_join.py, bootstrap/selftest/node_join.py): "true"
# where the run settles its node's startup taint (contract/node_join.py).
SELFTEST_NODE_JOIN = "SELFTEST_NODE_JOIN"
# Its circuit breaker: the label selector of the pool's nodes (`k=v,k=v`), and the share (0-1] of
# them that may be held for a failed check.
SELFTEST_NODE_JOIN_POOL_SELECTOR = "SELFTEST_NODE_JOIN_POOL_SELECTOR"
SELFTEST_NODE_JOIN_MAX_FAILED_SHARE = "SELFTEST_NODE_JOIN_MAX_FAILED_SHARE"
# A GPU-stack change's canary (components/selftest/canary.py, bootstrap/selftest/baseline.py): the
# pool whose stored baseline (its nodes' last passing figures) the run is held to, and the
# fraction (0-1) a figure may fall below it.
SELFTEST_BASELINE_POOL = "SELFTEST_BASELINE_POOL"
SELFTEST_BASELINE_TOLERANCE = "SELFTEST_BASELINE_TOLERANCE"
# The quarantine watcher (bootstrap/selftest/watch.py; components/selftest/access.py deploys it):
# the team namespaces, comma-separated, whose failed preflights it reads.
SELFTEST_WATCH_NAMESPACES = "SELFTEST_WATCH_NAMESPACES"
# The idle reclaimer (bootstrap/selftest/reclaim.py; components/selftest/reclaim.py deploys it):
# the team namespaces, comma-separated, whose workloads it may deactivate; the instant query that
# lists each idle job (`namespace`, `job_name`); the ClusterQueues and priority classes,
# comma-separated, whose admitted workloads it reclaims; and the priority from which it never
# does (production training; unset where the stack allows it).
SELFTEST_RECLAIM_NAMESPACES = "SELFTEST_RECLAIM_NAMESPACES"
SELFTEST_RECLAIM_QUERY = "SELFTEST_RECLAIM_QUERY"
SELFTEST_RECLAIM_QUEUES = "SELFTEST_RECLAIM_QUEUES"
SELFTEST_RECLAIM_PRIORITY_CLASSES = "SELFTEST_RECLAIM_PRIORITY_CLASSES"
SELFTEST_RECLAIM_SPARED_PRIORITY = "SELFTEST_RECLAIM_SPARED_PRIORITY"

# A recipe's settings as JSON (jobs/recipe.py sets it; recipes/__main__.py reads it).
RECIPE_SETTINGS = "RECIPE_SETTINGS"
# Where trainkit keeps a job's checkpoints (jobs/team.py sets it; trainkit.checkpoint reads it).
TRAINKIT_CHECKPOINT_DIR = "TRAINKIT_CHECKPOINT_DIR"

# Set on every pod of a JobSet by the job builder, from the annotation the JobSet controller puts
# on each pod template (`jobset.sigs.k8s.io/restart-attempt`, its `status.restarts`) through the
# downward API: how many times the group was restarted; trainkit logs it and counts restarts.
JOBSET_RESTART_ATTEMPT = "JOBSET_RESTART_ATTEMPT"
# Who the job is, for the goodput figures trainkit pushes (the job builder sets them).
TRAINING_JOB_NAME = "TRAINING_JOB_NAME"
TRAINING_JOB_TEAM = "TRAINING_JOB_TEAM"
TRAINING_JOB_QUEUE = "TRAINING_JOB_QUEUE"
TRAINING_JOB_POOL = "TRAINING_JOB_POOL"
# Where trainkit pushes a job's goodput (the stack's Pushgateway; unset: not pushed).
TRAINKIT_PUSHGATEWAY_URL = "TRAINKIT_PUSHGATEWAY_URL"
# trainkit's watchdog: a rank whose step has not advanced within this multiple of its recent
# step time, or within the ceiling in seconds, dumps its stacks and exits HUNG (contract/exits).
TRAINKIT_HANG_FACTOR = "TRAINKIT_HANG_FACTOR"
TRAINKIT_HANG_CEILING_S = "TRAINKIT_HANG_CEILING_S"
