"""Kueue topology-aware scheduling and the cluster-autoscaler, as their models in
tests/controllers/tas.py read what every stack declares (issue 25, items 5-7):

- every job the builder renders for a stack (the self-test Job, the scheduled CronJobs, a
  team's job on every pool) is admitted onto the nodes the stack's pools are sure to carry;
  the self-test without any label the admin must apply, unless the stack says they are on;
- every Topology level a flavor names is on the pool's nodes (EKS sets it; the kubelet sets
  the host's) or named in the plan with the command that applies it;
- a team's job on a pool at its fewest nodes is admitted or provisioned, never left waiting
  for a node nothing will start;
- a scheduled self-test run never makes the autoscaler start a node, unless the stack asks
  (selftest.schedule.provision_nodes), and then the cost estimate prices it.
"""

from __future__ import annotations

import copy
from datetime import date
from typing import Any

import pytest

from components.control.namespaces import job_namespaces
from components.scheduling.job_spec import spec_for_pool
from components.scheduling.queues import kueue_objects, submitters
from components.scheduling.topology import topology_report, topology_warnings
from components.scheduling.training_job import render
from components.selftest.job import pool_env
from components.selftest.schedule import cron_jobs, idle_priority_objects, idle_queue_objects
from model.config import ConfigError, PlatformConfig, parse_config
from model.config.scheduling import PRIORITIES, autoscaled
from model.config.selftest_schedule import longest_gap_minutes
from model.cost import cost_report
from tests.conftest import (
    AWS_STACKS,
    STACKS,
    planned,
    stack_config,
    stack_file_config,
    validate_kubernetes,
)
from tests.controllers.tas import (
    PREFERRED,
    REQUIRED,
    Kueue,
    Node,
    PodSet,
    admission,
    flavor_refusal,
    node_matches_flavor,
    pod_set,
    starts_nodes,
)
from tests.helpers import crds
from tests.helpers.aws_topology import CLIQUE, EKS_LAYERS, NVLINK_FAMILIES
from tests.helpers.rendered_jobs import OUTSIDE_KUEUE

HOST = "kubernetes.io/hostname"
IMAGE = "111122223333.dkr.ecr.us-east-1.amazonaws.com/gpu-platform-selftest@sha256:" + "1" * 64


def guaranteed_labels(cfg: PlatformConfig, pool_name: str, admin: bool) -> dict[str, str]:
    """What every node of the pool carries without anyone applying it (its selector, the host,
    on AWS the EKS topology labels of its type), and with `admin` the labels the admin puts on
    (scheduling.topology_levels)."""
    pool = next(p for p in cfg.gpu_pools if p.name == pool_name)
    labels = {**pool.node_selector, HOST: "host"}
    layers = min(EKS_LAYERS.get(t.split(".")[0], 0) for t in pool.instance_types or ("",))
    for n in range(1, layers + 1):
        labels[f"topology.k8s.aws/network-node-layer-{n}"] = f"nn-{n}"
    if any(t.split(".")[0] in NVLINK_FAMILIES for t in pool.instance_types):
        labels[CLIQUE] = "clique"
    if admin:
        labels.update({key: "x" for key in cfg.scheduling.topology_levels})
    return labels


def nodes(cfg: PlatformConfig, pool_name: str, count: int, admin: bool) -> list[Node]:
    pool = next(p for p in cfg.gpu_pools if p.name == pool_name)
    labels = guaranteed_labels(cfg, pool_name, admin)
    return [
        Node(f"{pool_name}-{i}", {**labels, HOST: f"{pool_name}-{i}"}, pool.gpus_per_node)
        for i in range(count)
    ]


def fewest_nodes(cfg: PlatformConfig, pool_name: str) -> int:
    """The nodes the pool may be down to: the group's min_size where the autoscaler sizes it,
    every node of an existing cluster's pool."""
    group = next((g for g in cfg.gpu_node_groups if g.name == pool_name), None)
    if group is None or not cfg.autoscaler.enabled:
        return next(p for p in cfg.gpu_pools if p.name == pool_name).max_nodes
    return group.scaling.min_size


def pool_of(cfg: PlatformConfig, pods: PodSet) -> str:
    return next(
        p.name for p in cfg.gpu_pools if p.node_selector.items() <= pods.node_selector.items()
    )


