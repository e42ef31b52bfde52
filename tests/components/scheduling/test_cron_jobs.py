"""A training job on a schedule (components/scheduling/cron_jobs.py): a valid CronJob on every pool
of every stack, one node under the launcher's torchrun --standalone, never overlapping, read in
UTC."""

from __future__ import annotations

import pytest

from components.scheduling.cron_jobs import Schedule, cron_job
from components.scheduling.job_spec import spec_for_pool
from tests.conftest import stack_config, validate_kubernetes
from tests.helpers.job_specs import IMAGE, POOLS

EVERY_4_HOURS = Schedule("0 */4 * * *")


@pytest.mark.parametrize(("stack", "pool"), POOLS)
def test_a_scheduled_job_is_a_valid_cron_job_on_every_pool_of_every_stack(stack, pool):
    cfg = stack_config(stack)
    spec = spec_for_pool(cfg, pool, name="nightly", image=IMAGE, command=["t.py"], standalone=True)
    validate_kubernetes(cron_job(spec, EVERY_4_HOURS), cfg.cluster.kubernetes_version)


def test_a_scheduled_job_rendezvouses_on_its_own_node_without_a_service():
    """The CronJob controller names each Job `<cronjob>-<hash of the scheduled time>`, so no pod
    can know index 0's address in advance: torchrun's --standalone keeps the rendezvous on the
    node (PyTorch docs, torchrun, "Single-node multi-worker")."""
    cfg = stack_config("prod")
    spec = spec_for_pool(cfg, "h100-block", name="nightly", image=IMAGE, command=["t.py"],
                         standalone=True)  # fmt: skip
    cron = cron_job(spec, EVERY_4_HOURS)
    pod = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["command"] == [
        "python", "/opt/gpu-platform/launcher/launch.py",
        "--standalone", "--nnodes=1", "--nproc-per-node=8", "--shutdown-timeout=20", "t.py"
    ]  # fmt: skip
    assert "subdomain" not in pod
    assert "ports" not in container


def test_a_scheduled_job_is_a_batch_job_that_retries_a_disrupted_pod():
    """The CronJob controller makes only Jobs (Kubernetes docs, "CronJob"), so no JobSet
    restarts it: a disrupted pod is recreated without spending the backoff limit (`Ignore`,
    Kubernetes docs "Pod failure policy"), and an exit code no retry fixes fails it at once, as
    does any other failure (backoffLimit 0): the pod rules of the JobSet's Job."""
    cfg = stack_config("prod")
    spec = spec_for_pool(cfg, "h100-block", name="nightly", image=IMAGE, command=["t.py"],
                         standalone=True)  # fmt: skip
    job = cron_job(spec, EVERY_4_HOURS)["spec"]["jobTemplate"]["spec"]
    assert job["backoffLimit"] == 0
    assert job["podFailurePolicy"] == {
        "rules": [
            {
                "action": "FailJob",
                "onExitCodes": {"containerName": "trainer", "operator": "In", "values": [2, 78]},
            },
            {
                "action": "Ignore",
                "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
            },
            {
                "action": "FailJob",
                "onExitCodes": {"containerName": "trainer", "operator": "In", "values": [143]},
            },
        ]
    }


def test_the_cron_job_never_overlaps_runs_and_reads_its_schedule_in_utc():
    cfg = stack_config("prod")
    spec = spec_for_pool(cfg, "h100-block", name="nightly", image=IMAGE, command=["t.py"],
                         standalone=True, queue="default",
                         priority_class="preemptible")  # fmt: skip
    cron = cron_job(spec, EVERY_4_HOURS)["spec"]
    assert cron["schedule"] == "0 */4 * * *"
    # Kubernetes docs, "CronJob": without timeZone the controller uses its own local time.
    assert cron["timeZone"] == "Etc/UTC"
    assert cron["concurrencyPolicy"] == "Forbid"
    # Kueue reads the queue and priority from each Job the CronJob creates (the template's
    # labels), and admits it by unsuspending it.
    assert cron["jobTemplate"]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "default"
    assert cron["jobTemplate"]["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == (
        "preemptible"
    )
    assert cron["jobTemplate"]["spec"]["suspend"] is True


@pytest.mark.parametrize("choices", [{"nodes": 2, "standalone": True}, {"nodes": 1}])
def test_only_a_one_node_standalone_job_can_be_scheduled(choices):
    spec = spec_for_pool(stack_config("prod"), "h100-block", name="n", image=IMAGE,
                         command=["t.py"], **choices)  # fmt: skip
    with pytest.raises(ValueError, match="standalone on one node"):
        cron_job(spec, EVERY_4_HOURS)
