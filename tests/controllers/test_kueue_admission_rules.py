"""Kueue's admission (queue -> ClusterQueue -> flavors, TAS) and MultiKueue's connection, as
modelled in tests/controllers/kueue_admission.py from Kueue v0.19.2's source: first each rule
with a case it admits and one it refuses, then the model over every stack and every job the
builder renders (recipes, `jobs submit`, the self-test and its schedule, burst jobs)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from components.control.namespaces import job_namespaces
from components.scheduling.job_spec import spec_for_pool
from components.scheduling.kueue import manager_config as kueue_config
from components.scheduling.kueue import uncounted_resources
from components.scheduling.kueue_frameworks import FRAMEWORKS
from components.scheduling.training_job import render
from jobs.team import TeamJob, plan_job
from model.config.scheduling import LOCAL_QUEUE
from tests.conftest import AWS_STACKS, STACKS, planned, rendered, stack_config
from tests.controllers.dra import as_reconciled
from tests.controllers.kueue_admission import (
    ADAPTERS,
    KUEUE_GRANTS,
    Kueue,
    admission_problems,
    assigned_flavor,
    available,
    charged_pod_sets,
    connection_problems,
    flavor_problems,
    kueue_manages,
    kueue_suspends,
    manager_config_from_rendered,
    pod_sets,
    queue_problems,
    topology_mirror_problems,
)
from tests.helpers.dra_objects import claim_template, claiming, compute_domain, exactly
from tests.helpers.job_specs import IMAGE
from tests.helpers.kueue_objects import gpu_job
from tests.helpers.plan_out import fixture_out, manifests, stack_out, with_selftest
from tests.helpers.rendered_jobs import (
    burst_jobs,
    bursting_teams,
    platform_jobs,
    submitted_jobs,
    workers_of,
)
from tests.helpers.sharing_stacks import stack_file, teams_config
from tests.helpers.varied_stacks import window_config, window_plan

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
RBAC = "kubernetes:rbac.authorization.k8s.io/v1"

# ------------------------------------------------------------------- small fixtures


def job(namespace="team-a", queue="default", annotations=None, gpus=8, pods=1, selector=None):
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "j",
            "namespace": namespace,
            "labels": {"kueue.x-k8s.io/queue-name": queue},
        },
        "spec": {
            "parallelism": pods,
            "template": {
                "metadata": {"annotations": annotations or {}},
                "spec": {
                    "nodeSelector": selector or {},
                    "containers": [
                        {"name": "c", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}
                    ],
                },
            },
        },
    }


def flavor(name, topology=None, labels=None):
    spec: dict[str, Any] = {"nodeLabels": labels or {}}
    if topology:
        spec["topologyName"] = topology
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": name},
        "spec": spec,
    }


def topology(name, levels):
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Topology",
        "metadata": {"name": name},
        "spec": {"levels": [{"nodeLabel": lv} for lv in levels]},
    }


def cluster_queue(name, flavors, gpus=16, namespaces=("team-a",)):
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {
                "matchExpressions": [
                    {
                        "key": "kubernetes.io/metadata.name",
                        "operator": "In",
                        "values": list(namespaces),
                    }
                ]
            },
            "resourceGroups": [
                {
                    "coveredResources": ["nvidia.com/gpu"],
                    "flavors": [
                        {
                            "name": f,
                            "resources": [{"name": "nvidia.com/gpu", "nominalQuota": str(gpus)}],
                        }
                        for f in flavors
                    ],
                }
            ],
        },
    }


def local_queue(namespace="team-a", cq="q"):
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": "default", "namespace": namespace},
        "spec": {"clusterQueue": cq},
    }


LEVELS = ["rack", "kubernetes.io/hostname"]


def cluster(*objects, frameworks=("batch/job",)) -> Kueue:
    return Kueue.of(objects, {"integrations": {"frameworks": list(frameworks)}}, windows="closed")


# ------------------------------------------------------------------- queue -> ClusterQueue


def test_a_job_reaches_its_cluster_queue_through_its_namespaces_local_queue():
    kueue = cluster(flavor("f"), cluster_queue("q", ["f"]), local_queue())
    assert queue_problems(kueue, job()) == []
    assert queue_problems(kueue, job(queue="other")) == [
        "LocalQueue other doesn't exist in namespace team-a"
    ]
    assert queue_problems(cluster(local_queue()), job()) == ["ClusterQueue q doesn't exist"]


def test_a_cluster_queue_refuses_a_namespace_its_selector_leaves_out():
    kueue = cluster(flavor("f"), cluster_queue("q", ["f"], namespaces=("team-b",)), local_queue())
    assert queue_problems(kueue, job()) == [
        "namespace team-a doesn't match ClusterQueue q's selector"
    ]


def test_a_job_of_a_framework_kueue_does_not_run_is_never_admitted():
    kueue = cluster(flavor("f"), cluster_queue("q", ["f"]), local_queue(), frameworks=("pod",))
    assert "batch/job is not among Kueue's integrations" in " ".join(queue_problems(kueue, job()))


def namespace(name, labels=None):
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def test_kueue_takes_a_job_without_a_queue_only_when_told_to_manage_those():
    managed = {"managedJobsNamespaceSelector": {"matchLabels": {"queued": "yes"}}}
    ns = namespace("selftest", {"queued": "yes"})
    plain = {"metadata": {"name": "j", "namespace": "selftest", "labels": {}}}
    named = {"metadata": {"name": "j", "namespace": "selftest", "labels": {QUEUE_LABEL: "q"}}}
    assert not kueue_suspends(managed, ns, plain)
    assert kueue_suspends(managed, ns, named)
    assert kueue_suspends({**managed, "manageJobsWithoutQueueName": True}, ns, plain)
    assert not kueue_suspends(managed, namespace("other"), named)


def test_kueue_reconciles_jobs_only_in_the_namespaces_its_manager_config_selects():
    """v0.19.2 pkg/controller/jobframework/reconciler.go: with
    ManagedJobsNamespaceSelectorAlwaysRespected (GA, locked on) a job in a Namespace the
    selector does not match is left alone, suspended: "Namespace not opted in for Kueue
    management". The selector reads the Namespace object's labels."""
    by_name = {
        "integrations": {"frameworks": ["batch/job"]},
        "managedJobsNamespaceSelector": {
            "matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["team-b"]}
            ]
        },
    }
    objects = [flavor("f"), cluster_queue("q", ["f"]), local_queue()]
    assert queue_problems(Kueue.of(objects, by_name, windows="closed"), job()) == [
        "not admitted: Namespace team-a not opted in for Kueue management "
        "(managedJobsNamespaceSelector {'matchExpressions': [{'key': "
        "'kubernetes.io/metadata.name', 'operator': 'In', 'values': ['team-b']}]}): the job "
        "stays suspended"
    ]
    by_label = {**by_name, "managedJobsNamespaceSelector": {"matchLabels": {"queued": "yes"}}}
    assert not kueue_manages(by_label, namespace("team-a"))
    assert kueue_manages(by_label, namespace("team-a", {"queued": "yes"}))
    labelled = Kueue.of(
        [*objects, namespace("team-a", {"queued": "yes"})], by_label, windows="closed"
    )
    assert queue_problems(labelled, job()) == []


