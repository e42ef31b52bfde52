"""What the tests read of a rendered JobSet, and its validation as the API server would do it: the
JobSet CRD's structural schema (tests/helpers/crds.py), the CRD's CEL rules
(`x-kubernetes-validations`, evaluated here for the rules the pinned CRD holds), and the Job
template it embeds against Kubernetes' own schema (the CRD's copy of the pod template carries
no formats or list-map keys; Kubernetes' does).

The CEL rules of ../shared/crds/jobset.x-k8s.io/JobSet.v1alpha2.json (jobset v0.12.0
api/jobset/v1alpha2/jobset_types.go, its kubebuilder markers):
- on `spec`: `!(has(self.startupPolicy) && self.startupPolicy.startupPolicyOrder == 'InOrder' &&
  self.replicatedJobs.exists(x, has(x.dependsOn)))`, StartupPolicy and DependsOn mutually
  exclusive;
- on `spec.volumeClaimPolicies[]`: `self.templates.all(t, !has(t.metadata.namespace) ||
  size(t.metadata.namespace) == 0)`;
- `self == oldSelf` (immutable fields): a transition rule, which the API server evaluates only
  on update, when there is an old object (Kubernetes "Validation rules": "transition rules ...
  are only evaluated on update"); a create never fails it.
A rule the table does not know fails the validation, so a CRD bumped with a new rule is read
before it is trusted.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable, Iterator
from typing import Any

from tests.conftest import validate_kubernetes
from tests.helpers import crds

API, KIND = "jobset.x-k8s.io/v1alpha2", "JobSet"


def _exclusive_startup(spec: dict[str, Any]) -> bool:
    in_order = (spec.get("startupPolicy") or {}).get("startupPolicyOrder") == "InOrder"
    return not (in_order and any("dependsOn" in rj for rj in spec.get("replicatedJobs", [])))


def _claim_templates_without_namespace(policy: dict[str, Any]) -> bool:
    return all(not (t.get("metadata") or {}).get("namespace") for t in policy.get("templates", []))


ON_CREATE: dict[str, Callable[[Any], bool] | None] = {
    "!(has(self.startupPolicy) && self.startupPolicy.startupPolicyOrder == 'InOrder' && "
    "self.replicatedJobs.exists(x, has(x.dependsOn)))": _exclusive_startup,
    "self.templates.all(t, !has(t.metadata.namespace) || size(t.metadata.namespace) == 0)": (
        _claim_templates_without_namespace
    ),
    # A transition rule: not evaluated on create.
    "self == oldSelf": None,
}


@functools.cache
def schema() -> dict[str, Any]:
    return json.loads(crds.schema_path(API, KIND).read_text())


def _rules_at(node: dict[str, Any], value: Any, where: str) -> Iterator[tuple[str, dict, Any]]:
    """(path, rule, value) of every CEL rule whose field `value` holds."""
    for rule in node.get("x-kubernetes-validations") or []:
        yield where, rule, value
    if isinstance(value, dict):
        for key, child in value.items():
            sub = (node.get("properties") or {}).get(key) or node.get("additionalProperties")
            if isinstance(sub, dict):
                yield from _rules_at(sub, child, f"{where}/{key}")
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        for i, child in enumerate(value):
            yield from _rules_at(node["items"], child, f"{where}/{i}")


def cel_errors(obj: dict[str, Any]) -> list[str]:
    found = []
    for where, rule, value in _rules_at(schema(), crds.strip_nulls(copy.deepcopy(obj)), ""):
        if rule["rule"] not in ON_CREATE:
            found.append(f"{where}: CEL rule not modelled here: {rule['rule']}")
            continue
        check = ON_CREATE[rule["rule"]]
        if check is not None and not check(value):
            found.append(f"{where or '(root)'}: {rule.get('message', rule['rule'])}")
    return found


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
    problems = crds.errors(obj) + cel_errors(obj)
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
