"""The failure policies on their own (components/scheduling/failure_policy.py), against the Job
and JobSet controllers' rules as tests/helpers/jobset_harness.py models them, with the messages
the Job controller writes (kubernetes/kubernetes pkg/controller/job/pod_failure_policy.go,
matchPodFailurePolicy: "Container %s for pod %s/%s failed with exit code %v matching %v rule at
index %d"), and the class that decides which restarts count: whatever order the Job controller
observes a group's failed pods in, on the policies every rendered job carries."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from components.scheduling.failure_policy import failure_policy, pod_failure_policy
from tests.helpers import jobsets
from tests.helpers.jobset_harness import ended_pod, job_failure, jobset_action
from tests.helpers.rendered_jobs import SWEPT_STACKS, every_job

# contract/exits.py and the kubelet's 128 + signal: 143 a rank stopped on SIGTERM (trainkit
# stops every rank of the group so), 137 SIGKILL, 124 the watchdog, 1 a crash or a lost peer.
PREEMPTED, KILLED, HUNG, CRASHED = 143, 137, 124, 1
FREE, COUNTED = "RestartJobSetAndIgnoreMaxRestarts", "RestartJobSet"


def test_the_limit_and_the_replicated_job_are_the_callers():
    policy = failure_policy(7, "workers")
    assert policy["maxRestarts"] == 7
    assert {tuple(r["targetReplicatedJobs"]) for r in policy["rules"]} == {("workers",)}
    unfixable, _, preempted = pod_failure_policy("main")["rules"]
    assert unfixable["onExitCodes"]["containerName"] == "main"
    assert preempted["onExitCodes"]["containerName"] == "main"


@pytest.mark.parametrize(
    ("exit_code", "action"),
    [
        # contract/exits.py: 2 bad arguments, 78 sysexits EX_CONFIG; no restart fixes them.
        (2, "FailJobSet"),
        (78, "FailJobSet"),
        (PREEMPTED, FREE),
        (CRASHED, COUNTED),
        (HUNG, COUNTED),
        (KILLED, COUNTED),
    ],
)
def test_each_exit_reaches_the_jobset_action_its_cause_calls_for(exit_code, action):
    failure = job_failure([ended_pod(exit_code)], pod_failure_policy("trainer"))
    assert jobset_action(failure_policy(3, "trainer"), *failure) == action


def test_a_disrupted_pod_is_not_a_failure_whatever_it_exited_with():
    """Kubernetes docs, "Pod failure policy": Ignore, the pod is not counted and the Job
    replaces it; a 1-node job's JobSet does not restart at all."""
    for code in (PREEMPTED, KILLED, None):
        assert job_failure([ended_pod(code, disrupted=True)], pod_failure_policy("t")) is None


def test_a_rule_index_is_read_at_the_messages_end_so_index_20_is_not_index_2():
    policy = failure_policy(3, "trainer")
    message = (
        "Container trainer for pod training/p failed with exit code 143 matching FailJob rule "
        "at index 2"
    )
    assert jobset_action(policy, "PodFailurePolicy", message) == FREE
    assert jobset_action(policy, "PodFailurePolicy", message + "0") == COUNTED


def pods(*ended: tuple[int | None, bool]):
    """A group's failed pods, index by index: (exit code or None, DisruptionTarget)."""
    return [
        dataclasses.replace(ended_pod(code, disrupted), index=i)  # type: ignore[arg-type]
        for i, (code, disrupted) in enumerate(ended)
    ]


# What each pod of a 2- and a 3-pod group reports; pod 0 is the one the cause struck.
EVICTIONS = [
    # Evicted (drain, preemption, spot reclaim, repair): it saves and exits 143; trainkit stops
    # the others at the same step boundary, 143 each.
    pods((PREEMPTED, True), (PREEMPTED, False)),
    pods((PREEMPTED, True), (PREEMPTED, False), (PREEMPTED, False)),
    # Its save outlived the grace period: SIGKILL, 137, the others still 143.
    pods((KILLED, True), (PREEMPTED, False)),
    pods((KILLED, True), (PREEMPTED, False), (PREEMPTED, False)),
]
LOST_NODES = [
    # The node is gone: its pod has no exit code and, marked failed by the pod GC or the taint
    # manager, DisruptionTarget; the others fail on the lost peer or hang into the watchdog.
    pods((None, True), (CRASHED, False)),
    pods((None, True), (HUNG, False)),
    pods((None, True), (CRASHED, False), (CRASHED, False)),
    pods((None, True), (CRASHED, False), (HUNG, False)),
]
CRASHES = [
    pods((CRASHED, False), (CRASHED, False)),
    pods((KILLED, False), (CRASHED, False), (HUNG, False)),
]


def verdicts(group, pod_policy, policy) -> set[str]:
    """The JobSet's action for every order the Job controller may observe the pods in."""
    found = set()
    for order in itertools.permutations(group):
        failure = job_failure(list(order), pod_policy)
        assert failure is not None, f"the Job never failed: {order}"
        found.add(jobset_action(policy, *failure))
    return found


def rendered_policies(stack: str) -> dict[str, tuple[dict, dict]]:
    """Each JobSet's (failurePolicy, the trainer Job's podFailurePolicy), by what it is."""
    return {
        f"{stack}: {what}": (
            obj["spec"]["failurePolicy"],
            jobsets.job_spec(obj)["podFailurePolicy"],
        )
        for what, obj in every_job(stack)
        if obj["kind"] == jobsets.KIND
    }


@pytest.mark.parametrize("stack", SWEPT_STACKS)
def test_an_eviction_never_counts_and_a_lost_node_always_does_in_every_order(stack):
    """docs/training.md, "When a node dies or a job hangs": which restarts count is decided by
    what every pod of the group reports, not by which failed pod the Job controller sees first
    (kubernetes pkg/controller/job/job_controller.go syncJob fails the Job at the first pod
    that matches a FailJob rule or exceeds backoffLimit 0)."""
    found = rendered_policies(stack)
    assert found, f"{stack} renders no JobSet"
    problems = []
    for what, (policy, pod_policy) in found.items():
        for cases, wanted in ((EVICTIONS, {FREE}), (LOST_NODES, {COUNTED}), (CRASHES, {COUNTED})):
            for group in cases:
                got = verdicts(group, pod_policy, policy)
                if got != wanted:
                    reported = [(p.exit_code, p.disrupted) for p in group]
                    problems.append(f"{what}: pods {reported}: {sorted(got)}, not {wanted}")
    assert not problems, "\n".join(problems[:10])
