"""The storage plane: its builders, and the FSx or Rook-Ceph storage each stack declares."""

from __future__ import annotations

import json

import pytest

from components.storage.ceph import (
    ceph_csi_drivers_values,
    ceph_network_spec,
    cephfs_driver_name,
    network_attachment_config,
)
from components.storage.fsx import data_repository_path, lustre_security_group_rules
from components.storage.volumes import (
    NVME_CACHE,
    SHARED_DATA,
    nvme_cache,
    shared_data_claim,
    training_volume_mounts,
    training_volumes,
)
from model.catalog import CATALOG
from model.config import CephSettings, NvmeCacheSettings, parse_config
from model.config.loading import read_yaml
from model.config.selftest import runs
from model.config.selftest_schedule import scheduled
from model.stacks import ROOT
from model.versions import CHARTS
from plan.engine import run_program
from tests.conftest import (
    AWS_STACKS,
    STACKS,
    copy_program,
    find,
    make_project,
    planned,
    validate_kubernetes,
)
from tests.conftest import stack_config as platform_config

INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"
EGRESS = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"
LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"
DRA = "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation"
PV = "kubernetes:core/v1:PersistentVolume"
PVC = "kubernetes:core/v1:PersistentVolumeClaim"
RELEASE = "kubernetes:helm.sh/v3:Release"
SETTINGS = NvmeCacheSettings()


def stack_config(stack: str) -> dict:
    doc = read_yaml(ROOT / "stacks" / f"Pulumi.{stack}.yaml", stack)
    return {k.split(":", 1)[1]: v for k, v in doc["config"].items()}


def claims_of(plan) -> dict[str, dict]:
    """namespace -> its `shared-data` claim."""
    found = [r.inputs for r in plan.of_type(PVC) if r.inputs["metadata"]["name"] == SHARED_DATA]
    return {c["metadata"]["namespace"]: c for c in found}


def training_namespace(stack: str) -> str:
    return stack_config(stack).get("namespaces", {}).get("training", "training")


def claim_of(plan):
    """The training namespace's claim."""
    return claims_of(plan)[training_namespace(plan.stack)]


def test_every_namespace_jobs_run_in_has_its_shared_data_claim():
    for stack in STACKS:
        teams = stack_config(stack).get("scheduling", {}).get("teams", [])
        cfg = platform_config(stack)
        # The self-test's own namespace where a self-test runs (namespaces.selftest's default).
        selftest = {"gpu-platform-selftest"} if runs(cfg) or scheduled(cfg) else set()
        expected = {training_namespace(stack), *(t["name"] for t in teams), *selftest}
        assert set(claims_of(planned(stack))) == expected, stack


# ------------------------------------------------------------------------------ builders


def test_lustre_rules_are_exactly_988_and_1018_to_1023_with_nodes_and_itself():
    rules = {
        (r.group, r.direction, r.peer, r.from_port, r.to_port)
        for r in lustre_security_group_rules()
    }
    ports = {(988, 988), (1018, 1023)}
    expected = {
        ("fsx", way, peer, *p)
        for way in ("ingress", "egress")
        for peer in ("fsx", "nodes")
        for p in ports
    }
    expected |= {("nodes", "ingress", "fsx", *p) for p in ports}
    assert rules == expected
    assert len({r.name for r in lustre_security_group_rules()}) == len(rules)


@pytest.mark.parametrize(
    ("prefix", "path"),
    [("datasets/", "s3://b1/datasets/"), ("", "s3://b1/"), ("a/b/", "s3://b1/a/b/")],
)
def test_data_repository_path(prefix, path):
    assert data_repository_path("b1", prefix) == path