def team_jobs(cfg: PlatformConfig) -> list[dict[str, Any]]:
    """A team's one-node job on every pool, in every team namespace, through the job builder
    (python -m jobs renders the same)."""
    return [
        render(
            spec_for_pool(
                cfg, pool.name, name="train", image=IMAGE, command=["-m", "x"], namespace=team.name
            )
        )[0]
        for team in cfg.scheduling.all_teams(cfg.namespaces.training)
        for pool in cfg.gpu_pools
    ]


def stack_objects(stack: str) -> list[dict[str, Any]]:
    return planned(stack).kubernetes_objects()


def rendered_jobs(stack: str) -> list[dict[str, Any]]:
    """The Jobs and CronJobs the plan declares where jobs run (Kueue's namespaces), but those no
    queue admits (a canary's, the reservation controller's)."""
    where = job_namespaces(stack_config(stack))
    return [
        o
        for o in stack_objects(stack)
        if o["kind"] in ("Job", "CronJob")
        and o["metadata"].get("namespace") in where
        and not OUTSIDE_KUEUE & set(o["metadata"].get("labels") or {})
    ]


def is_selftest(job: dict[str, Any]) -> bool:
    return job["metadata"].get("labels", {}).get("app.kubernetes.io/part-of", "").endswith(
        "selftest"
    ) or job["metadata"]["name"].startswith("selftest-")


def bursts(cfg: PlatformConfig, namespace: str) -> bool:
    """A team whose queue dispatches to MultiKueue workers: its jobs run, and are placed, there."""
    team = next((t for t in submitters(cfg) if t.name == namespace), None)
    if team is None:
        return False
    return any(q.name == team.cluster_queue and q.burst for q in cfg.scheduling.cluster_queues)


# ------------------------------------------------------------------------ the rules, alone


FLAVOR = {
    "kind": "ResourceFlavor",
    "metadata": {"name": "a100"},
    "spec": {"nodeLabels": {"pool": "a100"}, "topologyName": "net"},
}
PLAIN = {
    "kind": "ResourceFlavor",
    "metadata": {"name": "plain"},
    "spec": {"nodeLabels": {"pool": "a100"}},
}
TOPOLOGY = {
    "kind": "Topology",
    "metadata": {"name": "net"},
    "spec": {"levels": [{"nodeLabel": "rack"}, {"nodeLabel": HOST}]},
}


def queue(*flavors: str, provisioned: bool = False) -> list[dict[str, Any]]:
    spec: dict[str, Any] = {
        "resourceGroups": [
            {
                "coveredResources": ["nvidia.com/gpu"],
                "flavors": [{"name": f, "resources": []} for f in flavors],
            }
        ]
    }
    objects = [
        {"kind": "ClusterQueue", "metadata": {"name": "q"}, "spec": spec},
        {
            "kind": "LocalQueue",
            "metadata": {"name": "default", "namespace": "t"},
            "spec": {"clusterQueue": "q"},
        },
    ]
    if provisioned:
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": "prov"}]}
        objects.append(
            {
                "kind": "AdmissionCheck",
                "metadata": {"name": "prov"},
                "spec": {"controllerName": "kueue.x-k8s.io/provisioning-request"},
            }
        )
    return objects


def pods(count: int = 1, annotations: dict[str, str] | None = None, priority=None) -> PodSet:
    return PodSet("t", "default", count, 8, {"pool": "a100"}, annotations or {}, priority)


RACKED = Node("n1", {"pool": "a100", "rack": "r1", HOST: "n1"}, 8)
BARE = Node("n2", {"pool": "a100", HOST: "n2"}, 8)


def test_a_jobset_is_one_pod_set_read_from_its_replicated_jobs_pod_template():
    """Kueue v0.19.2 pkg/controller/jobs/jobset/jobset_controller.go PodSets: replicas ×
    min(parallelism, completions) pods, the TAS request on the replicatedJob's template; the
    JobSet's own metadata carries the queue."""
    template = {"metadata": {"annotations": {PREFERRED: "rack"}}, "spec": {
        "nodeSelector": {"pool": "a100"},
        "containers": [{"resources": {"requests": {"nvidia.com/gpu": 8}}}]}}  # fmt: skip
    obj = {
        "kind": "JobSet",
        "metadata": {"name": "js", "namespace": "t", "labels": {"kueue.x-k8s.io/queue-name": "q"}},
        "spec": {"replicatedJobs": [{"name": "trainer", "replicas": 2, "template": {
            "spec": {"parallelism": 4, "completions": 4, "template": template}}}]},
    }  # fmt: skip
    ps = pod_set(obj)
    assert (ps.namespace, ps.queue, ps.count, ps.gpus) == ("t", "q", 8, 8)
    assert ps.annotations == {PREFERRED: "rack"}
    obj["spec"]["replicatedJobs"].append(obj["spec"]["replicatedJobs"][0])
    with pytest.raises(ValueError):
        pod_set(obj)


