"""Namespaces the platform's add-ons and training jobs live in, the teams' namespaces and the
self-test's, with Pod Security admission labels where jobs run: `restricted` unless a team's
setting says why `baseline` (issue 25)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.base import PLATFORM_LABELS, PlatformComponent
from model.config import NamespaceSettings, PlatformConfig
from model.config.node_join import joins_tested
from model.config.scheduling import TeamSettings
from model.config.selftest import runs
from model.config.selftest_schedule import scheduled

PART_OF = PLATFORM_LABELS
NamespaceResource = k8s.core.v1.Namespace | k8s.core.v1.NamespacePatch
POD_SECURITY = "pod-security.kubernetes.io"


def namespace_labels(purpose: str) -> dict[str, str]:
    return {**PART_OF, "gpu-platform/purpose": purpose}


# Why a namespace enforces less than restricted, where a team setting says so.
REASON_ANNOTATION = "gpu-platform/pod-security-reason"


def pod_security_labels(enforce: str) -> dict[str, str]:
    """Pod Security admission for a namespace where jobs run. Warn and audit hold every pod to
    `restricted`, so what it would take to tighten a `baseline` namespace stays visible in
    kubectl's warnings and the audit log (Kubernetes docs, "Pod Security Admission")."""
    return {
        f"{POD_SECURITY}/enforce": enforce,
        f"{POD_SECURITY}/audit": "restricted",
        f"{POD_SECURITY}/warn": "restricted",
    }


def team_pod_security(team: TeamSettings) -> tuple[dict[str, str], dict[str, str]]:
    """A team namespace's labels and annotations: `restricted`, which every job the platform
    renders keeps to (components/scheduling/training_job.py), unless the team's setting says why
    `baseline`. Never `privileged`: that would let anyone who may create a pod there run a
    privileged, host-network pod on a GPU node."""
    labels = pod_security_labels(team.pod_security)
    annotations = {REASON_ANNOTATION: team.pod_security_reason} if team.pod_security_reason else {}
    return labels, annotations


def job_namespaces(cfg: PlatformConfig) -> list[str]:
    """Every namespace jobs run in, the training namespace first, then each team's, then the
    self-test's where it runs (after deploys, on a schedule, or on each new node): each holds
    what a job's pods name (the launcher ConfigMap, the NCCL ConfigMaps, `shared-data`, the
    RDMA network), since a pod finds them only in its own namespace, on the cluster where it
    runs."""
    training = cfg.namespaces.training
    teams = cfg.scheduling.all_teams(training)
    found = [training, *(t.name for t in teams if t.name != training)]
    if runs(cfg) or scheduled(cfg) or joins_tested(cfg):
        found.append(cfg.namespaces.selftest)
    return found


def namespace_check(created: Sequence[str]) -> dict[str, str]:
    """What the plan says of the namespaces `up` will create on an existing cluster, which it
    cannot read: how to see whether the cluster has any already, and what to do if so."""
    return {
        "creates": ", ".join(created),
        "check": f"kubectl get namespace {' '.join(created)} --ignore-not-found",
        "if_found": "list each namespace the check prints under existing.namespaces: `up` "
        'would stop at AlreadyExists (docs/scheduling.md, "Namespaces a cluster already has")',
    }


@dataclass(frozen=True)
class NamespacesArgs:
    namespaces: NamespaceSettings
    # Every team, the training namespace's own settings among them.
    teams: Sequence[TeamSettings] = ()
    # Purposes whose namespace the cluster already has: the monitoring namespace of a
    # kube-prometheus-stack it runs (existing.addons), which `pulumi up` could not create again.
    existing: Sequence[str] = ()
    # Namespaces the cluster already has that the platform still labels (existing.namespaces).
    adopted: Sequence[str] = ()
    # An existing cluster: the plan cannot see which namespaces it has, so it says how to look.
    check_existing: bool = False


class Namespaces(PlatformComponent):
    """One namespace per purpose and per team; other components take the names from here.

    What a destroy leaves: a namespace the cluster already had (existing.namespaces) is only
    patched (NamespacePatch: `up` sets the platform's labels on it, a destroy takes them off,
    never the namespace), and a team's namespace, the training one included, is retained
    (`retain_on_delete`): it holds the team's jobs, claims and secrets, which are not the
    platform's to delete. The platform's own namespaces (add-ons, monitoring, self-test) go."""

    PLANE = "control"

    def __init__(self, name: str, args: NamespacesArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(name, opts)
        teams = {t.name: t for t in args.teams}
        self.adopted = frozenset(args.adopted)
        self.team_names = frozenset(teams)
        # The namespaces `up` creates, which a cluster that has them refuses (AlreadyExists).
        self.created: list[str] = []
        self.by_purpose: dict[str, NamespaceResource] = {}
        for purpose, ns in sorted(args.namespaces.model_dump().items()):
            if purpose not in args.existing:
                self.by_purpose[purpose] = self._namespace(ns, purpose, teams.pop(ns, None))
        self.teams = {team: self._namespace(team, "team", t) for team, t in sorted(teams.items())}
        # Stack outputs: each purpose's namespace (the ones the cluster already has left out).
        self.outputs = {"namespaces": {p: n.metadata.name for p, n in self.by_purpose.items()}}
        if args.check_existing:
            self.outputs["namespace_check"] = namespace_check(sorted(self.created))
        self.register_outputs(self.outputs)

    def in_purpose(self, purpose: str) -> list[NamespaceResource]:
        """The purpose's namespace where the platform declares it; none where the cluster has
        it already."""
        return [self.by_purpose[purpose]] if purpose in self.by_purpose else []

    def _namespace(self, ns: str, purpose: str, team: TeamSettings | None) -> NamespaceResource:
        labels, annotations = namespace_labels(purpose), {}
        if team is not None:
            more, annotations = team_pod_security(team)
            labels.update(more)
        elif purpose == "selftest":
            # The self-test's pods are the job builder's, restricted like a team's.
            labels.update(pod_security_labels("restricted"))
        metadata = k8s.meta.v1.ObjectMetaArgs(
            name=ns, labels=labels, annotations=annotations or None
        )
        if ns in self.adopted:
            return k8s.core.v1.NamespacePatch(f"ns-{ns}", metadata=metadata, opts=self.child())
        self.created.append(ns)
        return k8s.core.v1.Namespace(
            f"ns-{ns}",
            metadata=metadata,
            opts=self.child(retain_on_delete=ns in self.team_names),
        )
