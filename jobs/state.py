"""What a job the cluster holds is, read from the object itself: running, restarting, queued,
suspended, failed or succeeded, its restarts, the checkpoint folder its pods are told, and
whether a submission under its name asks for something else.

The conditions are JobSet's (kubernetes-sigs/jobset v0.12.0, api/jobset/v1alpha2/jobset_types.go:
JobSetConditionType `Completed`, `Failed`, `Suspended`; JobSetStatus `restarts`: "the number of
times the restart action RestartJobSet or RestartJobSetAndIgnoreMaxRestarts have been executed",
`restartsCountTowardsMax`: those of RestartJobSet alone, which `failurePolicy.maxRestarts`
caps). A batch Job, what the platform rendered before JobSet, has the same `Failed` and
`Suspended` types and `Complete` for success (k8s.io/api batch/v1 JobConditionType), and no
restarts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from components.vocabulary import QUEUE_LABEL
from contract.env import TRAINKIT_CHECKPOINT_DIR

# What `kubectl apply` keeps of what it sent (kubectl's "last-applied-configuration").
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
FINISHED = ("failed", "succeeded")
# The differences a refusal names before it says "and N more".
SHOWN_CHANGES = 5


@dataclass(frozen=True)
class JobState:
    kind: str
    namespace: str
    name: str
    # running, restarting, queued (suspended by Kueue until admitted), suspended, failed,
    # succeeded.
    phase: str
    # The deciding condition's `reason: message`, when one decided.
    why: str = ""
    restarts: int = 0
    restarts_toward_max: int = 0
    max_restarts: int | None = None
    checkpoint_dir: str | None = None

    @property
    def finished(self) -> bool:
        return self.phase in FINISHED

    @property
    def title(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"

    def restart_summary(self) -> str:
        if not self.restarts:
            return "no restarts"
        limit = f" of maxRestarts {self.max_restarts}" if self.max_restarts is not None else ""
        ignored = self.restarts - self.restarts_toward_max
        return (
            f"{self.restarts} restart(s), {self.restarts_toward_max}{limit} counted toward the "
            f"limit, {ignored} not (evictions: not the job's fault)"
        )

    def describe(self) -> str:
        why = f" ({self.why})" if self.why else ""
        return f"{self.phase}{why}; {self.restart_summary()}"


def true_conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    conditions = obj.get("status", {}).get("conditions") or []
    return {c["type"]: c for c in conditions if c.get("status") == "True"}


def phase_of(obj: dict[str, Any]) -> tuple[str, str]:
    """The phase and the condition that decided it. A finished job keeps its Suspended
    condition's history; Failed and Completed decide first."""
    conditions = true_conditions(obj)
    status = obj.get("status", {})
    for kind, phase in (
        ("Failed", "failed"),
        ("Completed", "succeeded"),
        ("Complete", "succeeded"),
    ):
        if kind in conditions:
            return phase, reason(conditions[kind])
    if "Suspended" in conditions or obj.get("spec", {}).get("suspend"):
        held = conditions.get("Suspended", {})
        if QUEUE_LABEL in obj.get("metadata", {}).get("labels", {}):
            # Kueue's webhook suspends a queued job and admission clears spec.suspend (Kueue
            # pkg/controller/jobs/jobset/jobset_webhook.go; shared/PINS.md "JobSet").
            return "queued", reason(held) or "waiting for Kueue to admit it"
        return "suspended", reason(held)
    if status.get("restarts", 0) > 0:
        return "restarting", ""
    return "running", ""


def reason(condition: dict[str, Any]) -> str:
    parts = [condition.get("reason", ""), condition.get("message", "")]
    return ": ".join(p for p in parts if p)


def containers(node: Any) -> Iterator[dict[str, Any]]:
    """Every container of every pod template, wherever the kind nests them."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("containers", "initContainers") and isinstance(value, list):
                yield from value
            else:
                yield from containers(value)
    elif isinstance(node, list):
        for item in node:
            yield from containers(item)


def env_value(obj: dict[str, Any], name: str) -> str | None:
    """The literal value the object's pod templates give environment variable `name`."""
    for container in containers(obj.get("spec", {})):
        for env in container.get("env") or []:
            if env.get("name") == name and "value" in env:
                return env["value"]
    return None


def checkpoint_dir(obj: dict[str, Any]) -> str | None:
    return env_value(obj, TRAINKIT_CHECKPOINT_DIR)


def job_state(obj: dict[str, Any]) -> JobState:
    meta, status = obj["metadata"], obj.get("status", {})
    phase, why = phase_of(obj)
    policy = obj.get("spec", {}).get("failurePolicy") or {}
    return JobState(
        kind=obj["kind"],
        namespace=meta.get("namespace", ""),
        name=meta["name"],
        phase=phase,
        why=why,
        restarts=status.get("restarts", 0),
        restarts_toward_max=status.get("restartsCountTowardsMax", 0),
        max_restarts=policy.get("maxRestarts"),
        checkpoint_dir=checkpoint_dir(obj),
    )


# ------------------------------------------------------------------------ a changed spec


def differences(wanted: Any, held: Any, path: str, exact: bool) -> Iterator[str]:
    """The paths where `held` does not say what `wanted` does. Not `exact`: `held` may add
    what the API server and webhooks default (JobSet's webhook fills the network, success
    policy and Job template defaults), so only what `wanted` sets is compared."""
    if isinstance(wanted, dict) and isinstance(held, dict):
        keys = set(wanted) | set(held) if exact else set(wanted)
        for key in sorted(keys):
            yield from differences(wanted.get(key), held.get(key), f"{path}.{key}", exact)
    elif isinstance(wanted, list) and isinstance(held, list) and len(wanted) == len(held):
        for index, (w, h) in enumerate(zip(wanted, held, strict=True)):
            yield from differences(w, h, f"{path}[{index}]", exact)
    elif wanted != held and (exact or str(wanted) != str(held)):
        # Not exact: a built-in kind stores a quantity or int-or-string as a string (`8` GPUs
        # reads back "8").
        yield path


def spec_changes(rendered: dict[str, Any], live: dict[str, Any]) -> list[str]:
    """Where this submission's spec differs from what the cluster holds under its name: from
    what kubectl applied last when it kept it (exact), else from the live spec (only what the
    submission sets; `suspend` is Kueue's to flip)."""
    applied = live.get("metadata", {}).get("annotations", {}).get(LAST_APPLIED)
    if applied:
        held, exact = json.loads(applied).get("spec", {}), True
        wanted = rendered.get("spec", {})
    else:
        held, exact = live.get("spec", {}), False
        wanted = {k: v for k, v in rendered.get("spec", {}).items() if k != "suspend"}
    return list(differences(wanted, held, "spec", exact))


def changes_summary(changes: list[str]) -> str:
    shown = ", ".join(changes[:SHOWN_CHANGES])
    more = len(changes) - SHOWN_CHANGES
    return shown + (f" and {more} more" if more > 0 else "")
