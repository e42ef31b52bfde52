"""`jobs submit --apply` on a name that exists (issue 28 §1, "Resubmission is idempotent"): it
says what the job is and changes nothing, unless `--resume` replaces a failed or finished one,
which resumes from its checkpoint; a running one is never replaced, and a changed spec under the
same name is named as such. The cluster is the stand-in kubectl (tests/helpers/kubectl.py)
answering with JobSet v0.12.0 status documents (tests/helpers/jobset_objects.py). A DRA pool's
job makes its JobSet the owner of its claim template once applied."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from jobs.kubectl import resource_type
from jobs.state import job_state, spec_changes
from jobs.team import main
from tests.conftest import make_project, stack_file_config
from tests.helpers.jobset_objects import STATUSES, jobset, live
from tests.helpers.kubectl import StandInKubectl, stand_in_kubectl
from tests.helpers.varied_stacks import DRA_CONFIGS, DRA_STACK, GB200_CONFIG, GB200_POOL

IMAGE = "111122223333.dkr.ecr.us-east-1.amazonaws.com/team-a/llama-ft@sha256:" + "d" * 64
COMMAND = ["python", "train.py", "--lr", "1e-5"]
FLAGS = ("--nodes", "2", "--image", IMAGE, "--name", "ft")


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    (tmp_path / "project").mkdir()
    (tmp_path / "kc").write_text("apiVersion: v1\nkind: Config\n")
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kc"))
    return make_project(tmp_path / "project", {"st": stack_file_config("staging")})


@pytest.fixture
def kubectl(tmp_path, monkeypatch) -> StandInKubectl:
    return stand_in_kubectl(tmp_path / "bin", monkeypatch)


def submit(root: Path, *argv: str, command=COMMAND) -> int:
    return main([*FLAGS, *argv, "--stack", "st", "--out", str(root / "out"), "--", *command], root)


def rendered(root: Path, command=COMMAND) -> tuple[dict, Path]:
    """The job as `submit` writes it (rendered, not applied), and its file."""
    assert submit(root, command=command) == 0
    path = root / "out" / "ft" / "job.yaml"
    (job,) = yaml.safe_load_all(path.read_text())
    return job, path


def lookup(job: dict) -> list[str]:
    """The command line that looks the job up."""
    types = resource_type(job["apiVersion"], job["kind"])
    return ["get", types, "ft", "-n", "training", "-o", "json", "--ignore-not-found"]


def holding(kubectl: StandInKubectl, job: dict, obj: dict | None) -> list[str]:
    """The cluster holds `obj` under the job's name; the lookup's command line."""
    kubectl.answer(*lookup(job), stdout=obj if obj is not None else "")
    return lookup(job)


def test_kubectls_resource_form_names_the_group_and_version():
    # kubectl get --help: "TYPE[.VERSION][.GROUP]"; JobSet is jobset.x-k8s.io/v1alpha2.
    assert resource_type("jobset.x-k8s.io/v1alpha2", "JobSet") == "jobset.v1alpha2.jobset.x-k8s.io"
    assert resource_type("batch/v1", "Job") == "job.v1.batch"


@pytest.mark.parametrize(
    ("phase", "said"),
    [
        ("running", "exists: running; no restarts"),
        ("restarting", "exists: restarting; 2 restart(s), 1"),
        ("queued", "exists: queued (SuspendedJobs: jobset is suspended)"),
        (
            "failed",
            "exists: failed (ReachedMaxRestarts: jobset failed due to reaching max number of "
            "restarts (first failed job: ft-trainer-0)); 3 restart(s), 3",
        ),
        ("succeeded", "exists: succeeded (AllJobsCompleted: jobset completed successfully)"),
    ],
)
def test_a_job_that_exists_is_described_and_left_as_it_is(project, kubectl, capsys, phase, said):
    job, _ = rendered(project)
    holding(kubectl, job, live(job, phase))
    capsys.readouterr()
    assert submit(project, "--apply") == 3
    assert kubectl.verbs() == ["get"], "nothing but the lookup may reach the cluster"
    captured = capsys.readouterr()
    assert f"{job['kind']} training/ft {said}" in captured.out
    assert f"error: {job['kind']} training/ft was left as it is" in captured.err
    hint = "pass --resume to delete it" if phase in ("failed", "succeeded") else "jobs status"
    assert hint in captured.err
    # The same spec: no change is claimed.
    assert "spec differs" not in captured.out


def test_a_job_that_does_not_exist_is_applied(project, kubectl, capsys):
    job, path = rendered(project)
    holding(kubectl, job, None)
    kubectl.answer("apply", "-f", str(path))
    assert submit(project, "--apply") == 0
    assert kubectl.verbs() == ["get", "apply"]
    assert submit(project, "--apply", "--resume") == 0
    assert "--resume: no " in capsys.readouterr().out


@pytest.mark.parametrize("phase", ["failed", "succeeded"])
def test_resume_deletes_a_finished_job_waits_and_applies_it_again(project, kubectl, capsys, phase):
    job, path = rendered(project)
    get = holding(kubectl, job, live(job, phase))
    types = get[1]
    delete = ["delete", types, "ft", "-n", "training", "--cascade=foreground", "--wait=true"]
    kubectl.answer(*delete)
    kubectl.answer("apply", "-f", str(path))
    assert submit(project, "--apply", "--resume") == 0
    assert [c[2:] for c in kubectl.calls] == [get, delete, ["apply", "-f", str(path)]]
    out = capsys.readouterr().out
    # The same checkpoint folder: what trainkit resumes from.
    assert (
        f"--resume: deleting {job['kind']} training/ft ({phase}) and applying it again; it "
        "resumes from /mnt/shared-data/runs/jobs/ft"
    ) in out


@pytest.mark.parametrize(
    ("phase", "why"),
    [
        ("running", "replacing it would throw away its work since its last checkpoint"),
        ("restarting", "JobSet is restarting it from its checkpoint already"),
        ("queued", "it has not started; Kueue starts it once admitted"),
    ],
)
def test_resume_refuses_a_job_that_has_not_finished(project, kubectl, capsys, phase, why):
    job, _ = rendered(project)
    holding(kubectl, job, live(job, phase))
    capsys.readouterr()
    assert submit(project, "--apply", "--resume") == 3
    assert kubectl.verbs() == ["get"]
    err = capsys.readouterr().err
    assert f"--resume refused: {job['kind']} training/ft is {phase}, not finished: {why}" in err


def test_resume_stops_when_the_delete_fails_and_applies_nothing(project, kubectl, capsys):
    job, _ = rendered(project)
    types = holding(kubectl, job, live(job, "failed"))[1]
    kubectl.answer("delete", types, "ft", "-n", "training", "--cascade=foreground", "--wait=true",
                   rc=1, stderr="Error from server (Forbidden): jobsets.jobset.x-k8s.io \"ft\" "
                   "is forbidden\n")  # fmt: skip
    assert submit(project, "--apply", "--resume") == 1
    assert kubectl.verbs() == ["get", "delete"]
    assert f"could not delete {job['kind']} training/ft; nothing applied" in capsys.readouterr().err


def test_a_cluster_that_cannot_be_asked_gets_nothing_applied(project, kubectl, capsys):
    job, _ = rendered(project)
    kubectl.answer(
        *lookup(job), rc=1, stderr='error: the server doesn\'t have a resource type "jobset"\n'
    )
    assert submit(project, "--apply") == 1
    assert kubectl.verbs() == ["get"]
    err = capsys.readouterr().err
    assert "before applying it: error: the server doesn't have a resource type" in err


def test_a_changed_spec_under_the_same_name_is_named_and_not_applied(project, kubectl, capsys):
    before, _ = rendered(project, command=["python", "train.py", "--lr", "1e-4"])
    job, _ = rendered(project)
    holding(kubectl, job, live(before, "running"))
    capsys.readouterr()
    assert submit(project, "--apply") == 3
    assert kubectl.verbs() == ["get"]
    out = capsys.readouterr().out
    assert "this submission's spec differs from it (spec." in out
    assert "spec is mostly immutable" in out
    # The learning rate, the command's last word, is what changed, and what is named.
    assert re.search(r"differs from it \(spec\.\S*containers\[0\]\.command\[\d+\]\);", out)


def test_resume_replaces_a_finished_job_whose_spec_changed(project, kubectl, capsys):
    before, _ = rendered(project, command=["python", "train.py", "--lr", "1e-4"])
    job, path = rendered(project)
    types = holding(kubectl, job, live(before, "succeeded"))[1]
    kubectl.answer("delete", types, "ft", "-n", "training", "--cascade=foreground", "--wait=true")
    kubectl.answer("apply", "-f", str(path))
    assert submit(project, "--apply", "--resume") == 0
    assert kubectl.verbs() == ["get", "delete", "apply"]
    assert "spec differs" in capsys.readouterr().out


def test_resume_without_apply_is_refused(project, capsys):
    assert submit(project, "--resume") == 2
    assert "--resume without --apply" in capsys.readouterr().err


# ----------------------------------------------------------- reading a live JobSet


@pytest.mark.parametrize("phase", sorted(STATUSES))
def test_each_jobset_status_reads_as_its_state(phase):
    state = job_state(jobset(phase))
    assert state.phase == phase
    assert state.restarts == STATUSES[phase]["restarts"]
    assert state.max_restarts == 3
    assert state.checkpoint_dir == "/mnt/shared-data/runs/jobs/llama"
    assert state.finished == (phase in ("failed", "succeeded"))


def test_a_suspended_jobset_outside_kueue_is_suspended_not_queued():
    obj = jobset("queued")
    del obj["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
    assert job_state(obj).phase == "suspended"


def test_a_finished_jobset_is_finished_whatever_its_suspended_history():
    """A Failed condition decides before the restarts count and before spec.suspend (Kueue
    may suspend a finished workload's JobSet)."""
    obj = jobset("failed")
    obj["spec"]["suspend"] = True
    assert job_state(obj).phase == "failed"


def test_without_kubectls_annotation_only_what_the_submission_sets_is_compared():
    """The API server returns defaults the submission never set (JobSet's webhook fills the
    network and successPolicy); those are no change, a different value is."""
    held = jobset("running")
    submitted = jobset("running")
    del submitted["spec"]["network"], submitted["spec"]["successPolicy"], submitted["status"]
    assert spec_changes(submitted, held) == []
    submitted["spec"]["failurePolicy"]["maxRestarts"] = 5
    assert spec_changes(submitted, held) == ["spec.failurePolicy.maxRestarts"]
    # Kueue flips suspend; it is not the submission's change.
    submitted["spec"]["failurePolicy"]["maxRestarts"] = 3
    submitted["spec"]["suspend"] = True
    assert spec_changes(submitted, held) == []


def test_the_restarts_say_which_counted_toward_max_restarts():
    """jobset_types.go: `restarts` counts RestartJobSet and RestartJobSetAndIgnoreMaxRestarts,
    `restartsCountTowardsMax` RestartJobSet alone."""
    assert job_state(jobset("restarting")).restart_summary() == (
        "2 restart(s), 1 of maxRestarts 3 counted toward the limit, 1 not (evictions: not "
        "the job's fault)"
    )
    assert job_state(jobset("running")).restart_summary() == "no restarts"


# ------------------------------------------------------------------------ a DRA pool's job


@pytest.fixture
def dra_project(tmp_path, monkeypatch) -> Path:
    (tmp_path / "project").mkdir()
    (tmp_path / "kc").write_text("apiVersion: v1\nkind: Config\n")
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kc"))
    return make_project(tmp_path / "project", {"st": DRA_CONFIGS[DRA_STACK]})


def owned_by(live_job: dict) -> dict:
    """The merge patch that makes `live_job` an object's owner, as `jobs submit` sends it."""
    meta = live_job["metadata"]
    reference = {k: live_job[k] for k in ("apiVersion", "kind")}
    return {
        "metadata": {"ownerReferences": [{**reference, "name": meta["name"], "uid": meta["uid"]}]}
    }


def test_a_dra_jobs_claim_template_is_owned_by_its_jobset_so_it_goes_with_it(
    dra_project, kubectl, capsys
):
    """The file holds the template, then the JobSet; once applied, the JobSet's uid makes it the
    template's owner (Kubernetes docs, "Owners and Dependents": apiVersion, kind, name, uid), so
    the garbage collector deletes the template with the job, first on --resume's foreground
    delete, and the replacement is applied with a template of its own."""
    assert submit(dra_project, "--pool", "a100-efa") == 0
    path = dra_project / "out" / "ft" / "job.yaml"
    template, job = yaml.safe_load_all(path.read_text())
    assert (template["kind"], template["metadata"]["name"]) == ("ResourceClaimTemplate", "ft-gpus")
    get = holding(kubectl, job, None)
    kubectl.answer("apply", "-f", str(path))
    read = ["get", get[1], "ft", "-n", "training", "-o", "json"]
    kubectl.answer(*read, stdout=live(job, "queued"))
    assert owned_by(live(job, "queued")) == {
        "metadata": {
            "ownerReferences": [
                {
                    "apiVersion": "jobset.x-k8s.io/v1alpha2",
                    "kind": "JobSet",
                    "name": "ft",
                    "uid": "7c1e5a0e-5d1f-4b8e-9a57-1f2b3c4d5e6f",
                }
            ]
        }
    }
    patch = ["patch", "resourceclaimtemplate.v1.resource.k8s.io", "ft-gpus", "-n", "training"]
    patch += ["--type", "merge", "-p", json.dumps(owned_by(live(job, "queued")))]
    kubectl.answer(*patch)
    assert submit(dra_project, "--apply", "--pool", "a100-efa") == 0
    assert [c[2:] for c in kubectl.calls] == [get, ["apply", "-f", str(path)], read, patch]


def test_a_template_left_without_its_owner_is_said_with_how_to_delete_it(
    dra_project, kubectl, capsys
):
    assert submit(dra_project, "--pool", "a100-efa") == 0
    path = dra_project / "out" / "ft" / "job.yaml"
    _, job = yaml.safe_load_all(path.read_text())
    get = holding(kubectl, job, None)
    kubectl.answer("apply", "-f", str(path))
    kubectl.answer("get", get[1], "ft", "-n", "training", "-o", "json", stdout=live(job, "queued"))
    # No answer for the patch: the stand-in exits 1.
    assert submit(dra_project, "--apply", "--pool", "a100-efa") == 1
    assert (
        "error: ResourceClaimTemplate training/ft-gpus is not owned by JobSet training/ft, so it "
        "stays when the job goes: delete it with the job (kubectl delete "
        "resourceclaimtemplate.v1.resource.k8s.io ft-gpus -n training)"
    ) in capsys.readouterr().err


@pytest.mark.parametrize(
    ("project_of", "pool", "flags"),
    [("dra_project", "a100-efa", ()), ("gb200_project", GB200_POOL, ("--gpus-per-node", "4"))],
    ids=["dra-claim-template", "gb200-compute-domain"],
)
def test_resume_deletes_what_the_job_owned_and_waits_for_it_before_applying_again(
    request, kubectl, capsys, project_of, pool, flags
):
    """Whatever the file holds beside the job is owned by it without `blockOwnerDeletion`, so
    the job's foreground delete does not wait for it (Kubernetes docs, "Garbage Collection":
    "the only dependents that block owner deletion" are those with it). A ComputeDomain then
    stays until the driver's controller drops its finalizer `resource.nvidia.com/computeDomain`
    (dra-driver-nvidia-gpu v0.4.1 cmd/compute-domain-controller/computedomain.go), and an apply
    meanwhile patches the terminating one. So each is deleted and waited for, after the job
    and before the apply."""
    root = request.getfixturevalue(project_of)
    assert submit(root, "--pool", pool, *flags) == 0
    path = root / "out" / "ft" / "job.yaml"
    objects = list(yaml.safe_load_all(path.read_text()))
    (job,) = [o for o in objects if o["kind"] == "JobSet"]
    dependents = [o for o in objects if o is not job]
    assert dependents
    get = holding(kubectl, job, live(job, "failed"))
    delete = ["delete", get[1], "ft", "-n", "training", "--cascade=foreground", "--wait=true"]
    kubectl.answer(*delete)
    gone = [
        ["delete", resource_type(o["apiVersion"], o["kind"]), o["metadata"]["name"], "-n",
         "training", "--wait=true", "--ignore-not-found"]
        for o in dependents
    ]  # fmt: skip
    for line in gone:
        kubectl.answer(*line)
    kubectl.answer("apply", "-f", str(path))
    read = ["get", get[1], "ft", "-n", "training", "-o", "json"]
    kubectl.answer(*read, stdout=live(job, "queued"))
    patches = [
        ["patch", resource_type(o["apiVersion"], o["kind"]), o["metadata"]["name"], "-n",
         "training", "--type", "merge", "-p", json.dumps(owned_by(live(job, "queued")))]
        for o in dependents
    ]  # fmt: skip
    for line in patches:
        kubectl.answer(*line)
    assert submit(root, "--apply", "--resume", "--pool", pool, *flags) == 0
    assert [c[2:] for c in kubectl.calls] == [
        get,
        delete,
        *gone,
        ["apply", "-f", str(path)],
        read,
        *patches,
    ]


def test_resume_of_a_deleted_job_waits_for_what_it_owned_before_applying(
    gb200_project, kubectl, capsys
):
    """The job deleted without --resume (a background delete: its ComputeDomain may still be
    terminating): --resume applies it again only once the domain is gone."""
    resume = ("--apply", "--resume", "--pool", GB200_POOL, "--gpus-per-node", "4")
    assert submit(gb200_project, "--pool", GB200_POOL, "--gpus-per-node", "4") == 0
    path = gb200_project / "out" / "ft" / "job.yaml"
    job, domain = yaml.safe_load_all(path.read_text())
    get = holding(kubectl, job, None)
    types = resource_type(domain["apiVersion"], domain["kind"])
    gone = ["delete", types, "ft", "-n", "training", "--wait=true", "--ignore-not-found"]
    kubectl.answer(*gone)
    kubectl.answer("apply", "-f", str(path))
    read = ["get", get[1], "ft", "-n", "training", "-o", "json"]
    kubectl.answer(*read, stdout=live(job, "queued"))
    patch = ["patch", types, "ft", "-n", "training", "--type", "merge"]
    kubectl.answer(*patch, "-p", json.dumps(owned_by(live(job, "queued"))))
    assert submit(gb200_project, *resume) == 0
    assert [c[2:5] for c in kubectl.calls] == [get[:3], gone[:3], ["apply", "-f", str(path)],
                                               read[:3], patch[:3]]  # fmt: skip


def test_resume_stops_when_an_owned_object_cannot_be_deleted(gb200_project, kubectl, capsys):
    assert submit(gb200_project, "--pool", GB200_POOL, "--gpus-per-node", "4") == 0
    path = gb200_project / "out" / "ft" / "job.yaml"
    job, _ = yaml.safe_load_all(path.read_text())
    get = holding(kubectl, job, live(job, "succeeded"))
    kubectl.answer("delete", get[1], "ft", "-n", "training", "--cascade=foreground", "--wait=true")
    # No answer for the ComputeDomain's delete: the stand-in exits 1.
    resume = ("--apply", "--resume", "--pool", GB200_POOL, "--gpus-per-node", "4")
    assert submit(gb200_project, *resume) == 1
    assert (
        "error: could not delete ComputeDomain training/ft, which the job owned; nothing "
        "applied: delete it (kubectl delete computedomain.v1beta1.resource.nvidia.com ft -n "
        "training --wait=true), then --resume again"
    ) in capsys.readouterr().err
    assert not [c for c in kubectl.calls if c[2] == "apply"]


@pytest.fixture
def gb200_project(tmp_path, monkeypatch) -> Path:
    (tmp_path / "project").mkdir()
    (tmp_path / "kc").write_text("apiVersion: v1\nkind: Config\n")
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kc"))
    return make_project(tmp_path / "project", {"st": GB200_CONFIG})


def test_a_gb200_jobs_compute_domain_is_owned_by_its_jobset_so_it_goes_with_it(
    gb200_project, kubectl, capsys
):
    """A multi-node job on an NVLink pool comes with its ComputeDomain (the JobSet, then the
    domain); once applied, the JobSet is the domain's owner as it is a claim template's, so the
    garbage collector deletes the domain with the job, and --resume's foreground delete
    (kubectl delete --cascade=foreground --wait) waits for it before the new one is applied."""
    assert submit(gb200_project, "--pool", GB200_POOL, "--gpus-per-node", "4") == 0
    path = gb200_project / "out" / "ft" / "job.yaml"
    job, domain = yaml.safe_load_all(path.read_text())
    assert (domain["kind"], domain["apiVersion"]) == (
        "ComputeDomain",
        "resource.nvidia.com/v1beta1",
    )
    get = holding(kubectl, job, None)
    kubectl.answer("apply", "-f", str(path))
    read = ["get", get[1], "ft", "-n", "training", "-o", "json"]
    kubectl.answer(*read, stdout=live(job, "queued"))
    # kubectl's TYPE.VERSION.GROUP form of the ComputeDomain (resource.nvidia.com/v1beta1).
    patch = ["patch", "computedomain.v1beta1.resource.nvidia.com", domain["metadata"]["name"]]
    patch += ["-n", "training", "--type", "merge", "-p", json.dumps(owned_by(live(job, "queued")))]
    kubectl.answer(*patch)
    assert submit(gb200_project, "--apply", "--pool", GB200_POOL, "--gpus-per-node", "4") == 0
    assert [c[2:] for c in kubectl.calls] == [get, ["apply", "-f", str(path)], read, patch]
