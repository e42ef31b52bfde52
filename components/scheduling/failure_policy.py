"""Why a training job failed, and what that does: the trainer Job's `podFailurePolicy` names the
cause in the Job's failure message, and the JobSet's `failurePolicy` reads it (docs/training.md,
"When a node dies or a job hangs"): an exit no restart fixes (contract/exits.py) fails the JobSet
at once, a disrupted pod restarts the group without counting, anything else restarts it toward
its restart limit. The job builder (components/scheduling/training_job.py) puts both on every
job it renders; the CronJob's Job keeps the first rule and ignores disruptions instead."""

from __future__ import annotations

from typing import Any

from contract.exits import UNFIXABLE

# The Job controller's failure message when a pod matches a FailJob rule (kubernetes/kubernetes
# pkg/controller/job/pod_failure_policy.go, matchPodFailurePolicy, unchanged 1.31 through 1.36):
#   "Container %s for pod %s/%s failed with exit code %v matching %v rule at index %d"
#   "Pod %s/%s has condition %v matching %v rule at index %d"
# The Job's Failed condition carries it with reason `PodFailurePolicy`; a JobSet rule matches
# the rule's index at the message's end (RE2), so index 1 never matches index 10.
FAIL_JOB_RULE_MESSAGE = "matching FailJob rule at index {index}$"
UNFIXABLE_RULE, DISRUPTED_RULE = 0, 1


def pod_failure_policy(container: str) -> dict[str, Any]:
    """Why the Job failed, in its failure message's rule index (FAIL_JOB_RULE_MESSAGE): rule 0,
    the trainer exited with a code no restart fixes; rule 1, the pod was disrupted (preempted,
    evicted, its node drained or lost: Kubernetes docs, "Pod failure policy", DisruptionTarget).
    Any other failure fails the Job too (`backoffLimit: 0`, reason BackoffLimitExceeded): the
    JobSet restarts every pod, since the other ranks cannot go on without it."""
    return {
        "rules": [
            {
                "action": "FailJob",
                "onExitCodes": {
                    "containerName": container,
                    "operator": "In",
                    "values": sorted(UNFIXABLE),
                },
            },
            {
                "action": "FailJob",
                "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
            },
        ]
    }


def failure_policy(max_restarts: int, replicated_job: str) -> dict[str, Any]:
    """JobSet's rules, first match wins (JobSet pkg/controllers/failure_policy.go,
    findFirstFailedPolicyRuleAndJob): unfixable fails the JobSet; disrupted restarts it without
    counting (not the job's fault); no rule matching restarts it, counting toward maxRestarts
    (`defaultFailurePolicyRuleAction` RestartJobSet). BlockingRecreate: every old pod is gone
    before the new ones start, so no rank of the old group meets the new one."""

    def rule(name: str, action: str, index: int) -> dict[str, Any]:
        return {
            "name": name,
            "action": action,
            "onJobFailureReasons": ["PodFailurePolicy"],
            "onJobFailureMessagePatterns": [FAIL_JOB_RULE_MESSAGE.format(index=index)],
            "targetReplicatedJobs": [replicated_job],
        }

    return {
        "maxRestarts": max_restarts,
        "restartStrategy": "BlockingRecreate",
        "rules": [
            rule("unfixable", "FailJobSet", UNFIXABLE_RULE),
            rule("disrupted", "RestartJobSetAndIgnoreMaxRestarts", DISRUPTED_RULE),
        ],
    }
