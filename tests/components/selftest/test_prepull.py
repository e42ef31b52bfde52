"""The warm-up's image pull (components/selftest/prepull.py): every training image of the stack
reaches every GPU pool's nodes as they join, through the mirror where one is set, by a pod the
controllers admit and that takes nothing from the jobs."""

from __future__ import annotations

import pytest

from components.selftest.prepull import prepull_objects
from model.config import parse_config
from plan.engine import run_program
from plan.images import image_lines
from plan.model import build_plan
from tests.conftest import make_project
from tests.controllers.pod_security import pod_templates, violations
from tests.controllers.qos import containers, exclusive_cpus, qos_class
from tests.controllers.references import Cluster, missing, pod_references
from tests.helpers.bad_stacks import NS, assert_refused, aws, existing
from tests.helpers.box_nodes import CANARY_LABEL, EFFECTS, NODE_GROUP, tolerated
from tests.helpers.jobsets import validate_object
from tests.helpers.plan_objects import kinds
from tests.helpers.selftest_stacks import A100_POOL, DIGEST, FSX, IMAGE, LAB, MIG, P5

MIRROR = "registry.internal.example:5000/mirror"
TRAINER = "nvcr.io/nvidia/pytorch:25.08-py3@sha256:" + "1" * 64
TOKENIZER = "ghcr.io/example/tokenize@sha256:" + "2" * 64
RECIPES = "111122223333.dkr.ecr.us-east-1.amazonaws.com/gpu-platform-recipes" + DIGEST
# Each reference keeps its path and loses its registry (docs/config.md, images.registry_mirror).
MIRRORED = {
    f"{MIRROR}/nvidia/pytorch:25.08-py3@sha256:" + "1" * 64,
    f"{MIRROR}/example/tokenize@sha256:" + "2" * 64,
    f"{MIRROR}/gpu-platform-recipes" + DIGEST,
}
# kubernetes/kubernetes v1.35 cmd/kubeadm/app/constants/constants.go: PauseVersion = "3.10.1".
PAUSE = f"{MIRROR}/pause:3.10.1"
# contract/node_join.py's startup taint, as docs/selftest.md tells an admin to set it.
POOL = "gpu-platform/node-group"
STARTUP_TAINT_KEY = "startup-taint.cluster-autoscaler.kubernetes.io/gpu-platform-node-join"


@pytest.fixture(scope="module")
def warmed(tmp_path_factory):
    """An AWS stack behind a mirror with two pools, new nodes tested on join and rolled through
    a canary, two listed training images and the recipes image, one of them listed twice."""
    stack = aws(
        gpu_node_groups=[P5, MIG],
        storage=FSX,
        selftest={"image": IMAGE, "node_join": {"canary": True}},
        images={"registry_mirror": MIRROR, "prepull": [TRAINER, TOKENIZER, TRAINER]},
        recipes={"image": RECIPES},
    )
    root = make_project(tmp_path_factory.mktemp("prepull"), {"pp": stack})
    return build_plan(run_program("pp", root))


def _pre_pullers(plan) -> list[dict]:
    return [o for o in kinds(plan, "DaemonSet") if o["metadata"]["name"].startswith("prepull-")]


def _joining_nodes(plan) -> dict[str, tuple[dict, list[dict]]]:
    """Each GPU node group's node as it registers, the pool's canary group's too: its labels
    and every taint the group declares, the node-join startup taint included (the check has not
    run yet)."""
    return {
        group["nodeGroupName"]: (
            group["labels"],
            [
                {"key": t["key"], "value": t.get("value", ""), "effect": EFFECTS[t["effect"]]}
                for t in group.get("taints", [])
            ],
        )
        for group in (r.inputs for r in plan.of_type(NODE_GROUP))
        if POOL in group.get("labels", {})
    }


def _pods_starting_on(node: tuple[dict, list[dict]], pullers: list[dict]) -> list[dict]:
    """The pre-pullers' pods the scheduler places on `node` (NodeAffinity, TaintToleration)."""
    labels, taints = node
    return [
        pod
        for pod in (ds["spec"]["template"]["spec"] for ds in pullers)
        if pod["nodeSelector"].items() <= labels.items()
        and all(tolerated(t, pod["tolerations"]) for t in taints)
    ]