def test_kueue_without_a_namespace_selector_manages_all_but_kube_system_and_its_own():
    """apis/config/v1beta2/defaults.go at v0.19.2: NotIn kube-system and Kueue's namespace,
    kueue-system unless the Configuration says another."""
    assert kueue_manages({}, namespace("team-a"))
    assert not kueue_manages({}, namespace("kube-system"))
    assert not kueue_manages({}, namespace("kueue-system"))
    assert not kueue_manages({"namespace": "gpu-platform"}, namespace("gpu-platform"))
    assert kueue_manages({"namespace": "gpu-platform"}, namespace("kueue-system"))


# --------------------------------------------------------------------------- flavors


def test_a_tas_request_is_admitted_only_on_a_flavor_with_a_topology_holding_its_level():
    """tas_flavorassigner.go checkPodSetAndFlavorMatchForTAS (Kueue v0.19.2)."""
    wants_rack = job(annotations={"kueue.x-k8s.io/podset-preferred-topology": "rack"})
    tas = cluster(topology("t", LEVELS), flavor("f", "t"), cluster_queue("q", ["f"]), local_queue())
    assert flavor_problems(tas, wants_rack) == []
    plain = cluster(flavor("f"), cluster_queue("q", ["f"]), local_queue())
    assert flavor_problems(plain, wants_rack) == [
        "ClusterQueue q: Flavor 'f' does not support TopologyAwareScheduling"
    ]
    wants_spine = job(annotations={"kueue.x-k8s.io/podset-required-topology": "spine"})
    assert flavor_problems(tas, wants_spine) == [
        "ClusterQueue q: Flavor 'f' does not contain the requested level 'spine'"
    ]
    no_topology = cluster(flavor("f", "t"), cluster_queue("q", ["f"]), local_queue())
    assert "there is no Topology 't'" in flavor_problems(no_topology, wants_rack)[0]


def test_a_job_without_a_tas_request_needs_a_plain_flavor_unless_every_flavor_is_tas():
    """isTASImplied: a queue whose flavors all have a topology treats every pod set as TAS."""
    mixed = cluster(
        topology("t", LEVELS),
        flavor("tas", "t"),
        flavor("plain", labels={"pool": "b"}),
        cluster_queue("q", ["tas", "plain"]),
        local_queue(),
    )
    assert flavor_problems(mixed, job()) == []
    assert flavor_problems(mixed, job(selector={"pool": "a"})) == [
        "ClusterQueue q: Flavor 'tas' supports only TopologyAwareScheduling; "
        "flavor plain doesn't match node affinity"
    ]
    tas_only = cluster(
        topology("t", LEVELS), flavor("tas", "t"), cluster_queue("q", ["tas"]), local_queue()
    )
    assert flavor_problems(tas_only, job()) == []


def test_a_job_larger_than_the_queue_can_ever_hold_is_refused():
    kueue = cluster(flavor("f"), cluster_queue("q", ["f"], gpus=16), local_queue())
    assert flavor_problems(kueue, job(gpus=8, pods=2)) == []
    assert flavor_problems(kueue, job(gpus=8, pods=3)) == [
        "ClusterQueue q: flavor f: 3 pods need 24 nvidia.com/gpu, the queue reaches at most 16"
    ]


def limited(name, gpus=8, borrowing=None, lending=None, namespaces=("team-a",)):
    """A ClusterQueue of cohort `org` over flavor f, with its limits where given."""
    cq = cluster_queue(name, ["f"], gpus=gpus, namespaces=namespaces)
    cq["spec"]["cohortName"] = "org"
    (resource,) = cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"]
    if borrowing is not None:
        resource["borrowingLimit"] = str(borrowing)
    if lending is not None:
        resource["lendingLimit"] = str(lending)
    return cq


GPU = ("f", "nvidia.com/gpu")


def room(kueue, cq, usage=None):
    """GPUs of flavor f the queue can still admit with `usage` admitted."""
    return available(kueue, cq, *GPU, usage)


