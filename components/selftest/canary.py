"""A GPU-stack change's canary (selftest.node_join.canary): on AWS each pool tested on join has a
canary node group of at most one node (components/data/gpu_node_group.py), built from the pool's
own spec, and this Job, which runs the node-join check set (`short`) on the whole canary node and
holds its GEMM, HBM and collective figures to the pool's stored baseline (the image's
bootstrap/selftest/baseline.py: SELFTEST_BASELINE_POOL, SELFTEST_BASELINE_TOLERANCE, from
Prometheus at SELFTEST_PROMETHEUS_URL). The pool's own node group waits for the Job.

How `pulumi up` rolls a change (docs/operations.md, "Rolling a GPU-stack change"):
1. the canary group takes the new launch template / AMI / version first; at desired 0 that rolls
   nothing;
2. the Job's pod template carries an annotation made of the canary group's node image (its
   launch template version, Kubernetes version and AMI release), and a Job's spec.template is
   immutable, so a new image replaces the Job (plan/replacements.json, kubernetes:batch/v1:Job);
3. the new Job's pending pod, which only a canary node admits (its label and taint), makes
   cluster-autoscaler scale the canary group from 0 to 1;
4. pulumi-kubernetes awaits a batch/v1 Job until its `Complete` condition and fails the update at
   once on `Failed` (pulumi_kubernetes/batch/v1/Job.py docstring at 4.34.2): a failed canary
   stops `up` before the pool's node group, whose nodes keep the old image.

The Job keeps no TTL: were it deleted after it finished, the next `up` would find it gone and run
it again. It runs as no ServiceAccount: it does not quarantine nor untaint its node (it is no
node-join run, and the canary node takes no job whatever the verdict); cluster-autoscaler removes
the node once it has been unneeded for the pool's scale-down time. No queue: Kueue does not
manage a Job without its queue label (manageJobsWithoutQueueName is false in the rendered
Configuration), so it starts as soon as its node is there."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from components.base import PlatformComponent
from components.context import StackContext
from components.kubernetes_object import KubernetesObject, object_resource_name
from components.scheduling.job_claims import claim_templates
from components.scheduling.job_spec import TrainingJobSpec
from components.scheduling.training_job import job
from components.selftest.access import PART_OF
from components.selftest.node_join import CHECKS, whole_node_spec
from components.selftest.schedule import history_env
from components.vocabulary import CANARY_LABEL, GPU_TOLERATION, prometheus_service
from contract.env import (
    SELFTEST_BASELINE_POOL,
    SELFTEST_BASELINE_TOLERANCE,
    SELFTEST_CHECKS,
    SELFTEST_CORDON_LABEL,
    SELFTEST_CORDON_ON_FAIL,
    SELFTEST_DCGM_LEVEL,
    SELFTEST_OUT,
    SELFTEST_PROMETHEUS_URL,
    SELFTEST_RUN_ID,
    SELFTEST_TOPOLOGY_LABELS,
)
from contract.mounts import SHARED_DATA_MOUNT_PATH
from model.config import GpuPool, PlatformConfig
from model.config.node_join import join_dcgm_level, join_timeout_minutes

# The pod annotation that carries the canary node group's image: a new one replaces the Job.
NODE_IMAGE_ANNOTATION = "gpu-platform/canary-node-image"
# What the scheduled and post-deploy runs set and the canary must not: it calls no API.
NOT_CANARY_ENV = (SELFTEST_CORDON_ON_FAIL, SELFTEST_CORDON_LABEL, SELFTEST_TOPOLOGY_LABELS)

# --------------------------------------------------------------------------- pure builders


def job_name(pool: str) -> str:
    return f"canary-{pool}"


def canary_node_selector(pool: GpuPool) -> dict[str, str]:
    """The pool's nodes that are its canary."""
    return {**pool.node_selector, CANARY_LABEL: pool.name}


def canary_toleration(pool: GpuPool) -> dict[str, str]:
    return {"key": CANARY_LABEL, "operator": "Equal", "value": pool.name, "effect": "NoSchedule"}