@pytest.mark.parametrize(
    ("types", "size_limit", "nvme_gb"),
    [
        # EC2 instance store volumes table: p5.48xlarge 8 x 3,800 GB, g6e.24xlarge 2 x 1,900 GB.
        (["p5.48xlarge"], None, 8 * 3800),
        (["g6e.48xlarge", "g6e.24xlarge"], None, 2 * 1900),
        (["m7i.xlarge"], "100Gi", None),
        (["g5.2xlarge", "m7i.xlarge"], "100Gi", None),
    ],
)
def test_nvme_cache_is_an_emptydir_on_the_raid_array_or_size_limited_on_the_root_volume(
    types, size_limit, nvme_gb
):
    """Never a hostPath (Pod Security baseline forbids it, issue 25): an emptyDir, which lies on
    the RAID0 array because nodeadm bind-mounts /var/lib/kubelet onto it (PINS.md)."""
    cache = nvme_cache([CATALOG[t] for t in types], SETTINGS)
    assert cache.size_gb == nvme_gb
    expected = {"sizeLimit": size_limit} if size_limit else {}
    assert cache.volume == {"name": NVME_CACHE, "emptyDir": expected}
    assert cache.report()["source"] == "emptyDir"
    assert ("RAID0" in cache.report()["backing"]) == (size_limit is None)


@pytest.mark.parametrize("types", [["p4d.24xlarge"], ["m7i.xlarge"]])
def test_a_pod_template_using_the_contract_is_valid(types):
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "train"},
        "spec": {
            "volumes": training_volumes(nvme_cache([CATALOG[t] for t in types], SETTINGS)),
            "containers": [
                {"name": "train", "image": "x", "volumeMounts": training_volume_mounts()}
            ],
        },
    }
    validate_kubernetes(pod, "1.34")
    claims = [
        v["persistentVolumeClaim"]["claimName"]
        for v in pod["spec"]["volumes"]
        if "persistentVolumeClaim" in v
    ]
    assert claims == [SHARED_DATA]


def test_claim_builder_binds_a_static_volume_by_name():
    claim = shared_data_claim("ns1", 2400, storage_class="", volume_name="pv1")
    assert claim.spec.volume_name == "pv1"
    assert claim.spec.storage_class_name == ""
    assert claim.metadata.name == SHARED_DATA


def test_ceph_multus_networks_become_selectors_and_address_ranges():
    ceph = CephSettings(
        nodes=[{"name": "a", "devices": ["nvme1n1"]}],
        replication=1,
        namespace="storage",
        network={
            "provider": "multus",
            "cluster": {"interface": "ens2", "cidr": "10.9.0.0/24"},
        },
    )
    assert ceph_network_spec(ceph) == {
        "provider": "multus",
        "selectors": {"cluster": "storage/ceph-cluster"},
        "addressRanges": {"cluster": ["10.9.0.0/24"]},
    }
    config = json.loads(network_attachment_config("cluster", ceph.network.cluster))
    # nv-ipam's CNI config names a pool, nothing more (network-operator 26.4.1,
    # example/crs/mellanox.com_v1alpha1_macvlannetwork_cr-nvidia-ipam.yaml).
    assert (config["master"], config["ipam"]) == (
        "ens2",
        {"type": "nv-ipam", "poolName": "ceph-cluster"},
    )


def test_onprem_public_network_keeps_hosts_out_of_the_pod_range_and_reaches_them():
    # Rook's Multus guide: macvlan in bridge mode, a pod range that holds no host address, and
    # pods that reach the hosts' shims. nv-ipam (the operator's IPAM since whereabouts left in
    # v25.10.0) returns routes only through a gateway, so the pool's subnet spans both halves
    # of the stack's /24, with the hosts' half excluded: the hosts are on-link.
    objects = {
        (r.inputs["kind"], r.inputs["metadata"]["name"]): r.inputs
        for r in planned("onprem").resources
        if r.inputs.get("kind") in ("NetworkAttachmentDefinition", "IPPool")
    }
    nad = objects[("NetworkAttachmentDefinition", "ceph-public")]
    assert json.loads(nad["spec"]["config"]) == {
        "cniVersion": "0.3.1",
        "name": "ceph-public",
        "type": "macvlan",
        "master": "ens1f0np0",
        "mode": "bridge",
        "ipam": {"type": "nv-ipam", "poolName": "ceph-public"},
    }
    assert objects[("IPPool", "ceph-public")]["spec"] == {
        "subnet": "192.168.100.0/24",
        "perNodeBlockSize": 8,
        "exclusions": [{"startIP": "192.168.100.128", "endIP": "192.168.100.255"}],
    }
    # No host range on the cluster network: the pool is the pods' range itself.
    assert objects[("IPPool", "ceph-cluster")]["spec"] == {
        "subnet": "192.168.101.0/24",
        "perNodeBlockSize": 8,
    }


