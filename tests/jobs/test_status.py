"""`python -m jobs status NAME` (issue 28 §3): the job's state and restarts from its JobSet, the
restarts' causes, goodput and last checkpoint from trainkit's series in the stack's Prometheus
(contract/training_metrics.py), read through the API server's service proxy; without
Prometheus, the state and why goodput is missing; an unknown job exits 1 naming the namespace.
The cluster is the stand-in kubectl (tests/helpers/kubectl.py); its answers are JobSet v0.12.0
documents and Prometheus HTTP API answers (tests/helpers/jobset_objects.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from urllib.parse import quote

import pytest

from jobs.status import main
from model.stacks import ROOT
from tests.conftest import STACKS, stack_config
from tests.helpers.hang import HANG_S
from tests.helpers.jobset_objects import T1, goodput_sample, jobset, pod, vector, workload
from tests.helpers.kubectl import StandInKubectl, stand_in_kubectl

# jobs/status.JOB_TYPES: a JobSet, or a batch Job as the platform rendered jobs before.
TYPES = "jobset.v1alpha2.jobset.x-k8s.io,job.v1.batch"
# The series' names (contract/training_metrics.py) and the push's labels, spelled out.
QUERY = (
    '{__name__=~"gpu_platform_job_allocated_gpu_seconds|gpu_platform_job_productive_gpu_seconds'
    "|gpu_platform_job_lost_gpu_seconds|gpu_platform_job_restarts"
    "|gpu_platform_job_restart_seconds|gpu_platform_job_last_checkpoint_step"
    "|gpu_platform_job_checkpoint_seconds|gpu_platform_job_checkpoint_interval_seconds"
    '|gpu_platform_job_nodes",job="training-goodput",namespace="training",job_name="llama"}'
    # The recorded Young–Daly interval keeps the job's identity, not the push's `job`.
    ' or gpu_platform_job:checkpoint_interval_seconds:young_daly{namespace="training",'
    'job_name="llama"}'
)
# kube-prometheus-stack 88.5.3: Service `<fullname>-prometheus` (templates/prometheus/
# service.yaml; fullname is the release name when it contains the chart's), port 9090
# (values.yaml prometheus.service.port), in the stack's monitoring namespace.
PROXY = (
    "/api/v1/namespaces/monitoring/services/kube-prometheus-stack-prometheus:9090/proxy"
    f"/api/v1/query?query={quote(QUERY, safe='')}"
)
GET = ("get", TYPES, "llama", "-n", "training", "-o", "json", "--ignore-not-found")
# The job's Kueue Workload, by the job's uid (kueue v0.19.2 pkg/controller/constants
# JobUIDLabel), and its pods, by JobSet's label (jobset v0.12.0 pkg/constants JobSetNameKey).
WORKLOAD = (
    "get", "workload.v1beta2.kueue.x-k8s.io", "-l",
    "kueue.x-k8s.io/job-uid=0b8f2d1c-9a3e-4f6b-8c7d-2e1f0a9b8c7d", "-n", "training", "-o", "json",
)  # fmt: skip
PODS = (
    "get", "pods", "-l", "jobset.sigs.k8s.io/jobset-name=llama", "-n", "training", "-o", "json",
)  # fmt: skip
# A job that restarted twice: preempted once (trainkit exits 143), hung once (124).
FIGURES = vector(
    goodput_sample("gpu_platform_job_allocated_gpu_seconds", "1600"),
    goodput_sample("gpu_platform_job_productive_gpu_seconds", "1200"),
    goodput_sample("gpu_platform_job_lost_gpu_seconds", "160", cause="preempted"),
    goodput_sample("gpu_platform_job_lost_gpu_seconds", "240", cause="hung"),
    goodput_sample("gpu_platform_job_restarts", "1", cause="preempted"),
    goodput_sample("gpu_platform_job_restarts", "1", cause="hung"),
    goodput_sample("gpu_platform_job_restart_seconds", "45"),
    goodput_sample("gpu_platform_job_last_checkpoint_step", "1200"),
    # Saves every 600 s of steps, each holding the ranks 10 s, on 4 nodes of a pool whose node
    # MTBF is 11520 s: Young–Daly sqrt(2 × 10 × 11520 / 4) = sqrt(57600) = 240 s, as
    # Prometheus's record would hold it (tests/promtool/fleet_test.yaml works one by hand).
    goodput_sample("gpu_platform_job_checkpoint_interval_seconds", "600"),
    goodput_sample("gpu_platform_job_checkpoint_seconds", "10"),
    goodput_sample("gpu_platform_job_nodes", "4"),
    goodput_sample("gpu_platform_job:checkpoint_interval_seconds:young_daly", "240"),
)


@pytest.fixture
def kubectl(tmp_path, monkeypatch) -> StandInKubectl:
    (tmp_path / "kc").write_text("apiVersion: v1\nkind: Config\n")
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kc"))
    return stand_in_kubectl(tmp_path / "bin", monkeypatch)


def status(*argv: str, stack: str = "staging", kubeconfig: str | None = None) -> int:
    flags = ["--kubeconfig", kubeconfig] if kubeconfig else []
    return main([*argv, "--stack", stack, *flags], root=ROOT)


def test_a_restarted_job_shows_its_restarts_causes_goodput_and_checkpoint(kubectl, capsys):
    kubectl.answer(
        *GET, stdout={"apiVersion": "v1", "kind": "List", "items": [jobset("restarting")]}
    )
    kubectl.answer("get", "--raw", PROXY, stdout=FIGURES)
    assert status("llama") == 0
    assert capsys.readouterr().out.splitlines()[:5] == [
        "JobSet training/llama: restarting",
        "restarts: 2 restart(s), 1 of maxRestarts 3 counted toward the limit, 1 not "
        "(evictions: not the job's fault); causes (trainkit): hung 1, preempted 1; 45 s "
        "between attempts",
        # 1200 / 1600 GPU-seconds.
        "goodput: 75.0% (1200 of 1600 GPU-seconds productive); lost: hung 240 GPU-s, "
        "preempted 160 GPU-s",
        "resumes from: step 1200 in /mnt/shared-data/runs/jobs/llama",
        "checkpoint interval: 600 s of steps, each save holding the ranks 10.0 s; Young–Daly on "
        "4 node(s) of its pool: 240 s",
    ]
    # The job, Prometheus, then the Workload the platform ledger reads (unanswered here).
    assert kubectl.verbs() == ["get", "get", "get"]


@pytest.mark.parametrize(
    ("phase", "first"),
    [
        ("running", "JobSet training/llama: running"),
        ("queued", "JobSet training/llama: queued (SuspendedJobs: jobset is suspended)"),
        (
            "failed",
            "JobSet training/llama: failed (ReachedMaxRestarts: jobset failed due to reaching max "
            "number of restarts (first failed job: ft-trainer-0))",
        ),
        (
            "succeeded",
            "JobSet training/llama: succeeded (AllJobsCompleted: jobset completed successfully)",
        ),
    ],
)
def test_each_state_is_printed_from_the_jobsets_conditions(kubectl, capsys, phase, first):
    kubectl.answer(*GET, stdout={"apiVersion": "v1", "kind": "List", "items": [jobset(phase)]})
    kubectl.answer("get", "--raw", PROXY, stdout=vector())
    assert status("llama") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == first
    # Prometheus answered with nothing: said so, not a 0 % goodput.
    assert lines[2] == (
        "goodput: none pushed yet (no gpu_platform_job_allocated_gpu_seconds of "
        'job="training-goodput" for this job in Prometheus)'
    )
    assert lines[3] == "resumes from: /mnt/shared-data/runs/jobs/llama"


def test_without_prometheus_the_state_and_restarts_print_and_why_goodput_is_missing(
    kubectl, capsys
):
    kubectl.answer(*GET, stdout={"apiVersion": "v1", "kind": "List", "items": [jobset("failed")]})
    kubectl.answer(
        "get", "--raw", PROXY, rc=1,
        stderr='Error from server (ServiceUnavailable): no endpoints available for service '
        '"kube-prometheus-stack-prometheus:9090"\n',
    )  # fmt: skip
    assert status("llama") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("JobSet training/llama: failed (ReachedMaxRestarts")
    assert lines[1] == (
        "restarts: 3 restart(s), 3 of maxRestarts 3 counted toward the limit, 0 not "
        "(evictions: not the job's fault)"
    )
    assert lines[2] == (
        "goodput: unknown: Prometheus (monitoring/kube-prometheus-stack-prometheus:9090) could "
        "not be reached through the API server: Error from server (ServiceUnavailable): no "
        'endpoints available for service "kube-prometheus-stack-prometheus:9090"'
    )
    assert lines[3] == "resumes from: /mnt/shared-data/runs/jobs/llama"


def test_a_query_prometheus_refuses_is_reported_with_its_error(kubectl, capsys):
    kubectl.answer(*GET, stdout={"apiVersion": "v1", "kind": "List", "items": [jobset("running")]})
    # Prometheus HTTP API, "Format overview": an error answer.
    refusal = {
        "status": "error",
        "errorType": "timeout",
        "error": "query timed out in expression evaluation",
    }
    kubectl.answer("get", "--raw", PROXY, stdout=refusal)
    assert status("llama") == 0
    assert (
        "goodput: unknown: Prometheus (monitoring/kube-prometheus-stack-prometheus:9090) refused "
        "the query: timeout: query timed out in expression evaluation"
    ) in capsys.readouterr().out


@pytest.mark.parametrize("stack", STACKS)
def test_an_unknown_job_exits_1_naming_the_namespace_looked_in_on_every_stack(
    kubectl, capsys, tmp_path, stack
):
    training = stack_config(stack).namespaces.training
    kubectl.answer("get", TYPES, "nope", "-n", training, "-o", "json", "--ignore-not-found")
    assert status("nope", stack=stack, kubeconfig=str(tmp_path / "kc")) == 1
    assert kubectl.verbs() == ["get"], "no Prometheus query for a job that is not there"
    err = capsys.readouterr().err
    assert f"error: no JobSet or Job named nope in namespace {training} (stack {stack})" in err


def test_a_teams_job_is_looked_up_in_the_teams_namespace(kubectl, capsys, tmp_path):
    """onprem's team research (stacks/Pulumi.onprem.yaml), whose queue bursts to burst."""
    kubectl.answer("get", TYPES, "nope", "-n", "research", "-o", "json", "--ignore-not-found")
    argv = ("nope", "--team", "research")
    assert status(*argv, stack="onprem", kubeconfig=str(tmp_path / "kc")) == 1
    assert "in namespace research (stack onprem, team research)" in capsys.readouterr().err
    assert status("x", "--team", "vision", stack="onprem", kubeconfig=str(tmp_path / "kc")) == 2
    assert "--team 'vision' is not a team of this stack" in capsys.readouterr().err


