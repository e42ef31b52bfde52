"""The platform ledger of a job the cluster holds (jobs/ledger.py), read the way `jobs status`
reads the job: kubectl JSON of its Kueue Workload and its pods, priced at its pool's GPU-hour.

Where each event comes from:
- queued: the Workload's creationTimestamp (Kueue's webhook creates it with the job);
- admitted: the Workload's `QuotaReserved` condition, status True (kueue v0.19.2,
  apis/kueue/v1beta2/workload_types.go: WorkloadQuotaReserved "the Workload has reserved quota
  a ClusterQueue"); evicted: its `Evicted` condition, status True, with its reason (Preempted,
  PodsReadyTimeout, AdmissionCheck, ClusterQueueStopped, Deactivated, NodeFailures, ...);
  finished: its `Finished` condition (reason Succeeded or Failed);
- scheduled and running: the last of the current pods' `PodScheduled` and `ContainersReady`
  conditions (Kubernetes "Pod Lifecycle", Pod conditions; lastTransitionTime);
- a restart: JobSet's status.restarts > 0 (jobset v0.12.0 jobset_types.go) recreates the pods,
  so the current pods' creation is when the newest restart began, and what came before it (and
  before an eviction Kueue has since re-admitted) is no longer in the API: `unrecorded`.
The Workload is the one labelled `kueue.x-k8s.io/job-uid=<the job's uid>` (kueue v0.19.2,
pkg/controller/constants/constants.go JobUIDLabel); the pods, `jobset.sigs.k8s.io/jobset-name`.
- quarantined: the annotation the self-test image writes on a node in the patch that
  quarantines it (contract/quarantine.py: its time and checks; the API keeps no time of the
  NoSchedule taint, a taint's `timeAdded` being written only for NoExecute ones, k8s.io/api
  core/v1 Taint), on the nodes the job's pods ran on (their spec.nodeName), when it falls in the
  job's current allocation: from then until the group runs again is the restart it caused. The
  Nodes are cluster-scoped, and a team's account holds rights in its own namespace only
  (components/control/team_access.py): where kubectl may not get them, the report says so and a
  quarantine's restart still counts, from the restart's pods, as a restart.
No checkpoint marker is in the API, so a failure's loss is unknown here; trainkit's ledger,
where the job uses it, measures it (jobs/ledger.refine)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import datetime
from fractions import Fraction
from typing import Any

from components.vocabulary import (
    JOB_NAME_LABEL,
    JOBSET_NAME_LABEL,
    QUARANTINE_ANNOTATION,
    QUEUE_LABEL,
)
from contract.env import TRAINING_JOB_POOL
from contract.quarantine import stamp_of
from jobs import ledger
from jobs.kubectl import Kubectl, KubectlError, resource_type
from jobs.state import env_value, true_conditions
from model.config import PlatformConfig
from model.cost import pool_gpu_hour_prices

WORKLOAD_TYPE = resource_type("kueue.x-k8s.io/v1beta2", "Workload")
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
GPU = "nvidia.com/gpu"


def seconds(stamp: str) -> int:
    """metav1.Time (RFC 3339, whole seconds) as Unix seconds."""
    return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp())


# The label each kind's controller puts on the job's pods: JobSet's (pkg/constants JobSetNameKey)
# and the Job controller's (Kubernetes "Jobs": batch.kubernetes.io/job-name, 1.27+).
POD_LABELS = {"JobSet": JOBSET_NAME_LABEL, "Job": JOB_NAME_LABEL}


def read(cluster: Kubectl, job: dict[str, Any]) -> tuple[dict[str, Any] | None, list[dict]]:
    meta = job["metadata"]
    namespace = meta.get("namespace", "")
    found = cluster.select(WORKLOAD_TYPE, f"{JOB_UID_LABEL}={meta['uid']}", namespace)
    pods = cluster.select("pods", f"{POD_LABELS[job['kind']]}={meta['name']}", namespace)
    return (found[0] if found else None), pods


def read_nodes(cluster: Kubectl, pods: list[dict[str, Any]]) -> tuple[list[dict], str]:
    """The Nodes the pods ran on, and why they could not be read ("" when they were)."""
    names = sorted({n for p in pods if (n := (p.get("spec") or {}).get("nodeName"))})
    if not names:
        return [], ""
    try:
        return cluster.nodes(names), ""
    except KubectlError as error:
        return [], f"quarantines: not read, your account may not get nodes ({error})"


def quarantines(nodes: Sequence[dict[str, Any]]) -> list[ledger.Event]:
    """Each node's quarantine, from its annotation (contract/quarantine.py)."""
    found = []
    for node in nodes:
        meta = node["metadata"]
        marked = stamp_of((meta.get("annotations") or {}).get(QUARANTINE_ANNOTATION, ""))
        if marked is not None:
            at, checks = marked
            reason = f"quarantined {meta['name']}: {checks}"
            found.append(ledger.Event(int(at.timestamp()), ledger.QUARANTINED, reason))
    return found


