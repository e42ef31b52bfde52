"""Kueue's objects a shipped stack's plan declares, by kind and name."""

from __future__ import annotations

from typing import Any

from model.config.scheduling import LOCAL_QUEUE
from tests.conftest import planned

KUEUE = "kubernetes:kueue.x-k8s.io/v1beta2"


def objects(stack: str, kind: str, api: str = KUEUE) -> dict[str, dict]:
    """Name -> inputs of every object of `kind` (of `api`, Kueue's by default) in the plan."""
    return {r.inputs["metadata"]["name"]: r.inputs for r in planned(stack).of_type(f"{api}:{kind}")}


def gpu_job(name: str, namespace: str, gpus: int) -> dict[str, Any]:
    """A batch Job of one pod asking for `gpus` GPUs, on its namespace's LocalQueue."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"kueue.x-k8s.io/queue-name": LOCAL_QUEUE},
        },
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {"name": "c", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}
                    ]
                }
            }
        },
    }
