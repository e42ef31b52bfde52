"""What NVIDIA's DRA driver (v0.4.1) cannot do on a pool that allocates its GPUs through it
(`gpu_allocation: dra`), refused before anything is declared, each with its source
(../shared/PINS.md, "NVIDIA DRA driver for GPUs" and "cluster-autoscaler and DRA")."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from model.config.base import FieldProblem, FieldProblems
from model.config.gpu_operator import DEVICE_PLUGIN_DEPLOY_LABEL, DEVICE_PLUGIN_OFF
from model.config.scheduling import scales_from_zero
from model.dra import (
    MAX_KUEUE_MAPPINGS,
    MIN_MINOR,
    device_class_quota,
    dra_pools,
    kueue_device_class_mappings,
)
from model.versions import minor_tuple

if TYPE_CHECKING:
    from model.config import PlatformConfig
    from model.config.nodes import GpuSharingSettings

# The driver's sharing feature gates are alpha and off at v0.4.1 (pkg/featuregates/
# featuregates.go: TimeSlicingSettings, MPSSupport).
_SHARING_GATES = {"time-slicing": "TimeSlicingSettings", "mps": "MPSSupport"}


def _dra_pools(cfg: PlatformConfig) -> Iterator[tuple[str, str, GpuSharingSettings]]:
    """(key path, pool name, sharing) of each pool on DRA, as the stack file spells them."""
    if cfg.provider == "aws":
        for i, group in enumerate(cfg.gpu_node_groups):
            if group.gpu_allocation == "dra":
                yield f"gpu_node_groups[{i}]", group.name, group.gpu_sharing
    elif cfg.existing is not None:
        for i, pool in enumerate(cfg.existing.gpu_pools):
            if pool.gpu_allocation == "dra":
                yield f"existing.gpu_pools[{i}]", pool.name, pool.gpu_sharing


def _nvlink_problems(cfg: PlatformConfig) -> list[FieldProblem]:
    """What keeps a GB200 pool's ComputeDomains from working: Kueue charging their channel
    claims, and the driver's one kubelet plugin DaemonSet, which serves GPUs on every node it
    runs on once any pool allocates GPUs through DRA (chart 0.4.1 templates/kubeletplugin.yaml)."""
    problems = []
    pools = {p.name: p for p in cfg.gpu_pools}
    dra = sorted(p.name for p in dra_pools(cfg.gpu_pools))
    minor = cfg.cluster.kubernetes_version
    for i, group in enumerate(cfg.gpu_node_groups if cfg.provider == "aws" else ()):
        pool = pools[group.name]
        if pool.nvlink_domain_nodes is None:
            continue
        if cfg.scheduling.enabled and minor_tuple(minor) < minor_tuple(MIN_MINOR):
            problems.append(
                FieldProblem(
                    "cluster.kubernetes_version",
                    f"{minor}, but pool {pool.name} shares an NVLink domain: its multi-node "
                    "jobs claim a ComputeDomain channel, which Kueue charges only through "
                    f"resource.k8s.io/v1, served from {MIN_MINOR} (Kueue v0.19.2, 'Dynamic "
                    f"Resource Allocation'); valid: {MIN_MINOR} or later",
                )
            )
        if pool.gpu_allocation == "device_plugin" and dra:
            problems.append(
                FieldProblem(
                    f"gpu_node_groups[{i}].gpu_allocation",
                    f"device_plugin, but pool {pool.name} takes ComputeDomain channels from "
                    f"NVIDIA's DRA driver, and pool {', '.join(dra)} makes that driver serve "
                    "GPUs on every node its kubelet plugin runs on: both would hand out this "
                    "pool's GPUs; valid: gpu_allocation dra here too, or device_plugin on "
                    f"{', '.join(dra)}",
                )
            )
    return problems


def check_dra(cfg: PlatformConfig) -> None:
    problems = []
    minor = cfg.cluster.kubernetes_version
    old = minor_tuple(minor) < minor_tuple(MIN_MINOR)
    for path, name, sharing in _dra_pools(cfg):
        if sharing.mode in _SHARING_GATES:
            problems.append(
                FieldProblem(
                    f"{path}.gpu_sharing.mode",
                    f"{sharing.mode!r}, but pool {name} allocates its GPUs through NVIDIA's DRA "
                    f"driver, whose {_SHARING_GATES[sharing.mode]} feature gate is alpha and off "
                    "at v0.4.1 (pkg/featuregates/featuregates.go); valid on a DRA pool: none, "
                    "mig, or gpu_allocation device_plugin for shared GPUs",
                )
            )
        if old and cfg.provider == "aws":
            problems.append(
                FieldProblem(
                    f"{path}.gpu_allocation",
                    f"'dra' on Kubernetes {minor}: EKS allocates GPUs through NVIDIA's DRA driver "
                    f"from {MIN_MINOR} (EKS User Guide, 'Use the NVIDIA DRA driver or device "
                    f"plugin on Amazon EKS'); set cluster.kubernetes_version to {MIN_MINOR} or "
                    "later, or keep device_plugin",
                )
            )
        elif old and cfg.scheduling.enabled:
            problems.append(
                FieldProblem(
                    f"{path}.gpu_allocation",
                    f"'dra' on Kubernetes {minor}: Kueue charges DRA claims only through "
                    f"resource.k8s.io/v1, served from {MIN_MINOR} (Kueue v0.19.2, 'Dynamic "
                    "Resource Allocation'), so no job on the pool would be admitted; valid: "
                    f"Kubernetes {MIN_MINOR} or later, or device_plugin",
                )
            )
        if cfg.provider == "aws" and scales_from_zero(cfg, name):
            problems.append(
                FieldProblem(
                    f"{path}.scaling.min_size",
                    f"0, but pool {name} allocates its GPUs through DRA, and cluster-autoscaler "
                    "builds an empty AWS node group's template node without ResourceSlices "
                    "(cloudprovider/aws/aws_cloud_provider.go TemplateNodeInfo, 1.35.0 and "
                    "1.36.1), so a pod that claims GPUs never scales the group up from zero; "
                    "from one node it does. Valid: min_size 1 or more, or gpu_allocation "
                    "device_plugin to scale from zero",
                )
            )
    for i, group in enumerate(cfg.gpu_node_groups if cfg.provider == "aws" else ()):
        if DEVICE_PLUGIN_DEPLOY_LABEL in group.labels:
            problems.append(
                FieldProblem(
                    f"gpu_node_groups[{i}].labels",
                    f"sets {DEVICE_PLUGIN_DEPLOY_LABEL}, which the platform derives from "
                    "gpu_allocation so that no node runs both the device plugin and the DRA "
                    "driver; remove it and set gpu_allocation (device_plugin or dra) instead",
                )
            )
    for i, pool in enumerate(cfg.existing.gpu_pools if cfg.existing is not None else ()):
        # The admin's nodes carry the switch; a selector that says otherwise names nodes where
        # the pool's GPUs would be handed out twice, or not at all.
        switch = pool.node_selector.get(DEVICE_PLUGIN_DEPLOY_LABEL)
        wanted = DEVICE_PLUGIN_OFF if pool.gpu_allocation == "dra" else None
        if switch is not None and switch != wanted:
            problems.append(
                FieldProblem(
                    f"existing.gpu_pools[{i}].node_selector",
                    f"selects {DEVICE_PLUGIN_DEPLOY_LABEL}={switch}, but the pool's "
                    f"gpu_allocation is {pool.gpu_allocation}: the label is "
                    f"{DEVICE_PLUGIN_OFF!r} exactly on DRA pools' nodes (the platform adds it to "
                    "their selector); remove it from node_selector and set gpu_allocation",
                )
            )
    problems += _nvlink_problems(cfg)
    mappings = kueue_device_class_mappings(device_class_quota(cfg.gpu_pools))
    if len(mappings) > MAX_KUEUE_MAPPINGS:
        problems.append(
            FieldProblem(
                "gpu_node_groups" if cfg.provider == "aws" else "existing.gpu_pools",
                f"the DRA pools' GPUs and MIG profiles need {len(mappings)} Kueue device-class "
                f"mappings; Kueue takes at most {MAX_KUEUE_MAPPINGS} (v0.19.2 "
                "pkg/config/validation.go validateDeviceClassMappings): put fewer MIG profiles "
                "on DRA pools",
            )
        )
    if problems:
        raise FieldProblems(problems)