def test_every_training_image_reaches_every_gpu_pools_nodes_as_they_join(warmed):
    nodes = _joining_nodes(warmed)
    pools = {labels[POOL] for labels, _ in nodes.values()}
    assert pools == {"h100", "a100-mig"}
    assert any(CANARY_LABEL in labels for labels, _ in nodes.values()), "a canary group"
    # The whole-GPU pool is tested on join (a MIG pool is not: node_join.pools_tested_on_join).
    assert any(STARTUP_TAINT_KEY in {t["key"] for t in taints} for _, taints in nodes.values())
    for pool, node in nodes.items():
        (pod,) = _pods_starting_on(node, _pre_pullers(warmed))
        # Mirrored, each once, the self-test image left to the node-join check.
        assert {c["image"] for c in pod["initContainers"]} == MIRRORED, pool
        assert len(pod["initContainers"]) == len(MIRRORED), pool
        assert all(c["command"] == ["sh", "-c", "exit 0"] for c in pod["initContainers"])
        # The running container holds the images against the kubelet's garbage collection.
        assert [c["image"] for c in pod["containers"]] == [PAUSE], pool


def test_the_images_it_pulls_are_listed_for_the_mirror(warmed):
    declared = [("declared", obj) for obj in warmed.kubernetes_objects()]
    listed = {line.split()[0] for line in image_lines(declared)}
    assert {*MIRRORED, PAUSE} <= listed


def test_a_pre_puller_is_admitted_and_takes_nothing_from_the_jobs(warmed):
    pullers = _pre_pullers(warmed)
    assert len(pullers) == 2
    for ds in pullers:
        pool = ds["metadata"]["name"]
        validate_object(ds, "1.35")
        ((meta, spec),) = pod_templates(ds)
        assert violations((meta, spec), "restricted") == [], pool
        cluster = Cluster("pp", warmed.kubernetes_objects())
        refs = pod_references(ds["spec"]["template"], ds["metadata"]["namespace"])
        assert missing(refs, cluster) == [], pool
        assert spec["automountServiceAccountToken"] is False
        # Burstable, so the static CPU manager pins no CPU of the node to it.
        assert qos_class(spec) == "Burstable"
        for container in containers(spec):
            assert exclusive_cpus(spec, container) == 0
            assert set(container["resources"]["limits"]) == {"cpu", "memory"}, "no GPU"


def test_an_existing_clusters_pools_are_warmed_through_their_node_selector():
    """On an existing cluster the admin taints GPU nodes with the device plugin's key, valued
    as they choose; the pre-puller tolerates the key whatever its value."""
    pool = {**A100_POOL, "node_selector": {"lab/gpu": "a100"}}
    raw = existing(existing={**LAB, "gpu_pools": [pool]}, images={"prepull": [TRAINER]})
    cfg = parse_config({k.removeprefix(f"{NS}:"): v for k, v in raw.items()}, "test")
    (ds,) = prepull_objects(cfg)
    pod = ds["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"lab/gpu": "a100"}
    admin_taint = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
    join_taint = {"key": STARTUP_TAINT_KEY, "value": "pending", "effect": "NoSchedule"}
    assert tolerated(admin_taint, pod["tolerations"])
    assert tolerated(join_taint, pod["tolerations"])
    assert [c["image"] for c in pod["initContainers"]] == [TRAINER]


def test_no_training_image_declares_no_pre_puller():
    raw = aws(gpu_node_groups=[P5], storage=FSX)
    cfg = parse_config({k.removeprefix(f"{NS}:"): v for k, v in raw.items()}, "test")
    assert prepull_objects(cfg) == []


@pytest.mark.parametrize(
    "value",
    [
        "nvcr.io/nvidia/pytorch:25.08-py3",  # a tag alone can be moved
        "pytorch@sha256:" + "1" * 64,  # no registry
        "nvcr.io/nvidia/pytorch@sha256:" + "A" * 64,  # upper-case hex
    ],
)
def test_a_training_image_not_pinned_by_digest_is_refused(tmp_path, monkeypatch, capsys, value):
    stack = aws(gpu_node_groups=[P5], storage=FSX, images={"prepull": [TRAINER, value]})
    assert_refused(tmp_path, monkeypatch, capsys, stack, f"{NS}:images.prepull[1]", value, "sha256")
