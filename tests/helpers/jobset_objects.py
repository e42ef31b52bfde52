"""Literal documents a cluster and its Prometheus answer about a job, for `python -m jobs`' tests.

JobSet status: kubernetes-sigs/jobset v0.12.0, api/jobset/v1alpha2/jobset_types.go (JobSetStatus:
`conditions`, `restarts`, `restartsCountTowardsMax`, `terminalState`, `replicatedJobsStatus`)
with the reasons and messages the controller writes (pkg/constants/constants.go:
`AllJobsCompleted` "jobset completed successfully", `ReachedMaxRestarts` "jobset failed due to
reaching max number of restarts", `FailJobSetFailurePolicyAction` "applying FailJobSet failure
policy action", `SuspendedJobs` "jobset is suspended", `ResumeJobs` "jobset is resumed"; the
"(first failed job: <name>)" suffix is pkg/controllers/failure_policy.go
messageWithFirstFailedJob). Conditions are metav1.Condition.

Prometheus: the HTTP API's instant query answer (prometheus.io/docs/prometheus/latest/querying/
api/, "Expression queries" and "Instant vectors").
"""

from __future__ import annotations

import copy
import json
from typing import Any

T0 = "2026-12-01T21:04:11Z"
T1 = "2026-12-01T23:40:52Z"


def condition(kind: str, status: str, reason: str, message: str, at: str = T1) -> dict[str, str]:
    return {
        "type": kind,
        "status": status,
        "lastTransitionTime": at,
        "reason": reason,
        "message": message,
    }


def trainer_status(**counts: int) -> list[dict[str, Any]]:
    zero = {"ready": 0, "succeeded": 0, "failed": 0, "active": 0, "suspended": 0}
    return [{"name": "trainer", **zero, **counts}]


RESUMED = condition("Suspended", "False", "ResumeJobs", "jobset is resumed", T0)

# What each state looks like, as the JobSet controller leaves it.
STATUSES: dict[str, dict[str, Any]] = {
    "running": {
        "conditions": [RESUMED],
        "restarts": 0,
        "replicatedJobsStatus": trainer_status(ready=1, active=1),
    },
    # Restarted twice, once for a disruption (RestartJobSetAndIgnoreMaxRestarts), once for a
    # rank's failure (RestartJobSet): only that one counts toward maxRestarts.
    "restarting": {
        "conditions": [RESUMED],
        "restarts": 2,
        "restartsCountTowardsMax": 1,
        "replicatedJobsStatus": trainer_status(active=1),
    },
    "failed": {
        "conditions": [
            RESUMED,
            condition(
                "Failed",
                "True",
                "ReachedMaxRestarts",
                "jobset failed due to reaching max number of restarts (first failed job: "
                "ft-trainer-0)",
            ),
        ],
        "restarts": 3,
        "restartsCountTowardsMax": 3,
        "terminalState": "Failed",
        "replicatedJobsStatus": trainer_status(failed=1),
    },
    "succeeded": {
        "conditions": [
            RESUMED,
            condition("Completed", "True", "AllJobsCompleted", "jobset completed successfully"),
        ],
        "restarts": 1,
        "restartsCountTowardsMax": 0,
        "terminalState": "Completed",
        "replicatedJobsStatus": trainer_status(succeeded=1),
    },
    # Kueue's webhook created it suspended; not admitted yet.
    "queued": {
        "conditions": [condition("Suspended", "True", "SuspendedJobs", "jobset is suspended", T0)],
        "restarts": 0,
        "replicatedJobsStatus": trainer_status(suspended=1),
    },
}
# Kueue clears spec.suspend on admission; a queued one still holds it.
SUSPENDED = {"queued": True}


def live(rendered: dict[str, Any], phase: str, applied: dict[str, Any] | None = None) -> dict:
    """`rendered` as the API server returns it after `kubectl apply` of `applied` (default:
    `rendered` itself): kubectl's last-applied annotation, server metadata, the state's status."""
    obj = copy.deepcopy(rendered)
    meta = obj["metadata"]
    meta.setdefault("annotations", {})["kubectl.kubernetes.io/last-applied-configuration"] = (
        json.dumps(applied or rendered, separators=(",", ":"))
    )
    meta.update(
        uid="7c1e5a0e-5d1f-4b8e-9a57-1f2b3c4d5e6f",
        resourceVersion="48213",
        generation=1,
        creationTimestamp=T0,
    )
    obj["spec"]["suspend"] = SUSPENDED.get(phase, False)
    obj["status"] = copy.deepcopy(STATUSES[phase])
    return obj


