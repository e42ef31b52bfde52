"""What `pulumi up` creates before what: an object after the release that installs its kind,
after what hands its pods their network addresses, and a claim once its volume can bind.

The mock engine creates everything at once, so an object declared before its CRD exists, or a
CephCluster whose pods start before Multus and nv-ipam can give them addresses, passes every
test but fails, or hangs, against a cluster. These tests read the order from the plan's
dependencies, and which release installs which kind from the packaged charts themselves
(../shared/helm), never from the program.
"""

from __future__ import annotations

import functools
import json
import re
import tarfile

import pytest

from model.stacks import ROOT
from plan.critical_path import waits_for
from plan.model import Plan, PlannedResource
from tests.conftest import STACKS, planned, rendered, stack_config
from tests.helpers import crds

HELM = ROOT.parent / "shared" / "helm"
RELEASE = "kubernetes:helm.sh/v3:Release"
NAD = "kubernetes:k8s.cni.cncf.io/v1:NetworkAttachmentDefinition"
IP_POOL = "kubernetes:nv-ipam.nvidia.com/v1alpha1:IPPool"
NIC_CLUSTER_POLICY = "kubernetes:mellanox.com/v1alpha1:NicClusterPolicy"
CEPH_CLUSTER = "kubernetes:ceph.rook.io/v1:CephCluster"
CEPH_FILESYSTEM = "kubernetes:ceph.rook.io/v1:CephFilesystem"
CLAIM = "kubernetes:core/v1:PersistentVolumeClaim"
VOLUME = "kubernetes:core/v1:PersistentVolume"
STORAGE_CLASS = "kubernetes:storage.k8s.io/v1:StorageClass"
# pulumi-kubernetes awaits a claim until Bound for a fixed 5 minutes, whatever the resource's
# custom timeouts (provider/pkg/await/awaiters.go, untilCoreV1PersistentVolumeClaimReady).
# Any other object waits on `pulumi.com/waitFor` for `pulumi.com/timeoutSeconds`
# (provider/pkg/metadata/overrides.go: ReadyCondition, TimeoutDuration).
WAIT_FOR, TIMEOUT_SECONDS = "pulumi.com/waitFor", "pulumi.com/timeoutSeconds"
# Rook sets a CephFilesystem's status.phase to Ready once its reconcile has created the pools,
# the filesystem and the MDS, which it starts only when the CephCluster is ready to reconcile
# (rook v1.20, pkg/operator/ceph/file/controller.go).
CEPHFS_READY = "jsonpath={.status.phase}=Ready"
# Multus reads the networks a pod joins from this annotation (multus-cni docs, "How to use").
MULTUS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"
# No chart ships nv-ipam's CRDs: the Network Operator deploys nv-ipam, CRDs included, from the
# NicClusterPolicy's spec.nvIpam (../shared/crds/README.md, nvidia-k8s-ipam row).
INSTALLED_BY_OPERATOR = {("nv-ipam.nvidia.com", "IPPool"): NIC_CLUSTER_POLICY}

_CRD = re.compile(r"^kind:\s*CustomResourceDefinition\s*$", re.M)
_GROUP = re.compile(r"^\s+group:\s*['\"]?([a-z0-9.-]+)", re.M)
_KIND = re.compile(r"^\s+names:\s*\n(?:\s+\S.*\n)*?\s+kind:\s*['\"]?(\w+)", re.M)


@functools.cache
def chart_kinds(chart: str, version: str) -> frozenset[tuple[str, str]]:
    """(group, kind) of every CRD the packaged chart ships, its subcharts' included."""
    package = HELM / f"{chart.rsplit('/', 1)[-1]}-{version}.tgz"
    assert package.is_file(), f"no packaged chart {package} (../shared/helm/README.md)"
    kinds = set()
    with tarfile.open(package) as tar:
        for member in tar.getmembers():
            if not (member.isfile() and member.name.endswith((".yaml", ".yml"))):
                continue
            text = tar.extractfile(member).read().decode()
            for doc in re.split(r"^---", text, flags=re.M):
                group, kind = _GROUP.search(doc), _KIND.search(doc)
                if _CRD.search(doc) and group and kind:
                    kinds.add((group.group(1), kind.group(1)))
    return frozenset(kinds)


def upstream(plan: Plan, resource: PlannedResource) -> set[str]:
    """Every URN `resource` waits for, directly or through what it waits for."""
    index, seen, todo = plan.by_urn, set(), list(resource.dependencies)
    while todo:
        urn = todo.pop()
        if urn not in seen:
            seen.add(urn)
            todo.extend(index[urn].dependencies if urn in index else ())
    return seen


def installers(plan: Plan, group: str, kind: str) -> list[PlannedResource]:
    """The resources of the plan that make the cluster serve `group`'s `kind`."""
    by_operator = INSTALLED_BY_OPERATOR.get((group, kind))
    if by_operator is not None:
        return plan.of_type(by_operator)
    return [
        r
        for r in plan.of_type(RELEASE)
        if (group, kind) in chart_kinds(r.inputs["chart"], r.inputs["version"])
    ]


