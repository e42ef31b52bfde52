"""The Pushgateway sweep (components/observability/pushgateway_sweep.py) run as its CronJob runs
it: the script from the rendered ConfigMap in a folder of its own, the command and environment
exactly as the CronJob renders them (the address pointed at a stand-in), against a Pushgateway
that lists groups as v1.11.3's API does."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from components.observability.pushgateway import sweep_objects
from components.observability.pushgateway_sweep import group_path
from model.config import parse_config
from tests.conftest import STACKS, planned, stack_config
from tests.helpers.pushgateway import Gateway
from tests.helpers.raw_config import AWS

CRON_JOB, CONFIG_MAP = "kubernetes:batch/v1:CronJob", "kubernetes:core/v1:ConfigMap"


def group(now: float, age_s: float, **labels: str) -> dict:
    """A group as GET /api/v1/metrics lists it (pushgateway v1.11.3 api/v1/api.go: `labels`,
    and per family `time_stamp`, `type`, `metrics` with a gauge's value as fmt.Sprint prints a
    float64)."""
    pushed = {"labels": labels, "value": f"{now - age_s:e}"}
    return {
        "labels": labels,
        "last_push_successful": True,
        "push_time_seconds": {
            "time_stamp": "2026-12-01T00:00:00Z",
            "type": "GAUGE",
            "metrics": [pushed],
        },
    }


def run_sweep(stack: str, tmp_path, groups: list[dict]) -> tuple[list, str]:
    plan = planned(stack)
    (cron,) = [
        r.inputs
        for r in plan.of_type(CRON_JOB)
        if r.inputs["metadata"]["name"] == "pushgateway-sweep"
    ]
    (config_map,) = [
        r.inputs
        for r in plan.of_type(CONFIG_MAP)
        if r.inputs["metadata"]["name"] == "pushgateway-sweep"
    ]
    pod = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    (mount,) = container["volumeMounts"]
    folder = tmp_path / mount["mountPath"].lstrip("/")
    folder.mkdir(parents=True)
    for name, text in config_map["data"].items():
        (folder / name).write_text(text)
    env = {e["name"]: e["value"] for e in container["env"]}
    command = [
        sys.executable,
        *(
            str(tmp_path) + a if a.startswith(mount["mountPath"]) else a
            for a in container["command"][1:]
        ),
    ]
    assert container["command"][0] == "python"
    with Gateway(groups=groups) as gateway:
        env["PUSHGATEWAY_URL"] = gateway.url
        done = subprocess.run(
            command, env=env, capture_output=True, text=True, cwd=tmp_path, timeout=120
        )
    assert done.returncode == 0, done.stderr
    return gateway.received, done.stdout


@pytest.mark.parametrize("stack", STACKS)
def test_the_sweep_deletes_only_finished_jobs_groups_older_than_the_retention(stack, tmp_path):
    # The default retention: 24 hours (model/config/observability.py).
    assert stack_config(stack).observability.pushgateway_retention_hours == 24
    now = time.time()
    groups = [
        # A job that stopped pushing two days ago, its job_name with a `/` and an empty pool.
        group(
            now, 2 * 86400, job="training-goodput", job_name="/var/tmp", namespace="team-a", pool=""
        ),
        # A job still pushing.
        group(now, 60, job="training-goodput", job_name="llama-7b", namespace="team-a", pool="a"),
        # The self-test's node groups are kept: the alerts read the last run of every node.
        group(now, 30 * 86400, job="gpu-platform-selftest", node="n1"),
    ]
    received, out = run_sweep(stack, tmp_path, groups)
    # base64url without padding (RFC 4648 §5): training-goodput, team-a; "/var/tmp" is the
    # Pushgateway README's own example (L3Zhci90bXA); an empty value is a single `=`.
    assert received == [
        ("GET", "/api/v1/metrics", None, ""),
        (
            "DELETE",
            "/metrics/job@base64/dHJhaW5pbmctZ29vZHB1dA/job_name@base64/L3Zhci90bXA"
            "/namespace@base64/dGVhbS1h/pool@base64/=",
            None,
            "",
        ),
    ]
    assert "deleted 1 of 3 groups" in out


def test_the_sweep_reads_its_retention_from_the_config_and_holds_no_token():
    raw = {**AWS, "observability": {"pushgateway_retention_hours": 2}}
    cfg = parse_config(raw, "stacks/Pulumi.test.yaml")
    assert cfg.observability.pushgateway_retention_hours == 2
    (_, cron) = sweep_objects(cfg, {})
    pod = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    env = {e["name"]: e["value"] for e in pod["containers"][0]["env"]}
    assert env["RETENTION_SECONDS"] == "7200"
    # No ServiceAccount token: the sweep holds no right on the Kubernetes API.
    assert pod["automountServiceAccountToken"] is False


def test_a_group_is_addressed_by_every_grouping_label_base64url_encoded():
    # Pushgateway README ("URL"): the grouping key job="directory_cleaner", path="/var/tmp" is
    # `.../job/directory_cleaner/path@base64/L3Zhci90bXA`; `job@base64` takes the job's name
    # encoded the same way (base64url of directory_cleaner, RFC 4648 §5, no padding).
    assert (
        group_path({"path": "/var/tmp", "job": "directory_cleaner"})
        == "/metrics/job@base64/ZGlyZWN0b3J5X2NsZWFuZXI/path@base64/L3Zhci90bXA"
    )
