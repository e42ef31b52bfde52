"""A reserved pool's window on a simulated clock: the CronJobs the program renders
(components/scheduling/reservation.py), their schedules read by a real cron parser (croniter, as
the CronJob controller reads a standard schedule in its timeZone), each firing applying what the
controller does at that time (contract/reservation.py `actions`, with the quotas the CronJob
carries; bootstrap/selftest/reservation.py does it on a cluster, tested in tests/image/selftest
/test_reservation.py) to a Kueue that admits by the admission model
(tests/controllers/kueue_admission.py), minute by minute through the windows of the window
stack (tests/helpers/varied_stacks.py)."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from typing import Any

import pytest
from croniter import croniter

from components.control.namespaces import job_namespaces
from components.scheduling.kueue import manager_config, uncounted_resources
from components.scheduling.queues import kueue_objects
from components.scheduling.reservation import reservation_objects
from components.scheduling.training_job import KUBERNETES_GRACE_PERIOD_SECONDS
from contract.reservation import ENV_FLAVOR, ENV_QUOTAS, actions
from model.config import PlatformConfig
from tests.controllers.kueue_admission import Kueue, assigned_flavor, pod_sets, quantity
from tests.helpers.kueue_objects import gpu_job
from tests.helpers.varied_stacks import window_config


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


BEGIN, END = utc("2026-12-14T10:00"), utc("2027-01-01T06:00")


def p5_job(name: str) -> dict[str, Any]:
    """A whole p5.48xlarge node's job (8 GPUs) on the training namespace's LocalQueue."""
    return gpu_job(name, "training", 8)


@dataclass
class Cluster:
    """A Kueue that admits by the model: each Workload of a job, deactivated ones evicted
    (their quota released once their pods are gone, after the grace), active unadmitted ones
    admitted to the flavor the model assigns."""

    kueue: Kueue
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    workloads: dict[str, dict[str, Any]] = field(default_factory=dict)
    # (time, workload, flavor) of every admission; (time, workload) of every eviction.
    admitted: list[tuple[datetime, str, str]] = field(default_factory=list)
    evicted: list[tuple[datetime, str]] = field(default_factory=list)
    now: datetime = BEGIN

    def submit(self, job: dict[str, Any]) -> None:
        name = job["metadata"]["name"]
        self.jobs[name] = job
        self.workloads[name] = {
            "metadata": {"name": name, "namespace": job["metadata"]["namespace"]},
            "spec": {"active": True},
            "status": {"conditions": []},
        }

    def flavor_of(self, name: str) -> str | None:
        admission = self.workloads[name]["status"].get("admission")
        return admission["podSetAssignments"][0]["flavors"]["nvidia.com/gpu"] if admission else None

    def usage(self) -> dict[str, dict[tuple[str, str], Fraction]]:
        found: dict[str, dict[tuple[str, str], Fraction]] = {}
        for name in self.workloads:
            flavor = self.flavor_of(name)
            if flavor is None:
                continue
            (ps,) = pod_sets(self.jobs[name])
            used = found.setdefault("shared", {})
            for resource, amount in ps.requests.items():
                key = (flavor, resource)
                used[key] = used.get(key, Fraction(0)) + amount * ps.count
        return found

    def step(self) -> None:
        for name, wl in self.workloads.items():
            status = wl["status"]
            evicted = not wl["spec"]["active"] and status.get("admission")
            if evicted and self.now >= status["releaseAt"]:
                status.pop("admission")
                status.pop("releaseAt")
                status["conditions"] = [{"type": "QuotaReserved", "status": "False"}]
                self.evicted.append((self.now, name))
        for name, wl in self.workloads.items():
            if wl["spec"]["active"] and not wl["status"].get("admission"):
                flavor = assigned_flavor(self.kueue, self.jobs[name], self.usage())
                if flavor is not None:
                    wl["status"]["admission"] = {
                        "podSetAssignments": [{"flavors": {"nvidia.com/gpu": flavor}}]
                    }
                    wl["status"]["conditions"] = [{"type": "QuotaReserved", "status": "True"}]
                    self.admitted.append((self.now, name, flavor))

    def apply(self, cron_job: dict[str, Any], cfg: PlatformConfig) -> None:
        """What a run of the CronJob does now: the flavor's quota in each queue the CronJob
        names, open or 0; from the drain on, its workloads deactivated (Kueue evicts them,
        releasing their quota once their pods had their grace) and, to requeue, reactivated
        once released."""
        env = env_of(cron_job)
        flavor = env[ENV_FLAVOR]
        (group,) = [g for g in cfg.gpu_node_groups if g.name == flavor]
        assert group.reservation_window is not None
        todo = actions(group.reservation_window.window(), self.now)
        for queue, quota in json.loads(env[ENV_QUOTAS]).items():
            for rg in self.kueue.objects["ClusterQueue"][queue]["spec"]["resourceGroups"]:
                for entry in rg["flavors"]:
                    for resource in entry["resources"] if entry["name"] == flavor else []:
                        opened = quota[resource["name"]]
                        resource["nominalQuota"] = opened if todo.flavor_open else "0"
        if not todo.evict:
            return
        stopped = [n for n in self.workloads if self.flavor_of(n) == flavor]
        for name in stopped:
            self.workloads[name]["spec"]["active"] = False
            self.workloads[name]["status"]["releaseAt"] = self.now + grace()
        if todo.reactivate:
            self.now += grace()
            self.step()
            for name in stopped:
                self.workloads[name]["spec"]["active"] = True
            self.step()


def grace() -> timedelta:
    return timedelta(seconds=KUBERNETES_GRACE_PERIOD_SECONDS)


def cron_jobs(cfg: PlatformConfig) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in reservation_objects(cfg) if o["kind"] == "CronJob"}


def fire_times(cron_job: dict[str, Any], begin: datetime, end: datetime) -> list[datetime]:
    """When the CronJob controller starts the CronJob's Job between `begin` and `end`."""
    assert cron_job["spec"]["timeZone"] == "Etc/UTC"
    found, it = [], croniter(cron_job["spec"]["schedule"], begin - timedelta(minutes=1))
    while (at := it.get_next(datetime)) <= end:
        found.append(at)
    return found


