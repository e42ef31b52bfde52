"""The failure policies on their own (components/scheduling/failure_policy.py), against the Job
and JobSet controllers' rules as tests/helpers/jobset_harness.py models them, with the messages
the Job controller writes (kubernetes/kubernetes pkg/controller/job/pod_failure_policy.go,
matchPodFailurePolicy: "Container %s for pod %s/%s failed with exit code %v matching %v rule at
index %d" and "Pod %s/%s has condition %v matching %v rule at index %d"). The rendered JobSet's
copies are tested in test_training_job.py."""

from __future__ import annotations

import pytest

from components.scheduling.failure_policy import failure_policy, pod_failure_policy
from tests.helpers.jobset_harness import ended_pod, job_failure, jobset_action


def test_the_limit_and_the_replicated_job_are_the_callers():
    policy = failure_policy(7, "workers")
    assert policy["maxRestarts"] == 7
    assert {tuple(r["targetReplicatedJobs"]) for r in policy["rules"]} == {("workers",)}
    (unfixable, _) = pod_failure_policy("main")["rules"]
    assert unfixable["onExitCodes"]["containerName"] == "main"


@pytest.mark.parametrize(
    ("exit_code", "disrupted", "action"),
    [
        # contract/exits.py: 2 bad arguments, 78 sysexits EX_CONFIG; no restart fixes them.
        (2, False, "FailJobSet"),
        (78, False, "FailJobSet"),
        (143, True, "RestartJobSetAndIgnoreMaxRestarts"),
        (1, False, "RestartJobSet"),
        (124, False, "RestartJobSet"),
        (137, False, "RestartJobSet"),
    ],
)
def test_each_exit_reaches_the_jobset_action_its_cause_calls_for(exit_code, disrupted, action):
    failure = job_failure([ended_pod(exit_code, disrupted)], pod_failure_policy("trainer"))
    assert jobset_action(failure_policy(3, "trainer"), *failure) == action


def test_a_rule_index_is_read_at_the_messages_end_so_index_10_is_not_index_1():
    policy = failure_policy(3, "trainer")
    message = "Pod training/p has condition DisruptionTarget matching FailJob rule at index 1"
    assert jobset_action(policy, "PodFailurePolicy", message) == (
        "RestartJobSetAndIgnoreMaxRestarts"
    )
    assert jobset_action(policy, "PodFailurePolicy", message + "0") == "RestartJobSet"