def test_a_queue_borrows_up_to_its_borrowing_limit_and_no_further():
    """Kueue v0.19.2 ClusterQueue schema, `borrowingLimit`: "Workloads in a ClusterQueue can
    consume a quantity of quota equal to nominalQuota+borrowingLimit, assuming the other
    ClusterQueues in the cohort have enough unused quota": 8 + 4 of the cohort's 16."""
    a, b = limited("q", borrowing=4), limited("b", namespaces=("team-b",))
    kueue = cluster(flavor("f"), a, b, local_queue())
    assert room(kueue, a) == 12
    assert flavor_problems(kueue, job(gpus=12)) == []
    assert flavor_problems(kueue, job(gpus=13)) == [
        "ClusterQueue q: flavor f: 1 pods need 13 nvidia.com/gpu, the queue reaches at most 12"
    ]
    # Once it holds 10 (2 borrowed), 2 more; b's nominal 8 stays b's to reclaim.
    assert room(kueue, a, {"q": {GPU: 10}}) == 2
    # What b already uses is not there to borrow: with b at 6, q reaches 8 + 2.
    assert room(kueue, a, {"b": {GPU: 6}}) == 10
    # Without the limit it reaches the whole cohort.
    assert room(cluster(flavor("f"), limited("q"), b, local_queue()), limited("q")) == 16


def test_a_lending_limit_caps_what_the_rest_of_the_cohort_borrows():
    """Kueue v0.19.2 ClusterQueue schema, `lendingLimit`: "ClusterQueue reserves for its
    exclusive use a quantity of quota equals to nominalQuota - lendingLimit": b lends 2 of its
    8, so q reaches 8 + 2, and b keeps 6 that no one else ever admits on."""
    a, b = limited("q"), limited("b", lending=2, namespaces=("team-b",))
    kueue = cluster(flavor("f"), a, b, local_queue())
    assert room(kueue, a) == 10
    assert flavor_problems(kueue, job(gpus=11)) == [
        "ClusterQueue q: flavor f: 1 pods need 11 nvidia.com/gpu, the queue reaches at most 10"
    ]
    # b itself reaches its 8 and all of q's.
    assert room(kueue, b) == 16
    # b at 7: 6 of its own, 1 of what it lent; q can have 1 more of it.
    assert room(kueue, a, {"q": {GPU: 8}, "b": {GPU: 7}}) == 1


def test_a_queue_outside_a_cohort_holds_its_nominal_quota_alone():
    alone = cluster_queue("q", ["f"], gpus=8)
    kueue = cluster(flavor("f"), alone, limited("b", namespaces=("team-b",)), local_queue())
    assert room(kueue, alone) == 8
    assert room(kueue, alone, {"q": {GPU: 5}}) == 3


def jobset(replicas=1, pods=2, completions=None, annotations=None, gpus=8, name="trainer"):
    """A JobSet of one replicatedJob around `job`'s Job spec."""
    spec = job(annotations=annotations, gpus=gpus, pods=pods)["spec"]
    if completions is not None:
        spec["completions"] = completions
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js", "namespace": "team-a",
                     "labels": {"kueue.x-k8s.io/queue-name": "default"}},
        "spec": {"replicatedJobs": [{"name": name, "replicas": replicas,
                                     "template": {"spec": spec}}]},
    }  # fmt: skip


def test_a_jobset_is_one_pod_set_per_replicated_job_counting_replicas_times_its_pods():
    """Kueue v0.19.2 pkg/controller/jobs/jobset/jobset_controller.go: PodSets names each after
    its replicatedJob, Count = replicas × min(parallelism, completions) (podsCount,
    podsCountPerReplica), the template the replicatedJob's pod template."""
    ((one,),) = [pod_sets(jobset(replicas=1, pods=4))]
    assert (one.name, one.count) == ("trainer", 4)
    assert pod_sets(jobset(replicas=3, pods=4))[0].count == 12
    assert pod_sets(jobset(replicas=2, pods=4, completions=2))[0].count == 4
    # A batch Job stays one pod set of parallelism pods.
    assert [(p.name, p.count) for p in pod_sets(job(pods=3))] == [("main", 3)]


def test_a_jobset_runs_only_where_kueue_integrates_jobsets_and_fits_as_a_whole():
    kueue = cluster(flavor("f"), cluster_queue("q", ["f"], gpus=16), local_queue())
    assert queue_problems(kueue, jobset()) == [
        "framework jobset.x-k8s.io/jobset is not among Kueue's integrations (batch/job): the "
        "Job stays suspended"
    ]
    kueue = cluster(flavor("f"), cluster_queue("q", ["f"], gpus=16), local_queue(),
                    frameworks=("batch/job", "jobset.x-k8s.io/jobset"))  # fmt: skip
    assert admission_problems(kueue, jobset(pods=2)) == []
    assert flavor_problems(kueue, jobset(replicas=2, pods=2)) == [
        "ClusterQueue q: flavor f: 4 pods need 32 nvidia.com/gpu, the queue reaches at most 16"
    ]


def test_a_jobsets_tas_request_is_read_from_its_replicated_jobs_pod_template():
    """Kueue jobset_controller.go PodSets: PodSetTopologyRequest of the replicatedJob's
    template metadata (Kueue jobset_webhook.go validateTopologyRequest reads it there too)."""
    wants_rack = jobset(annotations={"kueue.x-k8s.io/podset-preferred-topology": "rack"})
    (ps,) = pod_sets(wants_rack)
    assert ps.tas_request() == "rack"
    frameworks = ("batch/job", "jobset.x-k8s.io/jobset")
    plain = cluster(flavor("f"), cluster_queue("q", ["f"]), local_queue(), frameworks=frameworks)
    assert flavor_problems(plain, wants_rack) == [
        "ClusterQueue q: Flavor 'f' does not support TopologyAwareScheduling"
    ]


