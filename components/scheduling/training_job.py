"""A distributed training job on one GPU pool, as a plain Kubernetes object: a JobSet
(kubernetes-sigs/jobset v0.12.0, `jobset.x-k8s.io/v1alpha2`) of one Indexed Job whose pods find
each other through the headless Service JobSet makes, and run the command under the platform's
launcher (contract/launch.py), which runs torchrun's agent.

- One pod per node: replicatedJob `trainer`, one replica, its Job Indexed with completions =
  parallelism = nodes. JobSet names each pod `<jobset>-trainer-0-<index>` and, with its default
  network (subdomain = the JobSet's name, DNS hostnames, not-ready addresses published: peers
  look index 0 up while the pods are still starting), index 0 resolves as
  `<jobset>-trainer-0-0.<jobset>` through the Service it creates itself (JobSet
  `api/jobset/v1alpha2/jobset_types.go`, `Network`; `pkg/controllers/jobset_controller.go`,
  `createHeadlessSvcIfNecessary`). MultiKueue copies only the JobSet to a worker, whose JobSet
  controller makes the Service there. torchrun's master is index 0 on port 29500 and each pod's
  node rank is its completion index.
- Restarts as a group (docs/training.md, "What the builder renders"): the Job fails at once
  (`backoffLimit: 0`) and its `podFailurePolicy` says why (components/scheduling/
  failure_policy.py): rule 0 an exit code no restart can fix (contract/exits.UNFIXABLE), rule 2
  a rank stopped by SIGTERM (143), a disrupted pod ignored (rule 1) so that the ranks it leaves
  decide; the JobSet's `failurePolicy` reads the rule index from the Job's failure message:
  unfixable fails the JobSet, preempted restarts it without counting, anything else (a rank
  failed, hung, lost its node) restarts every pod from the last checkpoint, up to
  `scheduling.jobs.max_restarts` times.
- Admitted through Kueue as one workload: the LocalQueue and WorkloadPriorityClass labels on
  the JobSet, created suspended, so that Kueue starts it once the whole job fits (Kueue's
  pkg/controller/constants: QueueLabel `kueue.x-k8s.io/queue-name`, WorkloadPriorityClassLabel
  `kueue.x-k8s.io/priority-class`); topology-aware placement on the replicatedJob's pod
  template (Kueue `pkg/controller/jobs/jobset/jobset_webhook.go`); `spec.managedBy` MultiKueue's
  on a bursting queue's job.
- Requests what the pool's nodes offer (components/gpu_operator.pool_report): GPUs, the
  fabric's devices (EFA or the RDMA resource), 2 MiB hugepages, memory, and whole CPU cores per
  GPU (the pool's `cpus_per_gpu`), every one with requests = limits: the Guaranteed QoS class,
  which the static CPU manager the GPU nodes run pins to CPUs of their own;
  a memory-backed /dev/shm for NCCL and data loaders; the storage plane's volumes; the pool's
  NCCL ConfigMap as environment; on RDMA pools the `rdma` Multus network.
- Claiming what DRA serves (components/scheduling/job_claims.py): its GPUs on a DRA pool, with
  no `nvidia.com/gpu` request there, and on an NVLink-domain pool (GB200 NVL72) a multi-node
  job's ComputeDomain, rendered beside the JobSet, whose IMEX channel every pod claims.
- Never on a quarantined node: every pod requires a node without the self-test's quarantine
  label, so a restarted group does not land on the node that failed it.
- Scraped when it serves metrics: a container port named `metrics` and the pod label
  `gpu-platform/metrics: training`, which the platform's one PodMonitor selects in every training
  namespace (components/observability.training_pod_monitor).
- Locked down to Pod Security `restricted`, the level every team namespace enforces by
  default: non-root, read-only root file system (writable /tmp as an emptyDir), no privilege
  escalation, every capability dropped, RuntimeDefault seccomp, no hostPath (the NVMe cache is
  an emptyDir; components/storage/volumes.py).

- On a schedule: `cron_job(spec, ...)` wraps the batch Job alone in a CronJob (the CronJob
  controller makes only Jobs). It names each Job it creates, so no pod can know a peer's name
  in advance: a scheduled job is one node, and torchrun's rendezvous stays on it
  (`--standalone`).

Everything here is pure: `render(spec)` returns the JobSet as a dict, validated in tests
against the JobSet CRD's schema and its pod template against Kubernetes'. `python -m jobs`
submits through it, a recipe's job and a team's own (docs/training.md).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from components.data.gpu_operator import shares_per_node
from components.data.nccl import configmap_name
from components.scheduling import launcher
from components.scheduling.failure_policy import failure_policy, pod_failure_policy
from components.scheduling.job_claims import (
    claim_templates,
    claims_gpus,
    compute_domain,
    pod_claims,
    uses_compute_domain,
)
from components.scheduling.job_spec import Preflight, TrainingJobSpec
from components.storage.volumes import (
    training_volume_mounts,
    training_volumes,
)
from components.vocabulary import (
    BATCH_API,
    COMPLETION_INDEX_LABEL,
    EFA_RESOURCE,
    GPU_RESOURCE,
    GPU_TOLERATION,
    JOBSET_API,
    METRICS_LABEL,
    METRICS_PORT_NAME,
    PRIORITY_LABEL,
    QUARANTINE_LABEL,
    QUEUE_LABEL,
    RDMA_NETWORK,
    TRAINING_POD_LABEL,
)
from contract import preflight as preflight_contract
from contract.env import (
    CPU_LIMIT_MILLICORES,
    CPU_REQUEST_MILLICORES,
    JOBSET_RESTART_ATTEMPT,
    MEMORY_LIMIT_MIB,
    MEMORY_REQUEST_MIB,
    NODE_NAME,
    POD_NAME,
    POD_NAMESPACE,
    TRAINING_JOB_NAME,
    TRAINING_JOB_POOL,
    TRAINING_JOB_QUEUE,
    TRAINING_JOB_TEAM,
    TRAINKIT_CHECKPOINT_DIR,
    TRAINKIT_HANG_CEILING_S,
    TRAINKIT_HANG_FACTOR,
    TRAINKIT_PUSHGATEWAY_URL,
)
from contract.launch import FLIGHT_RECORD_PREFIX
from contract.mounts import SHARED_DATA_MOUNT_PATH
from model.config.fabric import RDMA_FABRICS

MULTUS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"
# Where the image side serves a trainer's Prometheus metrics, on each pod's local rank 0: the
# recipes (recipes/metrics.py) and trainkit, which teams' own scripts use.
TRAINING_METRICS_PORT = 8000
# The image's non-root user (bootstrap/Dockerfile); any non-root uid works for other images.
RUN_AS = 1000
# The one replicatedJob; JobSet names its pods `<jobset>-<replicatedJob>-<job index>-<index>`.
REPLICATED_JOB = "trainer"
CONTAINER = "trainer"
# torchrun's default master port (torch.distributed.run, `--master-port`).
RENDEZVOUS_PORT = 29500
# The preflight's own rendezvous (its init container, preflight_container): a port of its own,
# so that a preflight agent still closing never holds the trainer's.
PREFLIGHT = "preflight"
PREFLIGHT_PORT = 29501
# The annotation the JobSet controller sets on every pod template to its `status.restarts`
# (JobSet pkg/constants/constants.go `RestartsKey`; jobset_controller.go labelAndAnnotateObject).
RESTART_ATTEMPT_KEY = "jobset.sigs.k8s.io/restart-attempt"
# Each job's NCCL flight records, `<namespace>/<job name>/` under it, unless it keeps them beside
# its checkpoints (flight_record_env).
FLIGHT_RECORDS = f"{SHARED_DATA_MOUNT_PATH}/flight-records"


def master_address(spec: TrainingJobSpec) -> str:
    """Index 0's name through the JobSet's headless Service: `<jobset>-trainer-0-0.<jobset>`
    (JobSet jobset_types.go, `Network`: pods resolve as
    `<jobSet.name>-<replicatedJob.name>-<job-index>-<pod-index>.<subdomain>`, the subdomain
    defaulting to the JobSet's name)."""
    return f"{spec.name}-{REPLICATED_JOB}-0-0.{spec.name}"


# Kubernetes API reference, PodSpec `terminationGracePeriodSeconds`: "Defaults to 30 seconds."
KUBERNETES_GRACE_PERIOD_SECONDS = 30
# Of the pod's grace period, what the launcher keeps for itself after its workers' time is up:
# torchrun's agent SIGKILLs the workers still running, reaps them and returns, and the launcher
# exits with the group's root cause (PREEMPTED) before the kubelet's SIGKILL, which would leave
# the pod 137 instead, a code the failure policy cannot tell from a crash.
SHUTDOWN_MARGIN_SECONDS = 10


def shutdown_timeout(spec: TrainingJobSpec) -> int:
    """How long torchrun's agent lets its workers stop after the pod's SIGTERM (a checkpoint on
    eviction): the pod's grace period less the launcher's margin. torch 2.13's own default is
    30 s whatever the pod's grace period (torch/distributed/launcher/api.py, LaunchConfig:
    `TORCH_ELASTIC_SHUTDOWN_TIMEOUT`, else "30"; torch/distributed/elastic/agent/server/api.py
    `_shutdown(e.sigval, timeout=self._shutdown_timeout)`, then SIGKILL)."""
    grace = spec.termination_grace_period_seconds
    grace = KUBERNETES_GRACE_PERIOD_SECONDS if grace is None else grace
    if grace <= SHUTDOWN_MARGIN_SECONDS:
        raise ValueError(
            f"{spec.name}: termination_grace_period_seconds {grace} leaves the workers no time "
            f"after SIGTERM: give more than {SHUTDOWN_MARGIN_SECONDS} (the launcher's own margin)"
        )
    return grace - SHUTDOWN_MARGIN_SECONDS


def launcher_command() -> list[str]:
    """The platform's launcher, which takes torchrun's flags, runs its agent with every worker
    wrapped, and exits with the group's root cause (contract/launch.py, contract/exits.py)."""
    return ["python", f"{launcher.MOUNT_PATH}/{launcher.SCRIPT}"]


def torchrun_args(spec: TrainingJobSpec) -> list[str]:
    """torchrun's static rendezvous on index 0; the node rank is the pod's completion index,
    which Kubernetes substitutes from the container's environment ($(VAR) expansion). A
    standalone job rendezvouses on its own node (torchrun docs, `--standalone`)."""
    shutdown = f"--shutdown-timeout={shutdown_timeout(spec)}"
    if spec.standalone:
        return [*launcher_command(), "--standalone", "--nnodes=1",
                f"--nproc-per-node={spec.gpus}", shutdown, *spec.command]  # fmt: skip
    return [
        *launcher_command(),
        f"--nnodes={spec.nodes}",
        f"--nproc-per-node={spec.gpus}",
        "--node-rank=$(JOB_COMPLETION_INDEX)",
        f"--master-addr={master_address(spec)}",
        f"--master-port={RENDEZVOUS_PORT}",
        shutdown,
        *spec.command,
    ]


def fabric_devices(spec: TrainingJobSpec) -> dict[str, int]:
    """EFA devices in the share of the node's GPUs the pod takes (all of them on a whole
    node), or one RDMA device: the shared device plugin hands every selected HCA to a pod that
    asks for one."""
    pool = spec.pool
    if pool.efa_interfaces:
        return {EFA_RESOURCE: max(1, pool.efa_interfaces * spec.gpus // pool.gpus_per_node)}
    if pool.fabric in RDMA_FABRICS and spec.rdma_resource:
        return {spec.rdma_resource: 1}
    return {}


def cpu_request(spec: TrainingJobSpec) -> str | None:
    """The pool's whole cores per GPU times the GPUs the pod takes: an integer, so that the
    static CPU manager gives a Guaranteed pod CPUs of its own ("Control CPU Management Policies
    on the Node": exclusive CPUs go only to Guaranteed pods' containers with integer CPU
    requests). A pod on shared GPUs (time-slicing, MPS, MIG) takes its slice's share of them
    in millicores: Guaranteed still, on the shared CPUs. None where the pool does not say."""
    per_gpu = spec.pool.cpus_per_gpu
    if per_gpu is None:
        return None
    per_slice = Fraction(per_gpu * spec.pool.gpus_per_node, shares_per_node(spec.pool))
    if per_slice.denominator == 1:
        return str(per_slice.numerator * spec.gpus)
    return f"{math.floor(1000 * per_slice * spec.gpus)}m"


def memory_mib(spec: TrainingJobSpec) -> int:
    """The pool's memory per GPU (its nodes' memory for pods shared out among their GPUs,
    GpuPool.memory_gib_per_gpu) times the GPUs the pod takes; on shared GPUs (time-slicing,
    MPS) per slice, as cpu_request shares out CPUs, so that every slice's pod fits the node."""
    pool = spec.pool
    per_slice = Fraction(pool.memory_gib_per_gpu * 1024 * pool.gpus_per_node, shares_per_node(pool))
    return math.floor(per_slice * spec.gpus)


def quantity_mib(mib: int) -> str:
    """MiB as Kubernetes writes it: in Gi where whole."""
    return f"{mib // 1024}Gi" if mib % 1024 == 0 else f"{mib}Mi"


def resources(spec: TrainingJobSpec) -> dict[str, Any]:
    """Requests equal to limits: the Guaranteed QoS class ("Configure Quality of Service for
    Pods": every container's CPU and memory requests equal their limits), which extended
    resources and hugepages require anyway. On a DRA pool the GPUs come through the pod's
    claim: a `nvidia.com/gpu` request there would ask the device plugin, which is off."""
    cpu = cpu_request(spec)
    wanted: dict[str, Any] = {
        **({"cpu": cpu} if cpu else {}),
        "memory": quantity_mib(memory_mib(spec)),
        **({} if claims_gpus(spec) else {GPU_RESOURCE: spec.gpus}),
        **fabric_devices(spec),
    }
    if spec.pool.hugepages_2mi and fabric_devices(spec):
        # The node's reserved pages in the pod's share of its GPUs, so that pods sharing a
        # node each fit: 2 MiB a page.
        pages = spec.pool.hugepages_2mi * spec.gpus // spec.pool.gpus_per_node
        wanted["hugepages-2Mi"] = f"{2 * pages}Mi"
    found: dict[str, Any] = {"requests": dict(wanted), "limits": dict(wanted)}
    if claims := pod_claims(spec):
        found["claims"] = [{"name": claim["name"]} for claim in claims]
    return found


def shm_volume(spec: TrainingJobSpec) -> dict[str, Any]:
    """/dev/shm in memory, half the pod's memory: NCCL's shared-memory transport and data
    loader workers use it, and the container runtime's 64 MiB default is far too small."""
    return {
        "name": "dshm",
        "emptyDir": {
            "medium": "Memory",
            "sizeLimit": quantity_mib(memory_mib(spec) // 2),
        },
    }


def security_context() -> dict[str, Any]:
    """Pod Security `restricted` (Kubernetes "Pod Security Standards"), on every pool. No
    IPC_LOCK on fabric pools: a capability added to a non-root container lands in its bounding
    set but not in its effective set (Kubernetes has no ambient capabilities), so it never let
    the trainer pin memory; it only made `baseline` refuse the pod. Verbs memory registration
    needs the node's memlock limit instead (issue 25 item 10)."""
    return {
        "runAsNonRoot": True,
        "runAsUser": RUN_AS,
        "runAsGroup": RUN_AS,
        "readOnlyRootFilesystem": True,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }


DOWNWARD_API_ENV = {
    NODE_NAME: "spec.nodeName",
    POD_NAME: "metadata.name",
    POD_NAMESPACE: "metadata.namespace",
}
# The container's own requests and limits (downward API `resourceFieldRef`, in the divisor's
# unit): what the self-test judges the QoS class by (bootstrap/selftest/inventory.py), and what
# a trainer sizes its data loader workers and threads by.
RESOURCE_ENV = {
    CPU_REQUEST_MILLICORES: ("requests.cpu", "1m"),
    CPU_LIMIT_MILLICORES: ("limits.cpu", "1m"),
    MEMORY_REQUEST_MIB: ("requests.memory", "1Mi"),
    MEMORY_LIMIT_MIB: ("limits.memory", "1Mi"),
}
# Who the job is, for the goodput figures trainkit pushes, and its watchdog's bounds.
JOB_ENV = (
    TRAINING_JOB_NAME,
    TRAINING_JOB_TEAM,
    TRAINING_JOB_QUEUE,
    TRAINING_JOB_POOL,
    TRAINKIT_PUSHGATEWAY_URL,
)
WATCHDOG_ENV = (TRAINKIT_HANG_FACTOR, TRAINKIT_HANG_CEILING_S)
# What torchrun would read for its workers' time after SIGTERM were the flag not given
# (torch 2.13 torch/distributed/run.py `--shutdown-timeout`, `action=env`: PET_SHUTDOWN_TIMEOUT;
# launcher/api.py: TORCH_ELASTIC_SHUTDOWN_TIMEOUT): the rendered flag wins, so a job's own value
# would be ignored without a word.
SHUTDOWN_TIMEOUT_ENV = ("PET_SHUTDOWN_TIMEOUT", "TORCH_ELASTIC_SHUTDOWN_TIMEOUT")
# Every variable `container` sets itself, and those its rendered flags override: a job's own
# `env` must not name them.
RESERVED_ENV = (
    "JOB_COMPLETION_INDEX",
    JOBSET_RESTART_ATTEMPT,
    *DOWNWARD_API_ENV,
    *RESOURCE_ENV,
    "HOME",
    *JOB_ENV,
    *WATCHDOG_ENV,
    *SHUTDOWN_TIMEOUT_ENV,
)
# What the preflight reads of the trainer's environment: where it runs, its node rank, the
# container's limits (inventory.cpu_pinning judges them) and a writable HOME.
PREFLIGHT_INHERITED_ENV = ("JOB_COMPLETION_INDEX", *DOWNWARD_API_ENV, *RESOURCE_ENV, "HOME")


def job_env(spec: TrainingJobSpec) -> dict[str, str]:
    """The job's identity (its team is its namespace: each team's own, jobs/team.py) and the
    watchdog's bounds (scheduling.jobs); the queue and the Pushgateway only where there are."""
    env = {
        TRAINING_JOB_NAME: spec.name,
        TRAINING_JOB_TEAM: spec.namespace,
        TRAINING_JOB_POOL: spec.pool.name,
    }
    if spec.queue:
        env[TRAINING_JOB_QUEUE] = spec.queue
    if spec.pushgateway_url:
        env[TRAINKIT_PUSHGATEWAY_URL] = spec.pushgateway_url
    env[TRAINKIT_HANG_FACTOR] = str(spec.jobs.hang_factor)
    env[TRAINKIT_HANG_CEILING_S] = str(spec.jobs.hang_ceiling_seconds)
    return env


def flight_record_env(spec: TrainingJobSpec) -> dict[str, str]:
    """Where each rank's NCCL flight record goes (contract/launch.FLIGHT_RECORD_PREFIX, which the
    launcher makes the folder of): a folder of the job's own on shared-data, which outlives the
    pod, instead of torch's default under $HOME (/tmp, an emptyDir lost with the pod). A job
    with a checkpoint folder keeps it where trainkit puts it (bootstrap/trainkit/process.py:
    `<TRAINKIT_CHECKPOINT_DIR>/hangs/nccl-trace-rank-`); a job's own setting stays."""
    if any(name in spec.env for name in FLIGHT_RECORD_PREFIX):
        return {}
    folder = spec.env.get(TRAINKIT_CHECKPOINT_DIR)
    folder = f"{folder}/hangs" if folder else f"{FLIGHT_RECORDS}/{spec.namespace}/{spec.name}"
    return {FLIGHT_RECORD_PREFIX[0]: f"{folder}/nccl-trace-rank-"}


def container(spec: TrainingJobSpec) -> dict[str, Any]:
    env = [
        {
            "name": "JOB_COMPLETION_INDEX",
            "valueFrom": {
                "fieldRef": {"fieldPath": f"metadata.labels['{COMPLETION_INDEX_LABEL}']"}
            },
        },
        # Who and where the pod is, for metrics and logs that name it (downward API).
        *(
            {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}
            for name, path in DOWNWARD_API_ENV.items()
        ),
        *(
            {
                "name": name,
                "valueFrom": {"resourceFieldRef": {"resource": field, "divisor": divisor}},
            }
            for name, (field, divisor) in RESOURCE_ENV.items()
        ),
        # How many times the group was restarted; a CronJob's Job has no such annotation, and
        # an absent one reads as "" (Kubernetes docs, "Downward API").
        {
            "name": JOBSET_RESTART_ATTEMPT,
            "valueFrom": {
                "fieldRef": {"fieldPath": f"metadata.annotations['{RESTART_ATTEMPT_KEY}']"}
            },
        },
        # A read-only root: caches (torch, triton, matplotlib) go under the writable /tmp.
        {"name": "HOME", "value": "/tmp"},
        *({"name": k, "value": v} for k, v in job_env(spec).items()),
        *({"name": k, "value": v} for k, v in flight_record_env(spec).items()),
        *({"name": k, "value": v} for k, v in sorted(spec.env.items())),
    ]
    return {
        "name": CONTAINER,
        "image": spec.image,
        "command": torchrun_args(spec),
        "env": env,
        "envFrom": [{"configMapRef": {"name": configmap_name(spec.pool)}}],
        **({"ports": ports(spec)} if ports(spec) else {}),
        "resources": resources(spec),
        "securityContext": security_context(),
        "volumeMounts": [
            *training_volume_mounts(),
            {"name": "dshm", "mountPath": "/dev/shm"},
            {"name": "tmp", "mountPath": "/tmp"},
            {"name": launcher.CONFIGMAP, "mountPath": launcher.MOUNT_PATH, "readOnly": True},
            *spec.extra_mounts,
        ],
    }


def preflight_container(spec: TrainingJobSpec, preflight: Preflight) -> dict[str, Any]:
    """Before the trainer starts, on every start of the group (a new job or a restarted one):
    the self-test's preflight across all of the job's pods, through their own rendezvous on
    index 0 (the JobSet publishes the pods' names before they are ready), with the trainer's
    GPUs, fabric devices, NCCL settings and limits. An init container holds the devices the
    trainer then gets (the kubelet's device manager reuses an init container's devices for the
    app containers), and the pod requests the larger of the two, so it asks for nothing more.
    A failing node exits 1 naming itself: the pod fails before any rank trains, and the JobSet
    restarts the group as for any failed rank."""
    trainer = container(spec)
    return {
        "name": preflight_contract.CONTAINER,
        "image": preflight.image,
        "command": [
            "torchrun",
            f"--nnodes={spec.nodes}",
            f"--nproc-per-node={spec.gpus}",
            "--node-rank=$(JOB_COMPLETION_INDEX)",
            f"--master-addr={master_address(spec)}",
            f"--master-port={PREFLIGHT_PORT}",
            *("-m", "selftest", "--checks", PREFLIGHT),
        ],
        "env": [
            *(e for e in trainer["env"] if e["name"] in PREFLIGHT_INHERITED_ENV),
            *({"name": k, "value": v} for k, v in sorted(preflight.env.items())),
        ],
        "envFrom": trainer["envFrom"],
        "resources": trainer["resources"],
        "securityContext": trainer["securityContext"],
        "volumeMounts": [
            {"name": "dshm", "mountPath": "/dev/shm"},
            {"name": "tmp", "mountPath": "/tmp"},
        ],
    }


def launcher_volume() -> dict[str, Any]:
    """The launcher's ConfigMap (components/scheduling/launcher.py) as its files: a ConfigMap
    key cannot hold a `/`, so each item names the path it is read at."""
    return {
        "name": launcher.CONFIGMAP,
        "configMap": {
            "name": launcher.CONFIGMAP,
            "items": [{"key": key, "path": path} for key, path in launcher.ITEMS.items()],
        },
    }


def quarantine_affinity() -> dict[str, Any]:
    """Only nodes the self-test has not quarantined (components/selftest/access.py labels a
    failing node): a restarted group never lands again on the node that failed it."""
    term = {"matchExpressions": [{"key": QUARANTINE_LABEL, "operator": "DoesNotExist"}]}
    return {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [term]
        }}
    }  # fmt: skip


def ports(spec: TrainingJobSpec) -> list[dict[str, Any]]:
    found = [] if spec.standalone else [{"name": "rendezvous", "containerPort": RENDEZVOUS_PORT}]
    if spec.metrics_port is not None:
        found.append({"name": METRICS_PORT_NAME, "containerPort": spec.metrics_port})
    return found


def pod_labels(spec: TrainingJobSpec) -> dict[str, str]:
    labels = dict(spec.labels)
    labels.update([TRAINING_POD_LABEL])
    if spec.metrics_port is not None:
        labels.update(METRICS_LABEL)
    if runs_preflight(spec):
        # The platform's quarantine watcher finds failed preflights by it (selftest/watch.py).
        labels.update([preflight_contract.POD_LABEL])
    return labels


def runs_preflight(spec: TrainingJobSpec) -> bool:
    return spec.preflight is not None and not spec.standalone and spec.nodes > 1


def pod_annotations(spec: TrainingJobSpec) -> dict[str, str]:
    found = dict(spec.placement)
    if spec.pool.fabric in RDMA_FABRICS:
        found[MULTUS_ANNOTATION] = RDMA_NETWORK
    return found


def pod_template(spec: TrainingJobSpec) -> dict[str, Any]:
    pod: dict[str, Any] = {
        "restartPolicy": "Never",
        "nodeSelector": dict(spec.pool.node_selector),
        "affinity": quarantine_affinity(),
        "tolerations": [dict(GPU_TOLERATION)],
        "securityContext": {"fsGroup": RUN_AS, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [container(spec)],
        **(
            {"initContainers": [preflight_container(spec, spec.preflight)]}
            if spec.preflight and runs_preflight(spec)
            else {}
        ),
        "volumes": [
            *training_volumes(spec.cache, spec.shared_data_claim),
            shm_volume(spec),
            {"name": "tmp", "emptyDir": {}},
            launcher_volume(),
            *spec.extra_volumes,
        ],
    }
    if claims := pod_claims(spec):
        pod["resourceClaims"] = claims
    if spec.service_account:
        pod["serviceAccountName"] = spec.service_account
    if spec.priority_class:
        pod["priorityClassName"] = spec.priority_class
    if spec.termination_grace_period_seconds is not None:
        pod["terminationGracePeriodSeconds"] = spec.termination_grace_period_seconds
    meta: dict[str, Any] = {"labels": pod_labels(spec)}
    if pod_annotations(spec):
        meta["annotations"] = pod_annotations(spec)
    return {"metadata": meta, "spec": pod}


def job_labels(spec: TrainingJobSpec) -> dict[str, str]:
    labels = dict(spec.labels)
    if spec.queue:
        labels[QUEUE_LABEL] = spec.queue
        if spec.priority_class:
            labels[PRIORITY_LABEL] = spec.priority_class
    return labels


def job_spec(spec: TrainingJobSpec) -> dict[str, Any]:
    """The Indexed Job's spec, one pod per node, failing at its first failed pod."""
    body: dict[str, Any] = {
        "completionMode": "Indexed",
        "completions": spec.nodes,
        "parallelism": spec.nodes,
        "backoffLimit": spec.backoff_limit,
        "podFailurePolicy": pod_failure_policy(CONTAINER),
        "template": pod_template(spec),
    }
    if spec.active_deadline_seconds:
        body["activeDeadlineSeconds"] = spec.active_deadline_seconds
    return body


def job(spec: TrainingJobSpec) -> dict[str, Any]:
    """The batch Job alone, as a CronJob's template (components/scheduling/cron_jobs.py). No
    JobSet restarts it: the same pod rules recreate a disrupted pod without spending the
    backoff limit (Kubernetes docs, "Pod failure policy"), and any other failure fails it."""
    body = job_spec(spec)
    # Kueue unsuspends it once admitted; without a queue it starts at once.
    body["suspend"] = spec.queue is not None
    if spec.managed_by:
        body["managedBy"] = spec.managed_by
    return {"apiVersion": BATCH_API, "kind": "Job", "metadata": object_meta(spec), "spec": body}


def jobset(spec: TrainingJobSpec) -> dict[str, Any]:
    if spec.standalone:
        raise ValueError(f"{spec.name}: a standalone job is a CronJob's (cron_jobs.cron_job)")
    body: dict[str, Any] = {
        "replicatedJobs": [
            {
                "name": REPLICATED_JOB,
                "replicas": 1,
                "template": {"spec": job_spec(spec)},
            }
        ],
        # JobSet's defaults, spelled out: pods resolve by hostname under the JobSet's name, and
        # before they are ready (every rank looks index 0 up while the pods start).
        "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True},
        "failurePolicy": failure_policy(spec.jobs.max_restarts, REPLICATED_JOB),
        # Kueue unsuspends it once admitted; without a queue it starts at once.
        "suspend": spec.queue is not None,
    }
    if spec.managed_by:
        body["managedBy"] = spec.managed_by
    return {"apiVersion": JOBSET_API, "kind": "JobSet", "metadata": object_meta(spec), "spec": body}


def object_meta(spec: TrainingJobSpec) -> dict[str, Any]:
    """The submitted object's metadata, a CronJob's Job or a JobSet: where Kueue reads the
    queue and the priority class."""
    meta: dict[str, Any] = {
        "name": spec.name,
        "namespace": spec.namespace,
        "labels": job_labels(spec),
    }
    if spec.annotations:
        meta["annotations"] = dict(spec.annotations)
    return meta


def render(spec: TrainingJobSpec) -> list[dict[str, Any]]:
    """What a submitter applies: the JobSet, after the claim template of its own it needs on a
    DRA pool (`jobs submit` makes the JobSet its owner once applied, jobs/submission.py, so it
    goes with the job), and its ComputeDomain on an NVLink-domain pool. Everything else its pods
    name exists in its namespace on every cluster it may run on, the launcher's ConfigMap among
    them; JobSet makes the headless Service and the ComputeDomain's controller the channel's
    claim template (tests/controllers/references.py)."""
    return [
        *claim_templates(spec),
        jobset(spec),
        *([compute_domain(spec)] if uses_compute_domain(spec) else []),
    ]