def test_the_chart_scan_finds_the_crds_the_charts_ship():
    # File names in the packages (../shared/helm/README.md; `tar -tzf`):
    # network-operator/crds/k8s.cni.cncf.io_networkattachmentdefinitions_crd.yaml,
    # kube-prometheus-stack/charts/crds/crds/crd-prometheusrules.yaml (a subchart),
    # kueue/templates/crd/kueue.x-k8s.io_localqueues.yaml (a template).
    assert ("k8s.cni.cncf.io", "NetworkAttachmentDefinition") in chart_kinds(
        "network-operator", "26.4.1"
    )
    assert ("monitoring.coreos.com", "PrometheusRule") in chart_kinds(
        "kube-prometheus-stack", "88.5.3"
    )
    assert ("kueue.x-k8s.io", "LocalQueue") in chart_kinds(
        "oci://registry.k8s.io/kueue/charts/kueue", "0.19.2"
    )
    assert ("ceph.rook.io", "CephCluster") in chart_kinds("rook-ceph", "v1.20.6")
    assert not chart_kinds("prometheus-pushgateway", "3.8.0")


@pytest.mark.parametrize("stack", STACKS)
def test_every_custom_resource_waits_for_what_installs_its_kind(stack):
    plan = planned(stack)
    late = []
    for r in plan.resources:
        if not (r.custom and crds.is_custom_resource(r.inputs)):
            continue
        group, kind = r.inputs["apiVersion"].split("/", 1)[0], r.inputs["kind"]
        found = installers(plan, group, kind)
        assert found, f"{stack}: nothing in the plan installs {group} {kind} ({r.name})"
        before = upstream(plan, r)
        if not any(i.urn in before for i in found):
            late.append(f"{r.name} ({kind}) before {', '.join(i.name for i in found)}")
    assert late == [], stack


def networks_joined(obj: dict) -> list[str]:
    """`namespace/name` of each NetworkAttachmentDefinition the object's pods join: a
    CephCluster's Multus selectors, a pod template's Multus annotation."""
    namespace = obj.get("metadata", {}).get("namespace", "")
    if obj.get("kind") == "CephCluster":
        names = list(obj["spec"].get("network", {}).get("selectors", {}).values())
    else:
        template = obj.get("spec", {}).get("template", {}).get("metadata", {})
        value = template.get("annotations", {}).get(MULTUS_ANNOTATION, "")
        names = [n.strip() for n in value.split(",") if n.strip()]
    return [n if "/" in n else f"{namespace}/{n}" for n in names]


def by_object(plan: Plan, token: str) -> dict[str, PlannedResource]:
    return {
        f"{r.inputs['metadata'].get('namespace', '')}/{r.inputs['metadata']['name']}": r
        for r in plan.of_type(token)
    }


@pytest.mark.parametrize("stack", STACKS)
def test_pods_on_a_multus_network_wait_for_the_network_and_its_addresses(stack):
    plan = planned(stack)
    nads = by_object(plan, NAD)
    pools = {key.split("/", 1)[1]: r for key, r in by_object(plan, IP_POOL).items()}
    joined = 0
    for r in plan.resources:
        for network in networks_joined(r.inputs) if r.custom else ():
            joined += 1
            nad = nads.get(network)
            assert nad is not None, f"{stack}: {r.name} joins {network}, which no NAD declares"
            pool_name = json.loads(nad.inputs["spec"]["config"])["ipam"]["poolName"]
            pool = pools.get(pool_name)
            assert pool is not None, f"{stack}: {network} takes addresses from {pool_name}"
            before = upstream(plan, r)
            assert nad.urn in before, f"{stack}: {r.name} may start before {network}"
            assert pool.urn in before, f"{stack}: {r.name} may start before pool {pool_name}"
    if any(r.type == CEPH_CLUSTER and networks_joined(r.inputs) for r in plan.resources):
        assert joined >= 2, stack


@pytest.mark.parametrize("stack", STACKS)
def test_every_claim_is_declared_once_its_volume_can_bind_within_the_fixed_await(stack):
    """A static claim after its volume; a CephFS claim after its filesystem, which `pulumi up`
    awaits Ready for storage.ceph.ready_timeout_minutes, a cold cluster's bootstrap included."""
    plan = planned(stack)
    for claim in plan.of_type(CLAIM):
        before, spec = upstream(plan, claim), claim.inputs["spec"]
        if spec.get("volumeName"):
            (volume,) = [
                v
                for v in plan.of_type(VOLUME)
                if v.inputs["metadata"]["name"] == spec["volumeName"]
            ]
            assert volume.urn in before, f"{stack}: {claim.name} before {volume.name}"
            continue
        (storage_class,) = [
            c
            for c in plan.of_type(STORAGE_CLASS)
            if c.inputs["metadata"]["name"] == spec["storageClassName"]
        ]
        assert storage_class.urn in before, f"{stack}: {claim.name} before its class"
        fs_name = storage_class.inputs.get("parameters", {}).get("fsName")
        filesystems = [
            f for f in plan.of_type(CEPH_FILESYSTEM) if f.inputs["metadata"]["name"] == fs_name
        ]
        assert filesystems, f"{stack}: {claim.name} binds through nothing pulumi up awaits"
        (filesystem,) = filesystems
        assert filesystem.urn in before, f"{stack}: {claim.name} before {filesystem.name}"
        annotations = filesystem.inputs["metadata"].get("annotations", {})
        assert annotations.get(WAIT_FOR) == CEPHFS_READY, stack
        minutes = stack_config(stack).storage.ceph.ready_timeout_minutes
        assert annotations.get(TIMEOUT_SECONDS) == str(minutes * 60), stack


