"""The reserved GPU-hours used against those paid, per pool with a reservation window
(gpu_node_groups[].reservation_window): two recording rules the GPU fleet dashboard's
reservation row reads (dashboards/rows/reservations.json).

- used: the GPUs that running pods request on the pool's nodes (kube-state-metrics'
  kube_pod_container_resource_requests, which carries the pod's `node`, and kube_pod_status_phase).
- paid: every GPU of the reservation (the instances it was bought with) from its start to its end,
  whether anything runs or not; no series outside the window."""

from __future__ import annotations

from components.observability.node_series import by_pool
from components.observability.rule_types import Record, Rule
from model.config import PlatformConfig
from model.config.pools import windowed

USED = "gpu_platform_reservation:gpus_allocated:sum"
PAID = "gpu_platform_reservation:gpus_paid:sum"
ROW = "reservations"

RUNNING_GPU_REQUESTS = (
    'sum by (node) (kube_pod_container_resource_requests{resource="nvidia_com_gpu"} '
    'and on(namespace, pod) (kube_pod_status_phase{phase="Running"} == 1))'
)


def reservation_rules(cfg: PlatformConfig) -> list[Rule]:
    groups = {g.name: g for g in windowed(cfg)}
    pools = [p for p in cfg.gpu_pools if p.name in groups]
    if not pools:
        return []
    paid = []
    for pool in pools:
        settings = groups[pool.name].reservation_window
        assert settings is not None
        start, end = int(settings.start.timestamp()), int(settings.end.timestamp())
        gpus = pool.gpus_per_node * settings.instances
        paid.append(
            f"label_replace(vector({gpus}) and on() (vector(time()) >= {start}) "
            f'and on() (vector(time()) < {end}), "pool", "{pool.name}", "", "")'
        )
    return [
        Record(USED, f"sum by (pool) ({by_pool(RUNNING_GPU_REQUESTS, pools)})"),
        Record(PAID, " or ".join(paid)),
    ]