def test_a_resource_no_queue_covers_is_refused_unless_kueue_leaves_it_uncounted():
    asks_efa = job()
    asks_efa["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"][
        "vpc.amazonaws.com/efa"
    ] = "4"
    kueue = cluster(flavor("f"), cluster_queue("q", ["f"]), local_queue())
    assert flavor_problems(kueue, asks_efa) == [
        "resource vpc.amazonaws.com/efa unavailable in ClusterQueue"
    ]
    lenient = Kueue(kueue.objects, kueue.frameworks, ("vpc.amazonaws.com/",))
    assert flavor_problems(lenient, asks_efa) == []


# ------------------------------------------------------------------- DRA claims (v0.19.2)

# A mapping as Kueue's `resources.deviceClassMappings` holds it (apis/config/v1beta2/
# configuration_types.go): the logical names differ from the DeviceClasses on purpose, so a
# model that charged the class itself would fail.
MAPPINGS = [
    {"name": "whole-gpus", "deviceClassNames": ["gpu.nvidia.com"]},
    {"name": "imex-channels", "deviceClassNames": ["compute-domain-default-channel.nvidia.com"]},
]


def dra_queue(quota: dict[str, str]):
    """ClusterQueue `q` of flavor `f` covering each of `quota`'s resources."""
    cq = cluster_queue("q", ["f"])
    (group,) = cq["spec"]["resourceGroups"]
    group["coveredResources"] = list(quota)
    group["flavors"][0]["resources"] = [{"name": r, "nominalQuota": q} for r, q in quota.items()]
    return cq


def dra_cluster(*objects, quota=None, mappings=MAPPINGS) -> Kueue:
    config = {
        "integrations": {"frameworks": ["batch/job", "jobset.x-k8s.io/jobset"]},
        "resources": {"deviceClassMappings": mappings},
    }
    queue = dra_queue(quota or {"whole-gpus": "8", "imex-channels": "4"})
    return Kueue.of([flavor("f"), queue, local_queue(), *objects], config, windows="closed")


def claiming_job(pods=1, namespace="team-a", **claims):
    """`job`'s Job with no device-plugin GPUs, claiming `claims` (name -> reference)."""
    found = job(namespace=namespace, pods=pods)
    spec = found["spec"]["template"]["spec"]
    del spec["containers"][0]["resources"]
    found["spec"]["template"]["spec"] = claiming(spec, **claims)
    return found


def by_template(template):
    return {"resourceClaimTemplateName": template}


def test_kueue_charges_each_exact_request_count_per_pod_to_its_mappings_name():
    """pkg/dra/claims.go countDevicesPerClass: an ExactCount request charges `count`, 1 when
    unset (the API server's default), per pod, under the mapping's `name`; the pods together
    against the queue's quota of that name."""
    four = claim_template("four-gpus", exactly(count=4))
    one = claim_template("one-gpu", exactly())
    kueue = dra_cluster(four, one)
    (ps,), refused = charged_pod_sets(kueue, claiming_job(pods=2, gpu=by_template("four-gpus")))
    assert refused == []
    assert (ps.count, ps.requests["whole-gpus"]) == (2, 4)
    assert "gpu.nvidia.com" not in ps.requests
    (ps,), _ = charged_pod_sets(kueue, claiming_job(gpu=by_template("one-gpu")))
    assert ps.requests["whole-gpus"] == 1
    assert admission_problems(kueue, claiming_job(pods=2, gpu=by_template("four-gpus"))) == []
    assert flavor_problems(kueue, claiming_job(pods=3, gpu=by_template("four-gpus"))) == [
        "ClusterQueue q: flavor f: 3 pods need 12 whole-gpus, the queue reaches at most 8"
    ]


def test_a_jobsets_claims_are_charged_per_replicated_job_and_named_by_it():
    spec = claiming_job(gpu=by_template("four-gpus"))["spec"]
    js = jobset(pods=2, name="workers")
    js["spec"]["replicatedJobs"][0]["template"]["spec"] = spec
    spec["parallelism"] = 2
    kueue = dra_cluster(claim_template("four-gpus", exactly(count=4)))
    (ps,), refused = charged_pod_sets(kueue, js)
    assert (refused, ps.name, ps.requests["whole-gpus"]) == ([], "workers", 4)
    unmapped = dra_cluster(claim_template("four-gpus", exactly(count=4)), mappings=[])
    assert flavor_problems(unmapped, js) == [
        "inadmissible: spec.podSets[0].template.spec.resourceClaims[0].resourceClaimTemplateName: "
        "Not found: DeviceClass gpu.nvidia.com is not mapped in DRA configuration for podset "
        "workers"
    ]


def test_every_device_class_a_claimed_template_names_must_be_mapped():
    """pkg/dra/claims.go GetResourceRequestsForResourceClaimTemplates: "DeviceClass %s is not
    mapped in DRA configuration for podset %s" (a NotFound field error); the ComputeDomain
    channel's class too (../shared/PINS.md "DRA quota")."""
    objects = as_reconciled([compute_domain("cd", "job-channel")])
    only_gpus = dra_cluster(*objects, mappings=MAPPINGS[:1])
    job_ = claiming_job(channel=by_template("job-channel"))
    (problem,) = admission_problems(only_gpus, job_)
    assert problem.endswith(
        "DeviceClass compute-domain-default-channel.nvidia.com is not mapped in DRA "
        "configuration for podset main"
    )
    (ps,), refused = charged_pod_sets(dra_cluster(*objects), job_)
    assert (refused, ps.requests["imex-channels"]) == ([], 1)


def test_a_pod_naming_a_premade_resource_claim_is_never_admitted():
    """workload_controller.go, HasResourceClaim: "KueueDRAIntegration feature does not
    support use of resource claims"."""
    kueue = dra_cluster()
    assert admission_problems(kueue, claiming_job(gpu={"resourceClaimName": "shared"})) == [
        "inadmissible: KueueDRAIntegration feature does not support use of resource claims"
    ]


