"""The storage contract training pods rely on (components/storage/volumes.py): the node-local
cache, the `shared-data` claim in every namespace jobs run in, the same names on every provider."""

from __future__ import annotations

import pytest

from components.storage.volumes import (
    NVME_CACHE,
    SHARED_DATA,
    nvme_cache,
    shared_data_claim,
    training_volume_mounts,
    training_volumes,
)
from model.catalog import CATALOG
from model.config import NvmeCacheSettings
from model.config.selftest import runs
from model.config.selftest_schedule import scheduled
from tests.conftest import STACKS, planned, validate_kubernetes
from tests.conftest import stack_config as platform_config
from tests.helpers.shared_data import claim_of, claims_of, stack_config, training_namespace

SETTINGS = NvmeCacheSettings()


def test_every_namespace_jobs_run_in_has_its_shared_data_claim():
    for stack in STACKS:
        teams = stack_config(stack).get("scheduling", {}).get("teams", [])
        cfg = platform_config(stack)
        # The self-test's own namespace where a self-test runs (namespaces.selftest's default).
        selftest = {"gpu-platform-selftest"} if runs(cfg) or scheduled(cfg) else set()
        expected = {training_namespace(stack), *(t["name"] for t in teams), *selftest}
        assert set(claims_of(planned(stack))) == expected, stack


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
            "volumes": training_volumes(
                nvme_cache([CATALOG[t] for t in types], SETTINGS), SHARED_DATA
            ),
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