def test_csi_drivers_follow_the_rook_namespace():
    values = ceph_csi_drivers_values("storage")
    assert values["operatorConfig"]["namespace"] == "storage"
    assert values["drivers"]["cephfs"] == {"enabled": True, "name": "storage.cephfs.csi.ceph.com"}


# ------------------------------------------------------------------------------ AWS stacks


@pytest.mark.parametrize(
    ("stack", "zone"), [("dev", "us-east-1a"), ("staging", "us-east-1c"), ("prod", "us-east-1b")]
)
def test_shipped_lustre_sits_in_the_private_subnet_of_the_gpu_zone(stack, zone):
    plan = planned(stack)
    fs = find(plan, LUSTRE, f"{stack}-fsx").inputs
    assert fs["subnetIds"] == f"(known after apply: {stack}-private-{zone}.id)"
    assert fs["securityGroupIds"] == [f"(known after apply: {stack}-fsx-sg.id)"]
    assert plan.outputs["storage_fsx_zone"] == zone


def lustre_rules_seen(rules, fsx_sg: str, nodes_sg: str | None) -> set[tuple]:
    """(group, direction, peer, from, to) of every rule touching the FSx group; offline the EKS
    cluster group's id is not known, so `nodes_sg` None means "any other group"."""
    seen = set()
    for rule in rules:
        inputs = rule.inputs if hasattr(rule, "inputs") else rule.raw_inputs
        direction = "ingress" if rule.type == INGRESS else "egress"
        on, peer = inputs.get("securityGroupId"), inputs.get("referencedSecurityGroupId")
        if fsx_sg not in (on, peer):
            continue
        assert inputs["ipProtocol"] == "tcp"
        assert not {"cidrIpv4", "cidrIpv6", "prefixListId"} & set(inputs)
        for value in (on, peer):
            assert nodes_sg is None or value in (fsx_sg, nodes_sg), value
        group, other = ("fsx" if on == fsx_sg else "nodes"), ("fsx" if peer == fsx_sg else "nodes")
        seen.add((group, direction, other, int(inputs["fromPort"]), int(inputs["toPort"])))
    return seen


LUSTRE_RULES = {
    (group, way, peer, lo, hi)
    for lo, hi in ((988, 988), (1018, 1023))
    for group, way, peer in (
        ("fsx", "ingress", "fsx"),
        ("fsx", "ingress", "nodes"),
        ("fsx", "egress", "fsx"),
        ("fsx", "egress", "nodes"),
        ("nodes", "ingress", "fsx"),
    )
}


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_lustre_security_group_rules_are_exact(stack):
    plan = planned(stack)
    rules = plan.of_type(INGRESS) + plan.of_type(EGRESS)
    assert lustre_rules_seen(rules, f"(known after apply: {stack}-fsx-sg.id)", None) == LUSTRE_RULES


