"""The post-deploy self-test on every stack, from what the plan writes: its JobSet (out/<stack>/
manifests/) admitted by Kueue as the rendered kueue-manager-config configures it, in its own
namespace; its pods scheduled onto the pool's nodes and run by the box's kubelet in the image's
layout, the launcher from its ConfigMap mount; and the run a PASS on the CPU, two gloo ranks
(tests/helpers/box_cluster.py, box_kubelet.py, box_nodes.py)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import STACKS
from tests.helpers.box_cluster import outcome_text
from tests.helpers.box_stacks import box, selftest_jobset

# Stacks whose program runs the self-test once it has an image: a pool and Kueue.
SELFTEST_STACKS = STACKS

NOT_ADMITTED = pytest.mark.xfail(
    strict=True,
    reason="issue 37: the Kueue selector misses the self-test namespace; fixed on branch h-kueue",
)
NOT_STARTED = pytest.mark.xfail(
    strict=True,
    reason="issue 37: the Kueue selector misses the self-test namespace (h-kueue), and the "
    "launcher ConfigMap's `contract` shadows the image's, exit 78 (h-launcher); fixed on "
    "branches h-kueue and h-launcher",
)


@pytest.fixture(scope="module", params=SELFTEST_STACKS)
def cluster(request, tmp_path_factory):
    with box(request.param, tmp_path_factory.mktemp(f"box-{request.param}")) as found:
        yield found


@NOT_ADMITTED
def test_kueue_admits_the_selftest_jobset_in_its_own_namespace(cluster):
    box_cluster, _ = cluster
    box_cluster.admit(selftest_jobset(box_cluster))


@NOT_STARTED
def test_the_selftest_jobset_runs_to_pass_on_the_cpu_from_what_the_plan_wrote(cluster):
    box_cluster, gateway = cluster
    jobset = selftest_jobset(box_cluster)
    outcome = box_cluster.run_jobset(jobset)
    assert (outcome.state, outcome.restarts) == ("Completed", 0), outcome_text(outcome)
    (pods,) = outcome.attempts
    assert [p.exit_code for p in pods] == [0] * len(pods), outcome_text(outcome)
    # Rank 0 writes the report where the rendered SELFTEST_OUT says, on the shared-data volume.
    run = jobset["metadata"]["labels"]["gpu-platform/selftest-run"]
    (report,) = box_cluster.box.rglob(f"selftest/{run}/report.json")
    found = json.loads(report.read_text())
    assert found["status"] == "PASS", [
        (c["name"], c["status"], c.get("reason")) for c in found["checks"] if c["status"] == "FAIL"
    ]
    statuses = {c["name"]: c["status"] for c in found["checks"]}
    # Two gloo ranks formed the group, and the training group trained, stopped and resumed.
    assert statuses["distributed.rendezvous"] == "PASS"
    assert [c["value"] for c in found["checks"] if c["name"] == "distributed.rendezvous"] == [2]
    for check in ("collectives.allreduce_correct", "training.loss", "training.resume"):
        assert statuses[check] == "PASS", check
    # Each node pushed its results to the stack's Pushgateway (the Service the JobSet names).
    nodes = {p.name for p in pods}
    assert len({path for _, path, _, _ in gateway.received}) >= len(nodes), gateway.received