def canary_env(cfg: PlatformConfig, pool: GpuPool, env: dict[str, str]) -> dict[str, str]:
    """`env`, the self-test's for one node of `pool`, run as the pool's canary: the node-join
    check set, held to the pool's baseline, a report folder per pod (the run id is the pod's
    name, so the stack's config hash does not reach the pod template and re-run the canary on
    a change that leaves the nodes alone)."""
    kept = {k: v for k, v in env.items() if k not in NOT_CANARY_ENV}
    return {
        **kept,
        **history_env(cfg),
        SELFTEST_CHECKS: CHECKS,
        SELFTEST_RUN_ID: "$(POD_NAME)",
        SELFTEST_OUT: f"{SHARED_DATA_MOUNT_PATH}/selftest/canary/{pool.name}/$(POD_NAME)",
        SELFTEST_BASELINE_POOL: pool.name,
        SELFTEST_BASELINE_TOLERANCE: str(cfg.selftest.node_join.canary_tolerance),
        # DCGM's diagnostic at the level a new node of the pool gets.
        SELFTEST_DCGM_LEVEL: str(join_dcgm_level(cfg, pool.name)),
        # Where the baseline's recording rule is served, as the post-deploy run is told.
        SELFTEST_PROMETHEUS_URL: prometheus_service(cfg).url,
    }


def canary_spec(cfg: PlatformConfig, pool: GpuPool, env: dict[str, str]) -> TrainingJobSpec:
    return whole_node_spec(
        cfg,
        pool,
        job_name(pool.name),
        canary_env(cfg, pool, env),
        active_deadline_seconds=join_timeout_minutes(cfg, pool.name) * 60,
        labels={**PART_OF, CANARY_LABEL: pool.name},
        # No queue: the canary node is there for this Job alone, and Kueue leaves a Job without
        # its queue label to start at once.
        queue=None,
        # A FAIL exits non-zero: a verdict, which a retry on the same node would only repeat.
        backoff_limit=0,
    )


def canary_job(
    cfg: PlatformConfig, pool: GpuPool, env: dict[str, str], node_image: pulumi.Input[str]
) -> dict[str, Any]:
    """The pool's canary Job on its canary node only; `node_image` names the canary group's
    image (canary_node_image), so that a new image is a new Job."""
    body = job(canary_spec(cfg, pool, env))
    pod = body["spec"]["template"]
    pod["spec"]["nodeSelector"] = canary_node_selector(pool)
    pod["spec"]["tolerations"] = [dict(GPU_TOLERATION), canary_toleration(pool)]
    pod["metadata"].setdefault("annotations", {})[NODE_IMAGE_ANNOTATION] = node_image
    return body


def canary_node_image(
    template_version: pulumi.Input[Any],
    kubernetes_version: pulumi.Input[str],
    release_version: pulumi.Input[str],
) -> pulumi.Output[str]:
    """What a canary node boots: the launch template's version, the Kubernetes version and the
    EKS AMI release of the canary group."""
    return pulumi.Output.format(
        "launch-template {0}, kubernetes {1}, ami {2}",
        template_version,
        kubernetes_version,
        release_version,
    )


def up_wait_minutes(cfg: PlatformConfig, pool: str) -> int:
    """How long `pulumi up` waits for the canary: the autoscaler's node first
    (selftest.provisioning_minutes), then the check (the pool's join limit)."""
    return cfg.selftest.provisioning_minutes + join_timeout_minutes(cfg, pool)


# ------------------------------------------------------------------------------ component


@dataclass(frozen=True)
class CanaryArgs:
    context: StackContext
    cfg: PlatformConfig
    pool: GpuPool
    # The self-test's env for one node of the pool (components/selftest/job.pool_env).
    env: dict[str, str]
    # The pool's canary node group (components/data/gpu_node_group.py).
    node_group: aws.eks.NodeGroup
    # Everything the check needs on the node: GPU stack, storage, autoscaler, namespaces.
    after: Sequence[pulumi.Resource] = ()


class Canary(PlatformComponent):
    """One pool's canary Job; the pool's node group waits for `job`."""

    PLANE = "selftest"

    def __init__(self, name: str, args: CanaryArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        group = args.node_group
        image = canary_node_image(
            group.launch_template.apply(lambda t: t.version),
            group.version,
            group.release_version,
        )
        obj = canary_job(args.cfg, args.pool, args.env, image)
        # On a DRA pool the Job's pod claims the node's GPUs through a template of its own.
        claims = [
            KubernetesObject(
                object_resource_name(args.context.env, t),
                t,
                self.child(depends_on=list(args.after)),
            )
            for t in claim_templates(canary_spec(args.cfg, args.pool, args.env))
        ]
        wait = f"{up_wait_minutes(args.cfg, args.pool.name)}m"
        self.job = KubernetesObject(
            f"{args.context.env}-job-{obj['metadata']['name']}",
            obj,
            self.child(
                depends_on=[*args.after, group, *claims],
                custom_timeouts=pulumi.CustomTimeouts(create=wait, update=wait),
                # Its name is fixed, so the old Job goes before its replacement comes.
                delete_before_replace=True,
            ),
        )
        self.register_outputs({"job": obj["metadata"]["name"]})
