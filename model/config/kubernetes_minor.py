"""Which Kubernetes minors a stack may plan on.

AWS: the minors EKS serves (infra/versions.SUPPORTED_KUBERNETES_VERSIONS). An existing cluster
may run an older minor: it plans, with a warning naming what is untested there, down to the
oldest minor that every pinned chart the stack installs admits (each chart's Chart.yaml
`kubeVersion`, infra/versions.CHART_KUBE_VERSIONS). A chart the cluster already runs
(existing.addons) no longer constrains it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from model.config.base import FieldProblem
from model.config.charts import installed_charts
from model.versions import CHART_KUBE_VERSIONS, CHARTS, SUPPORTED_KUBERNETES_VERSIONS, chart_floor
from model.versions import minor_tuple as _minor

if TYPE_CHECKING:
    from model.config import PlatformConfig

KEY = "cluster.kubernetes_version"


def chart_floors(cfg: PlatformConfig) -> dict[str, str]:
    """The oldest minor each installed chart admits, for those that state one."""
    return {
        chart: floor for chart in installed_charts(cfg) if (floor := chart_floor(chart)) is not None
    }


def below_eks_window(cfg: PlatformConfig) -> bool:
    minor = cfg.cluster.kubernetes_version
    return _minor(minor) < _minor(SUPPORTED_KUBERNETES_VERSIONS[0])


def check_kubernetes_minor(cfg: PlatformConfig) -> None:
    minor = cfg.cluster.kubernetes_version
    valid = ", ".join(SUPPORTED_KUBERNETES_VERSIONS)
    if cfg.provider == "aws":
        if minor not in SUPPORTED_KUBERNETES_VERSIONS:
            raise FieldProblem(KEY, f"{minor!r} is not supported; valid: {valid}")
        check_ami_releases(cfg)
        return
    if not below_eks_window(cfg):
        return
    floors = chart_floors(cfg)
    refusing = {c: f for c, f in floors.items() if _minor(minor) < _minor(f)}
    if refusing:
        oldest = max(floors.values(), key=_minor)
        needs = "; ".join(
            f"{CHARTS[c].name} {CHARTS[c].version} needs kubeVersion "
            f"{CHART_KUBE_VERSIONS[c]!r} (its Chart.yaml)"
            for c in sorted(refusing)
        )
        raise FieldProblem(
            KEY,
            f"{minor!r} is older than the pinned charts this stack installs admit: {needs}. "
            f"The oldest minor they all admit is {oldest} (tested: {valid}); upgrade the "
            "cluster, or set existing.addons.<add-on>: existing where the cluster runs its own",
        )


def check_ami_releases(cfg: PlatformConfig) -> None:
    """A pinned AMI release is built for one Kubernetes minor; EKS refuses a node group whose
    releaseVersion is of another minor than its version (the cluster's)."""
    minor = cfg.cluster.kubernetes_version
    for i, group in enumerate(cfg.gpu_node_groups):
        release = group.ami_release
        if release is not None and ".".join(release.split(".")[:2]) != minor:
            raise FieldProblem(
                f"gpu_node_groups[{i}].ami_release",
                f"{release!r} is a release of Kubernetes {'.'.join(release.split('.')[:2])}, "
                f"not of the cluster's {minor} (cluster.kubernetes_version): pin a "
                f"{minor}.<patch>-<date> release, and change both together on an upgrade",
            )