def test_a_node_lacking_a_level_is_not_in_the_tas_flavor():
    """pkg/util/tas/node.go NodeMatchesFlavor."""
    assert node_matches_flavor(RACKED, FLAVOR, ["rack", HOST])
    assert not node_matches_flavor(BARE, FLAVOR, ["rack", HOST])


def test_a_tas_only_queue_places_an_unannotated_job_by_topology_on_labelled_nodes_only():
    """isTASImplied: the queue's only flavor names a Topology, so a job that asks for none is
    still placed by TAS, and unlabelled nodes hold nothing for it."""
    kueue = Kueue((FLAVOR, TOPOLOGY, *queue("a100")))
    assert admission(kueue, pods(), [RACKED]) is None
    assert admission(kueue, pods(), [BARE]) == (
        'flavor "a100": 0 of the 1 nodes carry rack, kubernetes.io/hostname and fit a pod, 1 '
        "needed, and TAS counts only nodes that exist"
    )
    # The same nodes behind a flavor without a Topology: Kueue admits by quota.
    assert admission(Kueue((PLAIN, *queue("plain"))), pods(), [BARE]) is None


def test_a_flavor_refuses_what_its_topology_cannot_serve():
    """checkPodSetAndFlavorMatchForTAS, in a queue that is not TAS-only."""
    kueue = Kueue((FLAVOR, PLAIN, TOPOLOGY, *queue("a100", "plain")))
    q = kueue.named("ClusterQueue")["q"]
    asks_rack, asks_spine = {PREFERRED: "rack"}, {PREFERRED: "spine"}
    assert flavor_refusal(kueue, q, FLAVOR, asks_rack) is None
    assert flavor_refusal(kueue, q, FLAVOR, asks_spine) == (
        'Flavor "a100" does not contain the requested level'
    )
    assert flavor_refusal(kueue, q, PLAIN, asks_rack) == (
        'Flavor "plain" does not support TopologyAwareScheduling'
    )
    assert flavor_refusal(kueue, q, FLAVOR, {}) == (
        'Flavor "a100" supports only TopologyAwareScheduling'
    )
    assert flavor_refusal(kueue, q, PLAIN, {}) is None


def test_a_required_level_places_every_pod_in_one_domain_or_none():
    """podset-required-topology (tas_flavor_snapshot.go findTopologyAssignment): two racks of
    one node each hold two pods that prefer a rack, but not two that require one."""
    kueue = Kueue((FLAVOR, TOPOLOGY, *queue("a100")))
    other = Node("n3", {"pool": "a100", "rack": "r2", HOST: "n3"}, 8)
    assert admission(kueue, pods(2, {PREFERRED: "rack"}), [RACKED, other]) is None
    assert admission(kueue, pods(2, {REQUIRED: "rack"}), [RACKED, other]) == (
        'flavor "a100": no one domain of rack holds 2 pods, the largest holds 1'
    )
    same = Node("n3", {"pool": "a100", "rack": "r1", HOST: "n3"}, 8)
    assert admission(kueue, pods(2, {REQUIRED: "rack"}), [RACKED, same]) is None


def test_tas_waits_for_no_node_only_behind_a_provisioning_request():
    """podSetTopologyRequest delays TAS on a flavor with the ProvisioningRequest check; without
    it, zero nodes admit nothing (docs, "ClusterAutoscaler support")."""
    assert admission(Kueue((FLAVOR, TOPOLOGY, *queue("a100"))), pods(), []) is not None
    assert (
        admission(Kueue((FLAVOR, TOPOLOGY, *queue("a100", provisioned=True))), pods(), []) is None
    )


