"""Scheduling: PriorityClasses, and Kueue (components/scheduling/kueue.py) with queue-driven node
scaling.

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
from components.context import StackContext
from components.control.cluster import ClusterHandle
from components.control.namespaces import job_namespaces
from components.data.gpu_operator import advertised_resources as pool_resources
from components.helm import pinned_release
from components.kubernetes_object import KubernetesObject
from components.scheduling.kueue import (
    Sharing,
    cluster_queue,
    counts_cpu_and_memory,
    kueue_values,
    local_queue,
    node_offer,
    node_size,
    pool_flavors,
    pool_limits,
    provisioning_check,
    provisioning_objects,
    queue_gpus,
    quota_warnings,
    resource_flavor,
    uncounted_resources,
)
from components.scheduling.multikueue import (
    MultiKueueManager,
    MultiKueueManagerArgs,
    MultiKueueWorker,
    MultiKueueWorkerArgs,
    budget_annotations,
    burst_quota,
    check_name,
    manager_objects,
)
from components.scheduling.multikueue_contract import KUBECONFIG_OUTPUT as MULTIKUEUE_KUBECONFIG
from components.scheduling.multikueue_contract import QUEUES_OUTPUT as MULTIKUEUE_QUEUES
from components.scheduling.multikueue_contract import burst_flavor_name, burst_topology
from components.scheduling.topology import (
    pool_topology,
    topology,
    topology_objects,
    topology_report,
    topology_warnings,
)
from components.vocabulary import KUEUE_API
from model.config import PlatformConfig
from model.config.pools import windowed
from model.config.scheduling import PRIORITIES, Priority, TeamSettings, provisioned
from model.config.selftest import queued
from model.dra import device_class_quota


def workload_priority_class(priority: Priority) -> dict[str, Any]:
    """Kueue orders and preempts workloads by this, the twin of the pods' PriorityClass."""
    return {
        "apiVersion": KUEUE_API,
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": priority.name},
        "value": priority.value,
        "description": priority.description,
    }


def kueue_objects(
    cfg: PlatformConfig, autoscaled: bool, open_windows: bool = False
) -> list[dict[str, Any]]:
    """Every Kueue object of the stack, in the order they may be created. A windowed pool's
    flavor is declared closed (quota 0) unless `open_windows`: the reservation controller opens
    it in its window (components/scheduling/reservation.py), so a `pulumi up` at any time never
    opens a flavor whose nodes are not there, or about to be reclaimed."""
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
    # A flavor names its Topology, which must exist first; a bursting queue's flavor mirrors
    # its workers' (a family of the stack's own pools may share it).
    topologies = {t["metadata"]["name"]: t for t in topology_objects(cfg)}
    for queue in sched.cluster_queues:
        mirrored = burst_topology(queue.burst) if queue.burst is not None else None
        if mirrored is not None:
            topologies.setdefault(mirrored[0], topology(*mirrored))
    objects += topologies.values()
    for pool in cfg.gpu_pools:
        named = pool_topology(cfg, pool)
        objects.append(resource_flavor(pool, on_aws, named[0] if named else None))
    if pools_provisioned:
        managed = {r for p in pools_provisioned for r in pool_resources(p)}
        objects += provisioning_objects(sorted(managed))
    bursts = {q.name: q for q in sched.cluster_queues if q.burst is not None}
    closed = {g.name for g in windowed(cfg)}
    for queue in bursts.values():
        objects += manager_objects(queue)
    for name, gpus in queue_gpus(cfg).items():
        namespaces = [t.name for t in submitters(cfg) if t.cluster_queue == name]
        if name in bursts:
            # Every workload goes to a worker: the queue holds only what it may take there.
            flavors = {burst_flavor_name(name): burst_quota(bursts[name].burst, counted)}
            checks = [{"name": check_name(name)}]
        else:
            flavors = pool_flavors(cfg, gpus, offers)
            if not open_windows:
                flavors = {f: {r: "0" for r in q} if f in closed else q for f, q in flavors.items()}
            checks = provisioning_check([p.name for p in pools_provisioned])
        settings = next(q for q in sched.cluster_queues if q.name == name)
        sharing = Sharing(
            pool_limits(cfg, settings, offers),
            settings.fair_sharing_weight,
            sched.fair_sharing.admission is not None,
        )
        queue = cluster_queue(name, sched.cohort, flavors, checks, namespaces, sharing)
        if name in bursts:
            queue["metadata"]["annotations"] = budget_annotations(bursts[name].burst)
        objects.append(queue)
    admission = sched.fair_sharing.admission
    weights = admission.team_weights if admission is not None else {}
    objects += [local_queue(t, weights.get(t.name)) for t in submitters(cfg)]
    return objects