@pytest.mark.parametrize(
    ("request_", "where", "detail"),
    [
        # claims.go countDevicesPerClass, one case per request form it refuses.
        (exactly(allocationMode="All"), ".exactly.allocationMode",
         "AllocationMode 'All' is not supported"),
        (exactly(adminAccess=True), ".exactly.adminAccess", "AdminAccess is not supported"),
        ({"name": "gpu", "firstAvailable": [{"name": "a", "deviceClassName": "gpu.nvidia.com"}]},
         "", "FirstAvailable device selection is not supported"),
    ],
)  # fmt: skip
def test_kueue_refuses_a_request_it_cannot_count(request_, where, detail):
    kueue = dra_cluster(claim_template("odd", request_))
    assert admission_problems(kueue, claiming_job(gpu=by_template("odd"))) == [
        f"inadmissible: spec.podSets[0].template.spec.resourceClaims[0].devices.requests[0]"
        f"{where}: ResourceClaimTemplate odd: {detail}"
    ]
    counted_ = dra_cluster(claim_template("odd", exactly(allocationMode="ExactCount", count=2)))
    assert admission_problems(counted_, claiming_job(gpu=by_template("odd"))) == []


def test_a_template_is_read_from_the_workloads_namespace_and_waited_for():
    """claims.go getClaimSpec reads the template at the workload's namespace; a missing one is
    an internal error, retried with back-off (workload_controller.go hasInternalError): the
    workload is not admitted yet. A ComputeDomain's template exists once its controller ran."""
    elsewhere = dra_cluster(claim_template("one-gpu", exactly(), namespace="team-b"))
    (problem,) = admission_problems(elsewhere, claiming_job(gpu=by_template("one-gpu")))
    assert problem.startswith("not admitted yet")
    assert "failed to get claim spec for ResourceClaimTemplate one-gpu in podset main" in problem
    domain = compute_domain("cd", "job-channel")
    job_ = claiming_job(channel=by_template("job-channel"))
    (problem,) = admission_problems(dra_cluster(domain), job_)
    assert "ResourceClaimTemplate job-channel" in problem
    assert admission_problems(dra_cluster(*as_reconciled([domain])), job_) == []


def test_a_mapped_name_the_cluster_queue_does_not_cover_blocks_admission():
    """BlockUndeclared (QuotaCheckStrategy, beta and on in v0.19.2): a mapped name is an
    ordinary resource, refused where no resource group covers it."""
    kueue = dra_cluster(claim_template("one-gpu"), quota={"imex-channels": "4"})
    assert flavor_problems(kueue, claiming_job(gpu=by_template("one-gpu"))) == [
        "resource whole-gpus unavailable in ClusterQueue"
    ]


def test_the_node_levels_hook_is_asked_for_tas_flavors_of_local_queues():
    """The TAS helper's model answers whether a flavor's levels are on its pool's nodes."""
    tas = cluster(topology("t", LEVELS), flavor("f", "t"), cluster_queue("q", ["f"]), local_queue())
    assert flavor_problems(tas, job(), node_levels=lambda f: "no node carries rack") == [
        "ClusterQueue q: no node carries rack"
    ]
    assert flavor_problems(tas, job(), node_levels=lambda f: None) == []


# ------------------------------------------------------------------------ MultiKueue

BATCH_ONLY_ROLE = [
    {
        "apiGroups": ["batch"],
        "resources": ["jobs"],
        "verbs": ["create", "delete", "get", "list", "watch"],
    },
    {"apiGroups": ["batch"], "resources": ["jobs/status"], "verbs": ["get"]},
    {
        "apiGroups": ["kueue.x-k8s.io"],
        "resources": ["workloads"],
        "verbs": ["create", "delete", "get", "list", "watch", "update", "patch"],
    },
    {
        "apiGroups": ["kueue.x-k8s.io"],
        "resources": ["clusterqueues", "localqueues"],
        "verbs": ["get", "list", "watch"],
    },
    {
        "apiGroups": ["kueue.x-k8s.io"],
        "resources": ["workloads/status"],
        "verbs": ["get", "patch", "update"],
    },
]


def kueue_and_builtin(api: str) -> bool:
    return api.startswith(("kueue.x-k8s.io/", "batch/", "v1/"))


def test_a_connection_needs_rbac_and_a_served_kind_for_every_framework_with_an_adapter():
    assert (
        connection_problems(["batch/job", "deployment"], BATCH_ONLY_ROLE, kueue_and_builtin) == []
    )
    # kubernetes-sigs/kueue#3582: a framework the worker lacks fails the whole connection.
    found = connection_problems(
        ["batch/job", "jobset.x-k8s.io/jobset"], BATCH_ONLY_ROLE, kueue_and_builtin
    )
    assert found == [
        "jobset.x-k8s.io/jobset: the worker serves no jobset.x-k8s.io/v1alpha2 JobSet (no CRD)",
        "jobset.x-k8s.io/jobset: the worker's role lacks create, delete, get, list, watch on "
        "jobset.x-k8s.io jobsets",
        "jobset.x-k8s.io/jobset: the worker's role lacks get on jobset.x-k8s.io jobsets/status",
    ]
    assert connection_problems(["batch/job"], BATCH_ONLY_ROLE[:2], kueue_and_builtin)


def test_the_managers_flavor_must_mirror_the_workers_topology():
    worker = cluster(
        topology("aws", ["l1", "kubernetes.io/hostname"]),
        flavor("h100", "aws"),
        cluster_queue("burst", ["h100"]),
    )
    plain = cluster(flavor("burst-burst"), cluster_queue("burst", ["burst-burst"]))
    assert topology_mirror_problems(plain, worker, "burst")
    mirrored = cluster(
        topology("aws", ["l1", "kubernetes.io/hostname"]),
        flavor("burst-burst", "aws"),
        cluster_queue("burst", ["burst-burst"]),
    )
    assert topology_mirror_problems(mirrored, worker, "burst") == []