def _labelled(objects: list[dict[str, Any]], label: str, value: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["metadata"].get("labels", {}).get(label) == value]


def _condition_times(obj: dict[str, Any], kind: str) -> list[int]:
    at = true_conditions(obj).get(kind, {}).get("lastTransitionTime")
    return [seconds(at)] if at else []


def _all_pods(pods: list[dict[str, Any]], kind: str) -> int | None:
    """When the last pod reached condition `kind`; None until every pod has."""
    times = [_condition_times(pod, kind) for pod in pods]
    return max(t[0] for t in times) if pods and all(times) else None


def gpus_of(workload: dict[str, Any] | None, pods: list[dict[str, Any]]) -> int:
    """What Kueue admitted (status.admission.podSetAssignments[].resourceUsage), else what the
    current pods' containers ask."""
    assigned = (workload or {}).get("status", {}).get("admission", {}).get("podSetAssignments")
    if assigned:
        return sum(int(a.get("resourceUsage", {}).get(GPU, 0)) for a in assigned)
    return sum(
        int((c.get("resources") or {}).get("limits", {}).get(GPU, 0))
        for pod in pods
        for c in pod.get("spec", {}).get("containers", [])
    )


def timeline(
    job: dict[str, Any],
    workload: dict[str, Any] | None,
    pods: list[dict[str, Any]],
    now: int,
    nodes: Sequence[dict[str, Any]] = (),
) -> tuple[list[ledger.Event], int]:
    """The events the API still holds of the job (module docstring), and the ledger's end;
    `nodes`: those its pods ran on."""
    held = workload or job
    created = seconds(held["metadata"]["creationTimestamp"])
    events = [ledger.Event(created, ledger.QUEUED)]
    conditions = true_conditions(workload) if workload else {}
    admitted = _condition_times(workload, "QuotaReserved") if workload else []
    evicted = conditions.get("Evicted")
    if evicted:
        events.append(ledger.Event(created, ledger.UNRECORDED))
        events.append(
            ledger.Event(seconds(evicted["lastTransitionTime"]), ledger.EVICTED, evicted["reason"])
        )
    if admitted and (not evicted or admitted[0] > events[-1].at):
        events.append(ledger.Event(admitted[0], ledger.ADMITTED))
    restarts = job.get("status", {}).get("restarts", 0)
    if pods and restarts and admitted:
        attempt = min(seconds(p["metadata"]["creationTimestamp"]) for p in pods)
        if attempt > events[-1].at:
            events.append(ledger.Event(events[-1].at, ledger.UNRECORDED))
            events.append(ledger.Event(attempt, ledger.FAILED, f"JobSet restart {restarts}"))
    for kind, condition in (
        (ledger.SCHEDULED, "PodScheduled"),
        (ledger.RUNNING, "ContainersReady"),
    ):
        at = _all_pods(pods, condition)
        if at is not None and at >= events[-1].at:
            events.append(ledger.Event(at, kind))
    end = now
    finished = conditions.get("Finished")
    if finished:
        end = max(seconds(finished["lastTransitionTime"]), events[-1].at)
    if admitted:
        # A node's quarantine before this admission (an earlier allocation, another job's)
        # cost this one nothing.
        held = [e for e in quarantines(nodes) if admitted[0] <= e.at <= end]
        events = sorted([*events, *held], key=lambda e: e.at)
    if finished:
        events.append(ledger.Event(end, ledger.FINISHED, finished.get("reason", "")))
    return events, end


