"""MultiKueue across stacks (Kueue "Setup a MultiKueue environment" and
`create-multikueue-kubeconfig.sh`, v0.19.2), as pure builders and two thin components.

Manager: per worker a Secret in Kueue's namespace holding the worker's kubeconfig (key
`kubeconfig`, read from the worker stack's output through a StackReference) and a
`MultiKueueCluster` naming it; per bursting ClusterQueue a `MultiKueueConfig` listing its
workers, an `AdmissionCheck` with controller `kueue.x-k8s.io/multikueue`, and a ResourceFlavor
labelled with the workers' instance type, whose quota is what the queue may hold on the workers
and whose Topology mirrors the workers' nodes'.

Worker: a ServiceAccount in Kueue's namespace, the ClusterRole the setup guide gives it (exactly
the platform's frameworks, components/scheduling/kueue_frameworks.py, and Kueue's Workloads and
queues), its binding, a service-account token, and the kubeconfig built from them as a secret
output. The worker declares the same ClusterQueue and LocalQueue names as the manager's bursting
queues (its own `scheduling` section), and exports them with its pools so that the manager can
refuse a mismatch at its key (components/scheduling/multikueue_contract.py).
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

from components.base import PlatformComponent
from components.context import StackContext
from components.data.efa import INSTANCE_TYPE_LABEL
from components.kubernetes_object import KubernetesObject
from components.scheduling.kueue import quota
from components.scheduling.kueue_frameworks import FRAMEWORKS
from components.scheduling.multikueue_contract import (
    KUBECONFIG_OUTPUT,
    QUEUES_OUTPUT,
    burst_flavor_name,
    burst_topology,
    bursting,
    exported_queues,
    worker_problems,
)
from components.vocabulary import EFA_RESOURCE, GPU_RESOURCE, KUEUE_API
from model.catalog import CATALOG
from model.config import ConfigError, PlatformConfig, stack_file
from model.config.multikueue import BURST_BUDGET_ANNOTATION, BurstSettings
from model.config.scheduling import ClusterQueueSettings

CONTROLLER = "kueue.x-k8s.io/multikueue"
# Kueue's setup guide names the worker's ServiceAccount so; the manager's kubeconfig authenticates
# as it.
SERVICE_ACCOUNT = "multikueue-sa"
KUBECONFIG_KEY = "kubeconfig"
# Where the manager's job stays and where it runs: Kueue's webhook sets this on a batch Job
# whose queue has a MultiKueue check, but only when its cache already holds the queue
# (v0.19.2 jobframework.ApplyDefaultForManagedBy); the builder sets it so a Job created with
# the queue never starts on the manager. Immutable on a Job.
MANAGED_BY = CONTROLLER

# What MultiKueue does on a worker beyond the job kinds (components/scheduling/kueue_frameworks.py):
# the rules of create-multikueue-kubeconfig.sh at v0.19.2 for Kueue's Workloads and queues, which
# every connection watches whatever the frameworks.
KUEUE_RULES = (
    {
        "apiGroups": ["kueue.x-k8s.io"],
        "resources": ["workloads"],
        "verbs": ["create", "delete", "get", "list", "watch", "update", "patch"],
    },
    {
        "apiGroups": ["kueue.x-k8s.io"],
        "resources": ["clusterqueues", "localqueues"],
        "verbs": ["get", "list", "watch"],
    },
    {
        "apiGroups": ["kueue.x-k8s.io"],
        "resources": ["workloads/status"],
        "verbs": ["get", "patch", "update"],
    },
)


def worker_rules() -> list[dict[str, Any]]:
    """The manager's ClusterRole on a worker: exactly the platform's frameworks, and Kueue's."""
    return [*(r for f in FRAMEWORKS for r in f.worker_rules()), *(dict(r) for r in KUEUE_RULES)]


# ------------------------------------------------------------------------------ manager


def check_name(queue: str) -> str:
    return f"{queue}-multikueue"


def secret_name(worker: str) -> str:
    return f"multikueue-{worker}"


def burst_offer(burst: BurstSettings, counted: bool) -> dict[str, int]:
    """One worker node of the burst's type, as Kueue counts it on the manager."""
    row = CATALOG[burst.instance_type]
    offer = {"cpu": row.vcpus, "memory": row.memory_gib} if counted else {}
    offer[GPU_RESOURCE] = row.gpus
    if row.efa_interfaces:
        offer[EFA_RESOURCE] = row.efa_interfaces
    return offer