def env_of(cron_job: dict[str, Any]) -> dict[str, str]:
    (container,) = cron_job["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e["value"] for e in container["env"]}


# The windows of tests/helpers/varied_stacks.py, and when each phase begins: the warm-up at the
# start, the flavor open after the warm-up (30 minutes by default for the block, 15 for the
# reservation), the drain 60 minutes (default) / 20 minutes before the end, closed at the end.
EXPECTED = {
    "reservation-block-warming": "2026-12-14T11:30",
    "reservation-block-open": "2026-12-14T12:00",
    "reservation-block-draining": "2026-12-16T10:30",
    "reservation-block-closed": "2026-12-16T11:30",
    "reservation-odcr-warming": "2026-12-31T20:00",
    "reservation-odcr-open": "2026-12-31T20:15",
    "reservation-odcr-draining": "2027-01-01T03:40",
    "reservation-odcr-closed": "2027-01-01T04:00",
}


def test_every_transition_fires_at_its_time_once_in_the_simulated_span():
    jobs = cron_jobs(window_config())
    for name, at in EXPECTED.items():
        assert fire_times(jobs[name], BEGIN, END) == [utc(at)], name


def test_the_block_drains_before_eks_scales_it_down_and_ec2_reclaims_it():
    # EKS User Guide capacity-blocks-mng: scale-down to 0 forty minutes before the end; EC2 User
    # Guide capacity-blocks-monitor: instances begin to terminate 30 minutes before the end.
    drain = utc(EXPECTED["reservation-block-draining"])
    end = utc(EXPECTED["reservation-block-closed"])
    assert drain < end - timedelta(minutes=40) < end - timedelta(minutes=30)


def simulate() -> Cluster:
    cfg = window_config()
    objects = copy.deepcopy(kueue_objects(cfg, autoscaled=True))
    config = manager_config(
        uncounted_resources(cfg), job_namespaces(cfg), cfg.scheduling.fair_sharing
    )
    cluster = Cluster(Kueue.of(objects, config, windows="closed"))
    jobs = cron_jobs(cfg)
    fires: dict[datetime, list[str]] = {}
    for name, job in jobs.items():
        for at in fire_times(job, BEGIN, END):
            fires.setdefault(at, []).append(name)
    # One job as the block opens, one as the reservation opens: each lands on the flavor that
    # is open then, the first one the queue lists.
    submissions = {
        utc(EXPECTED["reservation-block-open"]): "a",
        utc(EXPECTED["reservation-odcr-open"]): "b",
    }
    now = BEGIN
    while now <= END:
        cluster.now = now
        for name in sorted(fires.get(now, [])):
            cluster.apply(jobs[name], cfg)
        if now in submissions:
            cluster.submit(p5_job(submissions[now]))
        cluster.step()
        now += timedelta(minutes=1)
    return cluster


@pytest.fixture(scope="module")
def run() -> Cluster:
    return simulate()


def test_nothing_lands_on_a_reserved_flavor_outside_its_open_phase(run):
    opened = {f: utc(EXPECTED[f"reservation-{f}-open"]) for f in ("block", "odcr")}
    drained = {f: utc(EXPECTED[f"reservation-{f}-draining"]) for f in ("block", "odcr")}
    for at, _, flavor in run.admitted:
        if flavor in opened:
            # Not before the warm-up is done, not from end - drain on.
            assert opened[flavor] <= at < drained[flavor], (at, flavor)


def test_the_block_opens_and_its_drained_job_is_requeued_to_the_on_demand_flavor(run):
    a = [(at, flavor) for at, name, flavor in run.admitted if name == "a"]
    drain = utc(EXPECTED["reservation-block-draining"])
    assert a[0] == (utc(EXPECTED["reservation-block-open"]), "block")
    # Evicted at the drain once its pods had their grace, then admitted again elsewhere.
    assert (drain + grace(), "a") in run.evicted
    assert a[1][1] == "p5od" and drain <= a[1][0] < drain + timedelta(minutes=5)
    assert run.flavor_of("a") == "p5od"


def test_the_reservation_holds_its_drained_job(run):
    b = [(at, flavor) for at, name, flavor in run.admitted if name == "b"]
    assert b == [(utc(EXPECTED["reservation-odcr-open"]), "odcr")]
    assert run.workloads["b"]["spec"]["active"] is False
    assert run.flavor_of("b") is None


def test_both_flavors_are_closed_after_their_ends(run):
    cq = run.kueue.objects["ClusterQueue"]["shared"]
    (group,) = cq["spec"]["resourceGroups"]
    gpus = {
        f["name"]: next(quantity(r["nominalQuota"]) for r in f["resources"])
        for f in group["flavors"]
    }
    assert gpus["block"] == 0 and gpus["odcr"] == 0


def test_the_declared_quota_is_closed_and_the_controller_opens_it_whole():
    cfg = window_config()
    (cq,) = [o for o in kueue_objects(cfg, autoscaled=True) if o["kind"] == "ClusterQueue"]
    (group,) = cq["spec"]["resourceGroups"]
    declared = {f["name"]: f["resources"] for f in group["flavors"]}
    assert all(r["nominalQuota"] == "0" for r in declared["block"] + declared["odcr"])
    opened = json.loads(env_of(cron_jobs(cfg)["reservation-block-open"])["RESERVATION_QUOTAS"])
    # Two p5.48xlarge (8 GPUs each) at the group's default max size: 16 GPUs, as p5od has.
    assert opened["shared"]["nvidia.com/gpu"] == "16"
