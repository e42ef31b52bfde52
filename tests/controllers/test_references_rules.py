"""Everything a pod references exists in its namespace on the cluster where it runs: the model of
tests/controllers/references.py (ConfigMaps, Secrets, claims and their volumes, ServiceAccounts,
NetworkAttachmentDefinitions, priority classes, LocalQueues, WorkloadPriorityClasses, a
subdomain's Service or a JobSet's own, the keys a ConfigMap volume mounts: the launcher's), run
over every stack, every team namespace and every job the builder
renders: the self-test and its schedule, the recipes and `jobs submit`, for each team and pool.
A bursting team's job runs on the MultiKueue worker (burst is onprem's), so its references are
checked against the worker stack's objects, with nothing the submitter applied beside it.

tests/model/test_references.py checks the references inside the stack's config; this one what the
objects name once they reach a cluster."""

from __future__ import annotations

import functools
import json

import pytest

from components.scheduling.training_job import render
from jobs import recipe as recipe_jobs
from jobs.common import SubmitError
from jobs.team import TeamJob, plan_job
from model.config import ConfigError, parse_config, stack_file
from model.config.recipes import RECIPES
from tests.conftest import STACKS, planned, project_plan, stack_config
from tests.controllers.references import (
    Cluster,
    Placed,
    claim_name_problems,
    each_job,
    networks,
    pod_references,
    problems,
    workers_of,
    workloads,
)
from tests.helpers.dra_objects import (
    chart_device_classes,
    claim_template,
    claiming,
    compute_domain,
    exactly,
)
from tests.helpers.rendered_jobs import dispatched_renders_of, job_of
from tests.helpers.varied_stacks import (
    CAPACITY_CONFIG,
    CAPACITY_STACK,
    DRA_CONFIGS,
    DRA_WORKER_PROJECTS,
    GB200_CONFIG,
    GB200_STACK,
    MIGRATION_STACK,
    MIGRATION_STEPS,
    WINDOW_CONFIG,
    WINDOW_STACK,
)

IMAGE = "registry.example.com/team/train@sha256:" + "e" * 64


@functools.cache
def cluster(stack: str) -> Cluster:
    return Cluster(stack, planned(stack).kubernetes_objects())


def worker_stacks(stack: str) -> dict[str, str]:
    """A manager's MultiKueueCluster names -> the worker stacks, as the offline plan reads them
    (multikueue.workers[].stack, its last part a stack of this project)."""
    return {w.name: w.stack.rsplit("/", 1)[-1] for w in stack_config(stack).multikueue.workers}


def clusters() -> dict[str, Cluster]:
    return {s: cluster(s) for s in STACKS}


def check(placed: Placed) -> list[str]:
    return problems(placed, clusters(), worker_stacks(placed.stack))


def workers(stack: str) -> dict:
    return {name: stack_config(s) for name, s in worker_stacks(stack).items()}


def team_jobs() -> list[tuple[str, str, str]]:
    """(stack, team, pool) for every team of every stack and every pool its jobs may run on:
    the worker's pools for a team whose queue bursts."""
    found = []
    for stack in STACKS:
        cfg = stack_config(stack)
        bursting = {q.name: q for q in cfg.scheduling.cluster_queues if q.burst is not None}
        for team in cfg.scheduling.all_teams(cfg.namespaces.training):
            queue = bursting.get(team.cluster_queue)
            runs_on = cfg if queue is None else workers(stack)[queue.burst.workers[0]]
            found += [(stack, team.name, p.name) for p in runs_on.gpu_pools]
    return found


def pool_of(stack: str, pool: str):
    """The pool, of the stack or of one of its workers."""
    configs = [stack_config(stack), *workers(stack).values()]
    return next(p for cfg in configs for p in cfg.gpu_pools if p.name == pool)


TEAM_JOBS = team_jobs()
RECIPE_JOBS = [(s, r, t, p) for s, t, p in TEAM_JOBS for r in RECIPES]


# ------------------------------------------------------------------------- the sweep


@pytest.mark.parametrize("stack", STACKS)
def test_the_jobs_a_stack_declares_find_what_their_pods_name(stack):
    """The self-test and its scheduled runs."""
    declared = list(each_job(planned(stack).kubernetes_objects()))
    found = [p for obj in declared for p in check(Placed(obj, stack))]
    assert found == []


