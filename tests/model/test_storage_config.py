"""Storage settings: defaults, the zone FSx lands in, and a clear error for each bad input."""

from __future__ import annotations

import types
import typing

import pytest
from pydantic import BaseModel

from model.config import (
    ConfigError,
    StorageSettings,
    default_fsx_zone,
    parse_config,
)

SOURCE = "stacks/Pulumi.bad.yaml"
ZONES = ["us-east-1a", "us-east-1b", "us-east-1c"]
AWS = {
    "aws": {"region": "us-east-1", "zones": ZONES},
    "cluster": {"admin_principal_arns": ["arn:aws:iam::111122223333:role/platform-admins"]},
}
EXISTING = {"provider": "existing", "existing": {"name": "lab", "kubeconfig_path": "kc"}}
SPOT = {"name": "spot", "instance_types": ["g5.2xlarge"], "capacity": "spot"}
EFA_C = {"name": "efa", "instance_types": ["p4d.24xlarge"], "efa": True, "zone": "us-east-1c"}
NODES = [{"name": f"storage-{i}"} for i in range(3)]
# A group in the Dallas Local Zone (AWS Local Zones User Guide, "Available Local Zones"): FSx
# stays in the region's zones.
DALLAS = "us-east-1-dfw-2a"
EFA_DALLAS = {**EFA_C, "name": "dallas", "zone": DALLAS}


def aws(fsx: dict | None = None, groups: list | None = None) -> dict:
    raw = {**AWS, "storage": {"fsx": fsx or {}}}
    raw["aws"] = {**AWS["aws"], "local_zones": [DALLAS]}
    if groups is not None:
        raw["gpu_node_groups"] = groups
    return raw


def ceph(**settings) -> dict:
    return {**EXISTING, "storage": {"ceph": {"nodes": NODES, "device_filter": "^nvme", **settings}}}


def problems(raw: dict) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(raw, SOURCE)
    return caught.value.problems


def test_storage_is_opt_in_and_every_nested_field_is_described():
    assert parse_config(AWS, SOURCE).storage == StorageSettings()

    def walk(model: type[BaseModel], path: str) -> None:
        for name, field in model.model_fields.items():
            assert field.description, f"{path}{name} has no description"
            for inner in _models(field.annotation):
                walk(inner, f"{path}{name}.")

    walk(StorageSettings, "storage.")


def _models(annotation) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType, list, typing.Annotated):
        return [m for arg in typing.get_args(annotation) for m in _models(arg)]
    return []


@pytest.mark.parametrize(
    ("groups", "zone"),
    [
        pytest.param([], "us-east-1a", id="no-gpu-group"),
        pytest.param([SPOT], "us-east-1a", id="first-zone-of-first-group"),
        pytest.param([SPOT, EFA_C], "us-east-1c", id="efa-group-wins"),
        pytest.param([{**SPOT, "zone": "us-east-1b"}, EFA_C], "us-east-1c", id="efa-after"),
        pytest.param([{**SPOT, "zone": "us-east-1b"}], "us-east-1b", id="pinned-group"),
        pytest.param([EFA_DALLAS], "us-east-1a", id="local-zone-group-only"),
        pytest.param([EFA_DALLAS, SPOT], "us-east-1a", id="region-group-beside-local-zone"),
        pytest.param(
            [
                EFA_DALLAS,
                {**SPOT, "efa": True, "instance_types": ["p4d.24xlarge"], "zone": "us-east-1b"},
            ],
            "us-east-1b",
            id="efa-group-in-the-region-wins",
        ),
    ],
)
def test_fsx_defaults_to_the_gpu_nodes_zone(groups, zone):
    cfg = parse_config(aws(groups=groups), SOURCE)
    assert default_fsx_zone(cfg) == zone


def test_fsx_zone_may_be_any_zone_a_gpu_group_spans():
    cfg = parse_config(aws({"zone": "us-east-1b"}, [SPOT]), SOURCE)
    assert cfg.storage.fsx.zone == "us-east-1b"


def test_fsx_zone_may_be_any_region_zone_when_every_gpu_group_is_in_a_local_zone():
    # The Local Zone's parent (use1-az4) has a different name in each account: the stack names
    # it, and no zone of the region hosts a GPU group for the rule to ask for.
    cfg = parse_config(aws({"zone": "us-east-1c"}, [EFA_DALLAS]), SOURCE)
    assert cfg.storage.fsx.zone == "us-east-1c"


@pytest.mark.parametrize(
    ("fsx", "tier"),
    [
        # FSx for Lustre user guide, performance: SCRATCH_2 gives 200 MB/s per TiB baseline.
        ({}, 200),
        ({"deployment_type": "PERSISTENT_2"}, 125),
        ({"deployment_type": "PERSISTENT_2", "per_unit_storage_throughput": 1000}, 1000),
    ],
)
def test_expected_throughput_is_capacity_in_tib_times_tier(fsx, tier):
    for capacity in (1200, 2400, 9600):
        cfg = parse_config(aws({**fsx, "storage_capacity_gib": capacity}), SOURCE)
        assert cfg.storage.fsx.expected_throughput_mbps == round(capacity / 1024 * tier)


