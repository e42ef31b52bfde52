"""How the pods of a multi-node job find each other: one headless Service per training namespace,
declared by the platform, named the same in every one, on every cluster.

A job that brought its own Service would lose it on a MultiKueue worker: MultiKueue copies the
Job, and only the Job, to the worker (Kueue v0.19.2 pkg/controller/jobs/job/
job_multikueue_adapter.go, SyncJob). So every namespace where jobs run holds `rendezvous`, and
every multi-node job's pods name it as their `subdomain`:

- An Indexed Job's pod has the hostname `<job>-<index>` (Kubernetes "Jobs", "Completion mode").
  With `subdomain: rendezvous` and a headless Service of that name in the namespace that selects
  the pod, `<job>-<index>.rendezvous` resolves (Kubernetes "DNS for Services and Pods", "Pod's
  hostname and subdomain fields"), so index 0's name is torchrun's master address. Job names are
  unique in a namespace, so the jobs sharing the Service never share a name.
- The Service selects every pod carrying the platform's rendezvous label, which the job builder
  (components/scheduling/training_job.py) sets on every multi-node pod. The EndpointSlice controller
  gives a pod a hostname record only when its `subdomain` equals the Service's name, so pods of
  other Services are never named here.
- `publishNotReadyAddresses`: DNS returns only ready pods otherwise, and every rank looks index 0
  up while the pods are still starting.

Only this module names the Service: when multi-node jobs move to JobSet, which creates its own
headless Service per JobSet, the rendezvous changes here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pulumi

from components.base import PlatformComponent, plane_labels
from components.context import StackContext
from components.kubernetes_object import KubernetesObject

SERVICE = "rendezvous"
PORT = 29500
# Every multi-node training pod carries it; the Service selects by it.
LABEL = {"gpu-platform/rendezvous": "member"}
PART_OF = plane_labels("scheduling")


def master_address(job: str) -> str:
    """Index 0's name: `<job>-0.<service>` (Indexed Job hostname + pod subdomain)."""
    return f"{job}-0.{SERVICE}"


def rendezvous_service(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": SERVICE, "namespace": namespace, "labels": dict(PART_OF)},
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": dict(LABEL),
            "ports": [{"name": "rendezvous", "port": PORT}],
        },
    }


@dataclass(frozen=True)
class RendezvousArgs:
    context: StackContext
    # Every namespace jobs run in: the training namespace and each team's.
    namespaces: Sequence[str]
    # Declared first: those namespaces.
    after: Sequence[pulumi.Resource] = ()


class Rendezvous(PlatformComponent):
    """The `rendezvous` Service in each training namespace."""

    PLANE = "scheduling"

    def __init__(self, name: str, args: RendezvousArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        for ns in args.namespaces:
            KubernetesObject(
                f"{args.context.env}-rendezvous-{ns}",
                rendezvous_service(ns),
                self.child(depends_on=list(args.after)),
            )
        self.register_outputs({"service": SERVICE})
