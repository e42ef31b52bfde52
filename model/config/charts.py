"""Which pinned charts a stack installs, and the chart versions a stack takes ahead of the pins
(`gpu-platform:charts`): dev takes a Kueue or GPU Operator bump before prod, with the digest of
the new version reviewed in the lock (model/charts.lock.json, `make charts-lock`) and its chart
rendered and validated by the plan like the pinned one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from model.config.base import FieldProblem, FieldProblems, Settings, shaped
from model.config.fabric import RDMA_FABRICS
from model.dra import driver_pools
from model.versions import (
    CHART_LOCK,
    CHARTS,
    OVERRIDE_FLOORS,
    OVERRIDE_REFUSED,
    SUPPORTED_KUBERNETES_VERSIONS,
    locked_versions,
    version_key,
)

if TYPE_CHECKING:
    from model.config import PlatformConfig

# A Helm chart version as repositories publish them: SemVer 2, some with a leading v
# (gpu-operator v26.7.0, rook-ceph v1.20.6).
ChartVersion = Annotated[
    str,
    shaped(
        r"v?[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.+-]+)?",
        "a chart version such as 0.19.3 or v26.7.1",
    ),
]


class ChartOverride(Settings):
    """One chart at another version than the one pinned in model/versions.py CHARTS."""

    version: ChartVersion = Field(
        description="The chart version this stack installs instead of the pin, e.g. `0.19.3`. "
        "It must be recorded in model/charts.lock.json (`make charts-lock charts` records "
        "and pulls every version a stack names) and in the chart cache, where the plan renders "
        "and validates it like the pin.",
    )


def installed_charts(cfg: PlatformConfig) -> list[str]:
    """The pinned charts (model/versions.CHARTS keys) the stack installs, as the components
    declare them; an add-on an existing cluster runs itself (existing.addons) is not one."""
    ceph = cfg.storage.ceph
    multus = ceph is not None and ceph.network.provider == "multus"
    aws = cfg.provider == "aws"
    wanted = {
        "cluster-autoscaler": aws and cfg.autoscaler.enabled,
        "aws-efa-k8s-device-plugin": aws and any(g.efa for g in cfg.gpu_node_groups),
        "aws-fsx-csi-driver": cfg.storage.fsx is not None,
        "gpu-operator": cfg.installs("gpu_operator"),
        # GPU (DRA) and NVLink-domain (ComputeDomain) pools alike (infra/composition.py).
        "dra-driver-nvidia-gpu": bool(driver_pools(cfg.gpu_pools)) and cfg.installs("dra_driver"),
        "kube-prometheus-stack": cfg.installs("kube_prometheus_stack"),
        "kueue": cfg.scheduling.enabled and cfg.installs("kueue"),
        "keda": cfg.workload_autoscaling.enabled and cfg.installs("keda"),
        "jobset": cfg.installs("jobset"),
        # RDMA pools need its device plugin; Ceph Multus networks its nv-ipam
        # (components/fabric.needs_network_operator).
        "network-operator": (any(p.fabric in RDMA_FABRICS for p in cfg.gpu_pools) or multus)
        and cfg.installs("network_operator"),
        # Every stack's goodput and self-test history (components/observability/pushgateway.py).
        "prometheus-pushgateway": True,
        "rook-ceph": ceph is not None,
        "ceph-csi-drivers": ceph is not None,
    }
    return [chart for chart, installed in wanted.items() if installed]


def chart_versions(cfg: PlatformConfig) -> dict[str, str]:
    """The version the stack installs of each pinned chart: its override, else the pin."""
    return {
        key: cfg.charts[key].version if key in cfg.charts else chart.version
        for key, chart in CHARTS.items()
    }


def _add_hint(chart_key: str) -> str:
    return (
        f"to add one, keep it in this stack file and run `make charts-lock charts` where "
        f"{CHARTS[chart_key].repository} is reachable (it records the digest the repository "
        f"publishes in {CHART_LOCK.relative_to(CHART_LOCK.parents[1])} and pulls the chart "
        "into .charts/), then review and commit the lock"
    )


def _override_problem(cfg: PlatformConfig, key: str, version: str) -> FieldProblem | None:
    installed = installed_charts(cfg)
    if key not in CHARTS or key not in installed:
        what = "a chart the platform pins" if key not in CHARTS else "a chart this stack installs"
        return FieldProblem(
            f"charts.{key}",
            f"not {what}; this stack installs: {', '.join(sorted(installed))}",
        )
    pin = CHARTS[key].version
    if key in OVERRIDE_REFUSED:
        return FieldProblem(
            f"charts.{key}",
            f"{key} cannot be overridden per stack: {OVERRIDE_REFUSED[key]}; bump it for "
            "every stack in model/versions.py with those facts",
        )
    path = f"charts.{key}.version"
    if version == pin:
        return None
    floor = OVERRIDE_FLOORS.get(key)
    if floor is not None and version_key(version) < version_key(floor[0]):
        return FieldProblem(path, f"{version!r} is older than {floor[0]}: {floor[1]}")
    if cfg.cluster.kubernetes_version not in SUPPORTED_KUBERNETES_VERSIONS:
        return FieldProblem(
            path,
            f"{version!r}: on Kubernetes {cfg.cluster.kubernetes_version}, below the minors the "
            "platform is tested on, only pinned charts run: model/versions.py "
            "CHART_KUBE_VERSIONS knows their kubeVersion, not an override's",
        )
    locked = locked_versions(key)
    if version not in locked:
        recorded = ", ".join(sorted(locked, key=version_key)) or "none"
        return FieldProblem(
            path,
            f"{version!r} is not recorded in the chart lock (recorded for {key}: {recorded}; "
            f"pinned: {pin}), so its digest was never reviewed; {_add_hint(key)}",
        )
    return None


def check_charts(cfg: PlatformConfig) -> None:
    """Every override names a chart the stack installs, one a stack may override, at a version
    the lock records; each problem at its own key."""
    problems = [
        problem
        for key, override in cfg.charts.items()
        if (problem := _override_problem(cfg, key, override.version)) is not None
    ]
    if problems:
        raise FieldProblems(problems)