def waited_for(plan: Plan) -> dict[str, set[str]]:
    """Per custom resource, every custom resource `pulumi up` creates before it: a dependency on
    a component waits for each resource it holds (plan/critical_path.py), and so on upstream."""
    direct = waits_for(plan)

    @functools.cache
    def closure(urn: str) -> frozenset[str]:
        return frozenset(direct[urn]).union(*(closure(d) for d in direct[urn]))

    return {urn: set(closure(urn)) for urn in direct}


def claims_used(obj: dict) -> tuple[set[str], set[str]]:
    """(claim names its pods mount, StorageClasses its claims ask for) of one object: a claim,
    a pod template's `persistentVolumeClaim` volumes, a StatefulSet's `volumeClaimTemplates` and
    an operator's `storage.volumeClaimTemplate` (a Prometheus, an Alertmanager)."""
    names, classes = set(), set()
    if obj.get("kind") == "PersistentVolumeClaim":
        classes.add(obj["spec"].get("storageClassName") or "")

    def walk(value):
        if isinstance(value, list):
            for v in value:
                walk(v)
        if not isinstance(value, dict):
            return
        for key, v in value.items():
            if key == "persistentVolumeClaim":
                names.add(v["claimName"])
            elif key == "volumeClaimTemplate":
                classes.add(v.get("spec", {}).get("storageClassName") or "")
            elif key == "volumeClaimTemplates":
                classes.update(t.get("spec", {}).get("storageClassName") or "" for t in v)
            walk(v)

    walk(obj.get("spec", {}))
    return names, classes - {""}


def class_providers(plan: Plan, name: str) -> list[PlannedResource]:
    """What a claim of StorageClass `name` binds through, where the plan declares the class: the
    class, and the CephFilesystem its CSI parameters name (a CephFS class provisions nothing
    before Rook has made the filesystem). Empty: the cluster's own class."""
    found = [c for c in plan.of_type(STORAGE_CLASS) if c.inputs["metadata"]["name"] == name]
    for c in list(found):
        fs_name = c.inputs.get("parameters", {}).get("fsName")
        found += [
            f for f in plan.of_type(CEPH_FILESYSTEM) if f.inputs["metadata"]["name"] == fs_name
        ]
    return found


@pytest.mark.parametrize("stack", STACKS)
def test_whatever_mounts_a_claim_waits_for_what_binds_it(stack):
    """A release that mounts a claim (Helm's wait: 300 s for its pods to be ready) or a pod that
    does, declared before the StorageClass or the filesystem its claim binds through, waits on
    a Pending claim and fails the `up` (onprem's Pushgateway and Prometheus on CephFS). Read
    from the rendered releases and the plan's objects, every stack."""
    plan, before = planned(stack), waited_for(planned(stack))
    claims = {
        (r.inputs["metadata"].get("namespace", ""), r.inputs["metadata"]["name"]): r
        for r in plan.of_type(CLAIM)
    }
    users: list[tuple[PlannedResource, str, list[dict]]] = [
        (r, r.inputs["metadata"].get("namespace", ""), [r.inputs])
        for r in plan.resources
        if r.custom and r.type.startswith("kubernetes:") and r.type != RELEASE
    ]
    releases = {r.name: r for r in plan.of_type(RELEASE)}
    users += [
        (
            releases[rel.release],
            rel.namespace,
            [o for o in rel.objects if o["kind"] != "CustomResourceDefinition"],
        )
        for rel in rendered(stack).releases
    ]
    late, checked = [], 0
    for user, namespace, objects in users:
        own = {o["metadata"]["name"] for o in objects if o["kind"] == "PersistentVolumeClaim"}
        for obj in objects:
            names, classes = claims_used(obj)
            ns = obj["metadata"].get("namespace", namespace)
            unknown = {n for n in names - own if (ns, n) not in claims}
            late += [f"{user.name} mounts {ns}/{n}, which nothing declares" for n in unknown]
            needed = [claims[(ns, n)] for n in sorted(names - own - unknown)]
            for name in sorted(classes):
                needed += class_providers(plan, name)
            checked += bool(names or classes)
            late += [
                f"{user.name} ({obj['kind']} {obj['metadata']['name']}) before "
                f"{n.type.rsplit(':', 1)[-1]} {n.name}"
                for n in needed
                if n.urn != user.urn and n.urn not in before[user.urn]
            ]
    assert late == [], f"{stack}: may wait on an unbound claim: " + "; ".join(late)
    assert checked, f"{stack}: no claim found: the scan reads nothing"
