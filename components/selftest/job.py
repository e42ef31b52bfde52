"""The post-deploy self-test: the bootstrap image (bootstrap/Dockerfile) run as a distributed
job (components/scheduling/training_job.py) on N nodes of one GPU pool, after everything it tests.

How `pulumi up` waits (selftest.mode):
- `block`: pulumi-kubernetes awaits the JobSet until its `Completed` condition
  (`pulumi.com/waitFor: condition=Completed`, pulumi-kubernetes provider/pkg/metadata/
  overrides.go ReadyCondition; JobSet's success condition, api/jobset/v1alpha2/jobset_types.go
  `JobSetCompleted`); its timeout is the resource's custom create timeout. That clock starts at
  creation, while the Job's own (activeDeadlineSeconds, selftest.timeout_minutes) starts when
  Kueue admits it, after queueing and node provisioning: up waits
  selftest.provisioning_minutes longer. A FAIL in the report exits non-zero, the JobSet fails,
  and `pulumi up` fails once it has waited out its timeout (a condition to wait for has no
  failure to stop at).
- `warn`: `pulumi.com/skipAwait: "true"`; the update goes on and the plan warns that nobody
  waits for the result.

A new run per change: the Job's name carries a hash of the whole stack config and of the Job
itself, so any change to the platform or to the self-test replaces the Job (create the new one,
delete the old), and an unchanged deploy keeps the last run and its result. No
`replace_on_changes` is needed; the name is the run id the report is filed under
(`/mnt/shared-data/selftest/<run_id>/`).

On AWS a private ECR repository (scan on push, immutable tags, KMS encryption) holds the
image; the program does not build it: the digest comes from config (`selftest.image`), so a
deploy never depends on a local Docker daemon.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from components.base import PlatformComponent, plane_labels
from components.context import StackContext
from components.data.gpu_operator import dcgm_exporter_url, dcgm_hostengine
from components.ecr import repository_args
from components.kubernetes_object import KubernetesObject, object_resource_name
from components.registry_mirror import image_route, mirrored
from components.scheduling.job_claims import claim_templates
from components.scheduling.job_spec import TrainingJobSpec, spec_for_pool
from components.scheduling.reservation import reservation_objects
from components.scheduling.training_job import render
from components.selftest.access import access_all, access_env, account
from components.selftest.node_join import node_join_objects
from components.selftest.prepull import prepull_objects
from components.selftest.reclaim import reclaimer_objects
from components.selftest.schedule import (
    IDLE_QUEUE,
    cron_job_name,
    cron_jobs,
    history_env,
    idle_nodes_only,
    idle_priority_objects,
    idle_queue_objects,
    schedule_spec,
)
from components.vocabulary import prometheus_service, pushgateway_url
from contract.env import (
    SELFTEST_AUTOSCALER_METRIC,
    SELFTEST_DCGM_HOSTENGINE,
    SELFTEST_DCGM_URL,
    SELFTEST_EXPECTED_FABRIC_DEVICES,
    SELFTEST_EXPECTED_GPUS,
    SELFTEST_FABRIC,
    SELFTEST_FLOOR_SOURCES,
    SELFTEST_FLOORS,
    SELFTEST_IMAGE,
    SELFTEST_INSTANCE_TYPE,
    SELFTEST_NVME_CACHE,
    SELFTEST_OUT,
    SELFTEST_PROMETHEUS_URL,
    SELFTEST_RUN_ID,
    SELFTEST_SHARED_DATA,
)
from contract.mounts import NVME_CACHE_MOUNT_PATH, SHARED_DATA_MOUNT_PATH
from model.config import GpuPool, PlatformConfig
from model.config.fabric import RDMA_FABRICS
from model.config.selftest import floors, selftest_pool
from model.config.selftest_schedule import scheduled, scheduled_pools
from model.warning_kinds import warning

PART_OF = plane_labels("selftest")
SKIP_AWAIT = "pulumi.com/skipAwait"
WAIT_FOR = "pulumi.com/waitFor"
COMPLETED = "condition=Completed"

# --------------------------------------------------------------------------- pure builders


def run_id(cfg: PlatformConfig) -> str:
    """Ten hex digits of the stack's whole config: the same inputs, the same run."""
    return hashlib.sha256(cfg.model_dump_json().encode()).hexdigest()[:10]


