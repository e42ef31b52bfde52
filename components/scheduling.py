"""Scheduling: PriorityClasses, and Kueue (components/kueue.py) with queue-driven node scaling.

WorkloadPriorityClasses mirror the PriorityClasses, so Kueue orders and preempts workloads as
the scheduler orders pods. Where the cluster-autoscaler is ours (AWS), an AdmissionCheck makes
Kueue ask it for a whole workload's nodes before admitting the workload; an existing cluster
runs no autoscaler of ours, so its queues admit without asking.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.base import PlatformComponent
from components.control_plane import ClusterHandle
from components.gpu_operator import advertised_resources as pool_resources
from components.kueue import (
    KUEUE,
    cluster_queue,
    counts_cpu_and_memory,
    kueue_values,
    local_queue,
    node_offer,
    node_size,
    provisioned,
    provisioning_objects,
    queue_gpus,
    quota_warnings,
    resource_flavor,
    uncounted_resources,
)
from components.shared import pinned_release
from infra.config import PlatformConfig
from infra.config.scheduling import PRIORITIES, Priority


def workload_priority_class(priority: Priority) -> dict[str, Any]:
    """Kueue orders and preempts workloads by this, the twin of the pods' PriorityClass."""
    return {
        "apiVersion": KUEUE,
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": priority.name},
        "value": priority.value,
        "description": priority.description,
    }


def kueue_objects(cfg: PlatformConfig, autoscaled: bool) -> list[dict[str, Any]]:
    """Every Kueue object of the stack, in the order they may be created."""
    sched = cfg.scheduling
    counted = counts_cpu_and_memory(cfg)
    offers = {
        p.name: node_offer(p, node_size(p, sched.flavor(p.name)) if counted else None)
        for p in cfg.gpu_pools
    }
    on_aws = cfg.provider == "aws"
    pools_provisioned = [
        p for p in cfg.gpu_pools if provisioned(p, sched.flavor(p.name), autoscaled)
    ]
    objects = [workload_priority_class(p) for p in PRIORITIES]
    objects += [resource_flavor(p, tainted=on_aws) for p in cfg.gpu_pools]
    if pools_provisioned:
        managed = {r for p in pools_provisioned for r in pool_resources(p)}
        objects += provisioning_objects(sorted(managed))
    teams = sched.all_teams(cfg.namespaces.training)
    for name, gpus in queue_gpus(cfg).items():
        objects.append(
            cluster_queue(
                name,
                cfg,
                gpus,
                offers,
                [p.name for p in pools_provisioned],
                [t.name for t in teams if t.cluster_queue == name],
            )
        )
    objects += [local_queue(t) for t in teams]
    return objects


# ------------------------------------------------------------------------------ component


def type_token(api_version: str, kind: str) -> str:
    """pulumi-kubernetes' type of a kind. The provider splits the token's middle into group and
    version and refuses it without both; the core group, unnamed in `apiVersion: v1`, is spelt
    `core` (`kubernetes:core/v1:Service`)."""
    group, _, version = api_version.rpartition("/")
    return f"kubernetes:{group or 'core'}/{version}:{kind}"


class KubernetesObject(pulumi.CustomResource):
    """An object declared whole, as a builder rendered it: for kinds whose fields sit beside
    `metadata` rather than under `spec` (WorkloadPriorityClass), which
    apiextensions.CustomResource cannot say, and for the rendered Job and its Service."""

    def __init__(self, name: str, obj: dict[str, Any], opts: pulumi.ResourceOptions):
        super().__init__(type_token(obj["apiVersion"], obj["kind"]), name, dict(obj), opts)


@dataclass(frozen=True)
class SchedulingArgs:
    env: str
    cfg: PlatformConfig
    cluster: ClusterHandle
    kueue_namespace: pulumi.Input[str]
    node_selector: dict[str, str]
    # Whether our cluster-autoscaler answers ProvisioningRequests (AWS with the autoscaler).
    autoscaled: bool
    after: Sequence[pulumi.Resource] = ()


class Scheduling(PlatformComponent):
    PLANE = "scheduling"

    def __init__(self, name: str, args: SchedulingArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        for message in quota_warnings(args.cfg):
            pulumi.warn(message)
        for priority in PRIORITIES:
            k8s.scheduling.v1.PriorityClass(
                f"{args.env}-priority-{priority.name}",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=priority.name),
                value=priority.value,
                preemption_policy=priority.preemption_policy,
                global_default=False,
                description=priority.description,
                opts=self.child(),
            )
        release = pinned_release(
            f"{args.env}-kueue",
            "kueue",
            args.kueue_namespace,
            kueue_values(
                args.node_selector,
                uncounted_resources(args.cfg),
                [t.name for t in args.cfg.scheduling.all_teams(args.cfg.namespaces.training)],
            ),
            self.child(depends_on=[*args.cluster.schedulable, *args.after]),
        )
        # Kueue's webhooks validate its objects: they must be running first.
        for obj in kueue_objects(args.cfg, args.autoscaled):
            meta = obj["metadata"]
            where = f"{meta['namespace']}-" if "namespace" in meta else ""
            KubernetesObject(
                f"{args.env}-{obj['kind'].lower()}-{where}{meta['name']}",
                obj,
                self.child(depends_on=[release]),
            )
        self.register_outputs({"kueue": release.name})
