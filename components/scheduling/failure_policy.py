"""Why a training job failed, and what that does: the trainer Job's `podFailurePolicy` names the
cause in the Job's failure message, and the JobSet's `failurePolicy` reads it (docs/training.md,
"When a node dies or a job hangs"): an exit no restart fixes (contract/exits.py) fails the JobSet
at once, a group stopped from outside (PREEMPTED, 143) restarts without counting, anything else
restarts it toward its restart limit. The job builder (components/scheduling/training_job.py)
puts both on every job it renders, and the same pod rules on a CronJob's Job.

The verdict must not depend on which failed pod the Job controller sees first. It fails the Job
on the first pod that matches a FailJob rule or exceeds `backoffLimit: 0`, at whichever sync sees
it (kubernetes/kubernetes pkg/controller/job/job_controller.go syncJob, getFailJobMessage before
the backoff check; pod_failure_policy.go matchPodFailurePolicy), and a group's pods end at
different times. So every rule reads what each pod of the group reports alike:

- the exit code, on every rank: trainkit stops every rank at the same step boundary when any
  of them got SIGTERM, and the launcher exits 143 for each (contract/launch.py, root_cause);
- not `DisruptionTarget`, which only the evicted or lost pod carries. A disrupted pod is
  `Ignore`d instead: it is neither a failure nor a reason (the Job replaces it, Kubernetes docs
  "Pod failure policy": Ignore), and the ranks it leaves behind decide. After an eviction they
  exit 143: no restart counts, in any order. After a lost node they fail on the lost peer
  (exit 1, or 124 from the watchdog) and the restart counts, in any order; the lost pod itself
  ends with no exit code of its own, long after them or not. A 1-node job has no one left
  behind: the Job replaces its disrupted pod and the JobSet does not restart at all.

A crash (1), a hang (124), a failed preflight and a killed rank (137 without DisruptionTarget)
count; so does an eviction of a script that does not stop its other ranks with 143 (without
trainkit they fail on the lost peer, exit 1), every time."""

from __future__ import annotations

from typing import Any

from contract.exits import PREEMPTED, UNFIXABLE

# The Job controller's failure message when a pod matches a FailJob rule (kubernetes/kubernetes
# pkg/controller/job/pod_failure_policy.go, matchPodFailurePolicy, unchanged 1.31 through 1.36):
#   "Container %s for pod %s/%s failed with exit code %v matching %v rule at index %d"
# The Job's Failed condition carries it with reason `PodFailurePolicy`; a JobSet rule matches
# the rule's index at the message's end (RE2), so index 1 never matches index 10.
FAIL_JOB_RULE_MESSAGE = "matching FailJob rule at index {index}$"
# Rule 1, the disrupted pod, is Ignore: it never fails the Job, so it has no message.
UNFIXABLE_RULE, PREEMPTED_RULE = 0, 2
# The JobSet's action on a group stopped from outside (the `preempted` rule below).
RESTART_UNCOUNTED = "RestartJobSetAndIgnoreMaxRestarts"

# What an eviction (a node drained or replaced, a GPU pod deleted for a driver upgrade) does to
# a running job under the rules below, as this module's docstring derives it: (which job, the
# restart it takes). The plan's blast radius says it of the jobs a GPU-stack change evicts
# (plan/blast_radius.py).
RESTARTS_AFTER_EVICTION: tuple[tuple[str, str], ...] = (
    (
        "a multi-node job on trainkit",
        f"its other ranks exit {PREEMPTED}: the JobSet restarts it whole from its last "
        f"checkpoint ({RESTART_UNCOUNTED}), not counted toward maxRestarts",
    ),
    (
        "a multi-node script without trainkit",
        "its other ranks fail on the lost peer (exit 1): the restart counts toward maxRestarts",
    ),
    (
        "a 1-node job",
        "the Job replaces its evicted pod (DisruptionTarget: Ignore); the JobSet does not restart",
    ),
)


def pod_failure_policy(container: str) -> dict[str, Any]:
    """Rules in order, first match wins per pod: rule 0 fails the Job on a code no restart
    fixes; rule 1 ignores a disrupted pod (preempted, evicted, its node drained or lost:
    DisruptionTarget), whatever it exited with; rule 2 fails the Job on 143, a rank that
    stopped because its group was told to. Any other failure fails the Job too
    (`backoffLimit: 0`, reason BackoffLimitExceeded): the JobSet restarts every pod, since the
    other ranks cannot go on without it."""

    def on_exit(codes: list[int]) -> dict[str, Any]:
        return {
            "action": "FailJob",
            "onExitCodes": {"containerName": container, "operator": "In", "values": codes},
        }

    return {
        "rules": [
            on_exit(sorted(UNFIXABLE)),
            {
                "action": "Ignore",
                "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
            },
            on_exit([PREEMPTED]),
        ]
    }


def failure_policy(max_restarts: int, replicated_job: str) -> dict[str, Any]:
    """JobSet's rules, first match wins (JobSet pkg/controllers/failure_policy.go,
    findFirstFailedPolicyRuleAndJob): unfixable fails the JobSet; preempted restarts it without
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
            rule("preempted", RESTART_UNCOUNTED, PREEMPTED_RULE),
        ],
    }
