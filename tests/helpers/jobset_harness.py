"""A small stand-in for the JobSet and Job controllers, driving real launcher processes: each
"pod" is a process group of its own (the launcher as the container's PID 1, its agent's workers
below it), one per node index of the JobSet's single replicatedJob.

The rules it applies, as their documentation states them (../shared/PINS.md, "JobSet (0.12.0)"):
- the Job (Indexed, restartPolicy Never, backoffLimit 0) evaluates its `podFailurePolicy` on a
  failed pod, rules in order, first match wins: `onExitCodes` (containerName, operator In or
  NotIn, values; a container with no exit code, as on a lost node, matches none) or
  `onPodConditions` (DisruptionTarget when the harness disrupted the pod).
  `FailJob` fails the Job with reason `PodFailurePolicy` and the message kubernetes/kubernetes
  pkg/controller/job/pod_failure_policy.go formats: "Container %s for pod %s/%s failed with exit
  code %v matching %v rule at index %d" (or "Pod %s/%s has condition %v matching %v rule at
  index %d"); `Ignore` does not count the pod and the Job starts a replacement for its index;
  `Count` or no match counts it, and more counted failures than backoffLimit fail the Job with
  reason `BackoffLimitExceeded`. The failed pods are read in the order the controller observes
  them, each observation a sync (job_controller.go syncJob): `job_failure` over every order is
  every outcome the controller can reach;
- the JobSet's `failurePolicy` (jobset api/jobset/v1alpha2/jobset_types.go, pkg/controllers/
  failure_policy.go): rules in order, the first whose `onJobFailureReasons` holds the Job's
  reason and one of whose `onJobFailureMessagePatterns` matches its message (RE2, unanchored)
  wins; no match is `RestartJobSet`. `FailJobSet` fails it; `RestartJobSet` fails it once
  `restartsCountTowardsMax` has reached `maxRestarts`, else counts the restart;
  `RestartJobSetAndIgnoreMaxRestarts` restarts without counting;
- `BlockingRecreate`: every old pod is gone (SIGTERM to the container, SIGKILL after the grace
  period, then no process of it left) before any new one starts; each pod of the new attempt
  gets the restart count as JOBSET_RESTART_ATTEMPT (the `jobset.sigs.k8s.io/restart-attempt`
  annotation through the downward API)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

from tests.helpers.hang import HANG_S

CONTAINER = "trainer"
REPLICATED_JOB = "trainer"
POLL_S = 0.1


@dataclass
class Pod:
    index: int
    attempt: int
    process: subprocess.Popen
    log: Path
    started_at: float
    ended_at: float | None = None
    disrupted: bool = False
    jobset: str = "job"
    # Every live process of the pod, where its processes leave its process group (torch's
    # agent starts each worker in a session of its own): a container's cgroup holds them all.
    processes: Callable[[], list[int]] | None = None

    @property
    def name(self) -> str:
        return f"{self.jobset}-trainer-0-{self.index}"

    @property
    def exit_code(self) -> int | None:
        """As the kubelet reports a container: a signal N as 128 + N."""
        code = self.process.returncode
        return None if code is None else (128 - code if code < 0 else code)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def live(self) -> list[int]:
        return self.processes() if self.processes else _live_processes(self.process.pid)

    def kill(self) -> None:
        """The node or container dies: every process of the pod, at once."""
        if self.processes is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            return
        for pid in self.processes():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def ended_pod(exit_code: int, disrupted: bool = False) -> Pod:
    """A pod whose container has already exited with `exit_code`: for the rules alone."""
    ended = SimpleNamespace(returncode=exit_code)
    return Pod(0, 0, ended, Path("log"), 0.0, 1.0, disrupted)  # type: ignore[arg-type]


@dataclass
class Outcome:
    state: str  # Completed or Failed
    reason: str
    restarts: int
    restarts_counted: int
    attempts: list[list[Pod]] = field(default_factory=list)
    job_failures: list[tuple[str, str, str]] = field(default_factory=list)  # reason, msg, action


def _rule_matches_pod(rule: dict, pod: Pod) -> bool:
    if "onExitCodes" in rule:
        codes = rule["onExitCodes"]
        if codes.get("containerName", CONTAINER) != CONTAINER or pod.exit_code is None:
            return False
        inside = pod.exit_code in codes["values"]
        return inside if codes["operator"] == "In" else not inside
    return any(
        c["type"] == "DisruptionTarget" and c.get("status", "True") == "True" and pod.disrupted
        for c in rule["onPodConditions"]
    )


def matching_rule(pod: Pod, pod_failure_policy: dict) -> tuple[int, dict] | None:
    """The first rule that matches the failed pod, with its index."""
    for index, rule in enumerate(pod_failure_policy["rules"]):
        if _rule_matches_pod(rule, pod):
            return index, rule
    return None


def job_failure(
    failed: list[Pod], pod_failure_policy: dict, backoff_limit: int = 0, namespace: str = "default"
) -> tuple[str, str] | None:
    """(reason, message) of the Job's failure from its failed pods (in the order they ended),
    or None while it has not failed."""
    counted = 0
    for pod in failed:
        matched = matching_rule(pod, pod_failure_policy)
        action = matched[1]["action"] if matched else "Count"
        if action == "FailJob":
            index, rule = matched
            if "onExitCodes" in rule:
                message = (
                    f"Container {CONTAINER} for pod {namespace}/{pod.name} failed with exit "
                    f"code {pod.exit_code} matching FailJob rule at index {index}"
                )
            else:
                message = (
                    f"Pod {namespace}/{pod.name} has condition DisruptionTarget matching "
                    f"FailJob rule at index {index}"
                )
            return "PodFailurePolicy", message
        if action != "Ignore":
            counted += 1
        if counted > backoff_limit:
            return "BackoffLimitExceeded", "Job has reached the specified backoff limit"
    return None


def jobset_action(
    failure_policy: dict, reason: str, message: str, replicated_job: str = REPLICATED_JOB
) -> str:
    for rule in failure_policy.get("rules", []):
        if rule.get("targetReplicatedJobs") and replicated_job not in rule["targetReplicatedJobs"]:
            continue
        if rule.get("onJobFailureReasons") and reason not in rule["onJobFailureReasons"]:
            continue
        patterns = rule.get("onJobFailureMessagePatterns")
        if patterns and not any(re.search(p, message) for p in patterns):
            continue
        return rule["action"]
    return "RestartJobSet"


def _live_processes(group: int) -> list[int]:
    """Processes of process group `group` that are not zombies (/proc/<pid>/stat: state, pgrp)."""
    live = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            live.append(int(entry.name))
    return live


class JobSetHarness:
    """`start(index, attempt, env)` starts one pod's launcher (with `env` added) and returns its
    Popen, in a new session, its output to the log file given; `fault(attempt, pods)` runs in a
    thread beside each attempt (kill or disrupt a pod)."""

    def __init__(
        self, start: Callable[[int, int, dict, Path], subprocess.Popen], nodes: int,
        failure_policy: dict, pod_failure_policy: dict, logs: Path, grace_s: float = 30.0,
        name: str = "job", namespace: str = "default",
        processes: Callable[[subprocess.Popen], list[int]] | None = None,
    ) -> None:  # fmt: skip
        self.start, self.nodes, self.logs, self.grace_s = start, nodes, logs, grace_s
        self.name, self.namespace, self.processes = name, namespace, processes
        self.failure_policy, self.pod_failure_policy = failure_policy, pod_failure_policy
        logs.mkdir(parents=True, exist_ok=True)

    def _start_pod(self, index: int, attempt: int, replacement: int = 0) -> Pod:
        suffix = f"-{replacement}" if replacement else ""
        log = self.logs / f"attempt-{attempt}-pod-{index}{suffix}.log"
        env = {"JOBSET_RESTART_ATTEMPT": str(attempt)}
        process = self.start(index, attempt, env, log)
        every = (lambda p=process: self.processes(p)) if self.processes else None
        return Pod(index, attempt, process, log, time.time(), jobset=self.name, processes=every)

    def _start(self, attempt: int) -> list[Pod]:
        return [self._start_pod(index, attempt) for index in range(self.nodes)]

    def _delete(self, pods: list[Pod]) -> None:
        """The Job's pods deleted: SIGTERM to each container, SIGKILL after the grace period,
        and BlockingRecreate's wait until no process of any of them is left."""
        for pod in pods:
            if pod.process.poll() is None:
                pod.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.grace_s
        for pod in pods:
            with contextlib.suppress(subprocess.TimeoutExpired):
                pod.process.wait(timeout=max(0.0, deadline - time.monotonic()))
            if pod.live():
                pod.kill()
            pod.process.wait(timeout=HANG_S)
            pod.ended_at = pod.ended_at or time.time()
        give_up = time.monotonic() + HANG_S
        while any(pod.live() for pod in pods):
            assert time.monotonic() < give_up, "old pods' processes outlived BlockingRecreate"
            time.sleep(POLL_S)

    def run(self, fault: Callable[[int, list[Pod]], None] | None = None) -> Outcome:
        policy = self.failure_policy
        outcome = Outcome("Running", "", 0, 0)
        give_up = time.monotonic() + HANG_S
        while True:
            pods = self._start(outcome.restarts)
            outcome.attempts.append(pods)
            if fault is not None:
                threading.Thread(target=fault, args=(outcome.restarts, pods), daemon=True).start()
            failure, replaced = None, []
            while failure is None:
                assert time.monotonic() < give_up, "the JobSet neither finished nor failed"
                for i, pod in enumerate(pods):
                    if pod.ended_at is None and pod.process.poll() is not None:
                        pod.ended_at = time.time()
                    matched = pod.exit_code and matching_rule(pod, self.pod_failure_policy)
                    if matched and matched[1]["action"] == "Ignore":
                        # The Job does not count it and starts its index again.
                        replaced.append(pod)
                        pods[i] = self._start_pod(pod.index, outcome.restarts, len(replaced))
                failed = sorted((p for p in pods if p.exit_code not in (None, 0)),
                                key=lambda p: p.ended_at)  # fmt: skip
                failure = job_failure(failed, self.pod_failure_policy, namespace=self.namespace)
                if failure is None and all(p.exit_code == 0 for p in pods):
                    outcome.state, outcome.reason = "Completed", "AllJobsCompleted"
                    return outcome
                time.sleep(POLL_S)
            action = jobset_action(policy, *failure)
            outcome.job_failures.append((*failure, action))
            self._delete(pods + replaced)
            if action == "FailJobSet":
                outcome.state, outcome.reason = "Failed", "FailJobSet"
                return outcome
            if action == "RestartJobSet":
                if outcome.restarts_counted >= policy["maxRestarts"]:
                    outcome.state, outcome.reason = "Failed", "ReachedMaxRestarts"
                    return outcome
                outcome.restarts_counted += 1
            outcome.restarts += 1