def test_the_autoscaler_starts_a_node_for_a_provisioning_request_or_a_pod_above_the_cutoff():
    """CA IsExpendablePod: priority below -10 adds no node; a ProvisioningRequest always asks."""
    plain = Kueue((PLAIN, *queue("plain")))
    assert starts_nodes(plain, pods(priority="low"), {"low": -100}) is None
    assert starts_nodes(plain, pods(priority="low"), {"low": -10}) == (
        "priority -10 (low) is not below -10"
    )
    assert starts_nodes(plain, pods(), {}) == "priority 0 (None) is not below -10"
    provisioned = Kueue((PLAIN, *queue("plain", provisioned=True)))
    assert starts_nodes(provisioned, pods(priority="low"), {"low": -100}) == (
        "ClusterQueue q provisions flavor plain"
    )


# ------------------------------------------------------------ every stack, pool, team, job


@pytest.mark.parametrize("stack", STACKS)
def test_every_rendered_job_is_admitted_onto_the_nodes_its_pool_is_sure_to_carry(stack):
    """At the pool's largest, with only the labels nobody has to apply (the admin's too once
    the stack says they are on): the self-test's placement depends on no admin label unless
    the stack said so, and every team's job is admitted as well."""
    cfg = stack_config(stack)
    if not cfg.scheduling.enabled:
        pytest.skip("no Kueue")
    kueue = Kueue(tuple(stack_objects(stack)))
    applied = cfg.scheduling.topology_labels_applied
    found = {}
    for job in [*rendered_jobs(stack), *team_jobs(cfg)]:
        ps = pod_set(job)
        if bursts(cfg, ps.namespace):
            continue
        pool = pool_of(cfg, ps)
        size = next(p for p in cfg.gpu_pools if p.name == pool).max_nodes
        why = admission(kueue, ps, nodes(cfg, pool, size, admin=applied))
        if why:
            found[f"{job['kind']} {ps.namespace}/{job['metadata']['name']}"] = why
    assert found == {}


def said_in_the_plan(plan, pool: str, level: str) -> bool:
    """The plan names the level for the pool with the command that applies it: a warning
    while Kueue does not place by it yet, the `topology` output once it does."""
    warned = any(f"pool {pool}" in w and level in w and "kubectl label" in w for w in plan.warnings)
    row = plan.outputs.get("topology", {}).get(pool, {})
    reported = level in row.get("node_labels", []) and "kubectl label" in row.get("labelled_by", "")
    return warned or reported


@pytest.mark.parametrize("stack", STACKS)
def test_every_topology_level_is_on_the_nodes_or_named_in_the_plan(stack):
    cfg = stack_config(stack)
    kueue = Kueue(tuple(stack_objects(stack)))
    unsaid = []
    for name, flavor in kueue.named("ResourceFlavor").items():
        levels = kueue.levels(flavor)
        if levels is None or name not in {p.name for p in cfg.gpu_pools}:
            continue
        carried = guaranteed_labels(cfg, name, admin=False)
        unsaid += [
            f"{name}: {level}"
            for level in levels
            if level not in carried and not said_in_the_plan(planned(stack), name, level)
        ]
    assert unsaid == []


def onprem_labelled() -> PlatformConfig:
    raw = {k.split(":", 1)[1]: v for k, v in stack_file_config("onprem").items()}
    raw["scheduling"]["topology_labels_applied"] = True
    return parse_config(raw, "stacks/Pulumi.onprem.yaml")


