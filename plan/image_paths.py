"""The plan's "Images per GPU pool" section: for each GPU pool, every image a node of the pool
pulls before a job there runs, and how it reaches the node: from which registry (upstream,
the stack's mirror, one of its ECR pull-through cache rules, or the ECR repository NVIDIA's
image is copied into), whether the pre-puller pulls it while the node-join check runs
(components/selftest/prepull.py), and whether the node unpacks it with SOCI parallel pull
(images.fast_pull, the nodeadm gate in the pool's user data).

Read from what reaches the cluster: the DaemonSets the program declares and the releases render
that run on the pool's nodes (plan/blast_radius.py decides which, from their node selectors and
tolerations), the GPU Operator's operands as its ClusterPolicy names them (the operator creates
their DaemonSets at runtime: plan/blast_radius.py OPERANDS), and the launch template's user data.
"""

from __future__ import annotations

from typing import Any

import yaml

from components.data.nodes import NODEADM_CONTENT_TYPE
from components.registry_mirror import ImageRoute, registry_of, repository_of
from components.selftest.prepull import POOL_LABEL
from plan.blast_radius import (
    CLUSTER_POLICY,
    OPERANDS,
    Pool,
    component_enabled,
    operand_runs_on,
    pools_of,
    runs_on,
)
from plan.images import component_image, object_label, pod_images, pod_spec
from plan.model import Plan
from plan.render import Rendering
from plan.userdata_diff import parts

_LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"


def path_of(reference: str, route: ImageRoute | None) -> str:
    """Where a node pulls the (already routed) reference from."""
    if route is not None and route.mirror and reference.startswith(f"{route.mirror}/"):
        return f"mirror {route.mirror}"
    for upstream, base in route.cached if route is not None else ():
        if reference.startswith(f"{base}/"):
            prefix = base.rpartition("/")[2]
            return f"pull-through cache rule {prefix} (from {upstream})"
    for _, base in route.copied if route is not None else ():
        if reference.startswith(f"{base}/"):
            prefix = base.rpartition("/")[2]
            return f"copied to ECR {prefix}/{repository_of(reference.removeprefix(base + '/'))}"
    return f"upstream {registry_of(reference)}"


def _fast_pull(plan: Plan, pool: Pool) -> str:
    """SOCI parallel pull as the pool's launch template boots it; on an existing cluster the
    admin's nodes decide."""
    if pool.node_group is None:
        return 'the admin\'s to set up (docs/gpu-nodes.md, "On an existing cluster")'
    (template,) = [t for t in plan.of_type(_LAUNCH_TEMPLATE) if t.name == pool.node_group]
    configs = [
        yaml.safe_load("\n".join(lines))
        for kind, lines in parts(template.inputs["userData"])
        if kind == NODEADM_CONTENT_TYPE
    ]
    on = any(c["spec"].get("featureGates", {}).get("FastImagePull") is True for c in configs)
    return "on" if on else "off"


def _operand_images(policy: dict[str, Any], pool: Pool) -> list[tuple[str, str]]:
    """The images of the operands the operator runs on the pool's nodes."""
    found = []
    for operand in OPERANDS:
        if not component_enabled(policy, operand.component) or not operand_runs_on(operand, pool):
            continue
        image = component_image(policy["spec"].get(operand.component) or {})
        if image is not None:
            found.append((image, f"GPU Operator operand {operand.daemonset}"))
    return found


def pool_images(
    daemon_sets: list[tuple[str, dict[str, Any]]], policy: dict[str, Any], pool: Pool
) -> list[tuple[str, str, bool]]:
    """(image, what pulls it, pre-pulled at join) for every image a node of `pool` pulls."""
    found: dict[str, tuple[str, bool]] = {}
    for origin, obj in daemon_sets:
        spec = pod_spec(obj) or {}
        if not runs_on(spec, pool):
            continue
        prepuller = POOL_LABEL in (obj["metadata"].get("labels") or {})
        label = f"{object_label(obj)} ({origin})"
        warmed = {c["image"] for c in spec.get("initContainers") or []} if prepuller else set()
        for image in pod_images(obj):
            found.setdefault(image, (label, image in warmed))
    for image, label in _operand_images(policy, pool):
        found.setdefault(image, (label, False))
    return sorted((image, label, warmed) for image, (label, warmed) in found.items())


def format_image_paths(plan: Plan, rendering: Rendering, route: ImageRoute | None) -> str:
    """The section's text: a block per GPU pool, an image a line."""
    current = [r.as_json() for r in plan.resources]
    daemon_sets = [
        ("declared", obj) for obj in plan.kubernetes_objects() if obj.get("kind") == "DaemonSet"
    ]
    daemon_sets += [
        (release.release, obj)
        for release, obj in rendering.outlines()
        if obj.get("kind") == "DaemonSet"
    ]
    policies = [obj for _, obj in rendering.outlines() if obj.get("kind") == "ClusterPolicy"]
    policies += [r.inputs for r in plan.of_type(CLUSTER_POLICY)]
    policy = policies[0] if policies else {}
    lines = ["Images per GPU pool (how each reaches a node):"]
    pools = pools_of(current, plan.outputs)
    if not pools:
        lines.append("  no GPU pool")
    for pool in pools:
        group = f", node group {pool.node_group}" if pool.node_group else ""
        lines.append(f"  {pool.name}{group}, SOCI parallel pull: {_fast_pull(plan, pool)}")
        for image, label, warmed in pool_images(daemon_sets, policy, pool):
            path = path_of(image, route) + (", pre-pulled at join" if warmed else "")
            lines.append(f"    {image}  {label}: {path}")
    return "\n".join(lines)