@pytest.mark.parametrize(("stack", "team", "pool"), TEAM_JOBS)
def test_a_teams_job_finds_what_its_pods_name_where_it_runs(stack, team, pool):
    cfg = stack_config(stack)
    nodes = min(2, pool_of(stack, pool).max_nodes)
    job = TeamJob(IMAGE, ["train.py"], nodes=nodes, pool=pool, team=team)
    try:
        spec = plan_job(cfg, job, workers(stack))
    except SubmitError as error:
        assert "MIG slices" in str(error)  # the one refusal a shipped pool may give
        return
    assert spec.namespace == team
    (obj,) = render(spec)
    assert check(Placed(obj, stack)) == []


@pytest.mark.parametrize(("stack", "recipe", "team", "pool"), RECIPE_JOBS)
def test_a_recipes_job_finds_what_its_pods_name(stack, recipe, team, pool):
    cfg = stack_config(stack)
    nodes = min(2, pool_of(stack, pool).max_nodes)
    try:
        spec, _ = recipe_jobs.plan_job(
            cfg, recipe, nodes, pool=pool, render_only=True, team=team, workers=workers(stack)
        )
    except SubmitError:
        return  # a pool the recipe cannot use (GPU memory, MIG): refused, not rendered
    assert spec.namespace == team
    (obj,) = render(spec)
    assert check(Placed(obj, stack)) == []


def test_the_sweep_covers_every_team_namespace_of_every_stack():
    covered = {(s, t) for s, t, _ in TEAM_JOBS}
    for stack in STACKS:
        cfg = stack_config(stack)
        for team in cfg.scheduling.all_teams(cfg.namespaces.training):
            assert (stack, team.name) in covered