def burst_quota(burst: BurstSettings, counted: bool) -> dict[str, str]:
    """The queue's quota on the manager: `burst.gpus` GPUs of the workers' nodes."""
    return quota(burst_offer(burst, counted), burst.gpus, CATALOG[burst.instance_type].gpus)


def burst_flavor(queue: ClusterQueueSettings) -> dict[str, Any]:
    """The workers' nodes of the burst's instance type, by the label the kubelet sets on every
    node from the cloud provider (Kubernetes "Well-Known Labels, Annotations and Taints":
    node.kubernetes.io/instance-type): a worker is an AWS stack, so its nodes of that type carry
    it, whatever its pools are named. Kueue's CRD wants a node label wherever a flavor names a
    Topology ("at least one nodeLabel is required when topology is set", v0.19.2
    ResourceFlavor); the workloads admitted here run on a worker, never on the manager's nodes,
    whose Kueue only delays their placement to the worker. The Topology mirrors the workers',
    so that a job asking for a level of theirs is admitted."""
    spec: dict[str, Any] = {"nodeLabels": {INSTANCE_TYPE_LABEL: queue.burst.instance_type}}
    mirrored = burst_topology(queue.burst)
    if mirrored is not None:
        spec["topologyName"] = mirrored[0]
    return {
        "apiVersion": KUEUE_API,
        "kind": "ResourceFlavor",
        "metadata": {"name": burst_flavor_name(queue.name)},
        "spec": spec,
    }


def manager_objects(queue: ClusterQueueSettings) -> list[dict[str, Any]]:
    """The bursting queue's MultiKueueConfig and AdmissionCheck, and its flavor."""
    return [
        burst_flavor(queue),
        {
            "apiVersion": KUEUE_API,
            "kind": "MultiKueueConfig",
            "metadata": {"name": queue.name},
            "spec": {"clusters": list(queue.burst.workers)},
        },
        {
            "apiVersion": KUEUE_API,
            "kind": "AdmissionCheck",
            "metadata": {"name": check_name(queue.name)},
            "spec": {
                "controllerName": CONTROLLER,
                "parameters": {
                    "apiGroup": "kueue.x-k8s.io",
                    "kind": "MultiKueueConfig",
                    "name": queue.name,
                },
            },
        },
    ]


def budget_annotations(burst: BurstSettings) -> dict[str, str]:
    return {BURST_BUDGET_ANNOTATION: f"{burst.monthly_budget_usd:g}"}


def multikueue_cluster(worker: str) -> dict[str, Any]:
    return {
        "apiVersion": KUEUE_API,
        "kind": "MultiKueueCluster",
        "metadata": {"name": worker},
        "spec": {
            "clusterSource": {
                "kubeConfig": {"locationType": "Secret", "location": secret_name(worker)}
            }
        },
    }


# ------------------------------------------------------------------------------- worker


def worker_objects(namespace: str) -> list[dict[str, Any]]:
    """The ServiceAccount, its ClusterRole and binding, and its long-lived token (Kubernetes
    1.24+ creates none by itself)."""
    return [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": SERVICE_ACCOUNT, "namespace": namespace},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": f"{SERVICE_ACCOUNT}-role"},
            "rules": worker_rules(),
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": f"{SERVICE_ACCOUNT}-crb"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": f"{SERVICE_ACCOUNT}-role",
            },
            "subjects": [
                {"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": namespace}
            ],
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/service-account-token",
            "metadata": {
                "name": SERVICE_ACCOUNT,
                "namespace": namespace,
                "annotations": {"kubernetes.io/service-account.name": SERVICE_ACCOUNT},
            },
        },
    ]


def worker_kubeconfig(cluster: str, server: str, ca_data: str, token_b64: str) -> str:
    """The kubeconfig the manager uses, as the guide's script writes it: the API server, the
    token Secret's CA (already base64) and its token (base64 in the Secret, plain here)."""
    user = f"{cluster}-{SERVICE_ACCOUNT}"
    token = base64.b64decode(token_b64).decode() if token_b64 else ""
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": cluster, "cluster": {"server": server, "certificate-authority-data": ca_data}}
        ],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": user}}],
        "current-context": cluster,
        "preferences": {},
        "users": [{"name": user, "user": {"token": token}}],
    }
    return yaml.safe_dump(doc, sort_keys=False)