def fabric_devices(cfg: PlatformConfig, pool: GpuPool | None = None) -> int:
    """The fabric devices a self-test pod should see: the node's EFA interfaces, or on RDMA
    pools the HCAs NCCL is told to use (fabric.hca_names); 0 on TCP pools."""
    pool = pool or selftest_pool(cfg)
    if pool.efa_interfaces:
        return pool.efa_interfaces
    if pool.fabric in RDMA_FABRICS and cfg.fabric is not None:
        return len(cfg.fabric.hca_names)
    return 0


def selftest_env(
    cfg: PlatformConfig, run: str, pool: GpuPool | None = None, nodes: int | None = None
) -> dict[str, str]:
    """What the self-test reads (bootstrap/selftest): where it writes, what the pool promises,
    the floors and where each comes from, for a run on `nodes` whole nodes of `pool` (default:
    the post-deploy run's). NCCL_DEBUG=INFO lets it find a fallback to sockets in NCCL's own
    log. Where the history is kept and where to push; which node labels to report and whether
    to cordon (components/selftest/access.py)."""
    settings = cfg.selftest
    if pool is None:
        pool, nodes, gpus = selftest_pool(cfg), settings.nodes, settings.gpus_per_node
    else:
        gpus = None
    table = floors(cfg, pool, nodes)
    env = {
        SELFTEST_RUN_ID: run,
        # The image the pod runs, from the mirror where there is one: what the report names.
        SELFTEST_IMAGE: mirrored(settings.image, image_route(cfg)) or "",
        SELFTEST_OUT: f"{SHARED_DATA_MOUNT_PATH}/selftest/{run}",
        SELFTEST_SHARED_DATA: SHARED_DATA_MOUNT_PATH,
        SELFTEST_NVME_CACHE: NVME_CACHE_MOUNT_PATH,
        "SELFTEST_NODES": str(nodes),
        SELFTEST_EXPECTED_GPUS: str(gpus or pool.gpus_per_node),
        SELFTEST_FABRIC: pool.fabric,
        SELFTEST_EXPECTED_FABRIC_DEVICES: str(fabric_devices(cfg, pool)),
        SELFTEST_FLOORS: json.dumps({k: v for k, (v, _) in table.items()}, sort_keys=True),
        SELFTEST_FLOOR_SOURCES: json.dumps({k: s for k, (_, s) in table.items()}, sort_keys=True),
        "NCCL_DEBUG": "INFO",
        SELFTEST_DCGM_URL: dcgm_exporter_url(cfg.gpu_operator.namespace),
        # Every run of the hardware group asks its own node's engine for DCGM's diagnostic.
        SELFTEST_DCGM_HOSTENGINE: dcgm_hostengine(cfg.gpu_operator.namespace),
    }
    if cfg.workload_autoscaling.gpu:
        # The GPU autoscalers' metric must be served for the self-test's own pods too.
        env[SELFTEST_PROMETHEUS_URL] = prometheus_service(cfg).url
        env[SELFTEST_AUTOSCALER_METRIC] = "true"
    if pool.instance_types:
        env[SELFTEST_INSTANCE_TYPE] = pool.instance_types[0]
    if scheduled(cfg):
        env.update(history_env(cfg))
    env.update(access_env(cfg, pool))
    return env


def pool_env(cfg: PlatformConfig, pool_name: str) -> dict[str, str]:
    """The self-test's environment for a scheduled run on one node of a pool."""
    pool = next(p for p in cfg.gpu_pools if p.name == pool_name)
    return selftest_env(cfg, run_id(cfg), pool, nodes=1)