def test_onprem_places_by_topology_once_the_admin_says_the_labels_are_on():
    """The shipped onprem stack's labels are EXAMPLEs: its flavor names no Topology, and the
    plan says which labels the DGX nodes need (with the command). Once the stack says they are
    applied, the flavor names them and the plan still lists them."""
    shipped = Kueue(tuple(stack_objects("onprem")))
    assert "topologyName" not in shipped.named("ResourceFlavor")["a100"]["spec"]
    (said,) = [w for w in planned("onprem").warnings if "topology_labels_applied" in w]
    assert (
        "kubectl label node <node> network.example.internal/spine=<spine> "
        "network.example.internal/rack=<rack>"
    ) in said
    cfg = onprem_labelled()
    kueue = Kueue(tuple(kueue_objects(cfg, autoscaled(cfg))))
    flavor = kueue.named("ResourceFlavor")["a100"]
    assert kueue.levels(flavor) == [
        "network.example.internal/spine",
        "network.example.internal/rack",
        HOST,
    ]
    assert not crds.errors(flavor)
    assert not crds.errors(kueue.named("Topology")[flavor["spec"]["topologyName"]])
    # The plan stops warning and reports the labels and their command instead.
    assert topology_warnings(cfg) == []
    assert topology_report(cfg)["a100"] == {
        "node_labels": ["network.example.internal/spine", "network.example.internal/rack", HOST],
        "labelled_by": "the admin: `kubectl label node <node> network.example.internal/spine="
        "<spine> network.example.internal/rack=<rack>` on every node; the kubelet (hostname)",
        "check": "kubectl get nodes -l nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB -L "
        "network.example.internal/spine,network.example.internal/rack",
        "kueue_places_by_them": True,
    }
    # Labelled nodes admit a team's job; a node that lacks the rack label holds none of it.
    ps = pod_set(team_jobs(cfg)[0])
    assert admission(kueue, ps, nodes(cfg, "a100", 4, admin=True)) is None
    assert admission(kueue, ps, nodes(cfg, "a100", 4, admin=False)) is not None


@pytest.mark.parametrize("stack", STACKS)
def test_a_teams_job_on_a_pool_at_its_fewest_nodes_is_admitted_or_provisioned(stack):
    """TAS counts only nodes that exist: a pool that scales from zero must provision first."""
    cfg = stack_config(stack)
    if not cfg.scheduling.enabled:
        pytest.skip("no Kueue")
    kueue = Kueue(tuple(stack_objects(stack)))
    found = {}
    for job in team_jobs(cfg):
        ps = pod_set(job)
        if bursts(cfg, ps.namespace):
            continue
        pool = pool_of(cfg, ps)
        existing = nodes(cfg, pool, fewest_nodes(cfg, pool), admin=True)
        why = admission(kueue, ps, existing)
        if why:
            found[f"{ps.namespace} on {pool}"] = why
    assert found == {}


def test_a_tas_pool_from_zero_without_provisioning_is_refused_at_its_key():
    """prod's h100-ondemand scales from zero on p5.48xlarge (a Topology): with the
    ProvisioningRequest off nothing would ever be admitted there."""
    raw = {k.split(":", 1)[1]: v for k, v in stack_file_config("prod").items()}
    raw.setdefault("scheduling", {})["flavors"] = [
        {"pool": "h100-ondemand", "provisioning_request": False}
    ]
    with pytest.raises(
        ConfigError,
        match=r"scheduling\.flavors\[0\]\.provisioning_request: "
        r"false, but pool h100-ondemand scales from zero",
    ):
        parse_config(raw, "stacks/Pulumi.prod.yaml")


def with_schedule(stack: str, **schedule: Any) -> PlatformConfig:
    """The AWS stack with a self-test image: its pools get a CronJob each."""
    raw = copy.deepcopy({k.split(":", 1)[1]: v for k, v in stack_file_config(stack).items()})
    raw["selftest"] = {"image": IMAGE, "mode": "off", "schedule": schedule}
    return parse_config(raw, f"stacks/Pulumi.{stack}.yaml")