def burst_managed_by(cfg: PlatformConfig, namespace: str) -> str | None:
    """`spec.managedBy` of a job a team submits here: MultiKueue's where the team's queue
    bursts (a job that names another LocalQueue passes `managed_by` itself)."""
    teams = cfg.scheduling.all_teams(cfg.namespaces.training)
    queue = next((t.cluster_queue for t in teams if t.name == namespace), None)
    bursts = {q.name for _, q in bursting(cfg)}
    return MANAGED_BY if queue in bursts else None


# ------------------------------------------------------------------------------ components


@dataclass(frozen=True)
class MultiKueueWorkerArgs:
    context: StackContext
    cfg: PlatformConfig
    namespace: str
    cluster_name: pulumi.Input[str]
    endpoint: pulumi.Input[str]
    after: Sequence[pulumi.Resource] = ()


class MultiKueueWorker(PlatformComponent):
    """What a manager needs to dispatch here; `kubeconfig` and `queues` are the stack outputs."""

    PLANE = "scheduling"

    def __init__(self, name: str, args: MultiKueueWorkerArgs, opts=None):
        super().__init__(name, opts)
        declared = []
        for obj in worker_objects(args.namespace):
            if obj["kind"] == "Secret":
                continue
            declared.append(
                KubernetesObject(
                    f"{args.context.env}-multikueue-{obj['kind'].lower()}", obj, self.child()
                )
            )
        token_obj = next(o for o in worker_objects(args.namespace) if o["kind"] == "Secret")
        # The provider waits for the token controller to fill `data` in a service-account-token
        # Secret before it reports the Secret created (pulumi-kubernetes PR #2048).
        token = k8s.core.v1.Secret(
            f"{args.context.env}-multikueue-token",
            type=token_obj["type"],
            metadata=token_obj["metadata"],
            opts=self.child(depends_on=[*declared, *args.after]),
        )
        self.kubeconfig = pulumi.Output.secret(
            pulumi.Output.all(args.cluster_name, args.endpoint, token.data).apply(
                lambda v: worker_kubeconfig(
                    v[0], v[1], (v[2] or {}).get("ca.crt", ""), (v[2] or {}).get("token", "")
                )
            )
        )
        self.queues = exported_queues(args.cfg)
        self.register_outputs({"kubeconfig": self.kubeconfig, "queues": self.queues})


@dataclass(frozen=True)
class MultiKueueManagerArgs:
    context: StackContext
    cfg: PlatformConfig
    namespace: pulumi.Input[str]
    after: Sequence[pulumi.Resource] = ()


class MultiKueueManager(PlatformComponent):
    """Per worker: its kubeconfig Secret, read from the worker stack, and its MultiKueueCluster.
    The Secrets are written only once every worker's queues and pools match what the manager's
    bursting queues count on: a mismatch fails the plan at the key, before anything reaches a
    cluster."""

    PLANE = "scheduling"

    def __init__(self, name: str, args: MultiKueueManagerArgs, opts=None):
        super().__init__(name, opts)
        self.clusters: list[pulumi.Resource] = []
        source = stack_file(pulumi.get_stack())
        workers = args.cfg.multikueue.workers
        refs = [
            pulumi.StackReference(
                f"{args.context.env}-multikueue-{w.name}", w.stack, opts=self.child()
            )
            for w in workers
        ]

        def checked(values: list[Any]) -> bool:
            problems = worker_problems(
                args.cfg, {w.name: v for w, v in zip(workers, values, strict=True)}
            )
            if problems:
                raise ConfigError(source, problems)
            return True

        agreed = pulumi.Output.all(*(ref.get_output(QUEUES_OUTPUT) for ref in refs)).apply(checked)
        for worker, ref in zip(workers, refs, strict=True):
            kubeconfig = pulumi.Output.all(ref.get_output(KUBECONFIG_OUTPUT), agreed).apply(
                lambda v: v[0]
            )
            secret = k8s.core.v1.Secret(
                f"{args.context.env}-multikueue-{worker.name}-kubeconfig",
                metadata={"name": secret_name(worker.name), "namespace": args.namespace},
                type="Opaque",
                string_data={KUBECONFIG_KEY: pulumi.Output.secret(kubeconfig)},
                opts=self.child(depends_on=list(args.after)),
            )
            self.clusters.append(
                KubernetesObject(
                    f"{args.context.env}-multikueuecluster-{worker.name}",
                    multikueue_cluster(worker.name),
                    self.child(depends_on=[secret, *args.after]),
                )
            )
        self.register_outputs({})
