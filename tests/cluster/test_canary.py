"""A GPU-stack change's canary (components/selftest/canary.py), from what the plan writes for a
stack that rolls through one (tests/helpers/canary_stacks.py): the pool's canary Job as written
to out/<stack>/manifests/, left alone by Kueue as the rendered kueue-manager-config configures
it, its pod scheduled onto the one node of the pool's canary node group (its labels and taints
as the planned group declares them: tests/helpers/box_nodes.canary_node) and run by the box's
kubelet in the image's layout on the CPU, with a stand-in Prometheus at the URL the Job's env
names serving the pool's stored baseline. Held far under the baseline, the run exits non-zero
and the Job fails, which stops `pulumi up`; held at a baseline the node meets, it passes.

The figure held: on a CPU the GEMM and HBM checks SKIP (bootstrap/selftest/compute.py: no GPU;
the CPU GEMM rides along in GFLOP/s, a unit no baseline holds), so of the held figures only the
all-reduce bus bandwidth inside the node is measured, over gloo between the pod's two CPU ranks
(bootstrap/selftest/collectives.py, bandwidth_check)."""

from __future__ import annotations

import json

import pytest

from plan.render import render_plan
from tests.conftest import SHARED_HELM
from tests.helpers.box_cluster import outcome_text, write_plan
from tests.helpers.box_nodes import canary_node
from tests.helpers.box_stacks import box_of
from tests.helpers.canary_stacks import CANARY_STACKS, canary_env_and_config, canary_plan
from tests.helpers.prometheus import Prometheus, sample

STACK = CANARY_STACKS[0]
# The one held figure a CPU run measures, as the self-test names and pushes it
# (bootstrap/selftest/collectives.py: f"collectives.allreduce_busbw_{scope}_node", "GB/s").
CHECK, UNIT = "collectives.allreduce_busbw_intra_node", "GB/s"
# A pool's baseline as the platform records it (components/observability/baseline.py:
# record gpu_platform_pool:selftest_figure_baseline:median, labelled pool, check and unit).
RECORD = "gpu_platform_pool:selftest_figure_baseline:median"
# A million GB/s: above what any all-reduce measures, on this CPU or on a GPU node.
FAR_ABOVE = 1e6
# A thousandth of a GB/s (1 MB/s): under what gloo over loopback measures on any CPU.
FAR_BELOW = 1e-3
# What a CPU node reports besides the baseline rows, as tests/cluster/test_selftest.py accepts
# it: the box's kubelet pins no CPUs (bootstrap/selftest/inventory.py, cpu_pinning_check).
UNPINNED = "inventory.cpu_pinning"


def canary_job(cluster, pool: str) -> dict:
    """The pool's canary Job, as written to out/<stack>/manifests/."""
    job = cluster.get("Job", f"canary-{pool}", cluster.cfg.namespaces.selftest)
    assert job is not None, [o["metadata"]["name"] for o in cluster.manifests if o["kind"] == "Job"]
    return job


def env_value(job: dict, name: str) -> str:
    (container,) = job["spec"]["template"]["spec"]["containers"]
    (value,) = [e["value"] for e in container["env"] if e["name"] == name]
    return value


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The pool, and each case's (outcome, the node its pod ran on, its report, the queries the
    stand-in Prometheus was asked), each run once."""
    name, cfg = canary_env_and_config(STACK)
    plan = canary_plan(STACK)
    folder = tmp_path_factory.mktemp("canary")
    out = write_plan(plan, render_plan(plan, (SHARED_HELM,)), folder / "out" / name)
    pool = cfg.gpu_pools[0].name
    found = {}
    with box_of(cfg, out, folder) as (cluster, _):
        resources = json.loads((out / "resources.json").read_text())["resources"]
        cluster.nodes.append(canary_node(cfg, resources, cluster.objects(), pool))
        job = canary_job(cluster, pool)
        url = env_value(job, "SELFTEST_PROMETHEUS_URL")
        for case, figure in (("below", FAR_ABOVE), ("meets", FAR_BELOW)):
            with Prometheus([sample(figure, pool=pool, check=CHECK, unit=UNIT)]) as prometheus:
                cluster.serve(url, prometheus.port)
                outcome = cluster.run_job(job)
            pod = cluster.started[-1][0]
            # SELFTEST_OUT: the report under the pool's folder, one per pod (its name).
            reports = [
                json.loads(r.read_text())
                for r in cluster.box.rglob(
                    f"selftest/canary/{pool}/{pod['metadata']['name']}/report.json"
                )
            ]
            found[case] = outcome, pod["spec"]["nodeName"], reports, list(prometheus.queries)
        yield pool, found


def rows(report: dict) -> dict[str, dict]:
    return {c["name"]: c for c in report["checks"]}


def test_the_canary_job_runs_on_its_pools_canary_node(runs):
    # Kueue left it alone (Cluster.run_job refuses a Job the rendered Configuration suspends),
    # and the scheduler, which tries the pool's own nodes first, took the canary node alone.
    pool, found = runs
    assert {node for _, node, _, _ in found.values()} == {f"{pool}-canary-0"}


def test_a_canary_under_its_pools_baseline_fails_its_job(runs):
    pool, found = runs
    outcome, _, reports, queries = found["below"]
    # Asked at the URL the Job's env names, for the pool's series alone.
    assert queries == [f'{RECORD}{{pool="{pool}"}}'], queries
    (pod,) = outcome.attempts[0]
    assert pod.exit_code not in (0, None), outcome_text(outcome)
    # backoffLimit 0: the one failed pod fails the Job, and pulumi-kubernetes fails `up` on it.
    # The self-test's FAIL exits 1, which no FailJob rule of the Job names: the pod counts
    # against backoffLimit 0 (Kubernetes docs, "Jobs", "Pod backoff failure policy").
    assert (outcome.state, outcome.reason) == ("Failed", "BackoffLimitExceeded"), outcome_text(
        outcome
    )
    (report,) = reports
    assert report["status"] == "FAIL", report["status"]
    found_rows = rows(report)
    row = found_rows[f"baseline.{CHECK}"]
    assert row["status"] == "FAIL", row
    measured = found_rows[CHECK]["value"]
    assert 0 < measured < FAR_ABOVE, found_rows[CHECK]
    # The figure, the pool, what was measured and the baseline it fell under.
    for said in (CHECK, f"pool {pool}", f"{measured:.4g} GB/s", "baseline 1e+06 GB/s"):
        assert said in row["reason"], (said, row["reason"])


def test_a_canary_that_meets_its_pools_baseline_completes_its_job(runs):
    pool, found = runs
    outcome, _, reports, queries = found["meets"]
    assert queries == [f'{RECORD}{{pool="{pool}"}}'], queries
    assert outcome.state == "Completed", outcome_text(outcome)
    (report,) = reports
    statuses = {name: row["status"] for name, row in rows(report).items()}
    assert statuses[f"baseline.{CHECK}"] == "PASS", rows(report)[f"baseline.{CHECK}"]
    judged = {n: s for n, s in statuses.items() if s in ("FAIL", "WARN") and n != UNPINNED}
    assert judged == {}, [(n, rows(report)[n].get("reason")) for n in judged]