def test_valid_capacities_are_1200_and_multiples_of_2400():
    for capacity in (1200, 2400, 4800, 100800):
        parse_config(aws({"storage_capacity_gib": capacity}), SOURCE)


def test_ceph_accepts_per_node_devices_without_a_filter():
    nodes = [{"name": "a", "devices": ["nvme1n1"]}, {"name": "b", "devices": ["nvme1n1"]}]
    raw = {**EXISTING, "storage": {"ceph": {"nodes": nodes, "replication": 2}}}
    cfg = parse_config(raw, SOURCE)
    assert cfg.storage.ceph.replication == 2


FSX = "gpu-platform:storage.fsx"
CEPH = "gpu-platform:storage.ceph"
SHARED = "gpu-platform:storage.shared_data"
NFS = {"storage_class": "nfs-client"}
CLAIM = {"existing_claim": "datasets"}
P2 = {"deployment_type": "PERSISTENT_2"}
BAD = [
    pytest.param(aws({"storage_capacity_gib": 1800}), f"{FSX}.storage_capacity_gib",
                 "use 1200 or a multiple of 2400", id="capacity-between-steps"),
    pytest.param(aws({"storage_capacity_gib": 3600}), f"{FSX}.storage_capacity_gib",
                 "(e.g. 2400 or 4800)", id="capacity-not-a-multiple"),
    pytest.param(aws({"storage_capacity_gib": 0}), f"{FSX}.storage_capacity_gib",
                 "not a valid SSD capacity", id="capacity-zero"),
    pytest.param(aws({**P2, "per_unit_storage_throughput": 200}),
                 f"{FSX}.per_unit_storage_throughput", "valid: 125, 250, 500, 1000",
                 id="tier-of-persistent-1"),
    pytest.param(aws({"per_unit_storage_throughput": 125}), f"{FSX}.per_unit_storage_throughput",
                 "SCRATCH_2 has a fixed throughput", id="tier-on-scratch"),
    pytest.param(aws({"automatic_backup_retention_days": 7}),
                 f"{FSX}.automatic_backup_retention_days", "SCRATCH_2 file systems cannot be "
                 "backed up", id="backups-on-scratch"),
    pytest.param(aws({**P2, "automatic_backup_retention_days": 7}),
                 f"{FSX}.automatic_backup_retention_days", "does not back up a file system "
                 "linked to S3", id="backups-with-s3-link"),
    pytest.param(aws({"automatic_backup_retention_days": 91}),
                 f"{FSX}.automatic_backup_retention_days", "less than or equal to 90",
                 id="backups-too-long"),
    pytest.param(aws({"create_kms_key": True}), f"{FSX}.create_kms_key", "needs PERSISTENT_2",
                 id="kms-on-scratch"),
    pytest.param(aws({**P2, "create_kms_key": True, "kms_key_arn":
                      "arn:aws:kms:us-east-1:111122223333:key/0a1b2c3d-0a1b-0a1b-0a1b-0a1b2c3d4e5f"}),
                 f"{FSX}.create_kms_key", "not both", id="two-keys"),
    pytest.param(aws({"deployment_type": "PERSISTENT_1"}), f"{FSX}.deployment_type",
                 "'SCRATCH_2' or 'PERSISTENT_2'", id="unsupported-deployment-type"),
    pytest.param(aws({"data_repository": {"bucket_name": "Training_Data"}}),
                 f"{FSX}.data_repository.bucket_name", "lowercase letters", id="bucket-case"),
    pytest.param(aws({"data_repository": {"bucket_name": "ab"}}),
                 f"{FSX}.data_repository.bucket_name", "3 to 63", id="bucket-short"),
    pytest.param(aws({"data_repository": {"bucket_name": "data..sets"}}),
                 f"{FSX}.data_repository.bucket_name", "two adjacent periods",
                 id="bucket-double-dot"),
    pytest.param(aws({"data_repository": {"bucket_name": "192.168.5.4"}}),
                 f"{FSX}.data_repository.bucket_name", "IP address", id="bucket-ip"),
    pytest.param(aws({"data_repository": {"bucket_name": "xn--data"}}),
                 f"{FSX}.data_repository.bucket_name", "may not start with", id="bucket-prefix"),
    pytest.param(aws({"data_repository": {"s3_prefix": "datasets"}}),
                 f"{FSX}.data_repository.s3_prefix", "ends with /", id="prefix-no-slash"),
    pytest.param(aws({"data_repository": {"file_system_path": "datasets"}}),
                 f"{FSX}.data_repository.file_system_path", "an absolute directory path",
                 id="fs-path-relative"),
    pytest.param(aws({"zone": "us-east-1b"}, [EFA_C]), f"{FSX}.zone",
                 "no GPU group runs in us-east-1b; put the file system where its readers are: "
                 "us-east-1c", id="zone-without-gpu-group"),
    pytest.param(aws({"zone": "us-east-1a"}), f"{FSX}.zone", "no GPU group is configured",
                 id="zone-without-any-group"),
    pytest.param(aws({"zone": "us-east-1d"}, [SPOT]), f"{FSX}.zone", "not one of aws.zones",
                 id="zone-outside-aws-zones"),
    pytest.param({**EXISTING, "storage": {"fsx": {}}}, FSX, "only valid with provider aws",
                 id="fsx-on-existing"),
    pytest.param({**AWS, "storage": {"ceph": {"nodes": NODES, "device_filter": "x"}}}, CEPH,
                 "only valid with provider existing", id="ceph-on-aws"),
    pytest.param(ceph(replication=4), f"{CEPH}.replication",
                 "4 copies need 4 storage hosts (failure domain host), but nodes lists 3",
                 id="replication-over-hosts"),
    pytest.param(ceph(mon_count=2), f"{CEPH}.mon_count", "odd count", id="even-mons"),
    pytest.param(ceph(mon_count=11), f"{CEPH}.mon_count", "odd count", id="too-many-mons"),
    pytest.param(ceph(device_filter="^nvme[1-"), f"{CEPH}.device_filter",
                 "not a regular expression", id="bad-filter"),
    pytest.param({**EXISTING, "storage": {"ceph": {"nodes": [{"name": "a"}], "replication": 1}}},
                 f"{CEPH}.nodes[0].devices", "would hold no OSD", id="node-without-disks"),
    pytest.param(ceph(nodes=[*NODES, {"name": "storage-0"}]), f"{CEPH}.nodes[3].name",
                 "listed twice", id="node-twice"),
    pytest.param(ceph(network={"provider": "multus"}), f"{CEPH}.network.provider",
                 "needs a public or a cluster network", id="multus-without-networks"),
    pytest.param(ceph(network={"public": {"interface": "ens1", "cidr": "192.168.0.0/24"}}),
                 f"{CEPH}.network.public", "needs provider multus, not host",
                 id="network-without-multus"),
    pytest.param(ceph(network={"provider": "multus",
                               "public": {"interface": "ens1", "cidr": "192.168.0.0/23",
                                          "host_range": "192.168.8.0/24"},
                               "cluster": {"interface": "ens2", "cidr": "192.168.1.0/24"}}),
                 f"{CEPH}.network.cluster.cidr", "overlaps public.cidr", id="overlapping-networks"),
    pytest.param(ceph(network={"provider": "multus",
                               "public": {"interface": "ens1", "cidr": "192.168.0.0/25"}}),
                 f"{CEPH}.network.public.host_range", "required: the hosts' addresses",
                 id="public-without-host-range"),
    pytest.param(ceph(network={"provider": "multus",
                               "public": {"interface": "ens1", "cidr": "192.168.0.0/24",
                                          "host_range": "192.168.0.128/25"}}),
                 f"{CEPH}.network.public.host_range",
                 "192.168.0.128/25 overlaps cidr 192.168.0.0/24, the pods' range",
                 id="hosts-inside-pod-range"),
    pytest.param(ceph(filesytem_name="x"), f"{CEPH}.filesytem_name", "did you mean "
                 "'filesystem_name'", id="typo"),
    pytest.param(ceph(ready_timeout_minutes=4), f"{CEPH}.ready_timeout_minutes",
                 "greater than or equal to 5", id="ceph-wait-too-short"),
    pytest.param(EXISTING, "gpu-platform:storage", "nothing provides the shared-data claim "
                 "every job and the self-test mount: set storage.ceph, storage.shared_data."
                 "storage_class", id="existing-cluster-without-shared-data"),
    pytest.param({**EXISTING, "storage": {"shared_data": {}}}, f"{SHARED}.storage_class",
                 "set exactly one of storage_class", id="shared-data-names-nothing"),
    pytest.param({**EXISTING, "storage": {"shared_data": {**NFS, **CLAIM}}},
                 f"{SHARED}.storage_class", "set exactly one of", id="class-and-claim"),
    pytest.param({**EXISTING, "storage": {"shared_data": {**CLAIM, "size_gib": 100}}},
                 f"{SHARED}.size_gib", "existing_claim has none", id="size-of-an-existing-claim"),
    pytest.param({**ceph(), "storage": {**ceph()["storage"], "shared_data": NFS}}, SHARED,
                 "storage.ceph is set too", id="ceph-and-shared-data"),
    pytest.param({**EXISTING, "storage": {"shared_data": {"storage_class": "NFS_Client"}}},
                 f"{SHARED}.storage_class", "'NFS_Client'", id="class-not-a-name"),
    pytest.param({**EXISTING, "storage": {"shared_data": {**NFS, "size_gib": 0}}},
                 f"{SHARED}.size_gib", "greater than or equal to 1", id="claim-of-nothing"),
]  # fmt: skip


@pytest.mark.parametrize(("raw", "path", "detail"), BAD)
def test_bad_storage_input_names_path_and_fix(raw, path, detail):
    found = problems(raw)
    assert any(p.startswith(f"{path}:") and detail in p for p in found), found