def test_lustre_rules_wire_the_given_node_security_group(tmp_path):
    program = (
        "import pulumi_kubernetes as k8s\n"
        "from components.context import StackContext\n"
        "from components.control.cluster import ClusterHandle\n"
        "from components.storage.fsx import FsxLustre, FsxLustreArgs\n"
        "from model.config import FsxSettings\n"
        "cluster = ClusterHandle('c', '1.35', k8s.Provider('k8s', kubeconfig='{}'), "
        "security_group_id='sg-nodes')\n"
        "FsxLustre('t', FsxLustreArgs(context=StackContext('t'), "
        "fsx=FsxSettings(data_repository=None), zone='us-east-1a', region='us-east-1', "
        "cluster=cluster, vpc_id='vpc-1', subnet_id='subnet-1', claim_namespaces=['training']))\n"
    )
    recording = run_program("t", copy_program(tmp_path, program, {"t": {}}))
    rules = [r for r in recording.resources.values() if r.type in (INGRESS, EGRESS)]
    assert lustre_rules_seen(rules, "(known after apply: t-fsx-sg.id)", "sg-nodes") == LUSTRE_RULES


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_static_volume_and_claim_are_bound_to_each_other_and_the_file_system(stack):
    """A claim in each namespace the platform's jobs run in (training, and the self-test's
    own where a self-test runs), each bound to a static volume of its own on the one file
    system: a volume binds one claim, and a pod mounts a claim of its own namespace."""
    plan = planned(stack)
    version = plan.outputs["kubernetes_version"]
    claim = claim_of(plan)
    volumes = {r.inputs["metadata"]["name"]: r.inputs for r in plan.of_type(PV)}
    # The training namespace's volume keeps its name; a team's is named after its namespace.
    assert sorted(volumes) == sorted(
        "fsx-shared-data" if ns == "training" else f"fsx-shared-data-{ns}" for ns in claims_of(plan)
    )
    pv = volumes["fsx-shared-data"]
    for obj in (pv, claim):
        validate_kubernetes(obj, version)
    training = stack_config(stack).get("namespaces", {}).get("training", "training")
    assert claim["metadata"]["namespace"] == training
    assert claim["spec"]["volumeName"] == pv["metadata"]["name"]
    assert pv["spec"]["claimRef"] == {"namespace": training, "name": SHARED_DATA}
    assert pv["spec"]["storageClassName"] == claim["spec"]["storageClassName"] == ""
    assert pv["spec"]["accessModes"] == claim["spec"]["accessModes"] == ["ReadWriteMany"]
    assert pv["spec"]["capacity"]["storage"] == claim["spec"]["resources"]["requests"]["storage"]
    capacity = stack_config(stack)["storage"]["fsx"]["storage_capacity_gib"]
    assert pv["spec"]["capacity"]["storage"] == f"{capacity}Gi"
    csi = pv["spec"]["csi"]
    assert csi["driver"] == "fsx.csi.aws.com"  # FSx for Lustre CSI driver docs
    assert csi["volumeHandle"] == f"(known after apply: {stack}-fsx.id)"
    assert csi["volumeAttributes"] == {
        "dnsname": f"(known after apply: {stack}-fsx.dnsName)",
        "mountname": f"(known after apply: {stack}-fsx.mountName)",
    }
    assert "flock" in pv["spec"]["mountOptions"]
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain"


