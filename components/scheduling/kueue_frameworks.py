"""The job kinds the platform submits through Kueue: one row each, from which Kueue's
`integrations.frameworks`, the RBAC a MultiKueue worker grants its manager, and the kinds the
worker must serve all derive.

Kueue v0.19.2 builds one MultiKueue adapter per enabled framework (cmd/kueue/main.go,
`GetMultiKueueAdapters`) and watches each one's kind on every worker; a watch that fails fails
the worker's connection (pkg/controller/admissionchecks/multikueue/multikueuecluster.go,
`updateConfigAndRefreshWatchers`; kubernetes-sigs/kueue#3582). The chart's twelve default
frameworks would so need twelve kinds on the worker: the platform enables only what it submits.
The chart's webhook configurations still name every kind; Kueue answers a disabled framework's
with a no-op webhook (pkg/controller/jobframework/setup.go, `WithNoopWebhook`), so pods and
deployments are admitted as before. A new kind is one more row, and its CRD must then be on
every worker: JobSet's is, from the platform's JobSet release (components/scheduling/jobset.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from components.vocabulary import BATCH_API, JOBSET_API


@dataclass(frozen=True)
class Framework:
    """A Kueue integration: its name in `integrations.frameworks` and the kind it manages."""

    integration: str
    api_version: str
    kind: str
    # The kind's resource (plural) in RBAC rules.
    resource: str

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def api(self) -> str:
        """`group/version/Kind`, as a served API is spelt."""
        return f"{self.api_version}/{self.kind}"

    def worker_rules(self) -> list[dict[str, Any]]:
        """What create-multikueue-kubeconfig.sh (v0.19.2) grants the manager for a job kind: it
        creates, watches and deletes the worker's copy and reads its status."""
        return [
            {
                "apiGroups": [self.group],
                "resources": [self.resource],
                "verbs": ["create", "delete", "get", "list", "watch"],
            },
            {"apiGroups": [self.group], "resources": [f"{self.resource}/status"], "verbs": ["get"]},
        ]


# Every job the platform renders is a JobSet (components/scheduling/training_job.py): the
# self-test, the recipes', teams' own; the self-test schedule's CronJob still makes batch Jobs
# (components/scheduling/cron_jobs.py). Names as in Kueue v0.19.2's pkg/controller/jobs/job
# (`FrameworkName = "batch/job"`) and pkg/controller/jobs/jobset (`FrameworkName =
# "jobset.x-k8s.io/jobset"`, the kind its multikueue adapter lists, `jobset_multikueue_adapter.go`).
FRAMEWORKS = (
    Framework("batch/job", BATCH_API, "Job", "jobs"),
    Framework("jobset.x-k8s.io/jobset", JOBSET_API, "JobSet", "jobsets"),
)

INTEGRATIONS = tuple(f.integration for f in FRAMEWORKS)