# ------------------------------------------------------------------ over every stack


def manager_config(stack: str) -> dict[str, Any]:
    """The Configuration Kueue runs with on the stack, read from its rendered ConfigMap."""
    config = manager_config_from_rendered(stack_out(stack))
    assert config is not None, f"{stack}: no rendered release holds Kueue's Configuration"
    return config


def kueue_of(stack: str) -> Kueue:
    """The stack's Kueue as the plan renders it once the self-test runs there (an AWS stack
    with `selftest.image` set, tests/helpers/plan_out.with_selftest): its objects, Namespaces
    and manager Configuration read from what `python -m plan` writes. platform_jobs renders
    the self-test's runs on every stack, as if it ran."""
    out = with_selftest(stack)
    config = manager_config_from_rendered(out)
    assert config is not None, f"{stack}: no rendered release holds Kueue's Configuration"
    return Kueue.of(manifests(out), config, windows="open")


def scheduled(stack: str) -> bool:
    return stack_config(stack).scheduling.enabled


MANAGERS = [s for s in STACKS if workers_of(s)]
PAIRS = [(m, w) for m in MANAGERS for w in workers_of(m)]


def queued_jobs(objects) -> list[dict[str, Any]]:
    """Every object that names a LocalQueue, a CronJob's Job template as the Job it makes."""
    found = []
    for obj in objects:
        meta = obj.get("metadata", {})
        if QUEUE_LABEL in (meta.get("labels") or {}):
            found.append(obj)
        elif obj.get("kind") == "CronJob":
            template = obj["spec"]["jobTemplate"]
            if QUEUE_LABEL in (template.get("metadata", {}).get("labels") or {}):
                named = {**template["metadata"], "name": meta["name"]}
                named["namespace"] = meta["namespace"]
                found.append({"kind": "Job", "metadata": named, "spec": template["spec"]})
    return found


@pytest.mark.parametrize("stack", STACKS)
def test_kueue_manages_every_namespace_a_queued_job_of_the_stack_runs_in(stack):
    """Every job that names a LocalQueue runs where the rendered Kueue Configuration's
    managedJobsNamespaceSelector selects its Namespace, by the labels the plan renders on it
    and the name label the API server adds; elsewhere Kueue never unsuspends it. Over the
    stack as shipped and with the self-test turned on, and every job the plan declares (the
    self-test, its schedule's CronJobs), `python -m jobs` renders (recipes, team jobs) and a
    manager bursts onto this stack as its worker."""
    # platform_jobs renders the self-test's runs whether or not the stack turns it on.
    for out, selftest in ((stack_out(stack), []), (with_selftest(stack), platform_jobs(stack))):
        config = manager_config_from_rendered(out)
        assert config is not None, f"{out}: no rendered release holds Kueue's Configuration"
        kueue = Kueue.of(manifests(out), config, windows="open")
        jobs = [*queued_jobs(manifests(out)), *selftest, *(j for _, j in submitted_jobs(stack))]
        jobs += [j for m in MANAGERS if stack in workers_of(m) for _, j in burst_jobs(m, stack)]
        assert queued_jobs(jobs) == jobs, "a job the sweep reads names no LocalQueue"
        unmanaged = {
            f"{j['kind']} {j['metadata']['namespace']}/{j['metadata']['name']}"
            for j in jobs
            if not kueue.manages(j["metadata"]["namespace"])
        }
        selector = config.get("managedJobsNamespaceSelector")
        assert unmanaged == set(), f"{out.name}: not opted in ({selector}): {sorted(unmanaged)}"


@pytest.mark.parametrize("stack", STACKS)
def test_kueue_admits_every_job_the_platform_and_jobs_submit_render(stack):
    if not scheduled(stack):
        pytest.skip("no Kueue on this stack")
    kueue = kueue_of(stack)
    jobs = platform_jobs(stack) + [job for _, job in submitted_jobs(stack)]
    # A bursting team's job goes through its burst queue here: see the MultiKueue sweep.
    jobs = [j for j in jobs if j["metadata"]["namespace"] not in bursting_teams(stack)]
    assert jobs, f"{stack}: no job rendered"
    # A job without a queue label would pass the model untested: every one goes through Kueue.
    assert [j["metadata"]["name"] for j in jobs if QUEUE_LABEL not in j["metadata"]["labels"]] == []
    refused = {j["metadata"]["name"]: admission_problems(kueue, j) for j in jobs}
    assert {k: v for k, v in refused.items() if v} == {}


