"""Namespaces the platform's add-ons and training jobs live in, and the teams' namespaces, with
Pod Security admission labels where workloads run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.base import PLATFORM_LABELS, PlatformComponent
from infra.config import NamespaceSettings, PlatformConfig
from infra.config.scheduling import TeamSettings

PART_OF = PLATFORM_LABELS
POD_SECURITY = "pod-security.kubernetes.io"


def namespace_labels(purpose: str) -> dict[str, str]:
    return {**PART_OF, "gpu-platform/purpose": purpose}


def pod_security_labels(team: TeamSettings) -> dict[str, str]:
    """Pod Security admission for a team namespace. The NVMe cache is a hostPath volume, which
    the `baseline` level forbids (Kubernetes "Pod Security Standards", Baseline, "HostPath
    Volumes"): a namespace whose pods mount it must enforce `privileged`, deliberately. Warn
    and audit still hold every pod to `restricted`, so what it would take to tighten the
    namespace stays visible in kubectl's warnings and the audit log."""
    enforce = "privileged" if team.nvme_cache else "baseline"
    return {
        f"{POD_SECURITY}/enforce": enforce,
        f"{POD_SECURITY}/audit": "restricted",
        f"{POD_SECURITY}/warn": "restricted",
    }


@dataclass(frozen=True)
class NamespacesArgs:
    namespaces: NamespaceSettings
    # Every team, the training namespace's own settings among them.
    teams: Sequence[TeamSettings] = ()


class Namespaces(PlatformComponent):
    """One namespace per purpose and per team; other components take the names from here."""

    PLANE = "control"

    def __init__(self, name: str, args: NamespacesArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        teams = {t.name: t for t in args.teams}
        self.by_purpose: dict[str, k8s.core.v1.Namespace] = {}
        for purpose, ns in sorted(args.namespaces.model_dump().items()):
            self.by_purpose[purpose] = self._namespace(ns, purpose, teams.pop(ns, None))
        self.teams = {team: self._namespace(team, "team", t) for team, t in sorted(teams.items())}
        self.register_outputs({p: n.metadata.name for p, n in self.by_purpose.items()})

    def _namespace(self, ns: str, purpose: str, team: TeamSettings | None) -> k8s.core.v1.Namespace:
        labels = namespace_labels(purpose)
        if team is not None:
            labels.update(pod_security_labels(team))
        return k8s.core.v1.Namespace(
            f"ns-{ns}",
            metadata=k8s.meta.v1.ObjectMetaArgs(name=ns, labels=labels),
            opts=self.child(),
        )


def job_namespaces(cfg: PlatformConfig) -> list[str]:
    """Every namespace jobs run in, the training namespace first: each holds what a job's pods
    name (the rendezvous Service, the NCCL ConfigMaps, `shared-data`, the RDMA network)."""
    training = cfg.namespaces.training
    teams = cfg.scheduling.all_teams(training)
    return [training, *(t.name for t in teams if t.name != training)]