# A JobSet as the builder renders the platform's (components/scheduling/training_job.py: one
# replicatedJob `trainer`, an Indexed Job of completions = parallelism = nodes, the Kueue queue
# label, the failure policy), with the fields JobSet's webhook defaults
# (network.enableDNSHostnames, successPolicy) and a status.
def jobset(phase: str, name: str = "llama", namespace: str = "training") -> dict[str, Any]:
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                "kueue.x-k8s.io/queue-name": "default",
                "kueue.x-k8s.io/priority-class": "research",
            },
            "uid": "0b8f2d1c-9a3e-4f6b-8c7d-2e1f0a9b8c7d",
            "creationTimestamp": T0,
        },
        "spec": {
            "suspend": SUSPENDED.get(phase, False),
            "network": {"enableDNSHostnames": True, "publishNotReadyAddresses": True},
            "successPolicy": {"operator": "All", "targetReplicatedJobs": ["trainer"]},
            "failurePolicy": {
                "maxRestarts": 3,
                "restartStrategy": "BlockingRecreate",
                "rules": [
                    {
                        "name": "unfixable",
                        "action": "FailJobSet",
                        "onJobFailureReasons": ["PodFailurePolicy"],
                    },
                ],
            },
            "replicatedJobs": [
                {
                    "name": "trainer",
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "completionMode": "Indexed",
                            "completions": 2,
                            "parallelism": 2,
                            "backoffLimit": 0,
                            "template": {
                                "spec": {
                                    "restartPolicy": "Never",
                                    "subdomain": name,
                                    "containers": [
                                        {
                                            "name": "trainer",
                                            "image": "registry.example/team/llama@sha256:"
                                            + "d" * 64,
                                            "env": [
                                                {"name": "TRAINING_JOB_NAME", "value": name},
                                                {
                                                    "name": "TRAINKIT_CHECKPOINT_DIR",
                                                    "value": f"/mnt/shared-data/runs/jobs/{name}",
                                                },
                                                # staging's pool (stacks/Pulumi.staging.yaml).
                                                {
                                                    "name": "TRAINING_JOB_POOL",
                                                    "value": "a100-efa",
                                                },
                                            ],
                                        }
                                    ],
                                }
                            },
                        }
                    },
                }
            ],
        },
        "status": copy.deepcopy(STATUSES[phase]),
    }


def vector(*samples: tuple[dict[str, str], str]) -> dict[str, Any]:
    """An instant query's answer: each sample's labels and value (a string, as the API sends)."""
    return {
        "status": "success",
        "data": {
            "resultType": "vector",
            "result": [
                {"metric": metric, "value": [1764633652.781, value]} for metric, value in samples
            ],
        },
    }


def goodput_sample(series: str, value: str, name: str = "llama", **extra: str):
    """One pushed series as Prometheus holds it: the push's grouping labels (honorLabels keeps
    them over the scrape's), the Pushgateway's instance, and `extra` (cause)."""
    labels = {
        "__name__": series,
        "job": "training-goodput",
        "namespace": "training",
        "job_name": name,
        "team": "training",
        "queue": "default",
        "pool": "h100-block",
        "instance": "10.0.3.17:9091",
        **extra,
    }
    return labels, value


# Kueue v0.19.2 (apis/kueue/v1beta2/workload_types.go): the Workload Kueue creates for a job,
# labelled with the job's uid (pkg/controller/constants/constants.go JobUIDLabel), its
# conditions (QuotaReserved, Admitted, Evicted, Finished: metav1.Condition) and its admission's
# resourceUsage per podSet.
def workload(conditions: list[dict[str, str]], gpus: str, created: str = T0) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": "jobset-llama-5b2c1",
            "namespace": "training",
            "labels": {"kueue.x-k8s.io/job-uid": "0b8f2d1c-9a3e-4f6b-8c7d-2e1f0a9b8c7d"},
            "creationTimestamp": created,
        },
        "spec": {"queueName": "default", "podSets": [{"name": "trainer", "count": 2}]},
        "status": {
            "conditions": conditions,
            "admission": {
                "clusterQueue": "training",
                "podSetAssignments": [
                    {
                        "name": "trainer",
                        "flavors": {"nvidia.com/gpu": "a100-efa"},
                        "resourceUsage": {"nvidia.com/gpu": gpus},
                        "count": 2,
                    }
                ],
            },
        },
    }


def pod(
    index: int, created: str, scheduled: str, ready: str | None, node: str | None = None
) -> dict[str, Any]:
    """A pod of the JobSet (Kubernetes "Pod Lifecycle": conditions with lastTransitionTime),
    on `node` (spec.nodeName, set when it is scheduled)."""
    conditions = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": scheduled}]
    if ready is not None:
        conditions.append(
            {"type": "ContainersReady", "status": "True", "lastTransitionTime": ready}
        )
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"llama-trainer-0-{index}-x7k2p",
            "namespace": "training",
            "labels": {"jobset.sigs.k8s.io/jobset-name": "llama"},
            "creationTimestamp": created,
        },
        "spec": {
            "containers": [{"name": "trainer", "resources": {"limits": {"nvidia.com/gpu": "8"}}}],
            **({"nodeName": node} if node else {}),
        },
        "status": {"conditions": conditions},
    }
