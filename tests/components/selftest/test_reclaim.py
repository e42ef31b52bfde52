"""The idle reclaimer's objects (components/selftest/reclaim.py): least privilege (list and
patch Workloads, only in the namespaces it reclaims in), production spared unless the stack
allows it, and the query and Prometheus it reads. Its decisions run whole in
tests/controllers/test_idle_reclaim_rules.py."""

from __future__ import annotations

from components.selftest.reclaim import reclaim_namespaces, reclaimer_env, reclaimer_objects
from model.config import PlatformConfig
from tests.helpers.alert_stacks import IMAGE
from tests.helpers.bad_stacks import ADMIN, GROUP


def config(**idle_reclaim) -> PlatformConfig:
    return PlatformConfig.model_validate(
        {
            "aws": {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"]},
            "cluster": {"admin_principal_arns": [ADMIN]},
            "gpu_node_groups": [GROUP],
            "selftest": {"image": IMAGE},
            "scheduling": {
                "cluster_queues": [{"name": "prod"}, {"name": "research"}],
                "teams": [
                    {"name": "llm", "cluster_queue": "prod"},
                    {"name": "vision", "cluster_queue": "research"},
                ],
                "idle_reclaim": idle_reclaim,
            },
        }
    )


def test_it_may_list_and_patch_workloads_and_nothing_else():
    (role,) = [o for o in reclaimer_objects(config(cluster_queues=["research"]))
               if o["kind"] == "ClusterRole"]  # fmt: skip
    assert role["rules"] == [
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads"], "verbs": ["list", "patch"]}
    ]


def test_a_queue_narrows_it_to_its_teams_namespaces_and_a_class_opens_every_team():
    cfg = config(cluster_queues=["research"])
    assert reclaim_namespaces(cfg) == ["vision"]
    bound = [o["metadata"]["namespace"] for o in reclaimer_objects(cfg)
             if o["kind"] == "RoleBinding"]  # fmt: skip
    assert bound == ["vision"]
    # The training namespace is a team too (on the first queue).
    assert reclaim_namespaces(config(priority_classes=["preemptible"])) == [
        "llm",
        "training",
        "vision",
    ]


def test_production_is_spared_unless_the_stack_allows_it():
    # components/scheduling/queues.py: production-training's value is 100000.
    spared = reclaimer_env(config(cluster_queues=["prod"]))
    assert spared["SELFTEST_RECLAIM_SPARED_PRIORITY"] == "100000"
    allowed = reclaimer_env(config(cluster_queues=["prod"], allow_production=True))
    assert "SELFTEST_RECLAIM_SPARED_PRIORITY" not in allowed


def test_it_asks_the_stacks_prometheus_for_jobs_idle_through_after_minutes():
    env = reclaimer_env(config(cluster_queues=["prod"], after_minutes=90))
    assert env["SELFTEST_RECLAIM_QUERY"] == (
        "max_over_time(gpu_platform_job:gpu_utilisation:max[90m]) < 30 "
        "and on(namespace, job_name) gpu_platform_job:gpu_utilisation:max offset 90m"
    )
    assert env["SELFTEST_RECLAIM_QUEUES"] == "prod"
    assert env["SELFTEST_PROMETHEUS_URL"].startswith("http://")