def gpu_hour_price(cfg: PlatformConfig, pool_name: str | None) -> tuple[float | None, str]:
    """One GPU-hour of the pool, from the one price table the team cost rules and `jobs usage`
    read (model/cost.pool_gpu_hour_prices: the group's dearest type, bought as the group buys
    it, in the stack's region)."""
    price = pool_gpu_hour_prices(cfg).get(pool_name or "")
    if price is None:
        return None, f"the job names no pool of this stack ({TRAINING_JOB_POOL}={pool_name})"
    return price.usd, price.basis


def _money(gpu_seconds: int | Fraction, price: float | None) -> str:
    return f" ${float(ledger.usd(gpu_seconds, price)):,.2f}" if price is not None else ""


def _figure(name: str, gpu_seconds: int | Fraction, price: float | None) -> str:
    return f"{name} {float(gpu_seconds):.0f} GPU-s{_money(gpu_seconds, price)}"


def report(book: ledger.JobLedger, price: float | None, basis: str) -> list[str]:
    """`jobs status`' lines of the platform ledger."""
    figures = book.gpu_seconds()
    allocation = book.allocation * book.gpus
    if not allocation:
        return [f"platform ledger: no allocation yet; queueing {book.queueing} s"]
    share = 100 * figures["goodput"] / allocation
    bound = "" if book.failure_known else " (at most: work lost to a failure is unknown)"
    lines = [
        f"platform ledger: {book.allocation} s allocated on {book.gpus} GPU(s), "
        f"{allocation} GPU-s{_money(allocation, price)}; goodput {share:.1f}%{bound}, "
        + _figure("", figures["goodput"], price).strip(),
    ]
    spent = [
        _figure(cause, figures[cause], price)
        for cause in ledger.CAUSES
        if figures[cause] and not (cause == ledger.FAILURE and not book.failure_known)
    ]
    if not book.failure_known:
        spent.append("failure unknown, not counted (no checkpoint marker)")
    lines.append("badput: " + ("; ".join(spent) or "none"))
    outside = f"queueing {book.queueing} s"
    if book.unrecorded_outside:
        outside += f", unrecorded {book.unrecorded_outside} s"
    lines.append(f"outside the allocation (no GPU held, not priced): {outside}")
    if price is None:
        lines.append(f"priced at: unknown: {basis}")
    else:
        lines.append(f"priced at: ${price:g}/GPU-h, {basis}")
    return lines


def refined_line(
    book: ledger.JobLedger, productive: float, lost: dict[str, float], price: float | None
) -> str:
    """trainkit's split of the running time the platform saw (jobs/ledger.refine)."""
    try:
        refined = ledger.refine(book, productive, lost)
    except ledger.Disagreement as error:
        return f"trainkit refines it: not used: {error}"
    parts = [
        _figure("goodput", refined.goodput, price),
        _figure("failure", refined.badput[ledger.FAILURE], price),
        _figure(ledger.IN_PROCESS, refined.badput[ledger.IN_PROCESS], price),
    ]
    return "trainkit refines it: " + "; ".join(parts)


def job_ledger(
    job: dict[str, Any],
    workload: dict[str, Any] | None,
    pods: list[dict],
    now: int,
    nodes: Sequence[dict[str, Any]] = (),
) -> ledger.JobLedger:
    events, end = timeline(job, workload, pods, now, nodes)
    return ledger.ledger(events, end, gpus_of(workload, pods))


