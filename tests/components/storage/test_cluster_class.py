"""`shared-data` from storage an existing cluster already has (storage.shared_data): a claim of
its class in every namespace jobs run in, or the admin's claim, mounted and never declared, with
the plan saying where it must be. tests/program/test_brownfield.py holds the class: every claim a
pod mounts is declared or the stack's."""

from __future__ import annotations

from components.storage.cluster_class import existing_claim_report
from tests.helpers.brownfield_stacks import (
    CLAIM_STACK,
    brownfield_config,
    brownfield_plan,
)
from tests.helpers.plan_objects import kinds
from tests.helpers.rendered_jobs import platform_jobs_of, submitted_jobs_of
from tests.helpers.shared_data import mounted_claims

# The brownfield stacks' namespaces jobs run in: the training namespace, its team's, the
# self-test's (tests/helpers/brownfield_stacks.py; NamespaceSettings defaults).
JOB_NAMESPACES = ["training", "vision", "gpu-platform-selftest"]


def test_the_clusters_class_backs_a_claim_in_every_namespace_jobs_run_in():
    plan = brownfield_plan()
    claims = {c["metadata"]["namespace"]: c for c in kinds(plan, "PersistentVolumeClaim")}
    assert sorted(claims) == sorted(JOB_NAMESPACES)
    for claim in claims.values():
        assert claim["metadata"]["name"] == "shared-data"
        # The fixture's class and size (tests/helpers/brownfield_stacks.py): nfs-client, 2 TiB,
        # mounted read-write by every node of a job.
        assert claim["spec"]["accessModes"] == ["ReadWriteMany"]
        assert claim["spec"]["storageClassName"] == "nfs-client"
        assert claim["spec"]["resources"] == {"requests": {"storage": "2048Gi"}}
    assert plan.outputs["storage_shared_data_claim"] == "training/shared-data"
    # The admin's class: no figure for the self-test to hold it to.
    assert "storage_expected_throughput_mbps" not in plan.outputs


def test_an_existing_claim_is_mounted_never_declared_and_the_plan_says_where_it_must_be():
    plan, cfg = brownfield_plan(CLAIM_STACK), brownfield_config(CLAIM_STACK)
    assert kinds(plan, "PersistentVolumeClaim") == []
    jobs = [*platform_jobs_of(cfg, plan), *(j for _, j in submitted_jobs_of(cfg))]
    assert {c for j in jobs for c in mounted_claims(j)} == {"datasets-rwx"}
    report = plan.outputs["storage_shared_data"]
    assert report["existing_claim"] == "datasets-rwx"
    assert report["must_exist_in"] == JOB_NAMESPACES
    (warning,) = [w for w in plan.warnings if "storage.shared_data.existing_claim" in w]
    assert "the claim datasets-rwx" in warning
    assert "training, vision, gpu-platform-selftest" in warning


def test_the_plan_gives_the_command_that_shows_each_namespaces_claim():
    report = existing_claim_report("datasets-rwx", ["training", "team-a"])
    assert report["check"] == {
        "training": "kubectl -n training get pvc datasets-rwx -o jsonpath="
        "'{.status.phase} {.status.accessModes}'  # must be Bound [ReadWriteMany]",
        "team-a": "kubectl -n team-a get pvc datasets-rwx -o jsonpath="
        "'{.status.phase} {.status.accessModes}'  # must be Bound [ReadWriteMany]",
    }
