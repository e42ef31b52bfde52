"""Submitting a rendered job to its cluster: applied when its name is free; when a job of that
name exists, what it is is said and it is left as it is (exit EXISTS), unless `--resume` replaces
a failed or finished one, which resumes from its checkpoint. Re-applying a finished Job or
JobSet as it is would change nothing and resume nothing, and a JobSet's spec is mostly
immutable (jobset v0.12.0, api/jobset/v1alpha2/jobset_types.go: `self == oldSelf` on network,
successPolicy, failurePolicy), so a changed one cannot be applied over it either."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from components.scheduling.job_spec import TrainingJobSpec
from jobs.kubectl import Kubectl, KubectlError, resource_type
from jobs.state import changes_summary, job_state, spec_changes

# --apply found a job of the same name and left it as it was (jobs/__main__.py).
EXISTS = 3
# Why --resume leaves a job that has not finished as it is.
UNFINISHED = {
    "running": "replacing it would throw away its work since its last checkpoint",
    "restarting": "JobSet is restarting it from its checkpoint already",
    "queued": "it has not started; Kueue starts it once admitted",
    "suspended": "it has not started; it runs once resumed (spec.suspend: false)",
}


def workload(objects: list[dict[str, Any]], spec: TrainingJobSpec) -> dict[str, Any]:
    """The job among what the builder rendered: the object named after it."""
    return next(o for o in objects if o["metadata"]["name"] == spec.name)


def owner_reference(live: dict[str, Any]) -> dict[str, Any]:
    """`live` as the owner of what its job needs (Kubernetes docs, "Owners and Dependents"): the
    garbage collector deletes a dependent once its owner is gone. Not `blockOwnerDeletion`,
    which needs delete rights on the owner's finalizers: so a foreground delete of the job does
    not wait for these, and --resume deletes them itself (deleted_dependents)."""
    meta = live["metadata"]
    return {
        "apiVersion": live["apiVersion"],
        "kind": live["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
    }


def applied(
    cluster: Kubectl, objects: list[dict[str, Any]], job: dict[str, Any], path: Path
) -> int:
    """Apply `path`, then make the job the owner of every other object it holds (a DRA pool's
    claim template: components/scheduling/job_claims.claim_templates), so that they go with
    the job: deleted with it, and replaced with it on --resume. Only the applied job has a uid."""
    if cluster.apply(path) != 0:
        return 1
    others = [o for o in objects if o is not job]
    if not others:
        return 0
    meta = job["metadata"]
    title = f"{job['kind']} {meta['namespace']}/{meta['name']}"
    try:
        live = cluster.read(
            resource_type(job["apiVersion"], job["kind"]), meta["name"], meta["namespace"]
        )
    except KubectlError as error:
        print(f"error: {title} was applied but could not be read back: {error}", file=sys.stderr)
        return 1
    owner = {"metadata": {"ownerReferences": [owner_reference(live)]}}
    failed = 0
    for obj in others:
        types = resource_type(obj["apiVersion"], obj["kind"])
        name, namespace = obj["metadata"]["name"], obj["metadata"]["namespace"]
        if cluster.patch(types, name, namespace, owner) != 0:
            print(
                f"error: {obj['kind']} {namespace}/{name} is not owned by {title}, so it stays "
                f"when the job goes: delete it with the job (kubectl delete {types} {name} "
                f"-n {namespace})",
                file=sys.stderr,
            )
            failed = 1
    return failed


def submit_to(
    cluster: Kubectl, objects: list[dict[str, Any]], job: dict[str, Any], path: Path, resume: bool
) -> int:
    """Apply `path` (`objects`, the job among them) unless a job of that name exists: then say
    what it is and change nothing, or, with `resume` and the job finished, delete it (and what
    it owns) and apply it again; its pods find their checkpoint folder as before and resume
    (trainkit)."""
    kind, meta = job["kind"], job["metadata"]
    types, title = (
        resource_type(job["apiVersion"], kind),
        f"{kind} {meta['namespace']}/{meta['name']}",
    )
    try:
        found = cluster.get(types, meta["name"], meta["namespace"])
    except KubectlError as error:
        print(f"error: could not look for {title} before applying it: {error}", file=sys.stderr)
        return 1
    if not found:
        if resume:
            print(
                f"--resume: no {title} exists; applying it (its pods resume from any "
                "checkpoint in their folder)"
            )
            # What the job owned may still be going, its owner deleted in the background.
            if deleted_dependents(cluster, [o for o in objects if o is not job]) != 0:
                return 1
        return applied(cluster, objects, job, path)
    (live,) = found
    state, changes = job_state(live), spec_changes(job, live)
    print(f"{state.title} exists: {state.describe()}")
    if changes:
        print(
            f"  this submission's spec differs from it ({changes_summary(changes)}); a "
            f"{kind}'s spec is mostly immutable, so it cannot be applied over it: give another "
            "--name to run it beside, or --resume once it has finished to replace it (the "
            "replacement resumes from the same checkpoint folder)"
        )
    if not resume:
        hint = (
            "pass --resume to delete it and apply it again, resuming from its checkpoint"
            if state.finished
            else "it will go on as it is; `python -m jobs status` follows it"
        )
        print(f"error: {title} was left as it is: {hint}", file=sys.stderr)
        return EXISTS
    if not state.finished:
        print(
            f"error: --resume refused: {title} is {state.phase}, not finished: "
            f"{UNFINISHED[state.phase]}. Wait for it to finish, or delete it yourself "
            f"(kubectl delete {types} {meta['name']} -n {meta['namespace']})",
            file=sys.stderr,
        )
        return EXISTS
    where = f" from {state.checkpoint_dir}" if state.checkpoint_dir else ""
    print(f"--resume: deleting {title} ({state.phase}) and applying it again; it resumes{where}")
    if cluster.delete(types, meta["name"], meta["namespace"]) != 0:
        print(f"error: could not delete {title}; nothing applied", file=sys.stderr)
        return 1
    if deleted_dependents(cluster, [o for o in objects if o is not job]) != 0:
        return 1
    return applied(cluster, objects, job, path)


def deleted_dependents(cluster: Kubectl, dependents: list[dict[str, Any]]) -> int:
    """Delete what the job owned and wait until each is gone, after the job (its pods hold the
    claims) and before the file is applied again. A ComputeDomain keeps the driver's finalizer
    `resource.nvidia.com/computeDomain` until its controller has deleted the channel's claim
    template and the IMEX DaemonSet and cleared the nodes' labels (dra-driver-nvidia-gpu
    v0.4.1 cmd/compute-domain-controller/computedomain.go onAddOrUpdate, RemoveFinalizer); an
    apply meanwhile would patch the terminating one, which then goes, taking the new job's
    channel with it. The same name cannot be created again until it is gone."""
    for obj in dependents:
        types = resource_type(obj["apiVersion"], obj["kind"])
        name, namespace = obj["metadata"]["name"], obj["metadata"]["namespace"]
        if cluster.delete_dependent(types, name, namespace) != 0:
            print(
                f"error: could not delete {obj['kind']} {namespace}/{name}, which the job "
                "owned; nothing applied: delete it (kubectl delete "
                f"{types} {name} -n {namespace} --wait=true), then --resume again",
                file=sys.stderr,
            )
            return 1
    return 0