def platform_lines(
    cfg: PlatformConfig,
    cluster: Kubectl,
    job: dict[str, Any],
    now: int,
    trainkit: tuple[float, dict[str, float]] | None = None,
) -> list[str]:
    """The ledger's lines; `trainkit`: the job's productive and lost GPU-seconds by cause,
    where it pushed them."""
    workload, pods = read(cluster, job)
    nodes, unread = read_nodes(cluster, pods)
    book = job_ledger(job, workload, pods, now, nodes)
    price, basis = gpu_hour_price(cfg, env_value(job, TRAINING_JOB_POOL))
    lines = report(book, price, basis)
    quarantined = [cause for cause in book.restarts if cause.startswith(ledger.QUARANTINED)]
    lines += [f"restart cause: {cause}" for cause in quarantined] + ([unread] if unread else [])
    if trainkit is not None and book.allocation:
        lines.append(refined_line(book, *trainkit, price))
    return lines


def team_lines(
    cfg: PlatformConfig, cluster: Kubectl, types: str, namespace: str, now: int
) -> list[str]:
    """Every platform job of a team's namespace (each carries Kueue's queue label): one line
    each, then the team's goodput and badput by cause in GPU-seconds, each job priced at its
    own pool's GPU-hour. Four kubectl calls, whatever the number of jobs (the fourth, the
    Nodes its pods ran on, for their quarantines)."""
    jobs = cluster.select(types, QUEUE_LABEL, namespace)
    workloads = cluster.select(WORKLOAD_TYPE, JOB_UID_LABEL, namespace)
    # Every Job's pods carry the Job controller's label, a JobSet's child Jobs' too.
    pods = cluster.select("pods", POD_LABELS["Job"], namespace)
    nodes, unread = read_nodes(cluster, pods)
    node_named = {node["metadata"]["name"]: node for node in nodes}
    lines, books, spent = [], [], Counter()
    unpriced = 0
    for job in sorted(jobs, key=lambda j: j["metadata"]["name"]):
        meta = job["metadata"]
        held = _labelled(workloads, JOB_UID_LABEL, meta["uid"])
        own_pods = _labelled(pods, POD_LABELS[job["kind"]], meta["name"])
        ran_on = {(p.get("spec") or {}).get("nodeName") for p in own_pods}
        own_nodes = [node for name, node in node_named.items() if name in ran_on]
        book = job_ledger(job, held[0] if held else None, own_pods, now, own_nodes)
        books.append(book)
        price, _ = gpu_hour_price(cfg, env_value(job, TRAINING_JOB_POOL))
        figures = book.gpu_seconds()
        allocation = book.allocation * book.gpus
        if price is None:
            unpriced += 1
        else:
            spent.update({key: ledger.usd(value, price) for key, value in figures.items()})
            spent["allocation"] += ledger.usd(allocation, price)
        share = f"{100 * figures['goodput'] / allocation:.1f}%" if allocation else "-"
        lines.append(
            f"{job['kind']} {meta['name']}: {allocation} GPU-s{_money(allocation, price)}, "
            f"goodput {share}, queueing {book.queueing} s"
        )
    totals = ledger.team_totals(books)
    allocation = sum(totals.values())

    def money(key: str) -> str:
        # A sum in dollars only when every job has a price: a partial one would read as whole.
        return f" ${float(spent[key]):,.2f}" if not unpriced else ""

    head = f"team {namespace}: {len(jobs)} job(s), {allocation} GPU-s allocated"
    if allocation:
        head += f"{money('allocation')}; goodput {100 * totals['goodput'] / allocation:.1f}% "
        head += f"{totals['goodput']} GPU-s{money('goodput')}"
    causes = [f"{c} {totals[c]} GPU-s{money(c)}" for c in ledger.CAUSES if totals[c]]
    lines.append(head)
    lines.append("badput: " + ("; ".join(causes) or "none"))
    if unpriced:
        lines.append(f"not priced: {unpriced} job(s) whose pool has no price (each job says why)")
    return lines + ([unread] if unread else [])
