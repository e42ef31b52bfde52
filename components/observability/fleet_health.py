"""The fleet's failure rate as recording rules: each pool node's state once a minute, time
between failures and time to repair per node and per pool, and from them the checkpoint interval
that loses least for each job (the Fleet health dashboard, the Training job dashboard and
`python -m jobs status` read them)."""

from __future__ import annotations

from components.observability.node_series import EKS_AGENT_CONDITIONS, by_pool
from components.observability.rule_types import Record, Rule
from components.observability.training_alerts import JOB, PUSHED
from components.vocabulary import QUARANTINE_LABEL
from contract.training_metrics import CHECKPOINT_SECONDS, JOB_NODES
from model.config import PlatformConfig

# Each node's state is recorded once a minute (the group's interval, FLEET_INTERVAL): a sample
# stands for that many seconds of the node's life.
FLEET_GROUP = "gpu-platform.fleet"
FLEET_INTERVAL, FLEET_INTERVAL_SECONDS = "1m", 60
OUT_OF_SERVICE = "gpu_platform_node:out_of_service:bool"
NODE_FAILURES = "gpu_platform_node:failures:window"
NODE_UP = "gpu_platform_node:in_service_seconds:window"
NODE_DOWN = "gpu_platform_node:out_of_service_seconds:window"
NODE_MTBF = "gpu_platform_node:mtbf_seconds:window"
NODE_MTTR = "gpu_platform_node:mttr_seconds:window"
POOL_MTBF = "gpu_platform_pool:mtbf_seconds:window"
POOL_MTTR = "gpu_platform_pool:mttr_seconds:window"
YOUNG_DALY = "gpu_platform_job:checkpoint_interval_seconds:young_daly"
NODE = "node, pool"


def out_of_service(cfg: PlatformConfig) -> str:
    """1 while a pool's node is out of service, 0 while it serves, by (node, pool): quarantined
    by the self-test (its taint, kube-state-metrics' kube_node_spec_taint, present only while the
    node carries it) or, on AWS, failing a condition the EKS node monitoring agent reports,
    which EKS node repair acts on. Every other node of the pool counts 0 (kube_node_labels)."""
    faults = [f'kube_node_spec_taint{{key="{QUARANTINE_LABEL}"}}']
    if cfg.provider == "aws":
        conditions = "|".join(EKS_AGENT_CONDITIONS)
        faults.append(f'kube_node_status_condition{{condition=~"{conditions}", status="false"}}')
    state = f"max by (node) ({' or '.join(faults)} or 0 * kube_node_labels)"
    return f"max by ({NODE}) ({by_pool(state, cfg.gpu_pools)})"


def fleet_rules(cfg: PlatformConfig) -> list[Rule]:
    """Time between failures and time to repair per node and per pool over alerts.fleet_window,
    from each node's recorded state: a failure is a change from 0 to 1 (a change that is not a
    reset, the state being 0 or 1), in-service and out-of-service time the samples of each state
    times the interval. A node replaced while out of service leaves its downtime in the window
    and no repair: MTTR counts the time to its replacement. MTBF is in-service time over
    failures, MTTR out-of-service time over failures; neither exists for a node or pool with no
    failure in the window."""
    if not cfg.gpu_pools:
        return []
    w = f"{OUT_OF_SERVICE}[{cfg.alerts.fleet_window}]"
    step = FLEET_INTERVAL_SECONDS
    per_pool = "sum by (pool)"
    return [
        Record(OUT_OF_SERVICE, out_of_service(cfg)),
        Record(NODE_FAILURES, f"sum by ({NODE}) (changes({w}) - resets({w}))"),
        Record(NODE_UP, f"sum by ({NODE}) (count_over_time({w}) - sum_over_time({w})) * {step}"),
        Record(NODE_DOWN, f"sum by ({NODE}) (sum_over_time({w})) * {step}"),
        Record(NODE_MTBF, f"sum by ({NODE}) ({NODE_UP}) / ({NODE_FAILURES} > 0)"),
        Record(NODE_MTTR, f"sum by ({NODE}) ({NODE_DOWN}) / ({NODE_FAILURES} > 0)"),
        Record(POOL_MTBF, f"{per_pool} ({NODE_UP}) / ({per_pool} ({NODE_FAILURES}) > 0)"),
        Record(POOL_MTTR, f"{per_pool} ({NODE_DOWN}) / ({per_pool} ({NODE_FAILURES}) > 0)"),
    ]


def checkpoint_rules(cfg: PlatformConfig) -> list[Rule]:
    """Each job's checkpoint interval that loses least, from what it pays per checkpoint (C,
    the seconds its ranks wait on a save) and its pool's MTBF per node over its nodes (a job on
    N nodes stops at any one's failure: M = MTBF / N): sqrt(2 C M) (J. W. Young, "A first
    order approximation to the optimum checkpoint interval", CACM 17(9), 1974; J. T. Daly, "A
    higher order estimate of the optimum checkpoint interval for restart dumps", FGCS 22(3),
    2006, whose higher-order terms change it by under C while C is small beside M)."""
    if not cfg.gpu_pools:
        return []
    cost = f"max by ({JOB}) ({CHECKPOINT_SECONDS}{PUSHED})"
    nodes = f"max by ({JOB}) ({JOB_NODES}{PUSHED})"
    return [Record(YOUNG_DALY, f"sqrt(2 * {cost} * on(pool) group_left {POOL_MTBF} / {nodes})")]
