"""The self-test on a schedule (selftest.schedule), its history and its quarantine: the config and
what it refuses, the CronJob per pool, what it pushes to the stack's Pushgateway, and what a stack
declares with and without it: on-prem as shipped, an AWS stack with an image, and staging without
one."""

from __future__ import annotations

import json

import pytest

from components.scheduling.kueue import uncounted_resources
from components.scheduling.queues import kueue_objects
from components.scheduling.training_job import render
from components.selftest.job import selftest_spec
from components.selftest.schedule import cron_job_name
from model.config import parse_config
from model.config.selftest import SelfTestSettings
from model.config.selftest_schedule import cron_problem, scheduled, scheduled_pools
from plan.engine import run_program
from plan.model import build_plan
from tests.conftest import STACKS, find, make_project, planned, stack_config, validate_kubernetes
from tests.helpers import helm_values, jobsets
from tests.helpers.bad_stacks import NS, assert_refused, aws, existing
from tests.helpers.metric_sources import configuration, emitted, problems, queries
from tests.helpers.selftest_stacks import (
    A100_POOL,
    CONFIG_MAP,
    CRON_JOB,
    FSX,
    IMAGE,
    LAB,
    MIG,
    P5,
    PUSHGATEWAY_URL,
    RELEASE,
    env_of,
    pod_of,
    selftest_cron_jobs,
    stack_cron_jobs,
)


def with_image(stack: str, **selftest):
    cfg = stack_config(stack)
    raw = cfg.model_dump(exclude_unset=True)
    raw["selftest"] = {"image": IMAGE, **selftest}
    return parse_config(raw, f"stacks/Pulumi.{stack}.yaml")


@pytest.fixture(scope="module")
def aws_with_image(tmp_path_factory):
    """An AWS stack with an image: an EFA pool that gets a CronJob and a MIG pool that cannot."""
    stack = aws(gpu_node_groups=[P5, MIG], storage=FSX, selftest={"image": IMAGE})
    root = make_project(tmp_path_factory.mktemp("scheduled"), {"st": stack})
    return build_plan(run_program("st", root))


# --------------------------------------------------------------------------- config


def test_on_once_an_image_is_set_like_the_post_deploy_run():
    assert not scheduled(stack_config("staging"))
    assert scheduled(with_image("staging"))
    assert not scheduled(with_image("staging", schedule={"enabled": False}))
    # The shipped on-prem stack names an image: its one pool is tested on a schedule.
    assert scheduled_pools(stack_config("onprem")) == ["a100"]


def test_the_default_schedule_is_the_short_set_every_four_hours_without_quarantine():
    settings = SelfTestSettings()
    assert settings.schedule.cron == "0 */4 * * *"
    assert settings.schedule.checks == "short"
    assert settings.schedule.timeout_minutes == 15
    assert settings.cordon_on_fail is False


@pytest.mark.parametrize(
    "cron", ["0 */4 * * *", "@daily", "30 2 * * MON-FRI", "*/15 0-6,22-23 * * *", "0 0 ? * ?"]
)
def test_schedules_kubernetes_accepts_pass(cron):
    # Kubernetes docs, "CronJob", "Schedule syntax": five fields, ranges, lists, steps, names,
    # and the @-macros.
    assert cron_problem(cron) is None


@pytest.mark.parametrize(
    ("cron", "why"),
    [
        ("61 * * * *", "minute: '61' is not a value or range within 0-59"),
        ("0 3 * *", "4 fields, not 5"),
        ("CRON_TZ=UTC 0 3 * * *", "6 fields, not 5"),
        ("0 3 * * 7", "day of week: '7' is not a value or range within 0-6"),
        ("0 5-1 * * *", "hour: range '5-1' runs backwards"),
        ("*/0 * * * *", "minute: step '0' is not a whole number above 0"),
        ("@reboot", "1 fields, not 5"),
    ],
)
def test_schedules_kubernetes_refuses_are_named(cron, why):
    assert cron_problem(cron) == why