def test_a_bursting_teams_job_runs_on_the_worker_with_nothing_but_the_job():
    # onprem's research team submits to the `burst` ClusterQueue, whose MultiKueueConfig lists
    # the worker `burst` (stacks/Pulumi.onprem.yaml).
    cfg = stack_config("onprem")
    spec = plan_job(cfg, TeamJob(IMAGE, ["train.py"], nodes=2, team="research"), workers("onprem"))
    (obj,) = render(spec)
    assert obj["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"
    assert workers_of(obj["metadata"], cluster("onprem")) == ["burst"]
    # Rendered for the worker's pools: h100-spot, p5.48xlarge (stacks/Pulumi.burst.yaml).
    (trainer,) = obj["spec"]["replicatedJobs"]
    node_selector = trainer["template"]["spec"]["template"]["spec"]["nodeSelector"]
    assert node_selector == {"gpu-platform/node-group": "h100-spot"}
    assert check(Placed(obj, "onprem")) == []


# --------------------------------------------- every job MultiKueue can dispatch, per project


def manager_projects() -> list[str]:
    """Every shipped stack that bursts, and the fixture projects of a manager whose worker has
    a pool on DRA (tests/helpers/varied_stacks.py)."""
    return [*(s for s in STACKS if worker_stacks(s)), *DRA_WORKER_PROJECTS]


def project_clusters(project: str):
    """(the manager's stack, its config, the workers' configs by MultiKueueCluster name, the
    clusters by stack, the MultiKueueCluster names -> stacks) of a shipped manager or a fixture
    project; ConfigError where the manager's plan refuses it."""
    if project not in DRA_WORKER_PROJECTS:
        names = worker_stacks(project)
        stacks = [project, *names.values()]
        return (project, stack_config(project), workers(project), {s: cluster(s) for s in stacks},
                names)  # fmt: skip
    manager, files = DRA_WORKER_PROJECTS[project]
    configs = {
        name: parse_config({k.split(":", 1)[1]: v for k, v in config.items()}, stack_file(name))
        for name, config in files.items()
    }
    names = {w.name: w.local_stack for w in configs[manager].multikueue.workers}
    plans = {name: project_plan(name, files) for name in (manager, *names.values())}
    clusters_ = {name: Cluster(name, plan.kubernetes_objects()) for name, plan in plans.items()}
    return (manager, configs[manager], {w: configs[s] for w, s in names.items()}, clusters_,
            names)  # fmt: skip


@pytest.mark.parametrize("project", manager_projects())
def test_every_job_multikueue_can_dispatch_finds_on_the_worker_what_its_pods_name(project):
    """MultiKueue copies only the JobSet to a worker (Kueue v0.19.2 pkg/controller/jobs/jobset/
    jobset_multikueue_adapter.go, SyncJob; site/content/en/docs/tasks/manage/setup_dra.md,
    "MultiKueue considerations": "ResourceClaimTemplate and DeviceClass objects are not
    automatically synced"). Whatever `python -m jobs` renders for a bursting team on any of its
    worker's pools, a DRA claim template or a ComputeDomain beside the JobSet included, finds
    what its pods name on the worker, or is refused before anything is applied; a manager whose
    plan is refused dispatches nothing."""
    try:
        manager, cfg, configs, clusters_, names = project_clusters(project)
    except ConfigError as error:
        assert any("MultiKueue copies only the JobSet" in p for p in error.problems), error
        return
    renders = dispatched_renders_of(cfg, configs)
    assert renders, f"{project}: no job of a bursting team was rendered"
    found = []
    for what, objects in renders:
        job_ = job_of(objects)
        beside = [o for o in objects if o is not job_]
        found += [f"{what}: {p}" for p in problems(Placed(job_, manager, beside), clusters_, names)]
    assert found == []


def test_the_dispatch_sweep_covers_every_stack_and_fixture_that_bursts():
    """No other fixture stack is a manager: the sweep above leaves none out."""
    fixtures = {
        CAPACITY_STACK: CAPACITY_CONFIG,
        WINDOW_STACK: WINDOW_CONFIG,
        GB200_STACK: GB200_CONFIG,
        **DRA_CONFIGS,
        **{f"{MIGRATION_STACK}-{i}": c for i, c in enumerate(MIGRATION_STEPS)},
    }
    bursting = {
        s for s, c in fixtures.items() if c.get("gpu-platform:multikueue", {}).get("workers")
    }
    assert bursting == set()
    covered = set(manager_projects())
    assert {s for s in STACKS if stack_config(s).multikueue.workers} <= covered
    assert set(DRA_WORKER_PROJECTS) <= covered


# ---------------------------------------------------------- each rule fails and passes

NS = "team-a"


def stack_of(*objects) -> dict[str, Cluster]:
    base = [{"kind": "Namespace", "metadata": {"name": NS}}]
    return {"s": Cluster("s", [*base, *objects])}


def job(pod: dict | None = None, labels: dict | None = None, template_labels=None) -> dict:
    pod = {"containers": [{"name": "c", "image": "i"}], **(pod or {})}
    return {
        "kind": "Job",
        "metadata": {"name": "j", "namespace": NS, "labels": labels or {}},
        "spec": {
            "completionMode": "Indexed",
            "template": {"metadata": {"labels": template_labels or {}}, "spec": pod},
        },
    }


def obj(kind: str, name: str, namespace: str | None = NS, **fields) -> dict:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"kind": kind, "metadata": meta, **fields}


def run(j: dict, *objects) -> list[str]:
    return problems(Placed(j, "s"), stack_of(*objects), {})


def test_a_configmap_loaded_as_environment_must_exist_unless_optional():
    container = {"name": "c", "envFrom": [{"configMapRef": {"name": "nccl-a100"}}]}
    j = job({"containers": [container]})
    assert run(j) == ["s: ConfigMap team-a/nccl-a100 (c envFrom) does not exist"]
    assert run(j, obj("ConfigMap", "nccl-a100")) == []
    container["envFrom"][0]["configMapRef"]["optional"] = True
    assert run(j) == []


def test_a_secret_volume_and_a_secret_in_another_namespace_do_not_count():
    j = job({"volumes": [{"name": "v", "secret": {"secretName": "token"}}]})
    assert run(j, obj("Secret", "token", namespace="training")) == [
        "s: Secret team-a/token (volume v) does not exist"
    ]
    assert run(j, obj("Secret", "token")) == []


