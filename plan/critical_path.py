"""How long a stack's first `pulumi up` takes, and why: the critical path through the plan's
dependency graph (the chain of resources, each waiting for the one before, that decides the wall
time when Pulumi creates everything else in parallel beside it), weighted by typical create times.

Pulumi starts a resource once every resource it depends on exists: its `dependsOn` and every
resource whose output it takes as an input (both recorded as the registration's dependencies).
A component stands for every custom resource under it: the Python SDK registers those in its
place (pulumi/pulumi#12462), and the expansion here does the same for any left. A component's
own dependencies do not hold back its children (pulumi/pulumi#8721), so only custom resources
count.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from plan.model import Plan, PlannedResource


@dataclass(frozen=True)
class CreateTime:
    minutes: float
    source: str  # where the figure comes from; "estimated: ..." where nothing is published


# Seconds: one API call and at most a short wait (IAM, security groups, tags, Kubernetes objects).
QUICK = CreateTime(0.25, "estimated: one API call and a status read")

CREATE_TIMES: dict[str, CreateTime] = {
    "aws:eks/cluster:Cluster": CreateTime(
        15,
        "aws/containers-roadmap#1227 (AWS): control plane provisioning averages 15 minutes; "
        "easontechtalk.com 'Unofficial EKS Cluster Creation Performance' measured 13-16 "
        "minutes in 21 regions",
    ),
    "aws:fsx/lustreFileSystem:LustreFileSystem": CreateTime(
        10,
        "aws-samples/aws-hpc-tutorials content/08-fsx-lustre/01-create-fsxl.md (AWS workshop): "
        "FSx for Lustre file system creation takes about 10 minutes",
    ),
    "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation": CreateTime(
        5,
        "estimated: the provider's 10-minute default create timeout is sometimes too short "
        "(aws-samples/amazon-eks-machine-learning-with-terraform-and-kubeflow#112)",
    ),
    "aws:eks/nodeGroup:NodeGroup": CreateTime(
        4,
        "estimated: instances launch and join before EKS reports the group ACTIVE, which the "
        "provider waits for (internal/service/eks/node_group.go); no published figure",
    ),
    "aws:eks/addon:Addon": CreateTime(
        2, "estimated: the provider waits for the add-on's pods to report ACTIVE"
    ),
    "aws:ec2/natGateway:NatGateway": CreateTime(
        2, "estimated: the provider waits for the gateway to leave `pending`"
    ),
    "aws:ec2/vpcEndpoint:VpcEndpoint": CreateTime(
        1, "estimated: the provider waits for the endpoint to become `available`"
    ),
    "kubernetes:helm.sh/v3:Release": CreateTime(
        3,
        "estimated: Pulumi waits for the release's workloads to be ready (pulumi-kubernetes "
        "Release `skipAwait` false, default `timeout` 300 s); image pulls dominate",
    ),
    "kubernetes:batch/v1:Job": CreateTime(
        10,
        "estimated: a pool's canary Job waits for cluster-autoscaler to add its GPU node from "
        "zero and for the node-join checks there, before the pool's node group "
        "(components/selftest/canary.py; bounded by selftest.provisioning_minutes + the pool's "
        "join limit)",
    ),
    "kubernetes:jobset.x-k8s.io/v1alpha2:JobSet": CreateTime(
        10,
        "estimated: the self-test JobSet waits for Kueue admission, GPU nodes scaled from zero "
        "and its checks (components/selftest/job.py; bounded by selftest.up_wait_minutes)",
    ),
}


def create_time(token: str) -> CreateTime:
    return CREATE_TIMES.get(token, QUICK)


@dataclass(frozen=True)
class CriticalPath:
    chain: tuple[PlannedResource, ...]  # first created first

    @property
    def minutes(self) -> float:
        return sum(create_time(r.type).minutes for r in self.chain)


def waits_for(plan: Plan) -> dict[str, set[str]]:
    """Per custom resource, the custom resources it waits for at creation."""
    index = plan.by_urn
    children: dict[str, list[str]] = {}
    for r in plan.resources:
        children.setdefault(r.parent, []).append(r.urn)

    @functools.cache
    def customs(urn: str) -> frozenset[str]:
        if index[urn].custom:
            return frozenset({urn})
        return frozenset().union(*(customs(c) for c in children.get(urn, ())))

    return {
        r.urn: set().union(*(customs(d) for d in r.dependencies if d in index)) - {r.urn}
        for r in plan.resources
        if r.custom
    }


def chains(plan: Plan) -> dict[str, CriticalPath]:
    """Per custom resource, the longest chain that ends with it: when it is ready, from the start
    of the `up` (ties go to the first URN, for stable output)."""
    graph = waits_for(plan)
    index = plan.by_urn

    @functools.cache
    def longest(urn: str) -> tuple[float, tuple[str, ...]]:
        before = [longest(d) for d in sorted(graph[urn])]
        minutes, chain = max(before, key=lambda b: b[0], default=(0.0, ()))
        return minutes + create_time(index[urn].type).minutes, (*chain, urn)

    return {u: CriticalPath(tuple(index[c] for c in longest(u)[1])) for u in sorted(graph)}


def critical_path(plan: Plan) -> CriticalPath:
    return max(chains(plan).values(), key=lambda c: c.minutes, default=CriticalPath(()))


# Off the critical path, the resources this slow to create are listed with when they are ready.
SLOW_MINUTES = 5


def format_critical_path(plan: Plan) -> str:
    every = chains(plan)
    path = max(every.values(), key=lambda c: c.minutes, default=CriticalPath(()))
    lines = [
        f"First `pulumi up`: about {path.minutes:g} minutes, decided by a chain of "
        f"{len(path.chain)} resources (typical create times: plan/critical_path.py):"
    ]
    for r in path.chain:
        time = create_time(r.type)
        lines.append(f"  {time.minutes:5g} min  {r.type} {r.name}")
    beside = [
        (chain.minutes, chain.chain[-1])
        for chain in every.values()
        if chain.chain[-1] not in path.chain
        and create_time(chain.chain[-1].type).minutes >= SLOW_MINUTES
    ]
    if beside:
        lines.append("Beside it, ready after:")
        for minutes, r in sorted(beside, key=lambda b: (b[0], b[1].urn)):
            lines.append(f"  {minutes:5g} min  {r.type} {r.name}")
    return "\n".join(lines)