def selftest_spec(cfg: PlatformConfig) -> TrainingJobSpec:
    settings, pool = cfg.selftest, selftest_pool(cfg)
    run = run_id(cfg)
    warn = settings.resolved_mode(cfg.production) == "warn"
    annotations = {SKIP_AWAIT: "true"} if warn else {WAIT_FOR: COMPLETED}
    return spec_for_pool(
        cfg,
        pool.name,
        name=f"selftest-{run}",
        image=mirrored(settings.image, image_route(cfg)),
        command=["-m", "selftest"],
        nodes=settings.nodes,
        gpus_per_node=settings.gpus_per_node,
        queue=settings.queue if cfg.scheduling.enabled else None,
        priority_class=settings.priority_class if cfg.scheduling.enabled else None,
        env=selftest_env(cfg, run),
        active_deadline_seconds=settings.timeout_minutes * 60,
        labels={**PART_OF, "gpu-platform/selftest-run": run},
        annotations=annotations,
        service_account=account(cfg),
        namespace=cfg.namespaces.selftest,
        # A FAIL exits non-zero: a verdict, not a fault that a restart fixes. Only a group
        # stopped on SIGTERM (143) restarts the run, without counting (failure_policy.py).
        jobs=cfg.scheduling.jobs.model_copy(update={"max_restarts": 0}),
    )


def selftest_report(cfg: PlatformConfig) -> dict[str, Any]:
    """The plan's summary: what runs where, how up waits, and the floors."""
    mode = cfg.selftest.resolved_mode(cfg.production)
    schedule = schedule_report(cfg)
    if mode == "off":
        return {"mode": "off", **schedule}
    spec = selftest_spec(cfg)
    return {
        **schedule,
        "mode": mode,
        "job": f"{spec.namespace}/{spec.name}",
        "pool": spec.pool.name,
        "nodes": spec.nodes,
        "gpus_per_node": spec.gpus,
        "report": spec.env[SELFTEST_OUT],
        "up_waits_minutes": cfg.selftest.up_wait_minutes,
        "floors": {k: {"value": v, "source": s} for k, (v, s) in floors(cfg).items()},
    }


def schedule_report(cfg: PlatformConfig) -> dict[str, Any]:
    """The plan's summary of the periodic runs: when, where, and where their history goes."""
    if not scheduled(cfg):
        return {}
    settings = cfg.selftest
    return {
        "schedule": {
            "cron": f"{settings.schedule.cron} (UTC)",
            "checks": settings.schedule.checks,
            "cron_jobs": [
                f"{cfg.namespaces.selftest}/{cron_job_name(p)}" for p in scheduled_pools(cfg)
            ],
            "pushgateway": pushgateway_url(cfg.namespaces.monitoring),
            "cordon_on_fail": settings.cordon_on_fail,
            "nodes": (
                f"only nodes already up and idle (ClusterQueue and PriorityClass {IDLE_QUEUE})"
                if idle_nodes_only(cfg)
                else "may start a node where none is idle (priced in the cost estimate)"
                if cfg.selftest.schedule.provision_nodes
                else "the nodes that are up"
            ),
        }
    }


def is_example_image(image: str | None) -> bool:
    """The shipped stacks' stand-in digest, which no registry serves."""
    return image is not None and image.endswith("@sha256:" + "0" * 64)


def repository_name(env: str) -> str:
    return f"gpu-platform-{env}-selftest"


# ------------------------------------------------------------------------------ component


@dataclass(frozen=True)
class SelfTestArgs:
    context: StackContext
    cfg: PlatformConfig
    # Everything the self-test tests: GPU Operator, storage, fabric, NCCL settings, Kueue, and
    # the launcher's ConfigMap its pods run.
    after: Sequence[pulumi.Resource] = ()
    # On AWS: the provider of the ECR repository; None on an existing cluster.
    aws_provider: pulumi.ProviderResource | None = None


