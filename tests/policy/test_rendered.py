"""The policy rules that hold for what the Helm releases render: each with a failing and a
passing case built from a real rendered object, and the plan's policy run seeing them."""

from __future__ import annotations

import copy
import dataclasses

from model.config.policy import PolicySettings
from model.stacks import ROOT, stack_config
from plan.policy import check_plan, context_for, rendered_subjects
from policy.rules import BY_NAME, Context, Subject, review
from tests.conftest import planned, rendered

PRIVILEGED = BY_NAME["privileged-only-where-needed"]
PINNED = BY_NAME["images-pinned"]


def rendered_object(stack: str, release: str, name: str) -> Subject:
    [found] = [s for s in rendered_subjects(rendered(stack)) if s.name == f"{release}/{name}"]
    return found


def check(rule, subject: Subject, settings: PolicySettings | None = None) -> list[str]:
    ctx = Context(resources=(), rendered=(subject,), settings=settings or PolicySettings())
    return [v.message for v in review(ctx, [rule])]


NODE_EXPORTER = "DaemonSet/monitoring/kube-prometheus-stack-prometheus-node-exporter"


def test_hostpath_pods_rendered_outside_the_privileged_namespaces_fail():
    # kube-prometheus-stack 88.5.3's node-exporter DaemonSet mounts the host's /proc, /sys and /
    # (prometheus-node-exporter 4.56.1, templates/daemonset.yaml: volumes proc, sys, root).
    exporter = rendered_object("prod", "prod-kube-prometheus-stack", NODE_EXPORTER)
    assert exporter.type == "kubernetes:apps/v1:DaemonSet"
    assert check(PRIVILEGED, exporter) == []  # monitoring is a privileged namespace by default
    narrow = PolicySettings(privileged_namespaces=["kube-system", "gpu-operator"])
    assert check(PRIVILEGED, exporter, narrow) == [
        "hostPath volume proc in namespace monitoring",
        "hostPath volume sys in namespace monitoring",
        "hostPath volume root in namespace monitoring",
    ]


def test_privileged_containers_rendered_outside_the_privileged_namespaces_fail():
    # The EFA device plugin chart v0.5.30 runs its container privileged, in kube-system.
    plugin = rendered_object(
        "prod", "prod-efa-device-plugin", "DaemonSet/kube-system/aws-efa-k8s-device-plugin"
    )
    assert check(PRIVILEGED, plugin) == []
    moved = copy.deepcopy(plugin.props)
    moved["metadata"]["namespace"] = "training-apps"
    found = check(PRIVILEGED, dataclasses.replace(plugin, props=moved))
    assert "privileged container aws-efa-k8s-device-plugin in namespace training-apps" in found


def test_rendered_images_without_a_tag_or_digest_or_at_latest_fail():
    # shared/helm/README.md: kueue's release step sets registry.k8s.io/kueue/kueue, v0.19.2.
    kueue = rendered_object(
        "prod", "prod-kueue", "Deployment/gpu-platform/kueue-controller-manager"
    )
    assert check(PINNED, kueue) == []

    def with_image(image: str) -> Subject:
        props = copy.deepcopy(kueue.props)
        props["spec"]["template"]["spec"]["containers"][0]["image"] = image
        return dataclasses.replace(kueue, props=props)

    assert check(PINNED, with_image("registry.k8s.io/kueue/kueue")) == [
        "image registry.k8s.io/kueue/kueue has no tag or digest"
    ]
    assert check(PINNED, with_image("registry.k8s.io/kueue/kueue:latest")) == [
        "image registry.k8s.io/kueue/kueue:latest is :latest"
    ]
    digest = "registry.k8s.io/kueue/kueue@sha256:" + "a" * 64
    assert check(PINNED, with_image(digest)) == []


def test_an_image_a_rendered_config_map_names_at_latest_fails():
    """rook-ceph v1.20.6 templates/configmap.yaml: the Ceph CSI plugin image ceph-csi-operator
    runs, from `csi.cephcsi` (v3.17.0 in values.yaml)."""
    image_set = rendered_object(
        "onprem", "onprem-rook-ceph", "ConfigMap/rook-ceph/rook-csi-operator-image-set-configmap"
    )
    assert image_set.props["data"]["plugin"] == "quay.io/cephcsi/cephcsi:v3.17.0"
    assert check(PINNED, image_set) == []
    props = copy.deepcopy(image_set.props)
    props["data"]["plugin"] = "quay.io/cephcsi/cephcsi:latest"
    assert check(PINNED, dataclasses.replace(image_set, props=props)) == [
        "image quay.io/cephcsi/cephcsi:latest is :latest"
    ]


def test_rendered_objects_carry_the_release_namespace_helm_installs_them_in():
    # kube-prometheus-stack's templates name their namespace; the EFA chart's DaemonSet does
    # not (templates/daemonset.yaml), so it lands in the release's namespace, kube-system.
    names = {s.name for s in rendered_subjects(rendered("prod"))}
    assert "prod-efa-device-plugin/DaemonSet/kube-system/aws-efa-k8s-device-plugin" in names


def test_the_plans_policy_run_sees_the_rendered_objects():
    plan, rendering = planned("prod"), rendered("prod")
    cfg = stack_config("prod", ROOT)
    ctx = context_for(plan, cfg, rendering)
    assert ctx.rendered and all(s.release for s in ctx.rendered)
    narrow = dataclasses.replace(
        ctx, settings=PolicySettings(privileged_namespaces=["kube-system", "gpu-operator"])
    )
    failed = {(v.rule.name, v.resource.name) for v in review(narrow)}
    assert ("privileged-only-where-needed", f"prod-kube-prometheus-stack/{NODE_EXPORTER}") in failed
    # Rules written for the program's own objects (requests and limits, ...) do not judge
    # what upstream charts render.
    assert {rule for rule, _ in failed if "/" in _} == {"privileged-only-where-needed"}
    assert check_plan(plan, ROOT, rendering).failed == []