REFUSED = [
    pytest.param(
        aws(gpu_node_groups=[P5], selftest={"image": IMAGE, "schedule": {"cron": "0 25 * * *"}}),
        f"{NS}:selftest.schedule.cron",
        "hour: '25'",
        "five fields",
        id="hour-out-of-range",
    ),
    pytest.param(
        aws(gpu_node_groups=[P5], selftest={"schedule": {"enabled": True}}),
        f"{NS}:selftest.schedule.enabled",
        "selftest.image is not set",
        "give the image's digest",
        id="enabled-without-image",
    ),
    pytest.param(
        aws(gpu_node_groups=[P5, MIG],
            selftest={"image": IMAGE, "schedule": {"pools": ["a100-mig"]}}),
        f"{NS}:selftest.schedule.pools[0]",
        "'a100-mig'",
        "pools without MIG",
        id="mig-pool",
    ),
    pytest.param(
        aws(gpu_node_groups=[MIG], selftest={"image": IMAGE, "mode": "off"}),
        f"{NS}:selftest.schedule.pools",
        "every GPU pool",
        "enabled: false",
        id="only-mig-pools",
    ),
    pytest.param(
        existing(selftest={"image": IMAGE, "mode": "off"}),
        f"{NS}:selftest.schedule.enabled",
        "no GPU pool",
        "enabled: false",
        id="no-pool",
    ),
    pytest.param(
        existing(existing={**LAB, "gpu_pools": [{**A100_POOL, "name": "a" * 44}]},
                 selftest={"image": IMAGE, "mode": "off"}),
        f"{NS}:selftest.schedule.pools",
        "44 characters",
        "at most 43",
        id="cron-job-name-too-long",
    ),
    pytest.param(
        aws(gpu_node_groups=[P5], selftest={"image": IMAGE, "schedule": {"checks": "quick"}}),
        f"{NS}:selftest.schedule.checks",
        "quick",
        "'short' or 'full'",
        id="unknown-check-set",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("stack", "path", "value", "valid"), REFUSED)
def test_bad_schedule_exits_2_naming_the_key(tmp_path, monkeypatch, capsys, stack, path, value,
                                             valid):  # fmt: skip
    assert_refused(tmp_path, monkeypatch, capsys, stack, path, value, valid)


# --------------------------------------------------------------------------- the CronJob


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_with_an_image_gets_valid_cron_jobs_for_its_pools(stack):
    cfg = with_image(stack)
    found = stack_cron_jobs(cfg)
    # Every pool without MIG nor a reservation window (docs/selftest.md).
    windowed = {g.name for g in cfg.gpu_node_groups if g.reservation_window is not None}
    assert [c["metadata"]["name"] for c in found] == [
        f"selftest-{p.name}"
        for p in cfg.gpu_pools
        if p.sharing.mode != "mig" and p.name not in windowed
    ]
    for cron in found:
        validate_kubernetes(cron, cfg.cluster.kubernetes_version)


def test_a_run_takes_one_whole_idle_node_at_the_lowest_priority_with_the_short_set():
    (cron,) = stack_cron_jobs(stack_config("onprem"))
    pod = pod_of(cron)
    env = env_of(pod)
    (container,) = pod["containers"]
    # The on-prem a100 pool: 8 x A100 a node; all of them, so the node must be idle.
    assert container["resources"]["requests"]["nvidia.com/gpu"] == 8
    assert cron["spec"]["jobTemplate"]["spec"]["completions"] == 1
    assert container["command"][:3] == [
        "python",
        "/opt/gpu-platform/launcher/launch.py",
        "--standalone",
    ]
    assert container["command"][-2:] == ["-m", "selftest"]
    assert env["SELFTEST_CHECKS"] == "short"
    assert env["SELFTEST_NODES"] == "1"
    assert env["SELFTEST_EXPECTED_GPUS"] == "8"
    assert env["SELFTEST_PUSHGATEWAY_URL"] == PUSHGATEWAY_URL
    # The node the run measured, for the push's grouping key and for cordoning.
    assert env["NODE_NAME"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    # A report per run: Kubernetes expands $(POD_NAME), set earlier from the downward API.
    assert env["SELFTEST_OUT"] == "/mnt/shared-data/selftest/schedule/a100/$(POD_NAME)"
    assert cron["spec"]["jobTemplate"]["spec"]["activeDeadlineSeconds"] == 15 * 60
    assert pod["priorityClassName"] == "preemptible"


def test_the_schedule_priority_is_the_lowest_class_and_never_preempts_training():
    """The class the CronJob's pods and Kueue workloads carry, read from what the plan declares:
    the lowest value, and preemption policy Never, so a scheduled run only ever takes idle GPUs
    and is the first to go when training wants them."""
    plan = planned("onprem")
    (cron,) = [r.inputs for r in selftest_cron_jobs(plan)]
    name = pod_of(cron)["priorityClassName"]
    assert cron["spec"]["jobTemplate"]["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == (
        name
    )
    classes = {
        r.inputs["metadata"]["name"]: r.inputs
        for r in plan.of_type("kubernetes:scheduling.k8s.io/v1:PriorityClass")
    }
    assert classes[name]["preemptionPolicy"] == "Never"
    assert classes[name]["value"] == min(c["value"] for c in classes.values())


@pytest.mark.parametrize("stack", STACKS)
def test_kueue_can_admit_what_a_scheduled_run_asks_for(stack):
    cfg = with_image(stack)
    objects = kueue_objects(cfg, autoscaled=cfg.provider == "aws")
    covered = {
        r
        for o in objects
        if o["kind"] == "ClusterQueue"
        for g in o["spec"]["resourceGroups"]
        for r in g["coveredResources"]
    }
    for cron in stack_cron_jobs(cfg):
        (container,) = pod_of(cron)["containers"]
        for resource in container["resources"]["requests"]:
            assert resource in covered or resource.startswith(tuple(uncounted_resources(cfg)))


# --------------------------------------------------------------------------- the history


def test_shipped_onprem_declares_the_history_after_what_it_needs():
    plan = planned("onprem")
    gateway = find(plan, RELEASE, "onprem-prometheus-pushgateway")
    assert gateway.inputs["chart"] == "prometheus-pushgateway"
    assert gateway.inputs["version"] == "3.8.0"
    assert gateway.inputs["namespace"] == "monitoring"
    # The monitoring release installs the ServiceMonitor CRD the chart's monitor needs.
    assert any("Monitoring$kubernetes:helm.sh/v3:Release" in d for d in gateway.dependencies)
    cron = find(plan, CRON_JOB, "onprem-cronjob-selftest-a100")
    assert gateway.urn in cron.dependencies
    assert any("GpuOperator$kubernetes:helm.sh/v3:Release" in d for d in cron.dependencies)
    # The post-deploy run pushes too, so it waits for the Pushgateway.
    (job,) = plan.of_type("kubernetes:jobset.x-k8s.io/v1alpha2:JobSet")
    assert gateway.urn in job.dependencies
    assert plan.outputs["selftest"]["schedule"] == {
        "cron": "0 */4 * * * (UTC)",
        "checks": "short",
        "cron_jobs": ["gpu-platform-selftest/selftest-a100"],
        "pushgateway": PUSHGATEWAY_URL,
        "cordon_on_fail": False,
        # No autoscaler of the platform's on an existing cluster: nothing a run could start.
        "nodes": "the nodes that are up",
    }


def test_an_aws_stack_with_an_image_runs_the_schedule_on_its_whole_gpu_pools(aws_with_image):
    plan = aws_with_image
    assert [r.name for r in selftest_cron_jobs(plan)] == ["st-cronjob-selftest-h100"]
    version = plan.outputs["kubernetes_version"]
    for obj in plan.kubernetes_objects():
        if obj["kind"] in ("CronJob", "Job"):
            validate_kubernetes(obj, version)
    gateway = find(plan, RELEASE, "st-prometheus-pushgateway").inputs
    # On AWS: the gp3 class the platform declares, on the system nodes.
    assert gateway["values"]["persistentVolume"]["storageClass"] == "gp3"
    assert gateway["values"]["nodeSelector"] == {"gpu-platform/node-role": "system"}
    assert helm_values.unknown_keys(gateway["chart"], gateway["version"], gateway["values"],
                                    version) == []  # fmt: skip


def test_an_aws_stack_with_an_image_reads_only_metrics_that_are_pushed(aws_with_image):
    known, missing = emitted(configuration(aws_with_image))
    found = {where: problems(expr, known, missing) for where, expr in queries(aws_with_image)}
    assert {where: p for where, p in found.items() if p} == {}
    wheres = [where for where, _ in queries(aws_with_image)]
    assert "alert SelfTestFailed" in wheres and "alert SelfTestBelowFloor" in wheres
    assert any(w.startswith("dashboard gpu-fleet.json panel 19/") for w in wheres)


def test_without_an_image_nothing_is_scheduled_pushed_or_shown():
    plan = planned("staging")
    assert not selftest_cron_jobs(plan)
    fleet = find(plan, CONFIG_MAP, "staging-dashboard-gpu-fleet").inputs["data"]["gpu-fleet.json"]
    assert "gpu_platform_selftest" not in fleet
    assert "schedule" not in plan.outputs["selftest"]
    assert not [w for w, _ in queries(plan) if w.startswith("alert SelfTest")]


def test_the_self_test_metrics_exist_only_where_a_run_pushes_them(aws_with_image):
    config = configuration(aws_with_image)
    expr = 'gpu_platform_selftest_check_status{job="gpu-platform-selftest", status="FAIL"}'
    assert problems(expr, emitted(config)[0]) == []
    config["push_urls"]["SELFTEST_PUSHGATEWAY_URL"] = set()
    assert problems(expr, *emitted(config)) == [
        "gpu_platform_selftest_check_status not emitted: no self-test Job or CronJob sets "
        f"SELFTEST_PUSHGATEWAY_URL={PUSHGATEWAY_URL}"
    ]


def test_without_honor_labels_the_pushed_job_is_renamed(aws_with_image):
    config = configuration(aws_with_image)
    config["releases"]["prometheus-pushgateway"]["serviceMonitor"]["honorLabels"] = False
    expr = 'gpu_platform_selftest_figure{job="gpu-platform-selftest"}'
    assert problems(expr, emitted(config)[0]) == [
        "label job not on ['gpu_platform_selftest_figure']"
    ]


# --------------------------------------------------------------------------- quarantine


def test_no_quarantine_by_default():
    cfg = stack_config("onprem")
    (cron,) = stack_cron_jobs(cfg)
    assert "SELFTEST_CORDON_ON_FAIL" not in env_of(pod_of(cron))
    # onprem's runs read their nodes' topology labels (tests/components/selftest/test_access.py):
    # their account may get nodes, and patch none (only the quarantine watcher's may, which acts
    # on jobs' preflights).
    roles = [
        o
        for o in planned("onprem").kubernetes_objects()
        if o["kind"] == "ClusterRole" and o["metadata"]["name"].startswith("gpu-platform-selftest")
    ]
    assert [r["metadata"]["name"] for r in roles] == ["gpu-platform-selftest-node-reader"]
    assert not [r for role in roles for r in role["rules"] if "patch" in r["verbs"]]


def test_quarantine_runs_as_an_account_that_may_only_get_and_patch_nodes(tmp_path):
    stack = existing(
        existing={**LAB, "gpu_pools": [A100_POOL]},
        selftest={"image": IMAGE, "cordon_on_fail": True},
    )
    plan = build_plan(run_program("q", make_project(tmp_path, {"q": stack})))
    objects = {
        o["kind"]: o
        for o in plan.kubernetes_objects()
        if o["metadata"]["name"] in ("gpu-platform-selftest-cordon", "selftest")
        or o["kind"] in ("CronJob", "JobSet")
    }
    version = plan.outputs["kubernetes_version"]
    # Cordoning sets spec.unschedulable, labelling metadata.labels and tainting spec.taints, an
    # atomic list the patch gives whole after reading the node: get and patch on nodes, and
    # nothing else (Kubernetes docs, "Using RBAC Authorization": nodes are cluster-scoped, so
    # only a ClusterRole grants them).
    assert objects["ClusterRole"]["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}
    ]
    binding = objects["ClusterRoleBinding"]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                  "name": objects["ClusterRole"]["metadata"]["name"]}  # fmt: skip
    account = objects["ServiceAccount"]["metadata"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": account["name"], "namespace": "gpu-platform-selftest"}
    ]
    for kind in ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "CronJob", "JobSet"):
        jobsets.validate_object(objects[kind], version)
    for pod in (pod_of(objects["CronJob"]), jobsets.pod_spec(objects["JobSet"])):
        assert pod["serviceAccountName"] == account["name"]
        env = env_of(pod)
        assert env["SELFTEST_CORDON_ON_FAIL"] == "true"
        assert env["SELFTEST_CORDON_LABEL"] == "gpu-platform/selftest-failed"
        assert env["NODE_NAME"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    (cron,) = selftest_cron_jobs(plan)
    role = find(plan, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding",
                "q-clusterrolebinding-gpu-platform-selftest-cordon")  # fmt: skip
    assert role.urn in cron.dependencies


def test_the_post_deploy_job_keeps_its_own_pool_and_nodes():
    """A scheduled run is one node of its pool; the post-deploy run keeps selftest.nodes."""
    cfg = stack_config("onprem")
    (job,) = render(selftest_spec(cfg))
    env = env_of(jobsets.pod_spec(job))
    assert env["SELFTEST_NODES"] == "2"
    assert env["SELFTEST_PUSHGATEWAY_URL"] == PUSHGATEWAY_URL
    assert json.loads(env["SELFTEST_FLOORS"])["intra_node_busbw_gbps"] == 228.0


def test_each_pools_cron_job_is_named_as_the_runbooks_start_it():
    """docs/monitoring.md runs a scheduled check at once with
    `kubectl create job --from=cronjob/selftest-<pool>`: the name the CronJob must carry."""
    assert cron_job_name("a100") == "selftest-a100"
    crons = [r.inputs for r in selftest_cron_jobs(planned("onprem"))]
    assert [c["metadata"]["name"] for c in crons] == ["selftest-a100"]