@pytest.mark.parametrize(("manager", "worker"), PAIRS)
def test_a_burst_job_is_admitted_on_the_manager_and_on_the_worker(manager, worker):
    """The manager's bursting ClusterQueue takes the job (its flavor carries the worker's
    topology, so the job's TAS request matches), then the worker's queue of the same name."""
    on_manager, on_worker = kueue_of(manager), kueue_of(worker)
    jobs = burst_jobs(manager, worker)
    assert jobs
    for what, burst in jobs:
        assert burst["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"
        assert admission_problems(on_manager, burst) == [], f"{what} on {manager}"
        worker_copy = copy.deepcopy(burst)
        # MultiKueue clears managedBy on the worker's copy (job_multikueue_adapter.go SyncJob).
        del worker_copy["spec"]["managedBy"]
        assert admission_problems(on_worker, worker_copy) == [], f"{what} on {worker}"


@pytest.mark.parametrize(("manager", "worker"), PAIRS)
def test_the_managers_bursting_flavors_mirror_the_workers_topology(manager, worker):
    cfg = stack_config(manager)
    for queue in (
        q for q in cfg.scheduling.cluster_queues if q.burst and worker in q.burst.workers
    ):
        assert topology_mirror_problems(kueue_of(manager), kueue_of(worker), queue.name) == []


def worker_role(stack: str) -> list[dict[str, Any]]:
    roles = [
        r.inputs
        for r in planned(stack).of_type(f"{RBAC}:ClusterRole")
        if r.inputs["metadata"]["name"] == "multikueue-sa-role"
    ]
    assert len(roles) == 1, f"{stack} declares no MultiKueue worker role"
    return roles[0]["rules"]


def serves(stack: str):
    """Whether the worker serves `group/version/Kind`: a built-in kind of its Kubernetes
    version (the schema kubernetes-validate holds for it), or one of its releases' CRDs."""
    import kubernetes_validate

    version = f"{stack_config(stack).cluster.kubernetes_version}.0"
    crds = set(rendered(stack).api_versions)

    def check(api: str) -> bool:
        if api in crds:
            return True
        api_version, _, kind = api.rpartition("/")
        try:
            kubernetes_validate.validate(
                {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}}, version
            )
        except kubernetes_validate.SchemaNotFoundError:
            return False
        except kubernetes_validate.ValidationError:
            pass
        return True

    return check


@pytest.mark.parametrize(("manager", "worker"), PAIRS)
def test_the_managers_frameworks_the_workers_rbac_and_its_crds_agree(manager, worker):
    """Kueue v0.19.2 opens a watch on the worker per enabled framework with an adapter, and
    fails the connection if any fails (multikueuecluster.go): each needs the worker's RBAC and
    its kind served there. The worker's own Kueue runs the same frameworks, or it would never
    admit the copies MultiKueue creates."""
    frameworks = manager_config(manager)["integrations"]["frameworks"]
    assert connection_problems(frameworks, worker_role(worker), serves(worker)) == []
    assert set(frameworks) <= set(manager_config(worker)["integrations"]["frameworks"])


# What every cluster's Kueue must run, by Kueue v0.19.2's names: JobSets, which every job the
# builder renders is (pkg/controller/jobs/jobset `FrameworkName`), and batch Jobs, which the
# self-test schedule's CronJob makes (pkg/controller/jobs/job).
RUN_FRAMEWORKS = ("batch/job", "jobset.x-k8s.io/jobset")
JOBSET_KIND = "jobset.x-k8s.io/v1alpha2/JobSet"


@pytest.mark.parametrize("stack", STACKS)
def test_every_kueue_runs_the_jobset_framework_on_a_cluster_that_serves_jobsets(stack):
    """Kueue never unsuspends a JobSet whose framework it does not run, and runs it only where
    the CRD is served (pkg/controller/jobframework/setup.go defers it until then)."""
    if not scheduled(stack):
        pytest.skip("no Kueue on this stack")
    frameworks = manager_config(stack)["integrations"]["frameworks"]
    assert [f for f in RUN_FRAMEWORKS if f not in frameworks] == []
    assert serves(stack)(JOBSET_KIND), f"{stack} installs no JobSet CRD"


@pytest.mark.parametrize(("manager", "worker"), PAIRS)
def test_every_worker_serves_and_grants_what_the_managers_jobsets_need(manager, worker):
    """The connection rule over JobSet on every manager-worker pair: the worker's role grants
    the script's jobsets rules and the worker serves the kind, or the whole connection fails
    (multikueuecluster.go `updateConfigAndRefreshWatchers`)."""
    assert connection_problems(RUN_FRAMEWORKS, worker_role(worker), serves(worker)) == []


