"""What the tests read of a rendered JobSet, and its validation as the API server would do it: the
JobSet CRD's structural schema and CEL rules (tests/helpers/crds.py evaluates every rule the
pinned CRD holds), and the Job template it embeds against Kubernetes' own schema (the CRD's copy
of the pod template carries no formats or list-map keys; Kubernetes' does)."""

from __future__ import annotations

from typing import Any

from tests.conftest import validate_kubernetes
from tests.helpers import crds

API, KIND = "jobset.x-k8s.io/v1alpha2", "JobSet"


def replicated_job(obj: dict[str, Any]) -> dict[str, Any]:
    (trainer,) = obj["spec"]["replicatedJobs"]
    return trainer


def job_spec(obj: dict[str, Any]) -> dict[str, Any]:
    """The spec of the Indexed Job the one replicatedJob makes."""
    return replicated_job(obj)["template"]["spec"]


def pod_template(obj: dict[str, Any]) -> dict[str, Any]:
    return job_spec(obj)["template"]


def pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    return pod_template(obj)["spec"]


def trainer(obj: dict[str, Any]) -> dict[str, Any]:
    (container,) = pod_spec(obj)["containers"]
    return container


def as_job(obj: dict[str, Any]) -> dict[str, Any]:
    """The replicatedJob's Job as JobSet creates it: `<jobset>-<replicatedJob>-0`."""
    meta = obj["metadata"]
    name = f"{meta['name']}-{replicated_job(obj)['name']}-0"
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": meta["namespace"]},
        "spec": job_spec(obj),
    }


def validate(obj: dict[str, Any], kubernetes_version: str) -> None:
    """The JobSet as the API server admits it: the CRD's schema and CEL rules, and each Job
    template against Kubernetes' schema at the cluster's minor."""
    assert obj["apiVersion"] == API and obj["kind"] == KIND, obj["kind"]
    problems = crds.errors(obj)
    assert problems == [], problems
    for rj in obj["spec"]["replicatedJobs"]:
        job = {**as_job(obj), "spec": rj["template"]["spec"]}
        validate_kubernetes(job, kubernetes_version)


def job_specs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The spec of every Job the object makes: a Job's own, or each replicatedJob's."""
    if obj["kind"] == KIND:
        return [rj["template"]["spec"] for rj in obj["spec"]["replicatedJobs"]]
    return [obj["spec"]]


def pod_specs(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return [spec["template"]["spec"] for spec in job_specs(obj)]


def validate_object(obj: dict[str, Any], kubernetes_version: str) -> None:
    """A JobSet as above; any other object against Kubernetes' schema."""
    if obj["kind"] == KIND:
        validate(obj, kubernetes_version)
    else:
        validate_kubernetes(obj, kubernetes_version)