def test_a_claim_must_exist_and_its_static_volume_be_reserved_for_it():
    j = job({"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "shared-data"}}]})
    claim = obj("PersistentVolumeClaim", "shared-data", spec={"volumeName": "pv-a"})
    mine = {"claimRef": {"namespace": NS, "name": "shared-data"}}
    theirs = {"claimRef": {"namespace": "training", "name": "shared-data"}}
    assert run(j) == ["s: PersistentVolumeClaim team-a/shared-data (volume d) does not exist"]
    assert run(j, claim) == [
        "s: claim team-a/shared-data names PersistentVolume pv-a, which does not exist"
    ]
    (found,) = run(j, claim, obj("PersistentVolume", "pv-a", None, spec=theirs))
    assert "reserved for training/shared-data: a volume binds one claim" in found
    assert run(j, claim, obj("PersistentVolume", "pv-a", None, spec=mine)) == []
    dynamic = obj("PersistentVolumeClaim", "shared-data", spec={"storageClassName": "cephfs"})
    assert run(j, dynamic) == ["s: claim team-a/shared-data: StorageClass cephfs does not exist"]
    assert run(j, dynamic, obj("StorageClass", "cephfs", None)) == []


def test_two_claims_naming_one_volume_are_refused():
    j = job({"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "a"}}]})
    a = obj("PersistentVolumeClaim", "a", spec={"volumeName": "pv"})
    b = obj("PersistentVolumeClaim", "b", spec={"volumeName": "pv"})
    (found,) = run(j, a, b, obj("PersistentVolume", "pv", None, spec={}))
    assert "shares PersistentVolume pv with ['team-a/b']" in found


def test_the_default_service_account_is_there_another_must_be_declared():
    assert run(job()) == []
    j = job({"serviceAccountName": "selftest"})
    assert run(j) == ["s: ServiceAccount team-a/selftest (serviceAccountName) does not exist"]
    assert run(j, obj("ServiceAccount", "selftest")) == []


def test_a_priority_class_is_cluster_wide_and_the_system_ones_exist():
    assert run(job({"priorityClassName": "system-node-critical"})) == []
    j = job({"priorityClassName": "research"})
    assert run(j) == ["s: PriorityClass research (priorityClassName) does not exist"]
    assert run(j, obj("PriorityClass", "research", None)) == []


def test_multus_networks_default_to_the_pods_namespace():
    # multus-cni docs/how-to-use.md: "name", "namespace/name", "name@interface", or JSON.
    assert networks("rdma", NS) == [(NS, "rdma")]
    assert networks("rdma@net1, other/ceph-public", NS) == [(NS, "rdma"), ("other", "ceph-public")]
    assert networks('[{"name": "rdma", "interface": "net1"}]', NS) == [(NS, "rdma")]
    j = job()
    j["spec"]["template"]["metadata"]["annotations"] = {"k8s.v1.cni.cncf.io/networks": "rdma"}
    nad = "NetworkAttachmentDefinition"
    assert run(j, obj(nad, "rdma", "training")) == [
        f"s: {nad} team-a/rdma (k8s.v1.cni.cncf.io/networks) does not exist"
    ]
    assert run(j, obj(nad, "rdma")) == []


def test_the_queue_labels_name_a_local_queue_here_and_a_workload_priority_class():
    labels = {"kueue.x-k8s.io/queue-name": "default", "kueue.x-k8s.io/priority-class": "research"}
    found = run(job(labels=labels), obj("LocalQueue", "default", "training"))
    assert found == [
        "s: LocalQueue team-a/default (kueue.x-k8s.io/queue-name) does not exist",
        "s: WorkloadPriorityClass research (kueue.x-k8s.io/priority-class) does not exist",
    ]
    here = (obj("LocalQueue", "default"), obj("WorkloadPriorityClass", "research", None))
    assert run(job(labels=labels), *here) == []


def rendezvous_job(master="j-0.rendezvous") -> dict:
    container = {"name": "c", "command": ["torchrun", f"--master-addr={master}", "t.py"]}
    return job({"subdomain": "rendezvous", "containers": [container]}, template_labels={"r": "1"})


def headless(**spec) -> dict:
    base = {"clusterIP": "None", "publishNotReadyAddresses": True, "selector": {"r": "1"}}
    return obj("Service", "rendezvous", spec={**base, **spec})


def test_the_subdomain_is_a_headless_service_here_that_selects_the_pods_before_ready():
    assert run(rendezvous_job()) == ["s: Service team-a/rendezvous (subdomain) does not exist"]
    assert run(rendezvous_job(), headless()) == []
    where = "s: Service team-a/rendezvous (subdomain of job j)"
    assert run(rendezvous_job(), headless(clusterIP="10.0.0.1")) == [
        f"{where} is not headless: pods get no per-hostname records"
    ]
    assert run(rendezvous_job(), headless(selector={"r": "2"})) == [
        f"{where}: its selector {{'r': '2'}} does not select the pods"
    ]
    # The Job controller's own label selects them too (batch.kubernetes.io/job-name).
    assert run(rendezvous_job(), headless(selector={"batch.kubernetes.io/job-name": "j"})) == []
    assert run(rendezvous_job(), headless(publishNotReadyAddresses=False)) == [
        f"{where}: publishes only ready pods; peers look index 0 up while starting"
    ]


def test_torchruns_master_is_index_zero_under_the_subdomain():
    assert run(rendezvous_job("j-0.j"), headless()) == [
        "s: job team-a/j: --master-addr=j-0.j, not j-0.rendezvous"
    ]
    fqdn = "j-0.rendezvous.team-a.svc.cluster.local"
    assert run(rendezvous_job(fqdn), headless()) == []


def multikueue_manager(*more) -> list[dict]:
    """A manager whose queue `q` bursts to worker `w` (Kueue "Setup a MultiKueue environment")."""
    return [
        obj("LocalQueue", "default", spec={"clusterQueue": "q"}),
        obj("ClusterQueue", "q", None, spec={"admissionChecks": [{"name": "q-mk"}]}),
        obj("AdmissionCheck", "q-mk", None, spec={
            "controllerName": "kueue.x-k8s.io/multikueue",
            "parameters": {"kind": "MultiKueueConfig", "name": "q"}}),
        obj("MultiKueueConfig", "q", None, spec={"clusters": ["w"]}),
        *more,
    ]  # fmt: skip


def test_a_job_multikueue_dispatches_finds_on_the_worker_only_what_the_worker_declares():
    j = rendezvous_job()
    j["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "default"}
    j["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    namespace = {"kind": "Namespace", "metadata": {"name": NS}}
    manager = Cluster("m", [namespace, *multikueue_manager(headless())])
    bare = Cluster("wk", [namespace, obj("LocalQueue", "default")])
    ready = Cluster("wk", [namespace, obj("LocalQueue", "default"), headless()])
    # The submitter's own Service, applied beside the Job, stays on the manager (SyncJob).
    placed = Placed(j, "m", beside=[headless()])
    assert problems(placed, {"m": manager, "wk": bare}, {"w": "wk"}) == [
        "wk: Service team-a/rendezvous (subdomain) does not exist"
    ]
    assert problems(placed, {"m": manager, "wk": ready}, {"w": "wk"}) == []
    # The worker's Kueue admits the copy through the same LocalQueue.
    no_queue = Cluster("wk", [namespace, headless()])
    assert problems(placed, {"m": manager, "wk": no_queue}, {"w": "wk"}) == [
        "wk: LocalQueue team-a/default (kueue.x-k8s.io/queue-name) does not exist"
    ]


def test_a_cron_jobs_pods_are_read_from_its_job_template():
    cron = {
        "kind": "CronJob",
        "metadata": {"name": "c", "namespace": NS},
        "spec": {"jobTemplate": {"spec": job({"priorityClassName": "research"})["spec"]}},
    }
    assert [r.kind for r in pod_references(cron["spec"]["jobTemplate"]["spec"]["template"], NS)]
    assert run(cron) == ["s: PriorityClass research (priorityClassName) does not exist"]


def test_the_rules_read_the_shipped_objects_they_are_about():
    """The sweep above passes by finding things, not by finding nothing to check."""
    seen = {}
    for stack, team, pool in TEAM_JOBS:
        cfg = stack_config(stack)
        try:
            spec = plan_job(cfg, TeamJob(IMAGE, ["t.py"], nodes=1, pool=pool, team=team),
                            workers(stack))  # fmt: skip
        except SubmitError:
            continue
        (obj_,) = render(spec)
        for _, job_spec in workloads(obj_):
            for ref in pod_references(job_spec["template"], team):
                seen[ref.kind] = ref
    assert {"ConfigMap", "PersistentVolumeClaim", "ServiceAccount", "PriorityClass",
            "NetworkAttachmentDefinition", "Namespace"} <= set(seen)  # fmt: skip
    assert json.dumps(sorted(seen))


def jobset(master="js-trainer-0-0.js", network=None, volumes=()) -> dict:
    container = {"name": "c", "command": ["python", "l.py", f"--master-addr={master}", "t.py"]}
    pod = {"containers": [container], "volumes": list(volumes)}
    spec = {"replicatedJobs": [{"name": "trainer", "template": {"spec": {
        "template": {"spec": pod}}}}]}  # fmt: skip
    if network is not None:
        spec["network"] = network
    return {"kind": "JobSet", "metadata": {"name": "js", "namespace": NS}, "spec": spec}


def test_a_jobset_makes_its_own_service_and_its_master_is_index_zero_of_its_first_job():
    """JobSet v0.12.0: the headless Service is the JobSet's own, named after the subdomain (its
    name by default), and pods resolve as <jobset>-<replicatedJob>-<job>-<pod>.<subdomain>."""
    assert run(jobset()) == []
    assert run(jobset("js-0.rendezvous")) == [
        "s: JobSet team-a/js: --master-addr=js-0.rendezvous, not js-trainer-0-0.js"
    ]
    assert run(jobset("js-trainer-0-0.js.team-a.svc.cluster.local")) == []
    assert run(jobset("js-trainer-0-0.net", {"subdomain": "net"})) == []
    assert run(jobset(network={"enableDNSHostnames": False})) == [
        "s: JobSet team-a/js: enableDNSHostnames false: no Service, no pod names"
    ]
    assert run(jobset(network={"publishNotReadyAddresses": False})) == [
        "s: JobSet team-a/js: publishes only ready pods; peers look index 0 up while starting"
    ]


LAUNCHER = {"name": "launcher", "configMap": {"name": "training-launcher", "items": [
    {"key": "launch.py", "path": "launch.py"},
    {"key": "contract.exits.py", "path": "contract/exits.py"}]}}  # fmt: skip


def test_a_configmap_volume_mounts_only_keys_its_configmap_holds():
    j = jobset(volumes=[LAUNCHER])
    assert run(j) == ["s: ConfigMap team-a/training-launcher (volume launcher) does not exist"]
    partial = obj("ConfigMap", "training-launcher", data={"launch.py": "..."})
    assert run(j, partial) == [
        "s: ConfigMap team-a/training-launcher has no key 'contract.exits.py' (volume launcher): "
        "the volume cannot be set up"
    ]
    whole = obj("ConfigMap", "training-launcher",
                data={"launch.py": "...", "contract.exits.py": "..."})  # fmt: skip
    assert run(j, whole) == []


def test_a_jobset_multikueue_dispatches_finds_the_launcher_on_the_worker():
    j = jobset(volumes=[LAUNCHER])
    j["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "default"}
    j["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"
    namespace = {"kind": "Namespace", "metadata": {"name": NS}}
    launcher = obj("ConfigMap", "training-launcher",
                   data={"launch.py": "...", "contract.exits.py": "..."})  # fmt: skip
    manager = Cluster("m", [namespace, *multikueue_manager(launcher)])
    bare = Cluster("wk", [namespace, obj("LocalQueue", "default")])
    ready = Cluster("wk", [namespace, obj("LocalQueue", "default"), launcher])
    assert problems(Placed(j, "m"), {"m": manager, "wk": bare}, {"w": "wk"}) == [
        "wk: ConfigMap team-a/training-launcher (volume launcher) does not exist"
    ]
    assert problems(Placed(j, "m"), {"m": manager, "wk": ready}, {"w": "wk"}) == []


# ------------------------------------------------------------------------ DRA claims


def claiming_job(**claims) -> dict:
    return job(claiming({"containers": [{"name": "c", "image": "i"}]}, **claims))


def test_a_claim_template_must_be_in_the_pods_namespace():
    j = claiming_job(gpu={"resourceClaimTemplateName": "one-gpu"})
    assert run(j, *chart_device_classes()) == [
        "s: ResourceClaimTemplate team-a/one-gpu (resourceClaims gpu) does not exist"
    ]
    other = claim_template("one-gpu", namespace="team-b")
    assert run(j, other, *chart_device_classes()) == [
        "s: ResourceClaimTemplate team-a/one-gpu (resourceClaims gpu) does not exist"
    ]
    assert run(j, claim_template("one-gpu"), *chart_device_classes()) == []
    premade = claiming_job(gpu={"resourceClaimName": "shared-gpus"})
    assert run(premade) == [
        "s: ResourceClaim team-a/shared-gpus (resourceClaims gpu) does not exist"
    ]


def test_a_compute_domain_stands_for_the_template_its_controller_creates():
    """PINS.md "ComputeDomains and IMEX", Flow: the ComputeDomain controller creates the
    template named in spec.channel.resourceClaimTemplate.name, in the ComputeDomain's
    namespace (cmd/compute-domain-controller/resourceclaimtemplate.go at v0.4.1)."""
    j = claiming_job(channel={"resourceClaimTemplateName": "job-channel"})
    classes = chart_device_classes()
    assert run(j, compute_domain("cd", "job-channel"), *classes) == []
    assert run(j, compute_domain("cd", "job-channel", namespace="team-b"), *classes) == [
        "s: ResourceClaimTemplate team-a/job-channel (resourceClaims channel) does not exist"
    ]
    # Applied beside the job, as a submitter would.
    assert (
        problems(
            Placed(j, "s", beside=(compute_domain("cd", "job-channel"),)), stack_of(*classes), {}
        )
        == []
    )


def test_a_templates_device_classes_must_be_ones_the_cluster_has():
    """The DeviceClasses are the chart's (templates/deviceclass-*.yaml at v0.4.1): with GPUs
    off (the EKS UltraServer page's values) only the two ComputeDomain classes exist."""
    j = claiming_job(gpu={"resourceClaimTemplateName": "one-gpu"})
    template = claim_template("one-gpu", exactly("gpu.nvidia.com"))
    assert run(j, template, *chart_device_classes()) == []
    assert run(j, template, *chart_device_classes(gpus=False)) == [
        "s: ResourceClaimTemplate team-a/one-gpu request gpu: DeviceClass gpu.nvidia.com does "
        "not exist"
    ]
    # The demo's imex.nvidia.com class no template of the chart creates (PINS.md).
    imex = claim_template("one-gpu", exactly("imex.nvidia.com", name="channel"))
    assert run(j, imex, *chart_device_classes()) == [
        "s: ResourceClaimTemplate team-a/one-gpu request channel: DeviceClass imex.nvidia.com "
        "does not exist"
    ]


def test_a_containers_claim_names_an_entry_of_the_pods_resource_claims():
    """kubernetes pkg/apis/core/validation/validation.go validateResourceClaimNames: "must be
    one of the names in pod.spec.resourceClaims", then " which is empty" or ": " and the
    pod's claim names, sorted and joined by ", "."""
    j = claiming_job(gpu={"resourceClaimTemplateName": "one-gpu"})
    j["spec"]["template"]["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpus"}]
    j["spec"]["template"]["spec"]["resourceClaims"].append(
        {"name": "channel", "resourceClaimTemplateName": "one-gpu"}
    )
    assert claim_name_problems(j["spec"]["template"]["spec"]) == [
        'spec.containers[0].resources.claims[0]: Not found: "gpus": must be one of the names '
        "in pod.spec.resourceClaims: channel, gpu"
    ]
    alone = {"containers": [{"name": "c", "resources": {"claims": [{"name": "gpu"}]}}]}
    assert claim_name_problems(alone) == [
        'spec.containers[0].resources.claims[0]: Not found: "gpu": must be one of the names '
        "in pod.spec.resourceClaims which is empty"
    ]
    assert run(j, claim_template("one-gpu"), *chart_device_classes()) == [
        's: spec.containers[0].resources.claims[0]: Not found: "gpus": must be one of the '
        "names in pod.spec.resourceClaims: channel, gpu"
    ]
    assert claim_name_problems(claiming_job(gpu={})["spec"]["template"]["spec"]) == []