def test_a_bursting_teams_job_rendered_on_the_managers_own_pool_is_refused():
    """What a bursting team must not submit: the manager's pool's rack level is not one of the
    worker's, so the burst flavor (mirroring the worker's topology) refuses it. The job asks for
    the rack once the admin says the labels are on the nodes
    (scheduling.topology_labels_applied)."""
    shipped = stack_config("onprem")
    labelled = shipped.scheduling.model_copy(update={"topology_labels_applied": True})
    cfg = shipped.model_copy(update={"scheduling": labelled})
    (team,) = bursting_teams("onprem")
    local = render(
        spec_for_pool(cfg, "a100", name="x", image="i:1", command=["t.py"], nodes=2, namespace=team)
    )[0]
    found = admission_problems(kueue_of("onprem"), local)
    assert any(
        "does not contain the requested level 'network.example.internal/rack'" in p for p in found
    ), found
    assert local["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == LOCAL_QUEUE


def test_each_framework_of_the_platform_is_the_kind_kueues_adapter_watches():
    """The one table (components/scheduling/kueue_frameworks.py) against Kueue v0.19.2's adapters:
    the integration name, API version, kind and resource each adapter's GetEmptyList lists."""
    for framework in FRAMEWORKS:
        assert ADAPTERS[framework.integration] == (
            framework.api_version,
            framework.kind,
            framework.resource,
        )
    assert [f.integration for f in FRAMEWORKS] == ["batch/job", "jobset.x-k8s.io/jobset"]


@pytest.mark.parametrize(("manager", "worker"), PAIRS)
def test_the_worker_grants_the_manager_nothing_beyond_its_frameworks_and_kueues_own(
    manager, worker
):
    """Exactly the script's rules for the manager's frameworks: the role that lets the manager
    create and delete jobs on the worker grants no other kind."""
    wanted = set(KUEUE_GRANTS)
    for name in manager_config(manager)["integrations"]["frameworks"]:
        api_version, _, resource = ADAPTERS[name]
        group = api_version.rpartition("/")[0]
        wanted |= {(group, resource), (group, f"{resource}/status")}
    role = worker_role(worker)
    assert {(g, r) for rule in role for g in rule["apiGroups"] for r in rule["resources"]} == wanted


# ------------------------------------------------------------ quota beyond nominal, as rendered


def teams_kueue() -> tuple[Kueue, Any]:
    """The teams stack (tests/helpers/sharing_stacks.py) as `python -m plan` writes it: its
    objects, and the Configuration from its rendered kueue-manager-config ConfigMap."""
    out = fixture_out("teams", stack_file())
    config = manager_config_from_rendered(out)
    assert config is not None, "no rendered release holds Kueue's Configuration"
    return Kueue.of(manifests(out), config, windows="open"), teams_config()


def test_the_platforms_queues_borrow_and_lend_within_the_limits_the_stack_sets():
    """vision holds 8 A100s and may borrow 4; nlp holds 8 and lends only 2; batch holds 4 and
    lends them all. In the ClusterQueues the platform renders, read by the admission model:
    vision reaches 8 + 4 (its borrowing limit, though 6 are idle to lend), batch 4 + 8 + 2
    (nlp's lending limit), nlp 8 + 8 + 4."""
    kueue, cfg = teams_kueue()
    gpus = ("a100", "nvidia.com/gpu")
    reach = {
        q: available(kueue, kueue.get("ClusterQueue", q), *gpus) for q in ("vision", "nlp", "batch")
    }
    assert reach == {"vision": 12, "nlp": 20, "batch": 14}
    # Holding 10, vision has 2 more to take and no further, whatever the cohort has idle.
    assert available(kueue, kueue.get("ClusterQueue", "vision"), *gpus, {"vision": {gpus: 10}}) == 2
    # A team's job, as `python -m jobs submit` renders it: one whole node is admitted on
    # vision's queue; two (16 GPUs) are beyond what it may ever hold, and nlp's queue takes them.
    one, two = (
        render(plan_job(cfg, TeamJob(IMAGE, ["t.py"], nodes=n, pool="a100", team="vision")))[0]
        for n in (1, 2)
    )
    assert admission_problems(kueue, one) == []
    (refused,) = admission_problems(kueue, two)
    assert refused.startswith("ClusterQueue vision: flavor a100: 2 pods need"), refused
    nlp = render(plan_job(cfg, TeamJob(IMAGE, ["t.py"], nodes=2, pool="a100", team="nlp")))[0]
    assert admission_problems(kueue, nlp) == []


def test_fair_sharing_reaches_the_configuration_kueue_reads_and_every_queue():
    """Kueue v0.19.2 turns fair sharing on by the Configuration's `fairSharing` being there
    (pkg/scheduler/preemption/fairsharing/strategy.go `Enabled`), admission fair sharing by
    `admissionFairSharing` (pkg/util/admissionfairsharing `Enabled`) and, per ClusterQueue, by
    `admissionScope.admissionMode: UsageBasedAdmissionFairSharing` (`ResourceWeights`); the
    half-life is set, never Kueue's 0 (kubernetes-sigs/kueue#11134)."""
    kueue, _ = teams_kueue()
    assert kueue.config["fairSharing"] == {
        "preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
    }
    assert kueue.config["admissionFairSharing"] == {
        "usageHalfLifeTime": "168h",
        "usageSamplingInterval": "5m",
    }
    queues = kueue.all("ClusterQueue")
    assert {n: q["spec"].get("fairSharing") for n, q in queues.items()} == {
        "vision": {"weight": 2},
        "nlp": None,
        "batch": None,
    }
    assert {n: q["spec"]["admissionScope"] for n, q in queues.items()} == {
        n: {"admissionMode": "UsageBasedAdmissionFairSharing"} for n in queues
    }
    weights = {n: q["spec"].get("fairSharing") for n, q in kueue.all("LocalQueue").items()}
    assert weights == {
        "training/default": None,
        "vision/default": {"weight": 2},
        "nlp/default": None,
    }


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_the_canary_jobs_start_at_once_kueue_leaves_them_alone(stack):
    """A pool's canary Job (components/selftest/canary.py) has its node to itself and no
    queue: Kueue, as its rendered Configuration runs it, must not suspend it, or the pool's
    roll would wait on a quota it never asks for. Over the stack with the self-test on."""
    out = with_selftest(stack)
    config = manager_config_from_rendered(out)
    kueue = Kueue.of(manifests(out), config or {}, windows="open")
    canaries = [o for o in manifests(out) if o["kind"] == "Job"
                and o["metadata"]["name"].startswith("canary-")]  # fmt: skip
    assert canaries, f"{stack}: no canary Job with the self-test on"
    for job in canaries:
        namespace = kueue.namespace(job["metadata"]["namespace"])
        assert not kueue_suspends(config or {}, namespace, job), job["metadata"]["name"]
        assert job["spec"]["suspend"] is False


def test_a_sweep_judges_a_windowed_flavor_in_the_phase_it_names():
    """A windowed pool's flavor is declared at quota 0 and opened by its window's CronJob: a
    sweep says which phase it judges. Over the window stack's plan (tests/helpers/
    varied_stacks.py: ClusterQueue `shared` lists odcr and block, both windowed, before p5od),
    an 8-GPU job lands on the reservation once the windows are open, on the on-demand pool while
    they are closed."""
    objects, cfg = window_plan().kubernetes_objects(), window_config()
    config = kueue_config(
        uncounted_resources(cfg), job_namespaces(cfg), cfg.scheduling.fair_sharing
    )
    one_node = gpu_job("j", "training", 8)
    assert assigned_flavor(Kueue.of(objects, config, windows="open"), one_node) == "odcr"
    assert assigned_flavor(Kueue.of(objects, config, windows="closed"), one_node) == "p5od"
