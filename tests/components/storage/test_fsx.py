"""FSx for Lustre (components/storage/fsx.py): its security group rules and data repository
path, and the file system, static volumes and S3 link each AWS stack declares."""

from __future__ import annotations

import pytest

from components.storage.fsx import data_repository_path, lustre_security_group_rules
from components.storage.volumes import SHARED_DATA
from plan.engine import run_program
from tests.conftest import (
    AWS_STACKS,
    copy_program,
    find,
    make_project,
    planned,
    validate_kubernetes,
)
from tests.helpers.shared_data import claim_of, claims_of, stack_config

INGRESS = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"


EGRESS = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"


LUSTRE = "aws:fsx/lustreFileSystem:LustreFileSystem"


DRA = "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation"


PV = "kubernetes:core/v1:PersistentVolume"


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
            "api_access_cidrs": ["10.0.240.0/24"],
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
