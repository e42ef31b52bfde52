"""Every reference resolves and every name is declared once: one rule (model/config/references.py)
over the fields the model marks. The tables below are checked against the marks themselves, so a
new reference or name field without a case here fails, and a name-shaped field without a mark
fails too."""

from __future__ import annotations

import json
import typing

import pytest
from pydantic import BaseModel

from model.config import ConfigError, PlatformConfig, config_from_pulumi
from model.config.base import DNS_LABEL_WORDS, Shape
from model.config.recipe_training import BatchSettings
from model.config.recipes import RecipesSettings
from model.config.references import Names, Refers, marks
from tests.helpers.shared_data import RWX_STORAGE

NS = "gpu-platform"
AWS = {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"]}
CLUSTER = {"admin_principal_arns": ["arn:aws:iam::210987654321:role/platform-admins"]}
GROUP = {"name": "a100", "instance_types": ["p4d.24xlarge"], "efa": True}
IMAGE = "111122223333.dkr.ecr.us-east-1.amazonaws.com/selftest@sha256:" + "0" * 64
POOL = {"name": "a100", "node_selector": {"pool": "a100"}, "gpu_model": "A100",
        "gpu_memory_gib": 80, "gpus_per_node": 8, "nodes": 2}  # fmt: skip
CEPH = {"nodes": [{"name": f"s{i}", "devices": ["nvme1n1"]} for i in (1, 2, 3)]}


def aws(**sections) -> dict:
    return {"aws": AWS, "cluster": CLUSTER, "gpu_node_groups": [GROUP], **sections}


def existing(pools=(POOL,), **sections) -> dict:
    found = {"name": "lab", "kubeconfig_path": "kc", "gpu_pools": list(pools)}
    return {"provider": "existing", "existing": found, "storage": RWX_STORAGE, **sections}


def problems(stack: dict) -> list[str]:
    values = {f"{NS}:{k}": json.dumps(v) for k, v in stack.items()}
    try:
        config_from_pulumi(values, "stacks/Pulumi.s.yaml")
    except ConfigError as error:
        return error.problems
    return []


def at(stack: dict, path: str) -> list[str]:
    return [p for p in problems(stack) if p.startswith(f"{NS}:{path}: ")]


# --------------------------------------------------------------------------- the marks


def marked_fields() -> dict[str, list[Names | Refers]]:
    """Path pattern (`[]` for list items, `<key>` for map keys) -> the marks it carries."""
    found: dict[str, list[Names | Refers]] = {}

    def visit(annotation, path: str, outer=()) -> None:
        annotation, here = marks(annotation)
        here += [m for m in outer if isinstance(m, Names | Refers)]
        if here:
            found[path] = here
        origin, args = typing.get_origin(annotation), typing.get_args(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            for name, field in annotation.model_fields.items():
                where = f"{path}.{name}" if path else name
                visit(field.annotation, where, tuple(field.metadata))
        elif origin in (typing.Union, typing.types.UnionType):
            for arg in args:
                if arg is not type(None):
                    visit(arg, path, tuple(here))
        elif origin is list:
            visit(args[0], f"{path}[]")
        elif origin is dict:
            visit(args[0], f"{path}.<key>")
            visit(args[1], f"{path}.<key>")

    visit(PlatformConfig, "")
    return found


def kinds(mark_type) -> set[str]:
    return {p for p, ms in marked_fields().items() if any(isinstance(m, mark_type) for m in ms)}


# A stack where the field at the pattern names nothing, the path reported and the bad value.
BURST_TO_CLOUD = {
    "cluster_queues": [
        {
            "name": "q",
            "burst": {
                "workers": ["cloud"],
                "gpus": 8,
                "instance_type": "p5.48xlarge",
                "monthly_budget_usd": 1000,
            },
        }
    ]
}
WORKER = {"name": "burst", "stack": "organization/gpu-platform/burst"}
DANGLING = {
    "scheduling.cluster_queues[].burst.workers[]": (
        aws(scheduling=BURST_TO_CLOUD, multikueue={"workers": [WORKER]}),
        "scheduling.cluster_queues[0].burst.workers[0]", "'cloud'"),
    "scheduling.cluster_queues[].gpus.<key>": (
        aws(scheduling={"cluster_queues": [{"name": "q", "gpus": {"h100": 8}}]}),
        "scheduling.cluster_queues[0].gpus.h100", "'h100'"),
    "scheduling.cluster_queues[].borrowing_limit.<key>": (
        aws(scheduling={"cluster_queues": [{"name": "q", "borrowing_limit": {"h100": 8}},
                                           {"name": "r"}]}),
        "scheduling.cluster_queues[0].borrowing_limit.h100", "'h100'"),
    "scheduling.cluster_queues[].lending_limit.<key>": (
        aws(scheduling={"cluster_queues": [{"name": "q", "lending_limit": {"h100": 8}}]}),
        "scheduling.cluster_queues[0].lending_limit.h100", "'h100'"),
    "scheduling.fair_sharing.admission.team_weights.<key>": (
        aws(scheduling={"fair_sharing": {"admission": {"team_weights": {"llm": 2}}}}),
        "scheduling.fair_sharing.admission.team_weights.llm", "'llm'"),
    "scheduling.teams[].cluster_queue": (
        aws(scheduling={"teams": [{"name": "llm", "cluster_queue": "gpu"}]}),
        "scheduling.teams[0].cluster_queue", "'gpu'"),
    "scheduling.teams[].priority_class": (
        aws(scheduling={"teams": [{"name": "llm", "priority_class": "urgent"}]}),
        "scheduling.teams[0].priority_class", "'urgent'"),
    "scheduling.idle_reclaim.cluster_queues[]": (
        aws(selftest={"image": IMAGE}, scheduling={"idle_reclaim": {"cluster_queues": ["gpu"]}}),
        "scheduling.idle_reclaim.cluster_queues[0]", "'gpu'"),
    "scheduling.idle_reclaim.priority_classes[]": (
        aws(selftest={"image": IMAGE},
            scheduling={"idle_reclaim": {"priority_classes": ["urgent"]}}),
        "scheduling.idle_reclaim.priority_classes[0]", "'urgent'"),
    "scheduling.flavors[].pool": (
        aws(scheduling={"flavors": [{"pool": "a10"}]}), "scheduling.flavors[0].pool", "'a10'"),
    "selftest.pool": (aws(selftest={"image": IMAGE, "pool": "h100"}), "selftest.pool", "'h100'"),
    "selftest.node_join.pool_timeout_minutes.<key>": (
        aws(selftest={"image": IMAGE, "node_join": {"pool_timeout_minutes": {"h100": 30}}}),
        "selftest.node_join.pool_timeout_minutes.h100", "'h100'"),
    "selftest.node_join.pool_dcgm_level.<key>": (
        aws(selftest={"image": IMAGE, "node_join": {"pool_dcgm_level": {"h100": 1}}}),
        "selftest.node_join.pool_dcgm_level.h100", "'h100'"),
    "selftest.queue": (aws(selftest={"image": IMAGE, "queue": "fast"}), "selftest.queue",
                       "'fast'"),
    "selftest.priority_class": (aws(selftest={"image": IMAGE, "priority_class": "urgent"}),
                                "selftest.priority_class", "'urgent'"),
    "selftest.schedule.pools[]": (aws(selftest={"image": IMAGE, "schedule": {"pools": ["h100"]}}),
                                  "selftest.schedule.pools[0]", "'h100'"),
    "recipes.queue": (aws(recipes={"queue": "fast"}), "recipes.queue", "'fast'"),
    "recipes.priority_class": (aws(recipes={"priority_class": "urgent"}),
                               "recipes.priority_class", "'urgent'"),
    "recipes.weights.<key>": (aws(recipes={"weights": {"sdxl": {"path": "sdxl"}}}),
                              "recipes.weights.sdxl", "'sdxl'"),
    "workload_autoscaling.gpu[].namespace": (
        aws(workload_autoscaling={"gpu": [{"name": "infer", "namespace": "inference"}]}),
        "workload_autoscaling.gpu[0].namespace", "'inference'"),
    "workload_autoscaling.queue[].namespace": (
        aws(workload_autoscaling={"queue": [{"name": "w", "namespace": "batch",
                                             "cluster_queue": "shared"}]}),
        "workload_autoscaling.queue[0].namespace", "'batch'"),
    "workload_autoscaling.queue[].cluster_queue": (
        aws(workload_autoscaling={"queue": [{"name": "w", "cluster_queue": "gpu"}]}),
        "workload_autoscaling.queue[0].cluster_queue", "'gpu'"),
}  # fmt: skip

# A stack declaring the field's name twice (or a name Kubernetes already has), and the path.
TWICE = {
    "multikueue.workers[].name": (
        aws(multikueue={"workers": [WORKER, WORKER]}), "multikueue.workers[1].name"),
    "gpu_node_groups[].name": (aws(gpu_node_groups=[GROUP, GROUP]), "gpu_node_groups[1].name"),
    "existing.gpu_pools[].name": (
        existing([POOL, {**POOL, "node_selector": {"pool": "b"}}]), "existing.gpu_pools[1].name"),
    "scheduling.cluster_queues[].name": (
        aws(scheduling={"cluster_queues": [{"name": "q"}, {"name": "q"}]}),
        "scheduling.cluster_queues[1].name"),
    "scheduling.flavors[].pool": (
        aws(scheduling={"flavors": [{"pool": "a100"}, {"pool": "a100"}]}),
        "scheduling.flavors[1].pool"),
    "scheduling.teams[].name": (
        aws(scheduling={"teams": [{"name": "monitoring"}]}), "scheduling.teams[0].name"),
    "namespaces.system": (aws(namespaces={"system": "kube-system"}), "namespaces.system"),
    "namespaces.training": (aws(namespaces={"training": "default"}), "namespaces.training"),
    "namespaces.monitoring": (
        aws(namespaces={"monitoring": "training"}), "namespaces.monitoring"),
    # The self-test's account may patch nodes: a team sharing its namespace could run as it.
    "namespaces.selftest": (
        aws(namespaces={"selftest": "training"}), "namespaces.selftest"),
    "gpu_operator.namespace": (
        aws(gpu_operator={"namespace": "monitoring"}), "gpu_operator.namespace"),
    "storage.ceph.namespace": (
        existing(storage={"ceph": {**CEPH, "namespace": "monitoring"}}),
        "storage.ceph.namespace"),
    "fabric.namespace": (
        existing([{**POOL, "fabric": "roce"}], storage={"ceph": CEPH},
                 fabric={"gid_index": 3, "namespace": "rook-ceph",
                         "network": {"interface": "ens1f0np0", "cidr": "192.168.110.0/24"}}),
        "fabric.namespace"),
}  # fmt: skip

# Name-shaped fields that name nothing the stack declares, and why no rule checks them.
UNMARKED = {
    "existing.name": "the cluster's own name: declares nothing the stack refers to",
    "scheduling.cohort": "the one cohort every ClusterQueue joins",
    "storage.ceph.filesystem_name": "the one CephFilesystem",
    "observability.storage_class": "a StorageClass of the cluster, not of the stack",
    "existing.kube_prometheus_stack.prometheus_service": "a Service of the cluster's own release",
    "existing.kube_prometheus_stack.grafana_service": "a Service of the cluster's own release",
    "storage.shared_data.storage_class": "a StorageClass of the cluster, not of the stack",
    "storage.shared_data.existing_claim": "the admin's claim, in each job namespace, not the "
    "stack's",
    "policy.privileged_namespaces[]": "may name namespaces outside the stack (kube-system)",
    "workload_autoscaling.gpu[].name": "the user's Deployment, deployed outside the stack",
    "workload_autoscaling.queue[].name": "the user's Deployment, deployed outside the stack",
    "storage.ceph.nodes[].name": "a node of the cluster; ceph.py refuses a host listed twice",
    "existing.namespaces[]": "names what the Namespaces component declares, not every namespace "
    "(team_access.py checks it, listing the valid ones)",
}


def test_every_reference_field_has_a_dangling_case():
    assert kinds(Refers) == set(DANGLING)


def test_every_name_field_has_a_case_declaring_it_twice():
    assert kinds(Names) == set(TWICE)


def name_shaped() -> set[str]:
    """Every string that is a DNS label, and every string field called name, pool, queue or
    namespace, by path pattern as marked_fields() writes it."""
    found = set()

    def visit(annotation, path: str, name: str, outer=()) -> None:
        metadata = list(outer)
        while typing.get_origin(annotation) is typing.Annotated:
            annotation, *more = typing.get_args(annotation)
            metadata += more
        origin, args = typing.get_origin(annotation), typing.get_args(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            for field_name, field in annotation.model_fields.items():
                where = f"{path}.{field_name}" if path else field_name
                visit(field.annotation, where, field_name, tuple(field.metadata))
        elif origin in (typing.Union, typing.types.UnionType):
            for arg in args:
                if arg is not type(None):
                    visit(arg, path, name, tuple(metadata))
        elif origin is list:
            visit(args[0], f"{path}[]", name)
        elif origin is dict:
            visit(args[0], f"{path}.<key>", "")
            visit(args[1], f"{path}.<key>", "")
        elif annotation is str:
            dns = any(isinstance(m, Shape) and m.words == DNS_LABEL_WORDS for m in metadata)
            if dns or name in ("name", "pool", "queue", "namespace"):
                found.add(path)

    visit(PlatformConfig, "", "")
    return found


def test_every_name_shaped_field_is_marked_or_said_why_not():
    marked = set(marked_fields())
    assert sorted(name_shaped() - marked - set(UNMARKED)) == []
    assert set(UNMARKED) <= name_shaped(), "an UNMARKED entry names no field"


@pytest.mark.parametrize("pattern", sorted(DANGLING))
def test_a_reference_to_nothing_is_refused_at_its_key(pattern):
    stack, path, value = DANGLING[pattern]
    found = at(stack, path)
    assert found and all(f"{value} is not " in p for p in found), problems(stack)


@pytest.mark.parametrize("pattern", sorted(TWICE))
def test_a_name_declared_twice_is_refused_at_its_key(pattern):
    stack, path = TWICE[pattern]
    found = at(stack, path)
    assert found and "is used twice" in found[0], problems(stack)


def test_kubernetes_own_namespaces_are_never_declared_again():
    # Kubernetes "Namespaces": every cluster starts with default, kube-node-lease,
    # kube-public and kube-system.
    for ns in ("default", "kube-node-lease", "kube-public", "kube-system"):
        found = at(aws(scheduling={"teams": [{"name": ns}]}), "scheduling.teams[0].name")
        assert found and "Kubernetes itself has it" in found[0]


def test_a_team_named_as_the_training_namespace_configures_it_rather_than_doubling_it():
    team = {"name": "training", "pod_security": "baseline", "pod_security_reason": "root images"}
    assert problems(aws(scheduling={"teams": [team]})) == []


def test_references_resolve_against_what_the_sections_that_read_them_declare():
    # Without Kueue nothing reads the queue or priority class; with the self-test off, nothing
    # reads its pool.
    off = {"enabled": False}
    assert problems(aws(scheduling=off, recipes={"queue": "fast", "priority_class": "x"})) == []
    assert problems(aws(selftest={"mode": "off", "pool": "h100"})) == []


def test_every_problem_is_reported_at_once():
    stack = aws(
        recipes={"queue": "fast", "priority_class": "urgent"},
        scheduling={"flavors": [{"pool": "a10"}]},
    )
    assert [p.split(": ")[0] for p in problems(stack)] == [
        f"{NS}:scheduling.flavors[0].pool",
        f"{NS}:recipes.queue",
        f"{NS}:recipes.priority_class",
    ]


# ---------------------------------------------------------------- pools and their nodes


def test_two_pools_selecting_the_same_nodes_are_refused():
    wider = {**POOL, "name": "b", "node_selector": {"pool": "a100", "rack": "r1"}}
    found = at(existing([POOL, wider]), "existing.gpu_pools[1].node_selector")
    assert found and "Kueue would count their GPUs in both pools" in found[0]
    same = {**POOL, "name": "b"}
    assert at(existing([POOL, same]), "existing.gpu_pools[1].node_selector")


def test_pools_on_other_label_values_are_apart():
    other = {**POOL, "name": "b", "node_selector": {"pool": "h100"}}
    assert problems(existing([POOL, other])) == []


def rdma(nodes: int, block: int) -> dict:
    pool = {**POOL, "fabric": "roce", "nodes": nodes}
    network = {"interface": "ens1f0np0", "cidr": "192.168.110.0/24", "per_node_block_size": block}
    return existing([pool], fabric={"gid_index": 3, "network": network})


def test_an_rdma_ip_pool_holds_a_block_for_every_rdma_node():
    # nvidia-k8s-ipam pkg/ipam-controller/allocator: blocks run from the address after the
    # network address and may not reach the broadcast address, so a /24 holds 15 blocks of 16
    # (.1-.16 ... .225-.240; .241-.256 would end past .255).
    assert problems(rdma(15, 16)) == []
    found = at(rdma(16, 16), "fabric.network.per_node_block_size")
    assert found and "16 addresses per node give 15 blocks in 192.168.110.0/24, for 16" in found[0]


def test_a_ceph_ip_pool_holds_a_block_for_every_storage_host():
    # The pods' range is the lower half of the /24 (hosts the upper): blocks of 64 start at
    # .1 and .65 there; the third, .129-.192, is wholly the hosts' and skipped.
    public = {"interface": "ens1f0np0", "cidr": "192.168.100.0/25",
              "host_range": "192.168.100.128/25", "per_node_block_size": 64}  # fmt: skip
    ceph = {**CEPH, "network": {"provider": "multus", "public": public}}
    found = at(existing(storage={"ceph": ceph}), "storage.ceph.network.public.per_node_block_size")
    assert found and "give 2 blocks in 192.168.100.0/25, for 3 storage hosts" in found[0]
    ceph["network"]["public"] = {**public, "per_node_block_size": 32}
    assert problems(existing(storage={"ceph": ceph})) == []


# ------------------------------------------------------------------------------ recipes


def batch_sections() -> list[str]:
    return [
        name
        for name, field in RecipesSettings.model_fields.items()
        if isinstance(field.annotation, type) and issubclass(field.annotation, BatchSettings)
    ]


def test_the_recipes_have_batch_sections():
    assert {"sd_finetune", "esrgan"} <= set(batch_sections())


@pytest.mark.parametrize("section", batch_sections())
def test_a_global_batch_no_gpu_count_reaches_is_refused_at_plan_time(section):
    # global_batch = micro_batch x GPUs x accumulation (contract/batch.py): 15 samples at 2 or
    # 4 per GPU is reached by no whole count of GPUs and steps.
    stack = aws(recipes={section: {"global_batch": 15, "micro_batch": 2}})
    found = at(stack, f"recipes.{section}.global_batch")
    assert found and "15 is not a multiple of micro_batch (2)" in found[0]
    assert "give 14 or 16" in found[0]
    assert problems(aws(recipes={section: {"global_batch": 16, "micro_batch": 2}})) == []


def test_weights_under_a_name_no_recipe_reads_are_refused_with_the_names_they_read():
    found = at(aws(recipes={"weights": {"vgg-19": {"path": "vgg19"}}}), "recipes.weights.vgg-19")
    assert found and "did you mean 'vgg19'?" in found[0]
    assert "models: clip, stable-diffusion, vgg19" in found[0]
