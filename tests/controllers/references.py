"""A model of what a pod needs to find on its cluster before it can start, written once and run
over every job the builder renders (tests/controllers/test_references_rules.py).

A reference that names nothing is valid to the schema and fatal to the pod, each in its own way:

- ConfigMap / Secret through `envFrom`, `env[].valueFrom` or a volume, not marked `optional`: the
  kubelet refuses to start the container (`CreateContainerConfigError`, "configmap not found";
  Kubernetes "Configure a Pod to Use a ConfigMap", "Restrictions").
- PersistentVolumeClaim: the scheduler leaves the pod Pending ('persistentvolumeclaim "x" not
  found'; kube-scheduler VolumeBinding plugin). A claim that names a volume binds only that one,
  and a volume that names a claim binds only that one (kubernetes pkg/controller/volume/
  persistentvolume/pv_controller.go, syncUnboundClaim / syncVolume): a static volume serves ONE
  claim, so each namespace's claim needs a volume of its own reserved for it.
- serviceAccountName: the ServiceAccount admission plugin refuses the pod (kubernetes
  plugin/pkg/admission/serviceaccount/admission.go, "error looking up service account"); every
  namespace gets `default` from the ServiceAccount controller.
- priorityClassName: the Priority admission plugin refuses the pod ("no PriorityClass with name
  ... was found"; kubernetes plugin/pkg/admission/priority/admission.go); Kubernetes brings
  `system-cluster-critical` and `system-node-critical`.
- Multus `k8s.v1.cni.cncf.io/networks`: `name`, `namespace/name`, either with `@interface`, comma
  separated, or a JSON list of `{"name", "namespace"}`; with no namespace the pod's own. The CNI
  ADD fails and the pod never starts when the NetworkAttachmentDefinition is missing (multus-cni
  docs/how-to-use.md; pkg/k8sclient/k8sclient.go, parsePodNetworkAnnotation).
- Kueue: `kueue.x-k8s.io/queue-name` names a LocalQueue in the job's namespace, and a job whose
  queue does not exist stays suspended, its Workload inadmissible ("LocalQueue ... doesn't
  exist"); `kueue.x-k8s.io/priority-class` names a cluster-scoped WorkloadPriorityClass (Kueue
  v0.19.2 pkg/controller/constants/constants.go, QueueLabel and WorkloadPriorityClassLabel;
  pkg/controller/jobframework/reconciler.go).
- `subdomain`: an Indexed Job pod's hostname is `<job>-<index>` (Kubernetes "Jobs", "Completion
  mode"), and `<hostname>.<subdomain>` resolves only "if there exists a headless Service in the
  same namespace as the Pod, with the same name as the subdomain" that selects the pod, and only
  once the pod is ready unless the Service publishes not-ready addresses (Kubernetes "DNS for
  Services and Pods", "A/AAAA records", "Pod's hostname and subdomain fields"). torchrun's
  `--master-addr` must be index 0's such name, or the rendezvous waits for a name that never
  resolves.
- A JobSet (kubernetes-sigs/jobset v0.12.0) makes that Service itself: named after
  `spec.network.subdomain` (default: the JobSet's name), headless, selecting
  `jobset.sigs.k8s.io/jobset-name: <jobset>`, publishing not-ready addresses unless
  `network.publishNotReadyAddresses` is false, and only while `enableDNSHostnames` is not false
  (pkg/controllers/jobset_controller.go, createHeadlessSvcIfNecessary, GetSubdomain; the webhook
  defaults both to true). It sets each pod's `subdomain` and names its Jobs
  `<jobset>-<replicatedJob>-<job index>`, their pods' hostnames
  `<jobset>-<replicatedJob>-<job index>-<pod index>` (api/jobset/v1alpha2/jobset_types.go,
  `Network`; child Jobs default to completionMode Indexed). No Service need exist for it.
- A ConfigMap volume's `items` name keys: a key the ConfigMap does not hold fails the mount
  and the pod never starts (Kubernetes "Configure a Pod to Use a ConfigMap": "If a key is
  specified that does not exist in the ConfigMap, the volume setup fails"; kubelet
  pkg/volume/configmap, "configmap references non-existent config key").
- DRA claims (`resource.k8s.io`, ../shared/PINS.md "Claim shapes"): a pod's
  `spec.resourceClaims[].resourceClaimTemplateName` names a ResourceClaimTemplate of its own
  namespace (a `resourceClaimName` a ResourceClaim there): without it the ResourceClaim
  controller makes no claim for the pod and the scheduler leaves it Pending (kubernetes
  pkg/controller/resourceclaim/controller.go, the claim made from the template in the pod's
  namespace). A ComputeDomain (resource.nvidia.com/v1beta1) counts as the template its
  `spec.channel.resourceClaimTemplate.name` names: the driver's ComputeDomain controller
  creates it in the ComputeDomain's namespace (tests/controllers/dra.py `channel_template`).
  Each `deviceClassName` a template's requests name must be a DeviceClass of the cluster (the
  plan's objects or a chart's rendered ones: build the Cluster with them), or the scheduler
  finds no device for the claim. And each container's `resources.claims[].name` names an entry
  of the pod's `spec.resourceClaims`, or the API server refuses the pod (and a Job's template):
  kubernetes pkg/apis/core/validation/validation.go `validateResourceClaimNames`, "must be one
  of the names in pod.spec.resourceClaims" then " which is empty" or ": " and the names, sorted
  (`claim_name_problems`; `dra_problems` runs both DRA rules for one pod template).

Where the pods run: on the cluster the Job is applied to, except for a Job or JobSet managed by
MultiKueue (`spec.managedBy: kueue.x-k8s.io/multikueue`): its LocalQueue's ClusterQueue has an
AdmissionCheck of controller `kueue.x-k8s.io/multikueue`, whose MultiKueueConfig lists the
worker clusters, and MultiKueue copies the Job, and only the Job, to a worker, in the same
namespace with the same labels (Kueue v0.19.2 pkg/controller/jobs/job/job_multikueue_adapter.go,
SyncJob: `ObjectMeta: CloneObjectMetaForCreation(&localJob.ObjectMeta), Spec: *localJob.Spec.
DeepCopy()`; a JobSet alike, pkg/controller/jobs/jobset/jobset_multikueue_adapter.go,
SyncJob). Whatever the submitter applied beside the Job (a Service of its own) stays on the
manager; on the worker the pods find only what the worker stack declares. The Job's queue labels
are read on both: the manager admits the Workload, the worker's Kueue admits its copy.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tests.controllers.dra import (
    channel_template,
    device_class_names,
    device_requests,
    is_compute_domain,
    pod_claims,
)

MULTIKUEUE = "kueue.x-k8s.io/multikueue"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
NETWORKS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"
# Kubernetes "Namespaces": every cluster starts with these.
BUILTIN_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")
# Kubernetes "Pod Priority and Preemption": the two classes every cluster has.
BUILTIN_PRIORITY_CLASSES = ("system-cluster-critical", "system-node-critical")
# The labels the Job controller puts on every pod it creates, beside the template's own
# (Kubernetes "Jobs"; kubernetes pkg/controller/job/job_controller.go and indexed_job_utils.go).
JOB_POD_LABELS = ("batch.kubernetes.io/job-name", "job-name")
INDEX_LABEL = "batch.kubernetes.io/job-completion-index"
JOBSET_KINDS = ("Job", "CronJob", "JobSet")

Key = tuple[str, str | None, str]  # kind, namespace (None: cluster-scoped), name


@dataclass(frozen=True)
class Ref:
    kind: str
    namespace: str | None
    name: str
    # The field that names it, for the message.
    via: str

    @property
    def key(self) -> Key:
        return (self.kind, self.namespace, self.name)

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {where}{self.name} ({self.via})"


class Cluster:
    """The objects one stack declares on its cluster, and what Kubernetes brings."""

    def __init__(self, stack: str, objects: Iterable[Mapping[str, Any]]):
        self.stack = stack
        self.objects: dict[Key, Mapping[str, Any]] = {}
        for obj in objects:
            self.add(obj)
        for ns in BUILTIN_NAMESPACES:
            self.objects.setdefault(("Namespace", None, ns), {"kind": "Namespace"})
        for name in BUILTIN_PRIORITY_CLASSES:
            self.objects.setdefault(("PriorityClass", None, name), {"kind": "PriorityClass"})
        # The ServiceAccount controller creates `default` in every namespace.
        for _, _, ns in [k for k in self.objects if k[0] == "Namespace"]:
            self.objects.setdefault(("ServiceAccount", ns, "default"), {"kind": "ServiceAccount"})

    def add(self, obj: Mapping[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        self.objects[(obj["kind"], meta.get("namespace"), meta["name"])] = obj
        if is_compute_domain(obj):
            self.add(channel_template(obj))

    def with_objects(self, objects: Iterable[Mapping[str, Any]]) -> Cluster:
        """This cluster with what a submitter applies beside its Job."""
        found = Cluster(self.stack, ())
        found.objects = dict(self.objects)
        for obj in objects:
            found.add(obj)
        return found

    def get(self, kind: str, namespace: str | None, name: str) -> Mapping[str, Any] | None:
        return self.objects.get((kind, namespace, name))

    def names(self, kind: str, namespace: str | None) -> list[str]:
        return sorted(n for k, ns, n in self.objects if k == kind and ns == namespace)


# ------------------------------------------------------------------------ what a pod names


def networks(annotation: str, namespace: str) -> list[tuple[str, str]]:
    """(namespace, name) of every network in a Multus annotation."""
    text = annotation.strip()
    if text.startswith("["):
        return [(e.get("namespace") or namespace, e["name"]) for e in json.loads(text)]
    found = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        item = item.split("@", 1)[0]
        ns, _, name = item.rpartition("/")
        found.append((ns or namespace, name))
    return found


def workloads(obj: Mapping[str, Any]) -> list[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    """(each Job's metadata, its spec): a Job's own, a CronJob's Job, or each replicatedJob's
    first Job of a JobSet (`<jobset>-<replicatedJob>-0`), with the JobSet's labels."""
    if obj["kind"] != "JobSet":
        return [workload(obj)]
    meta = obj["metadata"]
    return [
        ({**meta, "name": f"{meta['name']}-{rj['name']}-0"}, rj["template"]["spec"])
        for rj in obj["spec"]["replicatedJobs"]
    ]


def workload(obj: Mapping[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """(the Job's metadata, its pod template) of a Job or a CronJob's Job."""
    if obj["kind"] == "CronJob":
        # The CronJob controller names each Job `<cronjob>-<scheduled time>` (Kubernetes
        # "CronJob"), in the CronJob's namespace.
        job, meta = obj["spec"]["jobTemplate"], obj["metadata"]
        name = f"{meta['name']}-<scheduled-time>"
        job_meta = {**job.get("metadata", {}), "namespace": meta["namespace"], "name": name}
        return job_meta, job["spec"]
    return obj["metadata"], obj["spec"]


def pod_references(template: Mapping[str, Any], namespace: str) -> list[Ref]:
    """Everything a pod of this template names that must exist before it starts."""
    spec, meta = template["spec"], template.get("metadata") or {}
    found = [Ref("Namespace", None, namespace, "metadata.namespace")]
    containers = [*spec.get("initContainers", []), *spec.get("containers", [])]
    for c in containers:
        for source in c.get("envFrom", []):
            for field, kind in (("configMapRef", "ConfigMap"), ("secretRef", "Secret")):
                ref = source.get(field)
                if ref and not ref.get("optional"):
                    found.append(Ref(kind, namespace, ref["name"], f"{c['name']} envFrom"))
        for var in c.get("env", []):
            value_from = var.get("valueFrom") or {}
            for field, kind in (("configMapKeyRef", "ConfigMap"), ("secretKeyRef", "Secret")):
                ref = value_from.get(field)
                if ref and not ref.get("optional"):
                    via = f"{c['name']} env {var['name']}"
                    found.append(Ref(kind, namespace, ref["name"], via))
    for volume in spec.get("volumes", []):
        via = f"volume {volume['name']}"
        if "configMap" in volume and not volume["configMap"].get("optional"):
            found.append(Ref("ConfigMap", namespace, volume["configMap"]["name"], via))
        if "secret" in volume and not volume["secret"].get("optional"):
            found.append(Ref("Secret", namespace, volume["secret"]["secretName"], via))
        if "persistentVolumeClaim" in volume:
            claim = volume["persistentVolumeClaim"]["claimName"]
            found.append(Ref("PersistentVolumeClaim", namespace, claim, via))
    for secret in spec.get("imagePullSecrets", []):
        found.append(Ref("Secret", namespace, secret["name"], "imagePullSecrets"))
    account = spec.get("serviceAccountName") or "default"
    found.append(Ref("ServiceAccount", namespace, account, "serviceAccountName"))
    if spec.get("priorityClassName"):
        found.append(Ref("PriorityClass", None, spec["priorityClassName"], "priorityClassName"))
    annotation = (meta.get("annotations") or {}).get(NETWORKS_ANNOTATION)
    if annotation:
        for ns, name in networks(annotation, namespace):
            found.append(Ref("NetworkAttachmentDefinition", ns, name, NETWORKS_ANNOTATION))
    if spec.get("subdomain"):
        found.append(Ref("Service", namespace, spec["subdomain"], "subdomain"))
    for claim in pod_claims(spec):
        via = f"resourceClaims {claim['name']}"
        if claim.get("resourceClaimTemplateName"):
            found.append(
                Ref("ResourceClaimTemplate", namespace, claim["resourceClaimTemplateName"], via)
            )
        if claim.get("resourceClaimName"):
            found.append(Ref("ResourceClaim", namespace, claim["resourceClaimName"], via))
    return found


def queue_references(job_meta: Mapping[str, Any]) -> list[Ref]:
    labels, ns = job_meta.get("labels") or {}, job_meta["namespace"]
    found = [Ref("Namespace", None, ns, "metadata.namespace")]
    if QUEUE_LABEL in labels:
        found.append(Ref("LocalQueue", ns, labels[QUEUE_LABEL], QUEUE_LABEL))
    if PRIORITY_LABEL in labels:
        found.append(Ref("WorkloadPriorityClass", None, labels[PRIORITY_LABEL], PRIORITY_LABEL))
    return found


# ----------------------------------------------------------------------------- the rules


def missing(refs: Sequence[Ref], cluster: Cluster) -> list[str]:
    return [f"{cluster.stack}: {r} does not exist" for r in refs if cluster.get(*r.key) is None]


def claim_problems(refs: Sequence[Ref], cluster: Cluster) -> list[str]:
    """A claim binds: to the volume it names, which must be reserved for it (or for no claim),
    and which no other claim of the stack names; or through its StorageClass."""
    found = []
    claims = [o for k, o in cluster.objects.items() if k[0] == "PersistentVolumeClaim"]
    for ref in (r for r in refs if r.kind == "PersistentVolumeClaim"):
        claim = cluster.get(*ref.key)
        if claim is None:
            continue
        spec = claim.get("spec") or {}
        where = f"{cluster.stack}: claim {ref.namespace}/{ref.name}"
        volume_name = spec.get("volumeName")
        if volume_name:
            volume = cluster.get("PersistentVolume", None, volume_name)
            if volume is None:
                found.append(f"{where} names PersistentVolume {volume_name}, which does not exist")
                continue
            reserved = (volume.get("spec") or {}).get("claimRef") or {}
            wanted = {"namespace": ref.namespace, "name": ref.name}
            if reserved and {k: reserved.get(k) for k in wanted} != wanted:
                found.append(
                    f"{where} names PersistentVolume {volume_name}, which is reserved for "
                    f"{reserved.get('namespace')}/{reserved.get('name')}: a volume binds one claim"
                )
            others = [
                f"{c['metadata']['namespace']}/{c['metadata']['name']}"
                for c in claims
                if c is not claim and (c.get("spec") or {}).get("volumeName") == volume_name
            ]
            if others:
                found.append(f"{where} shares PersistentVolume {volume_name} with {others}")
        elif spec.get("storageClassName") and (
            cluster.get("StorageClass", None, spec["storageClassName"]) is None
        ):
            found.append(f"{where}: StorageClass {spec['storageClassName']} does not exist")
    return found


def device_class_problems(refs: Sequence[Ref], cluster: Cluster) -> list[str]:
    """Every DeviceClass the pod's claim templates ask for is one the cluster has."""
    found = []
    for ref in (r for r in refs if r.kind == "ResourceClaimTemplate"):
        template = cluster.get(*ref.key)
        for request in device_requests(template) if template else ():
            for name in device_class_names(request):
                if cluster.get("DeviceClass", None, name) is None:
                    found.append(
                        f"{cluster.stack}: ResourceClaimTemplate {ref.namespace}/{ref.name} "
                        f"request {request['name']}: DeviceClass {name} does not exist"
                    )
    return found


def claim_name_problems(spec: Mapping[str, Any]) -> list[str]:
    """The API server's `validateResourceClaimNames`: a container's claim names one of the
    pod's `spec.resourceClaims`."""
    names = sorted(claim["name"] for claim in pod_claims(spec))
    known = f": {', '.join(names)}" if names else " which is empty"
    found = []
    for key in ("initContainers", "containers"):
        for i, container in enumerate(spec.get(key) or ()):
            for k, claim in enumerate((container.get("resources") or {}).get("claims") or ()):
                if claim["name"] not in names:
                    found.append(
                        f'spec.{key}[{i}].resources.claims[{k}]: Not found: "{claim["name"]}": '
                        f"must be one of the names in pod.spec.resourceClaims{known}"
                    )
    return found


def dra_problems(template: Mapping[str, Any], namespace: str, cluster: Cluster) -> list[str]:
    """Both DRA rules for one pod template in `namespace` of `cluster` (the templates and
    DeviceClasses missing() leaves to them; missing() reports a template that is not there)."""
    refs = pod_references(template, namespace)
    found = [f"{cluster.stack}: {p}" for p in claim_name_problems(template["spec"])]
    return found + device_class_problems(refs, cluster)


def configmap_item_problems(refs: Sequence[Ref], template: Mapping[str, Any], cluster: Cluster):
    """Every key a ConfigMap volume's items name is in the ConfigMap where the pod runs."""
    found = []
    for volume in template["spec"].get("volumes", []):
        source = volume.get("configMap")
        if not source or source.get("optional") or not source.get("items"):
            continue
        ref = next(r for r in refs if r.kind == "ConfigMap" and r.name == source["name"])
        held = cluster.get(*ref.key)
        if held is None:
            continue  # missing() reports it
        keys = {*(held.get("data") or {}), *(held.get("binaryData") or {})}
        for item in source["items"]:
            if item["key"] not in keys:
                found.append(
                    f"{cluster.stack}: ConfigMap {ref.namespace}/{ref.name} has no key "
                    f"{item['key']!r} ({ref.via}): the volume cannot be set up"
                )
    return found


def pod_labels(job_meta: Mapping[str, Any], template: Mapping[str, Any]) -> dict[str, str]:
    labels = dict((template.get("metadata") or {}).get("labels") or {})
    labels.update({key: job_meta["name"] for key in JOB_POD_LABELS})
    return labels


def selects(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def rendezvous_problems(
    job_meta: Mapping[str, Any], job_spec: Mapping[str, Any], cluster: Cluster
) -> list[str]:
    """`<job>-0.<subdomain>` resolves where the pods run, before they are ready, and torchrun
    rendezvouses there."""
    pod = job_spec["template"]["spec"]
    subdomain, ns, name = pod.get("subdomain"), job_meta["namespace"], job_meta["name"]
    master = masters(pod)
    if not subdomain:
        return [f"{cluster.stack}: job {ns}/{name}: --master-addr={m} without a subdomain: "
                "the name cannot resolve" for m in master]  # fmt: skip
    found = []
    index_zero = f"{name}-0.{subdomain}"
    for m in master:
        if m != index_zero and not m.startswith(f"{index_zero}."):
            found.append(f"{cluster.stack}: job {ns}/{name}: --master-addr={m}, not {index_zero}")
    if job_spec.get("completionMode") != "Indexed":
        found.append(f"{cluster.stack}: job {ns}/{name}: pods get `<job>-<index>` hostnames "
                     "only in completionMode Indexed")  # fmt: skip
    service = cluster.get("Service", ns, subdomain)
    if service is None:
        return found  # missing() reports it
    spec = service.get("spec") or {}
    where = f"{cluster.stack}: Service {ns}/{subdomain} (subdomain of job {name})"
    if spec.get("clusterIP") != "None":
        found.append(f"{where} is not headless: pods get no per-hostname records")
    if not selects(spec.get("selector") or {}, pod_labels(job_meta, job_spec["template"])):
        found.append(f"{where}: its selector {spec.get('selector')} does not select the pods")
    if spec.get("publishNotReadyAddresses") is not True:
        found.append(f"{where}: publishes only ready pods; peers look index 0 up while starting")
    return found


def masters(pod: Mapping[str, Any]) -> list[str]:
    return [
        a.split("=", 1)[1]
        for c in pod.get("containers", [])
        for a in c.get("command", []) + c.get("args", [])
        if a.startswith("--master-addr=")
    ]


def jobset_rendezvous_problems(obj: Mapping[str, Any], stack: str) -> list[str]:
    """Index 0 of the first replicatedJob resolves under the JobSet's own Service, before the
    pods are ready, and torchrun rendezvouses there."""
    meta, spec = obj["metadata"], obj["spec"]
    network = spec.get("network") or {}
    name, ns = meta["name"], meta["namespace"]
    subdomain = network.get("subdomain") or name
    where = f"{stack}: JobSet {ns}/{name}"
    found = []
    first = spec["replicatedJobs"][0]["name"]
    index_zero = f"{name}-{first}-0-0.{subdomain}"
    for rj in spec["replicatedJobs"]:
        job_spec = rj["template"]["spec"]
        for m in masters(job_spec["template"]["spec"]):
            if m != index_zero and not m.startswith(f"{index_zero}."):
                found.append(f"{where}: --master-addr={m}, not {index_zero}")
            if network.get("enableDNSHostnames") is False:
                found.append(f"{where}: enableDNSHostnames false: no Service, no pod names")
            if network.get("publishNotReadyAddresses") is False:
                found.append(f"{where}: publishes only ready pods; peers look index 0 up "
                             "while starting")  # fmt: skip
        if job_spec.get("completionMode", "Indexed") != "Indexed":
            found.append(f"{where}: pods get `<job>-<index>` hostnames only in completionMode "
                         "Indexed")  # fmt: skip
    return found


# ------------------------------------------------------------------------- where it runs


def workers_of(job_meta: Mapping[str, Any], manager: Cluster) -> list[str]:
    """The MultiKueue worker clusters the job's queue dispatches to, by MultiKueueCluster name:
    LocalQueue -> ClusterQueue -> its AdmissionCheck of controller kueue.x-k8s.io/multikueue ->
    the MultiKueueConfig it names -> spec.clusters."""
    queue = (job_meta.get("labels") or {}).get(QUEUE_LABEL)
    local = manager.get("LocalQueue", job_meta["namespace"], queue) if queue else None
    if local is None:
        return []
    cluster_queue = manager.get("ClusterQueue", None, local["spec"]["clusterQueue"]) or {}
    spec = cluster_queue.get("spec") or {}
    checks = [c["name"] for c in spec.get("admissionChecks") or []]
    for strategy in (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or []:
        checks.append(strategy["name"])
    found = []
    for name in checks:
        check = manager.get("AdmissionCheck", None, name) or {}
        if (check.get("spec") or {}).get("controllerName") != MULTIKUEUE:
            continue
        config = manager.get("MultiKueueConfig", None, check["spec"]["parameters"]["name"])
        found += list((config or {}).get("spec", {}).get("clusters") or [])
    return found


@dataclass(frozen=True)
class Placed:
    """A job as applied: the Job (or CronJob), what is applied beside it, and to which stack."""

    obj: Mapping[str, Any]
    stack: str
    beside: Sequence[Mapping[str, Any]] = ()

    @property
    def name(self) -> str:
        return f"{self.stack}:{self.obj['kind']} {self.obj['metadata']['name']}"


def problems(
    placed: Placed, clusters: Mapping[str, Cluster], worker_stacks: Mapping[str, str]
) -> list[str]:
    """Every reference of the job that names nothing where it is read. `worker_stacks` maps a
    manager's MultiKueueCluster names to the worker stacks (multikueue.workers[].stack)."""
    home = clusters[placed.stack].with_objects(placed.beside)
    jobs = workloads(placed.obj)
    job_meta = jobs[0][0] if placed.obj["kind"] != "JobSet" else placed.obj["metadata"]
    managed_by = (jobs[0][1] if placed.obj["kind"] != "JobSet" else placed.obj["spec"]).get(
        "managedBy"
    )
    found = missing(queue_references(job_meta), home)
    runs_on = [home]
    if managed_by == MULTIKUEUE:
        workers = workers_of(job_meta, home)
        if not workers:
            found.append(f"{placed.stack}: managed by MultiKueue, but its queue has no workers")
        runs_on = []
        for worker in workers:
            stack = worker_stacks.get(worker)
            if stack not in clusters:
                found.append(f"{placed.stack}: worker {worker} is no stack of this project")
                continue
            # Only the Job travels (SyncJob): the worker's own objects, nothing beside it.
            runs_on.append(clusters[stack])
            found += missing(queue_references(job_meta), clusters[stack])
    for meta, job_spec in jobs:
        template = job_spec["template"]
        refs = pod_references(template, meta["namespace"])
        for cluster in runs_on:
            found += missing(refs, cluster)
            found += claim_problems(refs, cluster)
            found += configmap_item_problems(refs, template, cluster)
            found += dra_problems(template, meta["namespace"], cluster)
            if placed.obj["kind"] != "JobSet":
                found += rendezvous_problems(meta, job_spec, cluster)
    if placed.obj["kind"] == "JobSet":
        found += jobset_rendezvous_problems(placed.obj, placed.stack)
    return found


def each_job(objects: Iterable[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
    return (o for o in objects if o.get("kind") in JOBSET_KINDS)