def test_each_team_claim_has_its_own_static_volume_on_the_same_file_system():
    # burst declares team research beside training (stacks/Pulumi.burst.yaml). A static volume
    # binds one claim (kubernetes pv_controller.go), so the team's has a volume of its own, on
    # the same file system, with a handle of its own.
    plan = planned("burst")
    volumes = {r.inputs["metadata"]["name"]: r.inputs for r in plan.of_type(PV)}
    team, training = volumes["fsx-shared-data-research"], volumes["fsx-shared-data"]
    assert claims_of(plan)["research"]["spec"]["volumeName"] == "fsx-shared-data-research"
    assert team["spec"]["claimRef"] == {"namespace": "research", "name": "shared-data"}
    assert team["spec"]["csi"]["volumeHandle"] == "(known after apply: burst-fsx.id)/research"
    assert team["spec"]["csi"]["volumeAttributes"] == training["spec"]["csi"]["volumeAttributes"]
    assert team["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    validate_kubernetes(team, plan.outputs["kubernetes_version"])


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_fsx_csi_driver_is_the_pinned_chart(stack):
    plan = planned(stack)
    release = find(plan, RELEASE, f"{stack}-fsx-csi").inputs
    chart = CHARTS["aws-fsx-csi-driver"]
    assert (release["chart"], release["version"]) == (chart.name, chart.version)
    assert release["repositoryOpts"]["repo"] == chart.repository
    assert release["values"]["controller"]["region"] == stack_config(stack)["aws"]["region"]


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_expected_throughput_is_capacity_times_tier(stack):
    fsx = stack_config(stack)["storage"]["fsx"]
    tier = fsx.get("per_unit_storage_throughput") or (
        200 if fsx["deployment_type"] == "SCRATCH_2" else 125
    )
    expected = round(fsx["storage_capacity_gib"] / 1024 * tier)
    assert planned(stack).outputs["storage_expected_throughput_mbps"] == expected


def test_data_repository_links_the_bucket_prefix_in_both_directions():
    plan = planned("dev")
    dra = find(plan, DRA, "dev-fsx-data").inputs
    assert dra["fileSystemId"] == "(known after apply: dev-fsx.id)"
    assert dra["fileSystemPath"] == "/datasets"
    assert dra["dataRepositoryPath"] == "s3://(known after apply: dev-fsx-data.bucket)/datasets/"
    assert dra["s3"]["autoImportPolicy"]["events"] == ["NEW", "CHANGED", "DELETED"]
    assert dra["s3"]["autoExportPolicy"]["events"] == ["NEW", "CHANGED", "DELETED"]
    assert dra["deleteDataInFilesystem"] is False
    bucket_id = "(known after apply: dev-fsx-data.id)"
    block = find(
        plan, "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock", "dev-fsx-data"
    ).inputs
    assert block["bucket"] == bucket_id
    assert all(
        block[k] is True
        for k in (
            "blockPublicAcls",
            "blockPublicPolicy",
            "ignorePublicAcls",
            "restrictPublicBuckets",
        )
    )
    versioning = find(plan, "aws:s3/bucketVersioning:BucketVersioning", "dev-fsx-data").inputs
    assert versioning["versioningConfiguration"]["status"] == "Enabled"
    sse = find(
        plan,
        "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
        "dev-fsx-data",
    ).inputs
    assert sse["rules"][0]["applyServerSideEncryptionByDefault"]["sseAlgorithm"]


def test_shipped_prod_lustre_is_encrypted_backed_up_protected_and_not_s3_linked():
    plan = planned("prod")
    fs = find(plan, LUSTRE, "prod-fsx")
    assert fs.protect
    assert fs.inputs["kmsKeyId"] == "(known after apply: prod-fsx-key.arn)"
    assert find(plan, "aws:kms/key:Key", "prod-fsx-key").protect
    assert fs.inputs["automaticBackupRetentionDays"] == 14
    assert fs.inputs["skipFinalBackup"] is False
    assert fs.inputs["perUnitStorageThroughput"] == 500
    assert not plan.of_type(DRA) and not plan.of_type("aws:s3/bucket:Bucket")
    for stack in ("dev", "staging"):
        assert not [
            r.name
            for r in planned(stack).resources
            if r.protect and planned(stack).plane_of(r) == "storage"
        ]


def test_named_bucket_gives_an_exact_path_and_is_protected_in_production(tmp_path):
    stack = {
        "gpu-platform:production": True,
        "gpu-platform:aws": {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"]},
        "gpu-platform:cluster": {
            "admin_principal_arns": ["arn:aws:iam::111122223333:role/platform-admins"],
            "api_access_cidrs": ["10.8.0.0/24"],
        },
        "gpu-platform:storage": {
            "fsx": {
                "deployment_type": "PERSISTENT_2",
                # A production file system's key and backups: mandatory (prod-fsx-customer-key).
                "create_kms_key": True,
                "data_repository": {
                    "bucket_name": "acme-training-data",
                    "s3_prefix": "corpora/",
                    "file_system_path": "/corpora",
                    "auto_export_events": ["NEW"],
                },
            }
        },
    }
    recording = run_program("p", make_project(tmp_path, {"p": stack}))
    by_name = {(r.type, r.name): r for r in recording.resources.values()}
    dra = by_name[(DRA, "p-fsx-data")].raw_inputs
    assert dra["dataRepositoryPath"] == "s3://acme-training-data/corpora/"
    assert dra["fileSystemPath"] == "/corpora"
    assert dra["s3"]["autoExportPolicy"]["events"] == ["NEW"]
    assert (
        by_name[("aws:s3/bucket:Bucket", "p-fsx-data")].raw_inputs["bucket"] == "acme-training-data"
    )
    protected = {
        name
        for (token, name), r in by_name.items()
        if r.protect and token.startswith(("aws:fsx", "aws:s3"))
    }
    assert protected == {"p-fsx", "p-fsx-data"}


# ------------------------------------------------------------------------------ Rook-Ceph


def ceph_objects(plan) -> dict[str, dict]:
    return {f"{o['kind']}/{o['metadata']['name']}": o for o in plan.kubernetes_objects()}


def test_shipped_onprem_ceph_cluster_follows_the_config():
    plan = planned("onprem")
    cfg = parse_config(stack_config("onprem"), "onprem")
    ceph = cfg.storage.ceph
    objects = ceph_objects(plan)
    cluster = objects[f"CephCluster/{ceph.namespace}"]["spec"]
    assert cluster["mon"]["count"] == 3
    assert cluster["storage"]["deviceFilter"] == ceph.device_filter
    assert [n["name"] for n in cluster["storage"]["nodes"]] == [n.name for n in ceph.nodes]
    assert cluster["storage"]["useAllNodes"] is False
    # Each selected Multus network is declared, in the namespace the selector names.
    for role, selector in cluster["network"]["selectors"].items():
        namespace, name = selector.split("/")
        nad = objects[f"NetworkAttachmentDefinition/{name}"]
        assert nad["metadata"]["namespace"] == namespace == ceph.namespace
        assert json.loads(nad["spec"]["config"])["master"] == getattr(ceph.network, role).interface
    assert set(cluster["network"]["selectors"]) == {"public", "cluster"}
    fs = objects[f"CephFilesystem/{ceph.filesystem_name}"]["spec"]
    assert fs["metadataPool"]["replicated"]["size"] == ceph.replication
    assert all(p["replicated"]["size"] == ceph.replication for p in fs["dataPools"])


def test_shipped_onprem_storage_class_points_at_the_filesystem_and_the_driver():
    plan = planned("onprem")
    objects = ceph_objects(plan)
    fs = next(o for o in objects.values() if o["kind"] == "CephFilesystem")
    claim = claim_of(plan)
    sc = objects[f"StorageClass/{claim['spec']['storageClassName']}"]
    namespace = fs["metadata"]["namespace"]
    assert sc["provisioner"] == cephfs_driver_name(namespace)
    assert sc["parameters"]["clusterID"] == namespace
    assert sc["parameters"]["fsName"] == fs["metadata"]["name"]
    assert (
        sc["parameters"]["pool"] == f"{fs['metadata']['name']}-{fs['spec']['dataPools'][0]['name']}"
    )
    drivers = find(plan, RELEASE, "onprem-ceph-csi-drivers").inputs
    assert drivers["values"]["drivers"]["cephfs"]["name"] == sc["provisioner"]
    operator = find(plan, RELEASE, "onprem-rook-ceph")
    for key, release in (("rook-ceph", operator.inputs), ("ceph-csi-drivers", drivers)):
        chart = CHARTS[key]
        assert (release["chart"], release["version"], release["repositoryOpts"]["repo"]) == (
            chart.name,
            chart.version,
            chart.repository,
        )
        assert release["namespace"] == namespace
    # The drivers chart needs the operator's CRDs and CSI operator: it comes after.
    assert operator.urn in find(plan, RELEASE, "onprem-ceph-csi-drivers").dependencies
    # Every namespace jobs run in gets a claim of its own from the same class: training, team
    # research (stacks/Pulumi.onprem.yaml) and the self-test's, each a subvolume of the same
    # filesystem.
    claims = claims_of(plan)
    assert sorted(claims) == ["gpu-platform-selftest", "research", "training"]
    assert {c["spec"]["storageClassName"] for c in claims.values()} == {sc["metadata"]["name"]}
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]


# ------------------------------------------------------------------------------ all stacks


@pytest.mark.parametrize("stack", STACKS)
def test_every_provider_gives_workloads_the_same_claim_and_cache_names(stack):
    plan = planned(stack)
    claim = claim_of(plan)
    assert (
        plan.outputs["storage_shared_data_claim"]
        == f"{claim['metadata']['namespace']}/{SHARED_DATA}"
    )
    assert plan.outputs["storage_shared_data_claim"].endswith(f"/{SHARED_DATA}")
    assert plan.outputs["storage_nvme_cache"]
    for report in plan.outputs["storage_nvme_cache"].values():
        assert report["source"] == "emptyDir"
