"""The platform's small controllers that run in the self-test image (the quarantine watcher,
components/selftest/access.py; the idle reclaimer, components/selftest/reclaim.py; the
reservation controller, reservation.py): one container running `python -m selftest.<module>` as
the image's user, under Pod Security `restricted`, with the little CPU and memory an API client
and a Prometheus query take."""

from __future__ import annotations

from typing import Any

from components.scheduling.training_job import RUN_AS, security_context

RESOURCES = {
    "requests": {"cpu": "10m", "memory": "64Mi"},
    "limits": {"cpu": "100m", "memory": "128Mi"},
}


def controller_pod(
    name: str, image: str | None, module: str, env: dict[str, str], account: str, **spec: Any
) -> dict[str, Any]:
    """The pod spec of one controller: container `name` runs `python -m <module>` with `env`,
    as `account`; `spec` adds pod fields (a Job's restartPolicy)."""
    container = {
        "name": name,
        "image": image,
        "command": ["python", "-m", module],
        "env": [{"name": k, "value": v} for k, v in env.items()],
        "resources": RESOURCES,
        "securityContext": security_context(),
    }
    return {
        "serviceAccountName": account,
        **spec,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": RUN_AS,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [container],
    }


def controller_deployment(
    name: str, namespace: str, labels: dict[str, str], pod: dict[str, Any]
) -> dict[str, Any]:
    """One replica of a controller that loops on its own (a Deployment, not a CronJob: no Job
    for Kueue to leave alone), its pods selected by `app.kubernetes.io/name`."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app.kubernetes.io/name": name}},
            "template": {"metadata": {"labels": labels}, "spec": pod},
        },
    }
