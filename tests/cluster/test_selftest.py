"""The post-deploy self-test on every stack, from what the plan writes: its JobSet (out/<stack>/
manifests/) admitted by Kueue as the rendered kueue-manager-config configures it, in its own
namespace; its pods scheduled onto the pool's nodes and run by the box's kubelet in the image's
layout, the launcher from its ConfigMap mount; and the run a PASS on the CPU, two gloo ranks
(tests/helpers/box_cluster.py, box_kubelet.py, box_nodes.py)."""

from __future__ import annotations

import contextlib
import json

import pytest

from tests.conftest import STACKS, stack_config
from tests.helpers.box_cluster import outcome_text
from tests.helpers.box_stacks import box, selftest_jobset

SELFTEST_STACKS = STACKS


def shape(stack: str) -> tuple[str, int]:
    """What the self-test's processes see differently from one stack to another once the node
    stands in (tests/helpers/box_nodes.py): the provider's volumes and how many pods rendezvous
    through the JobSet's headless Service; the rest (the launcher's mount, the image's path,
    the command) is the same rendered layout on every stack."""
    cfg = stack_config(stack)
    return cfg.provider, min(cfg.selftest.nodes, max(p.max_nodes for p in cfg.gpu_pools))


# The full run (a minute of CPU each) once per shape: the first stack of each.
RUN_STACKS = sorted({shape(s): s for s in reversed(SELFTEST_STACKS)}.values())
# The only WARN a CPU node gives: the box's kubelet pins no CPUs (no static CPU manager), so a
# Guaranteed pod with whole cores runs on every CPU of this machine (bootstrap/selftest/
# inventory.py, cpu_pinning_check).
UNPINNED = "inventory.cpu_pinning"


@pytest.fixture(scope="module")
def clusters(tmp_path_factory):
    with contextlib.ExitStack() as stack:
        yield {
            name: stack.enter_context(box(name, tmp_path_factory.mktemp(f"box-{name}")))
            for name in SELFTEST_STACKS
        }


@pytest.mark.parametrize("stack", SELFTEST_STACKS)
def test_kueue_admits_the_selftest_jobset_in_its_own_namespace(clusters, stack):
    box_cluster, _ = clusters[stack]
    box_cluster.admit(selftest_jobset(box_cluster))


def test_each_shape_of_selftest_run_is_run_on_one_stack():
    assert {shape(s) for s in RUN_STACKS} == {shape(s) for s in SELFTEST_STACKS}
    # One pod with two ranks on AWS, two pods of one rank each through the headless Service
    # on the shipped on-prem stack (stacks/Pulumi.onprem.yaml: selftest.nodes 2).
    assert {("aws", 1), ("existing", 2)} <= {shape(s) for s in RUN_STACKS}


@pytest.mark.parametrize("stack", RUN_STACKS)
def test_the_selftest_jobset_runs_to_pass_on_the_cpu_from_what_the_plan_wrote(clusters, stack):
    box_cluster, gateway = clusters[stack]
    jobset = selftest_jobset(box_cluster)
    outcome = box_cluster.run_jobset(jobset)
    assert (outcome.state, outcome.restarts) == ("Completed", 0), outcome_text(outcome)
    (pods,) = outcome.attempts
    assert [p.exit_code for p in pods] == [0] * len(pods), outcome_text(outcome)
    # Rank 0 writes the report where the rendered SELFTEST_OUT says, on the shared-data volume.
    run = jobset["metadata"]["labels"]["gpu-platform/selftest-run"]
    (report,) = box_cluster.box.rglob(f"selftest/{run}/report.json")
    found = json.loads(report.read_text())
    statuses = {c["name"]: c["status"] for c in found["checks"]}
    judged = {name: s for name, s in statuses.items() if s in ("FAIL", "WARN") and name != UNPINNED}
    assert judged == {}, [
        (c["name"], c.get("reason")) for c in found["checks"] if c["name"] in judged
    ]
    assert found["status"] in ("PASS", "WARN"), found["status"]
    # Two gloo ranks formed the group, and the training group trained, stopped and resumed.
    assert statuses["distributed.rendezvous"] == "PASS"
    assert [c["value"] for c in found["checks"] if c["name"] == "distributed.rendezvous"] == [2]
    for check in ("collectives.allreduce_correct", "training.loss", "training.resume"):
        assert statuses[check] == "PASS", check
    # Each node pushed its results to the stack's Pushgateway (the Service the JobSet names).
    nodes = {p.name for p in pods}
    assert len({path for _, path, _, _ in gateway.received}) >= len(nodes), gateway.received