def test_a_cluster_that_cannot_be_asked_exits_1_with_kubectls_reason(kubectl, capsys):
    timeout = "Unable to connect to the server: dial tcp 10.0.0.1:443: i/o timeout\n"
    kubectl.answer(*GET, rc=1, stderr=timeout)
    assert status("llama") == 1
    assert "could not ask the cluster for llama: Unable to connect to the server" in (
        capsys.readouterr().err
    )


def test_python_dash_m_jobs_status_runs_from_the_repository_root(kubectl, tmp_path):
    kubectl.answer(*GET, stdout={"apiVersion": "v1", "kind": "List", "items": [jobset("running")]})
    kubectl.answer("get", "--raw", PROXY, stdout=FIGURES)
    run = subprocess.run(
        [sys.executable, "-m", "jobs", "status", "llama", "--stack", "staging"],
        cwd=ROOT, capture_output=True, text=True, timeout=HANG_S, env=os.environ,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[0] == "JobSet training/llama: running"
    assert "goodput: 75.0%" in run.stdout


def test_a_long_run_prints_whole_figures_and_counts_a_series_scraped_twice_once(kubectl, capsys):
    """Two Pushgateway targets (instances) expose the same pushed series: one figure."""
    kubectl.answer(*GET, stdout={"apiVersion": "v1", "kind": "List", "items": [jobset("running")]})
    twice = [
        goodput_sample("gpu_platform_job_allocated_gpu_seconds", "6912000", instance=instance)
        for instance in ("10.0.3.17:9091", "10.0.4.22:9091")
    ]
    figures = vector(
        *twice,
        goodput_sample("gpu_platform_job_productive_gpu_seconds", "5529600"),
        goodput_sample("gpu_platform_job_last_checkpoint_step", "1250000"),
    )
    kubectl.answer("get", "--raw", PROXY, stdout=figures)
    assert status("llama") == 0
    lines = capsys.readouterr().out.splitlines()
    # 5529600 / 6912000 = 0.8 (8 GPUs for 10 days allocated).
    assert lines[2] == "goodput: 80.0% (5529600 of 6912000 GPU-seconds productive)"
    assert lines[3] == "resumes from: step 1250000 in /mnt/shared-data/runs/jobs/llama"
    # A job that has not saved twice has no interval to compare.
    assert lines[4] == "checkpoint interval: unknown until the job has saved twice"


def test_a_job_whose_pool_had_no_failure_has_no_young_daly_interval(kubectl, capsys):
    """The pool's MTBF exists only with a failure in alerts.fleet_window: no record, and the
    interval the job uses is still printed."""
    kubectl.answer(*GET, stdout={"apiVersion": "v1", "kind": "List", "items": [jobset("running")]})
    young_daly = "gpu_platform_job:checkpoint_interval_seconds:young_daly"
    kept = [r for r in FIGURES["data"]["result"] if r["metric"]["__name__"] != young_daly]
    figures = vector(*[(r["metric"], r["value"][1]) for r in kept])
    kubectl.answer("get", "--raw", PROXY, stdout=figures)
    assert status("llama") == 0
    assert capsys.readouterr().out.splitlines()[4] == (
        "checkpoint interval: 600 s of steps, each save holding the ranks 10.0 s; Young–Daly: "
        "unknown (no failure in its pool over alerts.fleet_window)"
    )


def test_the_documented_interval_line_is_what_status_prints(kubectl, capsys):
    """docs/training.md, "How often to checkpoint", shows the line for these figures."""
    kubectl.answer(*GET, stdout={"apiVersion": "v1", "kind": "List", "items": [jobset("running")]})
    kubectl.answer("get", "--raw", PROXY, stdout=FIGURES)
    assert status("llama") == 0
    line = capsys.readouterr().out.splitlines()[4]
    assert f"```text\n{line}\n```" in (ROOT / "docs" / "training.md").read_text()


def condition(kind: str, at: str, reason: str = "") -> dict[str, str]:
    return {"type": kind, "status": "True", "lastTransitionTime": at, "reason": reason}


def items(*objects: dict) -> dict:
    return {"apiVersion": "v1", "kind": "List", "items": list(objects)}


# A job that ran once: created at T0 21:04:11, quota reserved 21:09:11 (queueing 300 s), the
# last pod scheduled 21:11:11 (provisioning 120 s), the last pod's containers ready 21:14:11
# (pull/init 180 s), finished T1 23:40:52 (running 2 h 26 min 41 s = 8801 s). Allocation
# 21:09:11 to 23:40:52 = 9101 s = 120 + 180 + 8801, on the 16 GPUs Kueue admitted.
def ran_once() -> tuple[dict, dict, list[dict]]:
    job = jobset("succeeded")
    job["status"].update(restarts=0, restartsCountTowardsMax=0)
    done = [
        condition("QuotaReserved", "2026-12-01T21:09:11Z", "QuotaReserved"),
        condition("Admitted", "2026-12-01T21:09:11Z", "Admitted"),
        condition("Finished", T1, "Succeeded"),
    ]
    pods = [
        pod(0, "2026-12-01T21:09:12Z", "2026-12-01T21:11:11Z", "2026-12-01T21:14:11Z"),
        pod(1, "2026-12-01T21:09:12Z", "2026-12-01T21:10:40Z", "2026-12-01T21:13:00Z"),
    ]
    return job, workload(done, gpus="16"), pods


# × 16 GPUs: 145616 GPU-s allocated, 140816 goodput (96.7 %), provisioning 1920, pull 2880.
# staging's pool a100-efa is p4d.24xlarge on demand in us-east-1, $21.958/h for 8 GPUs (AWS
# EC2 On-Demand pricing, as model/catalog_rows.py records it) = $2.74475 a GPU-hour:
# 145616 × 2.74475 / 3600 = $111.02, 140816 → $107.36, 1920 → $1.46, 2880 → $2.20.
RAN_ONCE_BADPUT = "badput: provisioning 1920 GPU-s $1.46; image pull / init 2880 GPU-s $2.20"


def holds(kubectl, job: dict, held: dict, pods: list[dict]) -> None:
    """The cluster holds the job, its Workload and its pods; Prometheus has no trainkit series."""
    kubectl.answer(*GET, stdout=items(job))
    kubectl.answer("get", "--raw", PROXY, stdout=vector())
    kubectl.answer(*WORKLOAD, stdout=items(held))
    kubectl.answer(*PODS, stdout=items(*pods))


def test_every_job_has_a_priced_platform_ledger_without_trainkit(kubectl, capsys):
    """No trainkit series: the ledger comes from the Workload and the pods alone."""
    job, held, pods = ran_once()
    holds(kubectl, job, held, pods)
    assert status("llama") == 0
    assert capsys.readouterr().out.splitlines()[4:] == [
        "platform ledger: 9101 s allocated on 16 GPU(s), 145616 GPU-s $111.02; goodput 96.7%, "
        "140816 GPU-s $107.36",
        RAN_ONCE_BADPUT,
        "outside the allocation (no GPU held, not priced): queueing 300 s",
        "priced at: $2.74475/GPU-h, a node at $21.958/h over its 8 GPUs (on-demand $21.958/h, "
        "us-east-1, 2026-07-20)",
    ]


def test_without_a_name_the_team_summary_adds_its_jobs_ledgers_priced(kubectl, capsys, monkeypatch):
    job, held, pods = ran_once()
    # A second job, still queued: no Workload admitted, no pods; from T0 to now (T1) it has
    # waited 23:40:52 - 21:04:11 = 9401 s, outside any allocation.
    waiting = jobset("queued", name="vit")
    waiting["metadata"]["uid"] = "5d0c9e1a-2b3f-4c6d-8e7f-9a0b1c2d3e4f"
    everyone = ("-n", "training", "-o", "json")
    kubectl.answer(
        "get", TYPES, "-l", "kueue.x-k8s.io/queue-name", *everyone, stdout=items(job, waiting)
    )
    kubectl.answer(
        "get", WORKLOAD[1], "-l", "kueue.x-k8s.io/job-uid", *everyone, stdout=items(held)
    )
    kubectl.answer(
        "get", "pods", "-l", "batch.kubernetes.io/job-name", *everyone, stdout=items(*pods)
    )
    monkeypatch.setattr(time, "time", lambda: 1796168452.4)
    assert main(["--stack", "staging"], root=ROOT) == 0
    assert capsys.readouterr().out.splitlines() == [
        "JobSet llama: 145616 GPU-s $111.02, goodput 96.7%, queueing 300 s",
        "JobSet vit: 0 GPU-s $0.00, goodput -, queueing 9401 s",
        "team training: 2 job(s), 145616 GPU-s allocated $111.02; goodput 96.7% 140816 GPU-s "
        "$107.36",
        RAN_ONCE_BADPUT,
    ]
    assert kubectl.verbs() == ["get", "get", "get"]


def test_a_restarted_jobs_ledger_is_refined_by_trainkit_over_the_attempts_the_api_lost(
    kubectl, capsys, monkeypatch
):
    """JobSet restarted twice: the earlier attempts' pods are gone, so their time is
    unrecorded by the platform and trainkit's ledger (every attempt) splits it."""
    kubectl.answer(*GET, stdout=items(jobset("restarting")))
    figures = vector(
        goodput_sample("gpu_platform_job_allocated_gpu_seconds", "145000"),
        goodput_sample("gpu_platform_job_productive_gpu_seconds", "120000"),
        goodput_sample("gpu_platform_job_lost_gpu_seconds", "8000", cause="preempted"),
        goodput_sample("gpu_platform_job_lost_gpu_seconds", "12000", cause="hung"),
    )
    kubectl.answer("get", "--raw", PROXY, stdout=figures)
    reserved = [condition("QuotaReserved", "2026-12-01T21:05:11Z", "QuotaReserved")]
    kubectl.answer(*WORKLOAD, stdout=items(workload(reserved, gpus="16")))
    pods = [
        pod(i, "2026-12-01T23:00:00Z", "2026-12-01T23:01:00Z", "2026-12-01T23:02:00Z")
        for i in (0, 1)
    ]
    kubectl.answer(*PODS, stdout=items(*pods))
    # Now is T1, 2026-12-01T23:40:52Z.
    monkeypatch.setattr(time, "time", lambda: 1796168452.4)
    assert status("llama") == 0
    # Quota from 21:05:11 (queueing 60 s): the attempts before the newest, to its pods'
    # creation at 23:00:00, unrecorded (6889 s); the restart to running at 23:02:00 (120 s);
    # running to now (2332 s). Allocation 9341 s × 16 = 149456 GPU-s: goodput 37312 (25.0 %),
    # unrecorded 110224, restart 1920. trainkit splits the 37312 + 110224 = 147536 running or
    # unrecorded: productive 120000, lost 8000 + 12000 = 20000, the rest 7536. At $2.74475 a
    # GPU-hour: 149456 → $113.95, 37312 → $28.45, 1920 → $1.46, 110224 → $84.04,
    # 120000 → $91.49, 20000 → $15.25, 7536 → $5.75.
    assert capsys.readouterr().out.splitlines()[5:] == [
        "platform ledger: 9341 s allocated on 16 GPU(s), 149456 GPU-s $113.95; goodput 25.0%, "
        "37312 GPU-s $28.45",
        "badput: restart 1920 GPU-s $1.46; unrecorded 110224 GPU-s $84.04",
        "outside the allocation (no GPU held, not priced): queueing 60 s",
        "priced at: $2.74475/GPU-h, a node at $21.958/h over its 8 GPUs (on-demand $21.958/h, "
        "us-east-1, 2026-07-20)",
        "trainkit refines it: goodput 120000 GPU-s $91.49; failure 20000 GPU-s $15.25; in the "
        "process (start-up, checkpoint saves, data stalls, unsaved tail) 7536 GPU-s $5.75",
    ]


def test_the_documented_platform_ledger_is_what_status_prints(kubectl, capsys):
    """docs/training.md, "Goodput without trainkit", shows the ledger of `ran_once`."""
    job, held, pods = ran_once()
    holds(kubectl, job, held, pods)
    assert status("llama") == 0
    block = "\n".join(capsys.readouterr().out.splitlines()[4:])
    assert f"```text\n{block}\n```" in (ROOT / "docs" / "training.md").read_text()


NODES = ("get", "nodes", "node-a", "node-b", "-o", "json", "--ignore-not-found")


def ran_on_nodes() -> tuple[dict, dict, list[dict]]:
    job, held, pods = ran_once()
    for each, name in zip(pods, ("node-a", "node-b"), strict=True):
        each["spec"]["nodeName"] = name
    return job, held, pods


def test_a_quarantine_of_a_node_the_job_ran_on_is_read_from_the_nodes_annotation(kubectl, capsys):
    # node-b quarantined 23:30:52, 600 s before the job finished (T1 23:40:52): those 600 s of
    # its 16 GPUs are restart, 9600 GPU-s at $2.74475/GPU-h = $7.32; goodput 140816 - 9600 =
    # 131216 GPU-s (90.1 % of 145616), $100.04, at most: what the group lost since its last
    # checkpoint is unknown without a marker.
    job, held, pods = ran_on_nodes()
    stamp = "2026-12-01T23:30:52Z hardware.xid,hardware.pcie_link"
    annotations = {"gpu-platform/quarantined": stamp}
    marked = {"kind": "Node", "metadata": {"name": "node-b", "annotations": annotations}}
    holds(kubectl, job, held, pods)
    kubectl.answer(*NODES, stdout=items({**marked, "metadata": {"name": "node-a"}}, marked))
    assert status("llama") == 0
    out = capsys.readouterr().out.splitlines()
    assert out[4] == (
        "platform ledger: 9101 s allocated on 16 GPU(s), 145616 GPU-s $111.02; goodput 90.1% "
        "(at most: work lost to a failure is unknown), 131216 GPU-s $100.04"
    )
    assert out[5] == (
        f"{RAN_ONCE_BADPUT}; restart 9600 GPU-s $7.32; "
        "failure unknown, not counted (no checkpoint marker)"
    )
    assert out[-1] == "restart cause: quarantined node-b: hardware.xid,hardware.pcie_link"


def test_where_the_account_may_not_get_nodes_the_ledger_says_quarantines_were_not_read(
    kubectl, capsys
):
    """A team's account holds rights in its namespace only (components/control/team_access.py),
    and Nodes are cluster-scoped: the ledger stands without them, and says so."""
    job, held, pods = ran_on_nodes()
    forbidden = ('Error from server (Forbidden): nodes "node-a" is forbidden: User "alice" cannot '
                 'get resource "nodes" in API group "" at the cluster scope')  # fmt: skip
    holds(kubectl, job, held, pods)
    kubectl.answer(*NODES, rc=1, stderr=forbidden + "\n")
    assert status("llama") == 0
    out = capsys.readouterr().out.splitlines()
    assert out[5] == RAN_ONCE_BADPUT
    assert out[-1] == f"quarantines: not read, your account may not get nodes ({forbidden})"