def submitters(cfg: PlatformConfig) -> list[TeamSettings]:
    """Every namespace with a LocalQueue: the teams and, where the self-test goes through
    Kueue, its own namespace (namespaces.selftest), on the training namespace's ClusterQueue as
    when it ran there, unless that queue bursts: the self-test tests this cluster, so it takes
    the first queue that runs here."""
    sched = cfg.scheduling
    teams = sched.all_teams(cfg.namespaces.training)
    if not queued(cfg):
        return teams
    training = next(t for t in teams if t.name == cfg.namespaces.training)
    local = [q.name for q in sched.cluster_queues if q.burst is None] or [training.cluster_queue]
    queue = training.cluster_queue if training.cluster_queue in local else local[0]
    return [*teams, TeamSettings(name=cfg.namespaces.selftest, cluster_queue=queue)]


# ------------------------------------------------------------------------------ component


@dataclass(frozen=True)
class SchedulingArgs:
    context: StackContext
    cfg: PlatformConfig
    cluster: ClusterHandle
    kueue_namespace: pulumi.Input[str]
    node_selector: dict[str, str]
    # Whether our cluster-autoscaler answers ProvisioningRequests (AWS with the autoscaler).
    autoscaled: bool
    after: Sequence[pulumi.Resource] = ()
    # The API server a MultiKueue manager reaches this cluster at (AWS: EKS's endpoint).
    endpoint: pulumi.Input[str] | None = None
    # False: the cluster runs its own Kueue (existing.addons): only the objects on top of it.
    install: bool = True


class Scheduling(PlatformComponent):
    PLANE = "scheduling"

    def __init__(self, name: str, args: SchedulingArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        for message in [*quota_warnings(args.cfg), *topology_warnings(args.cfg)]:
            pulumi.warn(message)
        for priority in PRIORITIES:
            k8s.scheduling.v1.PriorityClass(
                f"{args.context.env}-priority-{priority.name}",
                metadata=k8s.meta.v1.ObjectMetaArgs(name=priority.name),
                value=priority.value,
                preemption_policy=priority.preemption_policy,
                global_default=False,
                description=priority.description,
                opts=self.child(),
            )
        # Kueue's webhooks validate its objects: they must be running first, from our release
        # or the cluster's.
        before: list[pulumi.Resource] = [*args.cluster.schedulable, *args.after]
        if args.install:
            before = [
                pinned_release(
                    f"{args.context.env}-kueue",
                    "kueue",
                    args.kueue_namespace,
                    kueue_values(
                        args.node_selector,
                        uncounted_resources(args.cfg),
                        job_namespaces(args.cfg),
                        args.cfg.scheduling.fair_sharing,
                        device_class_quota(args.cfg.gpu_pools),
                    ),
                    self.child(depends_on=before),
                    context=args.context,
                )
            ]
        for obj in kueue_objects(args.cfg, args.autoscaled):
            meta = obj["metadata"]
            where = f"{meta['namespace']}-" if "namespace" in meta else ""
            KubernetesObject(
                f"{args.context.env}-{obj['kind'].lower()}-{where}{meta['name']}",
                obj,
                self.child(depends_on=before),
            )
        # Stack outputs: which labels each multi-node pool's nodes need for Kueue's
        # topology-aware placement, and what a MultiKueue manager reads from this stack as a
        # worker.
        if topology_report(args.cfg):
            self.outputs["topology"] = topology_report(args.cfg)
        mk = args.cfg.multikueue
        if mk.workers:
            MultiKueueManager(
                f"{args.context.env}-multikueue-manager",
                MultiKueueManagerArgs(args.context, args.cfg, args.kueue_namespace, before),
                self.child(),
            )
        if mk.serve_as_worker:
            worker = MultiKueueWorker(
                f"{args.context.env}-multikueue-worker",
                MultiKueueWorkerArgs(
                    args.context,
                    args.cfg,
                    args.cfg.namespaces.system,
                    args.cluster.name,
                    args.endpoint,
                    before,
                ),
                self.child(),
            )
            self.outputs.update(
                {MULTIKUEUE_KUBECONFIG: worker.kubeconfig, MULTIKUEUE_QUEUES: worker.queues}
            )
        self.register_outputs(self.outputs)
