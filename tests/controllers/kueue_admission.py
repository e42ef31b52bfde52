"""A small model of how Kueue v0.19.2 admits a batch Job or a JobSet, and of what a MultiKueue
manager needs
from a worker, written from Kueue's source at v0.19.2 (kubernetes-sigs/kueue `8eab68778fc1`).
The tests run it over every stack and every job the builder renders (STYLE.md §17): an object
can pass its CRD schema and still never be admitted.

Pod sets (`pod_sets`): a batch Job is one, counting `parallelism` (pkg/controller/jobs/job/
job_controller.go `PodSets`); a JobSet one per replicatedJob, named after it, counting
`replicas` × min(parallelism, completions) of its Job, from the replicatedJob's pod template,
whose annotations carry the TAS request (pkg/controller/jobs/jobset/jobset_controller.go
`PodSets`, `podsCount`, `podsCountPerReplica`). The whole workload is admitted or none of it:
each pod set must find a flavor, and their requests add up against the queue's quota.

The manager's configuration is read from the ConfigMap the Kueue chart renders
(`manager_config_from_rendered`, or `manager_config_of` over rendered objects), as the
controller reads it on a cluster: which namespaces it manages and which frameworks it runs.

Rules, each a function that returns what it refuses (empty: admitted):

- `kueue_manages`: Kueue reconciles a job only in a namespace its
  `managedJobsNamespaceSelector` selects, by the Namespace object's labels
  (`ManagedJobsNamespaceSelectorAlwaysRespected`, GA and locked on in v0.19.2,
  pkg/features/kube_features.go; pkg/controller/jobframework/reconciler.go: "Namespace not opted
  in for Kueue management", and the job stays suspended). Without the setting, Kueue manages
  every namespace but kube-system and its own (apis/config/v1beta2/defaults.go).
- `queue_problems`: the Job's `kueue.x-k8s.io/queue-name` names a LocalQueue of its namespace,
  that LocalQueue a ClusterQueue, and the ClusterQueue's namespaceSelector takes the namespace
  (pkg/controller/core/workload_controller.go "LocalQueue %s doesn't exist" / "ClusterQueue %s
  doesn't exist"; pkg/scheduler/scheduler.go `ValidateAdmissibility` with the queue's
  NamespaceSelector); the ClusterQueue's admission checks exist, a MultiKueue one naming a
  MultiKueueConfig whose clusters exist; the Job's framework is enabled
  (`integrations.frameworks`), or Kueue never unsuspends it.
- `flavor_problems`: some flavor of the ClusterQueue takes the pod set
  (pkg/scheduler/flavorassigner/flavorassigner.go `checkFlavorForPodSets`, `fitsResourceQuota`):
  every requested resource Kueue counts is covered ("resource %s unavailable in ClusterQueue");
  the TAS rule (tas_flavorassigner.go `checkPodSetAndFlavorMatchForTAS`: a TAS request only on
  a flavor with `topologyName`, whose Topology exists and holds the requested level; a pod set
  without a TAS request is refused by a TAS flavor unless every flavor of the queue is one,
  `isTASImplied`); no untolerated NoSchedule taint; the flavor's node labels agree with the
  pod's node selector on the flavor's own keys (`flavorSelector`); and the pod set fits the
  quota the queue can ever reach (`available` with nothing admitted: its nominal quota plus
  what its cohort lends, within each queue's `borrowingLimit` and `lendingLimit`,
  pkg/cache/scheduler/resource_node.go).
- `charged_pod_sets`: a pod set's DRA claims, charged as Kueue v0.19.2 does with its
  `KueueDRAIntegration` gate at its default, on (pkg/features/kube_features.go):
  pkg/controller/core/workload_controller.go (l. 452-494) first refuses a workload any pod
  of which names a `resourceClaimName` (pkg/workload/workload.go `HasResourceClaim`:
  "KueueDRAIntegration feature does not support use of resource claims"); then
  pkg/dra/claims.go
  `GetResourceRequestsForResourceClaimTemplates` reads each `resourceClaimTemplateName` from
  the workload's namespace (a missing one is an internal error, retried with back-off: not
  admitted yet) and `countDevicesPerClass` takes each request `exactly` with allocationMode
  ExactCount (the API server's default) and charges its `count` (default 1) per pod to the
  `name` of the `resources.deviceClassMappings` entry listing its DeviceClass, summed with the
  pod's other requests; `firstAvailable`, `adminAccess`, allocationMode All and an unmapped
  DeviceClass leave the workload inadmissible with Kueue's own messages (`DRA_*` below). The
  mapped names are then ordinary quota resources for `flavor_problems` ("resource %s
  unavailable in ClusterQueue" where no resource group covers one: BlockUndeclared). Not
  modelled: CEL selectors checked against ResourceSlices (no slices offline), and the
  counter and capacity `sources` of a mapping. Callers judging a job's steady state build
  `Kueue.of` over `tests.controllers.dra.as_reconciled(objects)`, so the templates a
  ComputeDomain controller creates are there.
- `available`: how much more a queue admits once some workloads are admitted in its cohort,
  the same rule with usage.
- `node_levels`, a hook: whether a TAS flavor's levels are on the pool's nodes (Kueue
  pkg/cache/scheduler/clusterqueue.go `isTASViolated`, skipped for MultiKueue queues) is the TAS
  helper's model; `flavor_problems` takes its answer per flavor.
- `connection_problems`: the manager builds one MultiKueue adapter per enabled framework that
  has one (cmd/kueue/main.go `GetMultiKueueAdapters`) and opens a watch on the worker for each
  as well as for Workloads; any watch that fails fails the connection ("however let's not accept
  this for now", pkg/controller/admissionchecks/multikueue/multikueuecluster.go
  `updateConfigAndRefreshWatchers`). So the worker must serve each kind (built-in or by CRD) and
  grant the manager what `create-multikueue-kubeconfig.sh` grants for it.
- `Kueue.of` takes the phase of the reservation windows it judges (`in_phase`): a windowed
  pool's flavor is declared at quota 0 and opened by the reservation controller's CronJob
  (components/scheduling/reservation.py), so a sweep of the jobs the platform renders judges it
  `open`, with the quotas that CronJob sets, and a test that nothing lands outside the window
  judges it `closed`, as declared.
- `topology_mirror_problems`: Kueue on the manager delays a MultiKueue workload's topology to the
  worker (tas_flavorassigner.go, "Delay TAS when MultiKueue is used") but still matches the
  request against the manager's flavor: the manager's flavor must carry a Topology with the
  worker's levels (site/static/examples/multikueue/tas/manager-setup.yaml).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from dataclasses import replace as dataclass_replace
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

import yaml

from contract.reservation import ENV_FLAVOR, ENV_QUOTAS
from plan.manifests import outline_sources, split_manifest
from tests.controllers.dra import device_requests, pod_claims
from tests.controllers.label_selector import label_selector_matches

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
# apis/kueue/v1beta2/topology_types.go: the pod-template annotations of a TAS request.
TAS_ANNOTATIONS = (
    "kueue.x-k8s.io/podset-required-topology",
    "kueue.x-k8s.io/podset-preferred-topology",
    "kueue.x-k8s.io/podset-unconstrained-topology",
)

# The integrations of Kueue v0.19.2 that carry a MultiKueue adapter (`MultiKueueAdapter:` in
# pkg/controller/jobs/*/*_controller.go) and the kind each watches on the worker
# (`GetEmptyList` of each *_multikueue_adapter.go); `deployment` has none.
ADAPTERS: dict[str, tuple[str, str, str]] = {
    "batch/job": ("batch/v1", "Job", "jobs"),
    "jobset.x-k8s.io/jobset": ("jobset.x-k8s.io/v1alpha2", "JobSet", "jobsets"),
    "kubeflow.org/mpijob": ("kubeflow.org/v2beta1", "MPIJob", "mpijobs"),
    "kubeflow.org/pytorchjob": ("kubeflow.org/v1", "PyTorchJob", "pytorchjobs"),
    "kubeflow.org/tfjob": ("kubeflow.org/v1", "TFJob", "tfjobs"),
    "kubeflow.org/paddlejob": ("kubeflow.org/v1", "PaddleJob", "paddlejobs"),
    "kubeflow.org/xgboostjob": ("kubeflow.org/v1", "XGBoostJob", "xgboostjobs"),
    "kubeflow.org/jaxjob": ("kubeflow.org/v1", "JAXJob", "jaxjobs"),
    "ray.io/rayjob": ("ray.io/v1", "RayJob", "rayjobs"),
    "ray.io/raycluster": ("ray.io/v1", "RayCluster", "rayclusters"),
    "ray.io/rayservice": ("ray.io/v1", "RayService", "rayservices"),
    "workload.codeflare.dev/appwrapper": (
        "workload.codeflare.dev/v1beta2",
        "AppWrapper",
        "appwrappers",
    ),
    "trainer.kubeflow.org/trainjob": ("trainer.kubeflow.org/v1alpha1", "TrainJob", "trainjobs"),
    "pod": ("v1", "Pod", "pods"),
    "statefulset": ("apps/v1", "StatefulSet", "statefulsets"),
    "leaderworkerset.x-k8s.io/leaderworkerset": (
        "leaderworkerset.x-k8s.io/v1",
        "LeaderWorkerSet",
        "leaderworkersets",
    ),
}
# What create-multikueue-kubeconfig.sh (v0.19.2) grants for every job kind it covers: the
# adapter creates, reads, watches and deletes the worker's copy and reads its status.
JOB_VERBS = {"create", "delete", "get", "list", "watch"}
# ... and for Kueue's own objects, which every connection watches.
KUEUE_GRANTS = {
    ("kueue.x-k8s.io", "workloads"): {
        "create",
        "delete",
        "get",
        "list",
        "watch",
        "update",
        "patch",
    },
    ("kueue.x-k8s.io", "workloads/status"): {"get", "patch", "update"},
    ("kueue.x-k8s.io", "clusterqueues"): {"get", "list", "watch"},
    ("kueue.x-k8s.io", "localqueues"): {"get", "list", "watch"},
}
WORKLOAD_API = "kueue.x-k8s.io/v1beta2/Workload"


# ------------------------------------------------------------------------------ a cluster


# The ConfigMap Kueue's chart renders its Configuration into (charts/kueue/templates/manager/
# manager-config.yaml at v0.19.2), under this key.
CONFIG_KEY = "controller_manager_config.yaml"
CONFIG_API = "config.kueue.x-k8s.io/"
# The label the API server sets on every Namespace, with its name (Kubernetes "Well-Known
# Labels, Annotations and Taints": kubernetes.io/metadata.name).
NAME_LABEL = "kubernetes.io/metadata.name"
# apis/config/v1beta2/defaults.go at v0.19.2: `DefaultNamespace`, and the selector Kueue
# manages jobs by when its Configuration sets none.
DEFAULT_KUEUE_NAMESPACE = "kueue-system"


def manager_config_of(objects: Iterable[dict[str, Any]]) -> dict[str, Any] | None:
    """The Configuration in Kueue's rendered manager ConfigMap, None where no release renders
    one (Kueue off, or the cluster's own)."""
    held = [
        yaml.safe_load(obj["data"][CONFIG_KEY])
        for obj in objects
        if obj.get("kind") == "ConfigMap" and CONFIG_KEY in (obj.get("data") or {})
    ]
    # JobSet's chart keeps its own Configuration under the same key.
    found = [c for c in held if c.get("apiVersion", "").startswith(CONFIG_API)]
    if len(found) > 1:
        raise ValueError(f"{len(found)} ConfigMaps hold a Kueue {CONFIG_KEY}: which one runs?")
    return found[0] if found else None


def manager_config_from_rendered(stack_out_dir: Path) -> dict[str, Any] | None:
    """The Configuration Kueue runs with, read from `<stack_out_dir>/rendered/*.yaml` (what
    `python -m plan` writes); None where no rendered release holds one."""
    objects = []
    for path in sorted((stack_out_dir / "rendered").glob("*.yaml")):
        text = path.read_text()
        if CONFIG_KEY in text:
            objects += outline_sources(split_manifest(text))
    return manager_config_of(objects)


def namespace_labels(namespace: dict[str, Any]) -> dict[str, str]:
    """A Namespace object's labels as the API server keeps them: with its name label."""
    meta = namespace["metadata"]
    return {**(meta.get("labels") or {}), NAME_LABEL: meta["name"]}


def managed_selector(config: dict[str, Any]) -> dict[str, Any]:
    """`managedJobsNamespaceSelector`, or the default Kueue puts in its place."""
    default = {
        "matchExpressions": [
            {
                "key": NAME_LABEL,
                "operator": "NotIn",
                "values": ["kube-system", config.get("namespace", DEFAULT_KUEUE_NAMESPACE)],
            }
        ]
    }
    return config.get("managedJobsNamespaceSelector") or default


def kueue_manages(config: dict[str, Any], namespace: dict[str, Any]) -> bool:
    """Whether Kueue, run with `config`, reconciles jobs in the Namespace object `namespace`."""
    return label_selector_matches(managed_selector(config), namespace_labels(namespace))


def kueue_suspends(config: dict[str, Any], namespace: dict[str, Any], job: dict[str, Any]) -> bool:
    """Whether Kueue takes a batch Job created in the Namespace object `namespace` (its webhook
    suspends it until admitted): one that names a queue, or any, with
    `manageJobsWithoutQueueName`, in a namespace it manages (v0.19.2 pkg/controller/
    jobframework/defaults.go `ApplyDefaultForSuspend`; the Configuration's default is false,
    apis/config/v1beta2/defaults.go). Any other Job runs as the Job controller starts it."""
    if not kueue_manages(config, namespace):
        return False
    named = QUEUE_LABEL in (job["metadata"].get("labels") or {})
    return named or bool(config.get("manageJobsWithoutQueueName", False))


Phase = Literal["open", "closed"]
# The label of the reservation controller's CronJobs naming the transition each wakes it at.
RESERVATION_PHASE_LABEL = "gpu-platform/reservation-phase"


def in_phase(objects: list[dict[str, Any]], phase: Phase) -> list[dict[str, Any]]:
    """The objects as the cluster holds them while every reservation window is in `phase`:
    `closed` as declared (a windowed flavor at quota 0); `open` with the quota each window's
    opening CronJob sets in each ClusterQueue it names (its RESERVATION_QUOTAS), as
    contract/reservation.py `actions` has the controller do."""
    if phase == "closed":
        return objects
    openings = [
        o
        for o in objects
        if o.get("kind") == "CronJob"
        and o["metadata"].get("labels", {}).get(RESERVATION_PHASE_LABEL) == "open"
    ]
    if not openings:
        return objects
    objects = copy.deepcopy(objects)
    queues = {o["metadata"]["name"]: o for o in objects if o.get("kind") == "ClusterQueue"}
    for opening in openings:
        (container,) = opening["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
        env = {e["name"]: e.get("value") for e in container["env"]}
        for queue, quota in json.loads(env[ENV_QUOTAS]).items():
            for group in queues[queue]["spec"]["resourceGroups"]:
                for entry in group["flavors"]:
                    for resource in entry["resources"] if entry["name"] == env[ENV_FLAVOR] else []:
                        resource["nominalQuota"] = quota[resource["name"]]
    return objects


@dataclass(frozen=True)
class Kueue:
    """What one cluster's Kueue holds: its objects by kind and name, its configuration, and
    the labels of the Namespaces it reads."""

    objects: dict[str, dict[str, dict[str, Any]]]
    frameworks: tuple[str, ...]
    excluded_prefixes: tuple[str, ...] = ()
    config: dict[str, Any] = field(default_factory=dict)
    namespaces: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def of(
        cls, objects: Iterable[dict[str, Any]], config: dict[str, Any], *, windows: Phase
    ) -> Kueue:
        """Kueue holding `objects`, its reservation windows' flavors in phase `windows`."""
        found: dict[str, dict[str, dict[str, Any]]] = {}
        namespaces = {}
        for obj in in_phase(list(objects), windows):
            if obj.get("apiVersion", "").startswith("kueue.x-k8s.io/") or (
                obj.get("apiVersion", "").startswith("resource.k8s.io/")
                and obj.get("kind") == "ResourceClaimTemplate"
            ):
                meta = obj["metadata"]
                key = f"{meta['namespace']}/{meta['name']}" if "namespace" in meta else meta["name"]
                found.setdefault(obj["kind"], {})[key] = obj
            elif (obj.get("apiVersion"), obj.get("kind")) == ("v1", "Namespace"):
                namespaces[obj["metadata"]["name"]] = obj
        return cls(
            found,
            tuple(config.get("integrations", {}).get("frameworks", ())),
            tuple(config.get("resources", {}).get("excludeResourcePrefixes", ())),
            config,
            namespaces,
        )

    def namespace(self, name: str) -> dict[str, Any]:
        """The Namespace object; one the objects do not declare (the cluster's own) with only
        the label every namespace carries."""
        return self.namespaces.get(name) or {"metadata": {"name": name}}

    def manages(self, namespace: str) -> bool:
        return kueue_manages(self.config, self.namespace(namespace))

    def get(self, kind: str, name: str) -> dict[str, Any] | None:
        return self.objects.get(kind, {}).get(name)

    def all(self, kind: str) -> dict[str, dict[str, Any]]:
        return self.objects.get(kind, {})


# ------------------------------------------------------------------------------ a job


@dataclass(frozen=True)
class PodSet:
    """One pod set of a workload: a batch Job's one, a JobSet's per replicatedJob."""

    count: int
    requests: dict[str, Fraction]
    annotations: dict[str, str]
    node_selector: dict[str, str]
    tolerations: list[dict[str, Any]] = field(default_factory=list)
    name: str = "main"

    def tas_request(self) -> str | None:
        """The level asked for; "" for an unconstrained request; None without one."""
        for key in TAS_ANNOTATIONS:
            if key in self.annotations:
                return "" if key.endswith("unconstrained-topology") else self.annotations[key]
        return None


UNITS = {
    "": 1, "m": Fraction(1, 1000), "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40,
}  # fmt: skip


def quantity(text: Any) -> Fraction:
    """A Kubernetes quantity (`8`, `500m`, `64Gi`) as a number."""
    match = re.fullmatch(r"([0-9.]+)([a-zA-Z]*)", str(text))
    if match is None or match.group(2) not in UNITS:
        raise ValueError(f"not a quantity this model reads: {text!r}")
    return Fraction(match.group(1)) * UNITS[match.group(2)]


JOBSET = ("jobset.x-k8s.io/v1alpha2", "JobSet")


def pod_set_specs(job: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(name, pod spec) of each pod set, as `pod_sets` names them."""
    if (job["apiVersion"], job["kind"]) != JOBSET:
        return [("main", job["spec"]["template"]["spec"])]
    return [
        (rj["name"], rj["template"]["spec"]["template"]["spec"])
        for rj in job["spec"]["replicatedJobs"]
    ]


def pod_sets(job: dict[str, Any]) -> list[PodSet]:
    """The workload's pod sets: a Job's one, or one per replicatedJob of a JobSet."""
    if (job["apiVersion"], job["kind"]) != JOBSET:
        return [pod_set(job)]
    found = []
    for rj in job["spec"]["replicatedJobs"]:
        spec = rj["template"]["spec"]
        per_replica = min(
            spec.get("parallelism", 1), spec.get("completions", spec.get("parallelism", 1))
        )
        one = pod_set({"spec": spec}, name=rj["name"])
        found.append(dataclass_replace(one, count=rj.get("replicas", 1) * per_replica))
    return found


def pod_set(job: dict[str, Any], name: str = "main") -> PodSet:
    """Kueue counts a pod's requests (limits where a request is missing) summed over its
    containers, and at least each init container's (pkg/resources `NewRequestsFromPodSpec`)."""
    template = job["spec"]["template"]
    spec = template["spec"]

    def total(containers: list[dict[str, Any]]) -> dict[str, Fraction]:
        found: dict[str, Fraction] = {}
        for c in containers:
            res = c.get("resources", {})
            for name, value in {**res.get("limits", {}), **res.get("requests", {})}.items():
                found[name] = found.get(name, Fraction(0)) + quantity(value)
        return found

    requests = total(spec.get("containers", []))
    for init in spec.get("initContainers", []):
        for name, value in total([init]).items():
            requests[name] = max(requests.get(name, Fraction(0)), value)
    return PodSet(
        count=job["spec"].get("parallelism", 1),
        requests=requests,
        annotations=dict(template.get("metadata", {}).get("annotations", {})),
        node_selector=dict(spec.get("nodeSelector", {})),
        tolerations=list(spec.get("tolerations", [])),
        name=name,
    )


# ------------------------------------------------------------------------------ DRA claims

# Kueue v0.19.2's words for what it does not charge: pkg/controller/core/workload_controller.go
# (a pre-made claim) and pkg/dra/claims.go `countDevicesPerClass` (each request), each detail
# prefixed "ResourceClaimTemplate <name>: " there.
DRA_CLAIM_NAME = "KueueDRAIntegration feature does not support use of resource claims"
DRA_FIRST_AVAILABLE = "FirstAvailable device selection is not supported"
DRA_NO_EXACTLY = "Exactly must be set if FirstAvailable is nil"
DRA_ADMIN_ACCESS = "AdminAccess is not supported"
DRA_ALL = "AllocationMode 'All' is not supported"
# The API server defaults an `exactly` request to one device (resource.k8s.io/v1
# ExactDeviceRequest: allocationMode ExactCount, count 1), and Kueue reads it defaulted.
EXACT_COUNT = "ExactCount"


def device_class_mapping(config: dict[str, Any]) -> dict[str, str]:
    """DeviceClass -> the logical resource its `resources.deviceClassMappings` entry names."""
    return {
        device_class: mapping["name"]
        for mapping in config.get("resources", {}).get("deviceClassMappings", ())
        for device_class in mapping["deviceClassNames"]
    }


def uncharged(request: dict[str, Any]) -> tuple[str, str] | None:
    """(field under the request, Kueue's detail) where Kueue refuses to charge the request."""
    if "firstAvailable" in request:
        return "", DRA_FIRST_AVAILABLE
    exactly = request.get("exactly")
    if exactly is None:
        return "", DRA_NO_EXACTLY
    if exactly.get("adminAccess"):
        return ".exactly.adminAccess", DRA_ADMIN_ACCESS
    mode = exactly.get("allocationMode", EXACT_COUNT)
    if mode == "All":
        return ".exactly.allocationMode", DRA_ALL
    if mode != EXACT_COUNT:
        return ".exactly.allocationMode", f"unsupported allocation mode: {mode}"
    return None


def claim_charges(
    kueue: Kueue, job: dict[str, Any]
) -> tuple[dict[str, dict[str, Fraction]], list[str]]:
    """What one pod of each pod set is charged for its claims, by pod set name, and why Kueue
    does not admit the workload (its first error, as Kueue stops at it)."""
    namespace = job["metadata"]["namespace"]
    specs = pod_set_specs(job)
    if any(claim.get("resourceClaimName") for _, spec in specs for claim in pod_claims(spec)):
        return {}, [f"inadmissible: {DRA_CLAIM_NAME}"]
    mapping = device_class_mapping(kueue.config)
    charges: dict[str, dict[str, Fraction]] = {}
    for i, (pod_set_name, spec) in enumerate(specs):
        per_pod: dict[str, Fraction] = {}
        for j, claim in enumerate(pod_claims(spec)):
            name = claim.get("resourceClaimTemplateName")
            if not name:
                continue
            where = f"spec.podSets[{i}].template.spec.resourceClaims[{j}]"
            template = kueue.get("ResourceClaimTemplate", f"{namespace}/{name}")
            if template is None:
                return {}, [
                    f"not admitted yet, retried with back-off: {where}: Internal error: failed to "
                    f"get claim spec for ResourceClaimTemplate {name} in podset {pod_set_name}: "
                    f'resourceclaimtemplates.resource.k8s.io "{name}" not found'
                ]
            per_class: dict[str, int] = {}
            for k, request in enumerate(device_requests(template)):
                refused = uncharged(request)
                if refused:
                    path, detail = refused
                    return {}, [
                        f"inadmissible: {where}.devices.requests[{k}]{path}: "
                        f"ResourceClaimTemplate {name}: {detail}"
                    ]
                exactly = request["exactly"]
                device_class = exactly["deviceClassName"]
                per_class[device_class] = per_class.get(device_class, 0) + exactly.get("count", 1)
            for device_class, count in sorted(per_class.items()):
                if device_class not in mapping:
                    return {}, [
                        f"inadmissible: {where}.resourceClaimTemplateName: Not found: "
                        f"DeviceClass {device_class} is not mapped in DRA configuration for "
                        f"podset {pod_set_name}"
                    ]
                logical = mapping[device_class]
                per_pod[logical] = per_pod.get(logical, Fraction(0)) + count
        if per_pod:
            charges[pod_set_name] = per_pod
    return charges, []


def charged_pod_sets(kueue: Kueue, job: dict[str, Any]) -> tuple[list[PodSet], list[str]]:
    """The job's pod sets with their claims charged beside their containers' requests, and
    why Kueue would not charge them."""
    charges, found = claim_charges(kueue, job)
    sets = []
    for ps in pod_sets(job):
        requests = dict(ps.requests)
        for resource, amount in charges.get(ps.name, {}).items():
            requests[resource] = requests.get(resource, Fraction(0)) + amount
        sets.append(dataclass_replace(ps, requests=requests))
    return sets, found


# ------------------------------------------------------------------------------ rules


def selects(selector: dict[str, Any] | None, namespace: dict[str, Any]) -> bool:
    """A ClusterQueue namespaceSelector on a Namespace object; no selector selects nothing
    (Kueue v0.19.2 ClusterQueue schema)."""
    return selector is not None and label_selector_matches(selector, namespace_labels(namespace))


# The integration of each kind, as Kueue's `integrations.frameworks` names it.
FRAMEWORKS = {("batch/v1", "Job"): "batch/job", JOBSET: "jobset.x-k8s.io/jobset"}


def framework_of(job: dict[str, Any]) -> str:
    return FRAMEWORKS.get((job["apiVersion"], job["kind"]), job["kind"])


def cluster_queue_of(kueue: Kueue, job: dict[str, Any]) -> tuple[dict[str, Any] | None, list[str]]:
    """The ClusterQueue the job's LocalQueue names, and what stops the job getting there."""
    meta = job["metadata"]
    namespace, queue = meta["namespace"], meta.get("labels", {}).get(QUEUE_LABEL)
    if queue is None:
        return None, []
    if not kueue.manages(namespace):
        return None, [
            f"not admitted: Namespace {namespace} not opted in for Kueue management "
            f"(managedJobsNamespaceSelector {managed_selector(kueue.config)}): the job stays "
            "suspended"
        ]
    found = []
    if framework_of(job) not in kueue.frameworks:
        found.append(
            f"framework {framework_of(job)} is not among Kueue's integrations "
            f"({', '.join(kueue.frameworks)}): the Job stays suspended"
        )
    local = kueue.get("LocalQueue", f"{namespace}/{queue}")
    if local is None:
        return None, [*found, f"LocalQueue {queue} doesn't exist in namespace {namespace}"]
    name = local["spec"]["clusterQueue"]
    cq = kueue.get("ClusterQueue", name)
    if cq is None:
        return None, [*found, f"ClusterQueue {name} doesn't exist"]
    if not selects(cq["spec"].get("namespaceSelector"), kueue.namespace(namespace)):
        found.append(f"namespace {namespace} doesn't match ClusterQueue {name}'s selector")
    for check in cq["spec"].get("admissionChecksStrategy", {}).get("admissionChecks", []):
        ac = kueue.get("AdmissionCheck", check["name"])
        if ac is None:
            found.append(f"ClusterQueue {name}: AdmissionCheck {check['name']} doesn't exist")
            continue
        if ac["spec"]["controllerName"] == MULTIKUEUE_CONTROLLER:
            if check.get("onFlavors"):
                found.append(f"ClusterQueue {name}: a MultiKueue check on some flavors only")
            config = kueue.get("MultiKueueConfig", ac["spec"]["parameters"]["name"])
            clusters = config["spec"]["clusters"] if config else []
            if not clusters:
                found.append(f"ClusterQueue {name}: MultiKueueConfig of {check['name']} missing")
            for cluster in clusters:
                if kueue.get("MultiKueueCluster", cluster) is None:
                    found.append(f"ClusterQueue {name}: MultiKueueCluster {cluster} doesn't exist")
    return cq, found


def queue_problems(kueue: Kueue, job: dict[str, Any]) -> list[str]:
    return cluster_queue_of(kueue, job)[1]


def counted(kueue: Kueue, requests: dict[str, Fraction]) -> dict[str, Fraction]:
    return {
        r: v
        for r, v in requests.items()
        if v and not any(r.startswith(p) for p in kueue.excluded_prefixes)
    }


@dataclass(frozen=True)
class Quota:
    """A ClusterQueue's quota of one flavor's resource: nominal, and its borrowing and lending
    limits (None: not set, no limit)."""

    nominal: Fraction = Fraction(0)
    borrowing_limit: Fraction | None = None
    lending_limit: Fraction | None = None

    @property
    def local(self) -> Fraction:
        """What the queue keeps for itself, never lent to the cohort: nominal less the lending
        limit; 0 without one (resource_node.go `localQuota`)."""
        if self.lending_limit is None:
            return Fraction(0)
        return max(Fraction(0), self.nominal - self.lending_limit)


def quota_of(cq: dict[str, Any], flavor: str, resource: str) -> Quota:
    for group in cq["spec"].get("resourceGroups", []):
        for f in group["flavors"]:
            for r in f["resources"] if f["name"] == flavor else []:
                if r["name"] == resource:
                    limits = [r.get(k) for k in ("borrowingLimit", "lendingLimit")]
                    return Quota(
                        quantity(r["nominalQuota"]),
                        *(None if v is None else quantity(v) for v in limits),
                    )
    return Quota()


# What each ClusterQueue has admitted: queue name -> (flavor, resource) -> amount.
Usage = dict[str, dict[tuple[str, str], Fraction]]


def available(
    kueue: Kueue, cq: dict[str, Any], flavor: str, resource: str, usage: Usage | None = None
) -> Fraction:
    """How much more of the flavor's resource the queue can admit now, with `usage` admitted
    (none: what it can ever reach), in a flat cohort (a cohortName, no Cohort object): Kueue
    v0.19.2 pkg/cache/scheduler/resource_node.go `available`. Each queue keeps its local quota;
    the rest of its nominal quota goes to the cohort (`accumulateFromChild`), whose usage is
    each member's usage past its local quota. A queue takes its local quota left, plus what the
    cohort has left, capped by its borrowing limit: what it stores in the cohort, less what it
    uses there, plus the limit."""
    usage = usage or {}
    name, cohort = cq["metadata"]["name"], cq["spec"].get("cohortName")
    own = quota_of(cq, flavor, resource)
    used = usage.get(name, {}).get((flavor, resource), Fraction(0))
    if not cohort:
        return own.nominal - used
    members = [cq] + [
        q
        for q in kueue.all("ClusterQueue").values()
        if q["spec"].get("cohortName") == cohort and q["metadata"]["name"] != name
    ]
    pooled, pooled_usage = Fraction(0), Fraction(0)
    for q in members:
        theirs = quota_of(q, flavor, resource)
        pooled += theirs.nominal - theirs.local
        spent = usage.get(q["metadata"]["name"], {}).get((flavor, resource), Fraction(0))
        pooled_usage += max(Fraction(0), spent - theirs.local)
    from_cohort = pooled - pooled_usage
    if own.borrowing_limit is not None:
        stored = own.nominal - own.local
        used_in_cohort = max(Fraction(0), used - own.local)
        from_cohort = min(from_cohort, stored - used_in_cohort + own.borrowing_limit)
    return max(Fraction(0), own.local - used) + from_cohort


def reachable_quota(kueue: Kueue, cq: dict[str, Any], flavor: str, resource: str) -> Fraction:
    """The most of the flavor's resource the queue can ever hold: with nothing admitted
    anywhere, its nominal quota plus what the cohort lends it, within the limits."""
    return available(kueue, cq, flavor, resource)


def tas_problem(kueue: Kueue, cq: dict[str, Any], ps: PodSet, flavor: dict[str, Any]) -> str | None:
    name = flavor["metadata"]["name"]
    flavors = [f["name"] for g in cq["spec"].get("resourceGroups", []) for f in g["flavors"]]
    tas_only = all(
        (kueue.get("ResourceFlavor", f) or {}).get("spec", {}).get("topologyName") for f in flavors
    )
    topology_name = flavor["spec"].get("topologyName")
    level = ps.tas_request()
    if level is None:
        if topology_name and not tas_only:
            return f"Flavor {name!r} supports only TopologyAwareScheduling"
        return None
    if topology_name is None:
        return f"Flavor {name!r} does not support TopologyAwareScheduling"
    topology = kueue.get("Topology", topology_name)
    if topology is None:
        return f"there is no Topology {topology_name!r} for TAS flavor {name!r}"
    levels = [lv["nodeLabel"] for lv in topology["spec"]["levels"]]
    if level and level not in levels:
        return f"Flavor {name!r} does not contain the requested level {level!r}"
    return None


def untolerated(flavor: dict[str, Any], ps: PodSet) -> list[str]:
    tolerations = [*ps.tolerations, *flavor["spec"].get("tolerations", [])]

    def tolerates(t: dict[str, Any], taint: dict[str, Any]) -> bool:
        if t.get("effect") and t["effect"] != taint["effect"]:
            return False
        if t.get("operator") == "Exists":
            return not t.get("key") or t["key"] == taint["key"]
        return t.get("key") == taint["key"] and t.get("value") == taint.get("value")

    return [
        taint["key"]
        for taint in flavor["spec"].get("nodeTaints", [])
        if taint["effect"] in ("NoSchedule", "NoExecute")
        and not any(tolerates(t, taint) for t in tolerations)
    ]


def flavor_misfit(
    kueue: Kueue,
    cq: dict[str, Any],
    group: dict[str, Any],
    entry: dict[str, Any],
    ps: PodSet,
    node_levels: Callable[[dict[str, Any]], str | None] | None,
) -> str | None:
    name = entry["name"]
    flavor = kueue.get("ResourceFlavor", name)
    if flavor is None:
        return f"flavor {name} not found"
    problem = tas_problem(kueue, cq, ps, flavor)
    if problem:
        return problem
    taints = untolerated(flavor, ps)
    if taints:
        return f"untolerated taint {', '.join(taints)} in flavor {name}"
    labels = flavor["spec"].get("nodeLabels", {})
    if any(k in labels and labels[k] != v for k, v in ps.node_selector.items()):
        return f"flavor {name} doesn't match node affinity"
    for resource, amount in counted(kueue, ps.requests).items():
        if resource not in group["coveredResources"]:
            continue
        most = reachable_quota(kueue, cq, name, resource)
        if amount * ps.count > most:
            return (
                f"flavor {name}: {ps.count} pods need {float(amount * ps.count):g} {resource}, "
                f"the queue reaches at most {float(most):g}"
            )
    multikueue = any(
        (kueue.get("AdmissionCheck", c["name"]) or {}).get("spec", {}).get("controllerName")
        == MULTIKUEUE_CONTROLLER
        for c in cq["spec"].get("admissionChecksStrategy", {}).get("admissionChecks", [])
    )
    if node_levels is not None and flavor["spec"].get("topologyName") and not multikueue:
        return node_levels(flavor)
    return None


def flavor_problems(
    kueue: Kueue,
    job: dict[str, Any],
    node_levels: Callable[[dict[str, Any]], str | None] | None = None,
) -> list[str]:
    """Why no flavor of the job's ClusterQueue takes its pod set; empty when one does."""
    cq, found = cluster_queue_of(kueue, job)
    if cq is None:
        return found
    sets, refused = charged_pod_sets(kueue, job)
    if refused:
        return refused
    groups = cq["spec"].get("resourceGroups", [])
    covered = {r for g in groups for r in g["coveredResources"]}
    found = []
    for ps in sets:
        missing = sorted(set(counted(kueue, ps.requests)) - covered)
        found += [f"resource {r} unavailable in ClusterQueue" for r in missing]
    if found:
        return found
    # The pod sets together: one flavor per resource group takes them all (pod sets of one
    # workload land on one flavor here; enough for the platform's one-pod-set jobs).
    whole = sets[0] if len(sets) == 1 else total_pod_set(sets)
    for ps in [*sets, whole] if len(sets) > 1 else sets:
        for group in groups:
            if not set(counted(kueue, ps.requests)) & set(group["coveredResources"]):
                continue
            why = [flavor_misfit(kueue, cq, group, f, ps, node_levels) for f in group["flavors"]]
            if all(why):
                return [f"ClusterQueue {cq['metadata']['name']}: {'; '.join(why)}"]
    return []


def assigned_flavor(kueue: Kueue, job: dict[str, Any], usage: Usage | None = None) -> str | None:
    """The flavor Kueue admits the job's one pod set to now, with `usage` admitted: the first
    of its ClusterQueue's flavors, in the order the queue lists them, that fits and has the
    quota left without preempting (v0.19.2 pkg/scheduler/flavorassigner/flavorassigner.go;
    the default FlavorFungibility, whenCanPreempt TryNextFlavor); None: it waits."""
    cq, problems = cluster_queue_of(kueue, job)
    sets, refused = charged_pod_sets(kueue, job)
    if cq is None or problems or refused:
        return None
    (ps,) = sets
    for group in cq["spec"].get("resourceGroups", []):
        for entry in group["flavors"]:
            if flavor_misfit(kueue, cq, group, entry, ps, None):
                continue
            wanted = {
                r: amount * ps.count
                for r, amount in counted(kueue, ps.requests).items()
                if r in group["coveredResources"]
            }
            if all(v <= available(kueue, cq, entry["name"], r, usage) for r, v in wanted.items()):
                return entry["name"]
    return None


def total_pod_set(sets: list[PodSet]) -> PodSet:
    """The pod sets as one for the quota: their requests times their counts, one pod."""
    requests: dict[str, Fraction] = {}
    for ps in sets:
        for name, amount in ps.requests.items():
            requests[name] = requests.get(name, Fraction(0)) + amount * ps.count
    first = sets[0]
    return dataclass_replace(first, count=1, requests=requests, name="(all)")


def admission_problems(
    kueue: Kueue,
    job: dict[str, Any],
    node_levels: Callable[[dict[str, Any]], str | None] | None = None,
) -> list[str]:
    """Every reason Kueue would never admit the job; empty when it would."""
    return sorted({*queue_problems(kueue, job), *flavor_problems(kueue, job, node_levels)})


# -------------------------------------------------------------------------- MultiKueue


def granted(rules: list[dict[str, Any]], group: str, resource: str) -> set[str]:
    verbs: set[str] = set()
    for rule in rules:
        if group in rule.get("apiGroups", []) and resource in rule.get("resources", []):
            verbs |= set(rule.get("verbs", []))
    return verbs


def connection_problems(
    frameworks: Iterable[str], worker_rules: list[dict[str, Any]], serves: Callable[[str], bool]
) -> list[str]:
    """Why the manager's connection to the worker would not become Active; `serves(api)` says
    whether the worker serves `group/version/Kind`."""
    found = []
    if not serves(WORKLOAD_API):
        found.append(f"the worker serves no {WORKLOAD_API}")
    for (group, resource), verbs in KUEUE_GRANTS.items():
        if not verbs <= granted(worker_rules, group, resource):
            missing = ", ".join(sorted(verbs - granted(worker_rules, group, resource)))
            found.append(f"the worker's role lacks {missing} on {group} {resource}")
    for framework in frameworks:
        if framework not in ADAPTERS:
            continue
        api_version, kind, resource = ADAPTERS[framework]
        group = api_version.rpartition("/")[0]
        if not serves(f"{api_version}/{kind}"):
            found.append(f"{framework}: the worker serves no {api_version} {kind} (no CRD)")
        for res, verbs in ((resource, JOB_VERBS), (f"{resource}/status", {"get"})):
            lacking = verbs - granted(worker_rules, group, res)
            if lacking:
                found.append(
                    f"{framework}: the worker's role lacks {', '.join(sorted(lacking))} on "
                    f"{group or 'core'} {res}"
                )
    return found


def topology_levels(kueue: Kueue, flavor_name: str) -> tuple[str, ...] | None:
    flavor = kueue.get("ResourceFlavor", flavor_name) or {"spec": {}}
    topology = kueue.get("Topology", flavor["spec"].get("topologyName") or "")
    if topology is None:
        return None
    return tuple(lv["nodeLabel"] for lv in topology["spec"]["levels"])


def queue_flavors(kueue: Kueue, queue: str) -> list[str]:
    cq = kueue.get("ClusterQueue", queue) or {"spec": {}}
    return [f["name"] for g in cq["spec"].get("resourceGroups", []) for f in g["flavors"]]


def topology_mirror_problems(manager: Kueue, worker: Kueue, queue: str) -> list[str]:
    """The manager's flavors of a bursting queue carry the levels the worker's do."""
    theirs = {topology_levels(worker, f) for f in queue_flavors(worker, queue)}
    ours = {topology_levels(manager, f) for f in queue_flavors(manager, queue)}
    if ours != theirs:
        return [
            f"ClusterQueue {queue}: the manager's flavors carry topology levels "
            f"{sorted(ours, key=str)}, the worker's {sorted(theirs, key=str)}"
        ]
    return []


# --------------------------------------------------------------- DRA device-class mappings

# kubernetes-sigs/kueue v0.19.2 pkg/config/validation.go validateDeviceClassMappings: at most 16
# mappings; each name a qualified name of at most 253 characters, used once; 1 to 8 DeviceClass
# names a mapping (apis/config/v1beta2/configuration_types.go); each DeviceClass in one mapping.
MAX_DEVICE_CLASS_MAPPINGS = 16
MAX_CLASSES_PER_MAPPING = 8
_QUALIFIED = re.compile(
    r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
)


def device_class_mapping_problems(config: dict[str, Any]) -> list[str]:
    """What Kueue's validation refuses of `resources.deviceClassMappings`, in its field paths;
    Kueue does not start with a Configuration that has any."""
    mappings = (config.get("resources") or {}).get("deviceClassMappings") or []
    path = "resources.deviceClassMappings"
    problems = []
    if len(mappings) > MAX_DEVICE_CLASS_MAPPINGS:
        problems.append(f"{path}: must have at most {MAX_DEVICE_CLASS_MAPPINGS} items")
    names: set[str] = set()
    owner: dict[str, str] = {}
    for i, mapping in enumerate(mappings):
        name = mapping.get("name", "")
        if not _QUALIFIED.fullmatch(name) or len(name) > 253:
            problems.append(f"{path}[{i}].name: Invalid value: {name!r}")
        if name in names:
            problems.append(f"{path}[{i}].name: Duplicate value: {name!r}")
        names.add(name)
        classes = mapping.get("deviceClassNames") or []
        if not 1 <= len(classes) <= MAX_CLASSES_PER_MAPPING:
            problems.append(f"{path}[{i}].deviceClassNames: must have 1 to 8 items")
        for device_class in classes:
            if device_class in owner:
                problems.append(
                    f"{path}[{i}].deviceClassNames: Duplicate value: {device_class!r} "
                    f"(already mapped to {owner[device_class]})"
                )
            owner[device_class] = name
    return problems


def unmapped_device_classes(config: dict[str, Any], classes: Iterable[str]) -> list[str]:
    """The DeviceClasses among `classes` no mapping lists: a workload whose claim template
    names one is inadmissible ("DeviceClass X is not mapped in DRA configuration", v0.19.2
    pkg/dra/claims.go)."""
    mappings = (config.get("resources") or {}).get("deviceClassMappings") or []
    mapped = {c for m in mappings for c in m.get("deviceClassNames", [])}
    return sorted(set(classes) - mapped)