class SelfTest(PlatformComponent):
    """The image's repository on AWS, and the JobSet (its peers meet through the headless
    Service JobSet makes, components/scheduling/training_job.py)."""

    PLANE = "selftest"

    def __init__(self, name: str, args: SelfTestArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        cfg, env = args.cfg, args.context.env
        # Stack outputs: the plan's summary of the self-test, and on AWS where to push its image.
        self.outputs = {"selftest": selftest_report(cfg)}
        job_name: dict[str, str] = {}
        if args.aws_provider is not None:
            repository = aws.ecr.Repository(
                f"{env}-selftest-repository",
                repository_args(repository_name(env), protect=args.context.protect),
                # Its name is fixed: a replacement created first would collide on it.
                self.child(provider=args.aws_provider, delete_before_replace=True),
            )
            self.outputs["selftest_repository_url"] = repository.repository_url
        # The account the runs use, before any run (its RBAC: components/selftest/access.py).
        access = [
            KubernetesObject(
                # A RoleBinding has the same name in each team namespace it is in.
                object_resource_name(env, obj)
                + (f"-{obj['metadata']['namespace']}" if obj["kind"] == "RoleBinding" else ""),
                obj,
                self.child(depends_on=list(args.after)),
            )
            for obj in [*access_all(cfg), *reclaimer_objects(cfg), *reservation_objects(cfg)]
        ]
        # New GPU nodes are tested before any job lands there (components/selftest/node_join.py)
        # and pull the stack's training images meanwhile (components/selftest/prepull.py).
        for obj in [
            *node_join_objects(cfg, lambda pool: pool_env(cfg, pool)),
            *prepull_objects(cfg),
        ]:
            KubernetesObject(
                object_resource_name(env, obj),
                obj,
                self.child(depends_on=list(args.after)),
            )
        history = (
            self._history(cfg, args.context, list(args.after), access) if scheduled(cfg) else []
        )
        mode = cfg.selftest.resolved_mode(cfg.production)
        if mode != "off" and is_example_image(cfg.selftest.image):
            pulumi.warn(
                warning(
                    "selftest-example-image",
                    f"selftest.image {cfg.selftest.image} has the all-zero EXAMPLE digest: push "
                    "bootstrap/Dockerfile and give its digest, or the Job cannot pull its image",
                )
            )
        if mode != "off":
            if mode == "warn":
                pulumi.warn(
                    warning(
                        "selftest-mode-warn",
                        "selftest.mode is warn: the self-test Job runs, but pulumi up does not "
                        "wait for it; read its report under /mnt/shared-data/selftest/ or its log",
                    )
                )
            objects = render(selftest_spec(cfg))
            (job,) = [obj for obj in objects if obj["kind"] == "JobSet"]
            # A DRA pool's claim template, which the run's pods name, and on an NVLink pool its
            # ComputeDomain, whose controller makes the channel's claim template (the run's
            # all-reduce across nodes goes over NVLink only inside one): there before the run.
            before = [
                KubernetesObject(
                    object_resource_name(env, obj)
                    if obj["kind"] == "ResourceClaimTemplate"
                    else f"{env}-selftest-{obj['kind'].lower()}",
                    obj,
                    self.child(depends_on=[*args.after, *access]),
                )
                for obj in objects
                if obj is not job
            ]
            timeout = f"{cfg.selftest.up_wait_minutes}m"
            KubernetesObject(
                f"{env}-selftest-job",
                job,
                self.child(
                    depends_on=[*args.after, *access, *history, *before],
                    custom_timeouts=pulumi.CustomTimeouts(create=timeout, update=timeout),
                ),
            )
            job_name["job"] = job["metadata"]["name"]
        self.register_outputs({**self.outputs, **job_name})

    def _history(
        self,
        cfg: PlatformConfig,
        context: StackContext,
        after: list[pulumi.Resource],
        access: list[pulumi.Resource],
    ) -> list[pulumi.Resource]:
        """A CronJob per pool, after the runs' account and everything the self-test tests (the
        stack's Pushgateway among it); returns what a run needs before it starts."""
        env = context.env
        needed: list[pulumi.Resource] = []
        # Where runs on idle nodes only wait, and at which priority (components/selftest_schedule).
        for obj in [*idle_priority_objects(cfg), *idle_queue_objects(cfg)]:
            meta = obj["metadata"]
            where = f"{meta['namespace']}-" if "namespace" in meta else ""
            needed.append(
                KubernetesObject(
                    f"{env}-{obj['kind'].lower()}-{where}{meta['name']}",
                    obj,
                    self.child(depends_on=after),
                )
            )
        # A scheduled run on a DRA pool claims its GPUs through a template of the CronJob's.
        for pool in scheduled_pools(cfg):
            for obj in claim_templates(schedule_spec(cfg, pool, pool_env(cfg, pool))):
                needed.append(
                    KubernetesObject(
                        object_resource_name(env, obj),
                        obj,
                        self.child(depends_on=after),
                    )
                )
        for obj in cron_jobs(cfg, lambda pool: pool_env(cfg, pool)):
            KubernetesObject(
                f"{env}-cronjob-{obj['metadata']['name']}",
                obj,
                self.child(depends_on=[*after, *access, *needed]),
            )
        return needed