def scheduled_runs(cfg: PlatformConfig) -> tuple[Kueue, list[PodSet], dict[str, int]]:
    """What the builders declare for the scheduled runs (components/scheduling.kueue_objects,
    components/selftest_schedule), and the priority of every class."""
    extra = [*idle_priority_objects(cfg), *idle_queue_objects(cfg)]
    kueue = Kueue(tuple(kueue_objects(cfg, autoscaled(cfg)) + extra))
    runs = [pod_set(j) for j in cron_jobs(cfg, lambda pool: pool_env(cfg, pool))]
    priorities = {p.name: p.value for p in PRIORITIES}
    priorities.update(
        {o["metadata"]["name"]: o["value"] for o in extra if o["kind"] == "PriorityClass"}
    )
    return kueue, runs, priorities


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_a_scheduled_run_never_makes_the_autoscaler_start_a_node(stack):
    cfg = with_schedule(stack)
    kueue, runs, priorities = scheduled_runs(cfg)
    assert runs, "every pool without MIG gets a CronJob"
    for obj in [*idle_priority_objects(cfg), *idle_queue_objects(cfg)]:
        if obj["apiVersion"].startswith("kueue"):
            assert not crds.errors(obj), obj["metadata"]["name"]
        else:
            validate_kubernetes(obj, cfg.cluster.kubernetes_version)
    found = {pool_of(cfg, ps): starts_nodes(kueue, ps, priorities) for ps in runs}
    assert {pool: why for pool, why in found.items() if why} == {}
    # It still runs where a node is up and idle.
    for ps in runs:
        pool = pool_of(cfg, ps)
        assert admission(kueue, ps, nodes(cfg, pool, 1, admin=False)) is None, pool


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_provisioning_for_scheduled_runs_is_asked_for_and_priced(stack):
    cfg = with_schedule(stack, provision_nodes=True)
    kueue, runs, priorities = scheduled_runs(cfg)
    assert all(starts_nodes(kueue, ps, priorities) for ps in runs)
    # A line each, priced, or not priced with the rate its region lacks (model/cost.py).
    report = cost_report(cfg, date(2026, 9, 1))
    lines = {line["key"] for line in [*report["lines"], *report["unpriced"]]}
    paid_anyway = ("reservation", "capacity_block")
    from_zero = {
        g.name
        for g in cfg.gpu_node_groups
        if g.scaling.min_size == 0 and g.capacity not in paid_anyway
    }
    assert {k for k in lines if k.startswith("selftest.schedule.")} == {
        f"selftest.schedule.{name}" for name in from_zero
    }


def test_scheduled_nodes_on_dev_cost_what_the_runs_keep_them_up():
    """dev's spot-small: 6 runs a day (every 4 h) x 730/24 days = 182.5 runs a month, each
    keeping a node 25 min (the 15 min run, then cluster-autoscaler's default 10 min
    --scale-down-unneeded-time) = 76.04 h of g6e.2xlarge, the group's dearest type, at
    $2.242/h on demand less the assumed 60 % spot discount = $68.19 a month; and of its 200 GiB
    gp3 root volume, 200 x $0.08 (AWS Price List API, us-east-1, 2026-08-20) + 125 MB/s x $0.04
    (EBS pricing page, N. Virginia) = $21.00 a month, for 76.04 of 730 h = $2.19: $70.38."""
    cfg = with_schedule("dev", provision_nodes=True)
    (line,) = [
        x for x in cost_report(cfg, date(2026, 9, 1))["lines"] if x["key"].startswith("selftest.")
    ]
    assert (line["key"], line["monthly_max"]) == ("selftest.schedule.spot-small", 70.38)
    assert line["estimate"] is True


@pytest.mark.parametrize(
    ("cron", "minutes"),
    [
        ("0 */4 * * *", 240),
        ("30 2 * * MON-FRI", 3 * 24 * 60),  # Friday to Monday
        ("@monthly", 31 * 24 * 60),  # January 1st to February 1st
        ("@yearly", 366 * 24 * 60),  # across a leap year
        ("5/20 * * * *", 20),  # robfig/cron: 5, 25, 45 each hour
    ],
)
def test_the_stale_alert_waits_twice_the_schedules_longest_gap(cron, minutes):
    assert longest_gap_minutes(cron) == minutes


@pytest.mark.parametrize(
    ("stack", "change", "path"),
    [
        (
            "onprem",
            {"selftest": {"schedule": {"provision_nodes": True}}},
            r"selftest\.schedule\.provision_nodes: true, but no cluster-autoscaler",
        ),
        (
            "dev",
            {"scheduling": {"topology_labels_applied": True}},
            r"scheduling\.topology_labels_applied",
        ),
        (
            "onprem",
            {"scheduling": {"topology_levels": [], "topology_labels_applied": True}},
            r"scheduling\.topology_labels_applied: true, but topology_levels names no label",
        ),
    ],
)
def test_topology_and_provisioning_settings_out_of_place_are_refused_at_their_key(
    stack, change, path
):
    raw = copy.deepcopy({k.split(":", 1)[1]: v for k, v in stack_file_config(stack).items()})
    for key, value in change.items():
        section = raw.setdefault(key, {})
        for k, v in value.items():
            section[k] = {**section.get(k, {}), **v} if isinstance(v, dict) else v
    with pytest.raises(ConfigError, match=path):
        parse_config(raw, f"stacks/Pulumi.{stack}.yaml")
