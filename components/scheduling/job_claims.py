"""What a training job claims through DRA (../shared/PINS.md "Claim shapes"), beside the JobSet
that components/scheduling/training_job.py renders:

- on a DRA pool (`gpu_allocation: dra`) its GPUs: a ResourceClaimTemplate of its own
  (`<job>-gpus`), `exactly` the pool's DeviceClass with ExactCount of the pod's GPUs, the one
  shape Kueue v0.19.2 charges (model/dra.device_class_quota maps the class to its quota name);
- on an NVLink-domain pool (GB200 NVL72) a multi-node job's ComputeDomain, whose controller
  makes the IMEX channel's claim template, at most one domain's worth of whole nodes
  (model/dra.nvlink_problem).

`pod_claims` is what the pod lists in `spec.resourceClaims`, and each GPU container by name in
`resources.claims`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from components.scheduling.job_spec import TrainingJobSpec
from components.scheduling.topology import REQUIRED_ANNOTATION
from model.config import GpuPool
from model.config.scheduling import CLIQUE_LABEL
from model.dra import COMPUTE_DOMAIN_API, GPU_CLASS, mig_class, mig_profiles_of, nvlink_problem

# The pod's claim on its ComputeDomain's IMEX channel (../shared/PINS.md "Claim shapes").
CHANNEL_CLAIM = "imex-channel"


# A ComputeDomain spans whatever cliques its pods land in, one IMEX domain each: Kueue keeps
# the job's pods in one (components/scheduling/topology.placement).
ONE_CLIQUE = {REQUIRED_ANNOTATION: CLIQUE_LABEL}


def applied_beside(pool: GpuPool, nodes: int) -> list[str]:
    """The kinds a team's job of `nodes` pods on `pool` is applied with beside its JobSet: its
    GPUs' claim template on a DRA pool, its ComputeDomain when it spans nodes of an NVLink
    domain. What travels only with the job's own cluster: MultiKueue copies the JobSet alone."""
    found = []
    if pool.gpu_allocation == "dra":
        found.append("ResourceClaimTemplate")
    if pool.nvlink_domain_nodes is not None and nodes > 1:
        found.append("ComputeDomain")
    return found


# The API group and resource of each kind applied_beside names: what a team must be allowed to
# apply, resubmit and cancel besides its JobSet (components/control/team_access.py). Kubernetes'
# `edit` and EKS's AmazonEKSEditPolicy name neither group.
BESIDE_RESOURCES = {
    "ResourceClaimTemplate": ("resource.k8s.io", "resourceclaimtemplates"),
    "ComputeDomain": (COMPUTE_DOMAIN_API.split("/")[0], "computedomains"),
}


def beside_resources(pools: Iterable[GpuPool]) -> list[tuple[str, str]]:
    """(API group, resource) of every kind a job on one of `pools` may be applied with beside
    its JobSet, at the pool's largest."""
    kinds = {kind for pool in pools for kind in applied_beside(pool, pool.max_nodes)}
    return sorted(BESIDE_RESOURCES[kind] for kind in kinds)


def uses_compute_domain(spec: TrainingJobSpec) -> bool:
    return "ComputeDomain" in applied_beside(spec.pool, spec.nodes) and not spec.standalone


def channel_template_name(spec: TrainingJobSpec) -> str:
    """The ResourceClaimTemplate the job's ComputeDomain controller creates and its pods claim."""
    return f"{spec.name}-imex-channel"


def compute_domain(spec: TrainingJobSpec) -> dict[str, Any]:
    """The job's ComputeDomain, in its namespace (the channel's claim must be in the
    ComputeDomain's: AssertComputeDomainNamespace). `numNodes: 0` always: the GPU Operator's
    copy of the CRD requires the field and the driver's deprecates it, 0 is valid under both
    (../shared/PINS.md "ComputeDomains and IMEX")."""
    problem = nvlink_problem(spec.pool, spec.nodes, spec.gpus_per_node)
    if problem is not None:
        raise ValueError(f"{spec.name}: {problem[0]} {problem[1]}")
    if spec.placement != ONE_CLIQUE:
        raise ValueError(
            f"{spec.name}: placement {spec.placement or 'none'}, but a job with a ComputeDomain "
            f"must keep every pod in one {CLIQUE_LABEL}: the driver runs one IMEX domain per "
            "clique, each listing only its own clique's daemons (dra-driver-nvidia-gpu v0.4.1 "
            "cmd/compute-domain-daemon/main.go writeDaemonsConfig), so pods in two cliques "
            f"share no NVLink; valid: {ONE_CLIQUE}"
        )
    return {
        "apiVersion": COMPUTE_DOMAIN_API,
        "kind": "ComputeDomain",
        "metadata": {
            "name": spec.name,
            "namespace": spec.namespace,
            **({"labels": dict(spec.labels)} if spec.labels else {}),
        },
        "spec": {
            "numNodes": 0,
            "channel": {"resourceClaimTemplate": {"name": channel_template_name(spec)}},
        },
    }


# The pod's one claim, and its one request, on a DRA pool.
GPU_CLAIM = "gpus"


def claims_gpus(spec: TrainingJobSpec) -> bool:
    return "ResourceClaimTemplate" in applied_beside(spec.pool, spec.nodes)


def claim_template_name(spec: TrainingJobSpec) -> str:
    return f"{spec.name}-{GPU_CLAIM}"


def gpu_device_class(pool: GpuPool) -> str:
    """The DeviceClass a DRA pool's claims name: the chart's `gpu.nvidia.com`, or on a MIG pool
    the platform's class of its smallest profile (the chart's `mig.nvidia.com` matches every
    profile, so Kueue could not charge it to one: model/dra.device_class_quota)."""
    profiles = mig_profiles_of(pool)
    return mig_class(profiles[0]) if profiles else GPU_CLASS


def claim_templates(spec: TrainingJobSpec) -> list[dict[str, Any]]:
    """The ResourceClaimTemplate a job on a DRA pool claims its GPUs through; none on a
    device-plugin pool. `exactly` with ExactCount, the one shape Kueue v0.19.2 charges
    (pkg/dra/claims.go countDevicesPerClass), `count` the pod's GPUs (dra-driver-nvidia-gpu
    v0.4.1 docs/install.md: ExactCount, default 1)."""
    if not claims_gpus(spec):
        return []
    request = {
        "name": GPU_CLAIM,
        "exactly": {
            "deviceClassName": gpu_device_class(spec.pool),
            "allocationMode": "ExactCount",
            "count": spec.gpus,
        },
    }
    return [
        {
            "apiVersion": spec.resource_api,
            "kind": "ResourceClaimTemplate",
            "metadata": {
                "name": claim_template_name(spec),
                "namespace": spec.namespace,
                "labels": dict(spec.labels),
            },
            "spec": {"spec": {"devices": {"requests": [request]}}},
        }
    ]


def pod_claims(spec: TrainingJobSpec) -> list[dict[str, str]]:
    """The pod's `spec.resourceClaims`: its GPUs on a DRA pool, its ComputeDomain's IMEX channel
    on an NVLink-domain pool; each GPU container lists them all in `resources.claims`."""
    found = []
    if claims_gpus(spec):
        found.append({"name": GPU_CLAIM, "resourceClaimTemplateName": claim_template_name(spec)})
    if uses_compute_domain(spec):
        found.append(
            {"name": CHANNEL_CLAIM, "resourceClaimTemplateName": channel_template_name(spec)}
        )
    return found
