"""Which topology domain each rank ran in (issue 21), image side: every rank reads its node's
topology labels from the API server (a TLS stand-in on 127.0.0.1), and the cross-node busbw
check names the domains it spanned, so a slow pair can be traced to placement. Its one real
two-node run also shows the cross-node sweep over two single-rank nodes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from selftest import placement
from selftest.context import SelfTestContext
from selftest.result import CheckResult

from tests.helpers.hang import HANG_S
from tests.helpers.image_path import IMAGE_PYTHONPATH
from tests.helpers.kube_api import TOKEN, ApiServer, node
from tests.helpers.loopback import free_port
from tests.helpers.selftest_process import ROOT

# The labels EKS puts on nodes of types with an EC2 topology (EKS user guide, "Place
# distributed AI/ML workloads with network topology labels"), broadest first, then the host.
L1, L2, L3 = (f"topology.k8s.aws/network-node-layer-{n}" for n in (1, 2, 3))
HOST = "kubernetes.io/hostname"
LEVELS = {"SELFTEST_TOPOLOGY_LABELS": f"{L1},{L2},{L3},{HOST}"}


def p5_labels(host: str, layer3: str) -> dict[str, str]:
    # Network node ids in EC2's DescribeInstanceTopology format (nn-<17 hex digits>).
    return {L1: "nn-1a2b3c4d5e6f70001", L2: "nn-1a2b3c4d5e6f70002", L3: layer3, HOST: host,
            "node.kubernetes.io/instance-type": "p5.48xlarge"}  # fmt: skip


def ctx(tmp_path: Path, name: str = "node-a") -> SelfTestContext:
    return SelfTestContext(run_id="t", rank=0, world_size=1, local_rank=0, device="cpu",
                           out_dir=tmp_path, shared_data=tmp_path, nvme_cache=tmp_path,
                           node=name)  # fmt: skip


def test_a_rank_records_its_nodes_domain_at_every_level(tmp_path):
    labels = p5_labels("ip-10-0-1-23.ec2.internal", "nn-1a2b3c4d5e6f70003")
    answers = {("GET", "/api/v1/nodes/node-a"): (200, node("node-a", labels))}
    with ApiServer(tmp_path, answers) as api:
        row = placement.domain_check(ctx(tmp_path), {**api.env(), **LEVELS})
    ((method, path, headers, _),) = api.received
    assert (method, path, headers["Authorization"]) == (
        "GET",
        "/api/v1/nodes/node-a",
        f"Bearer {TOKEN}",
    )
    assert (row.name, row.status) == ("inventory.topology_domain", "INFO")
    assert row.value == (
        f"{L1}=nn-1a2b3c4d5e6f70001, {L2}=nn-1a2b3c4d5e6f70002, {L3}=nn-1a2b3c4d5e6f70003, "
        f"{HOST}=ip-10-0-1-23.ec2.internal"
    )
    assert row.details == {"node": "node-a", "topology": {L1: "nn-1a2b3c4d5e6f70001",
                           L2: "nn-1a2b3c4d5e6f70002", L3: "nn-1a2b3c4d5e6f70003",
                           HOST: "ip-10-0-1-23.ec2.internal"}}  # fmt: skip


def test_a_node_without_a_level_is_a_warn_naming_it(tmp_path):
    labels = {HOST: "dgx-07"}
    answers = {("GET", "/api/v1/nodes/dgx-07"): (200, node("dgx-07", labels))}
    env = {"SELFTEST_TOPOLOGY_LABELS": f"example.com/spine,example.com/rack,{HOST}"}
    with ApiServer(tmp_path, answers) as api:
        row = placement.domain_check(ctx(tmp_path, "dgx-07"), {**api.env(), **env})
    assert row.status == "WARN"
    assert row.reason == (
        "node dgx-07 lacks example.com/spine, example.com/rack: Kueue cannot place pods by these "
        "levels"
    )


def test_without_levels_or_an_api_server_it_skips_saying_why(tmp_path):
    assert placement.domain_check(ctx(tmp_path), {}).reason == (
        "the pool has no topology levels (SELFTEST_TOPOLOGY_LABELS unset)"
    )
    cpu = placement.domain_check(ctx(tmp_path), LEVELS)
    assert (cpu.status, cpu.reason) == (
        "SKIP",
        "node labels unreadable: not in a Kubernetes pod (no KUBERNETES_SERVICE_HOST)",
    )
    forbidden = {"kind": "Status", "code": 403, "message": 'nodes "node-a" is forbidden'}
    with ApiServer(tmp_path, {("GET", "/api/v1/nodes/node-a"): (403, forbidden)}) as api:
        refused = placement.domain_check(ctx(tmp_path), {**api.env(), **LEVELS})
    assert (refused.status, refused.reason) == (
        "WARN",
        'node node-a: GET /api/v1/nodes/node-a: HTTP 403: nodes "node-a" is forbidden',
    )


def domains(*layer3: str) -> dict[str, dict[str, str]]:
    return {
        f"node-{chr(ord('a') + i)}": {L1: "nn-1", L2: "nn-2", L3: value, HOST: f"h{i}"}
        for i, value in enumerate(layer3)
    }


def test_the_spread_names_the_narrowest_shared_level_and_the_split_below_it():
    assert placement.spread(domains("nn-3a", "nn-3a")) == f"all 2 nodes under {L3}=nn-3a"
    assert placement.spread(domains("nn-3a", "nn-3b", "nn-3a")) == (
        f"under {L2}=nn-2, split across 2 {L3} domains: nn-3a (node-a, node-c), nn-3b (node-b)"
    )
    apart = {"node-a": {L1: "nn-1a", L2: "nn-2a"}, "node-b": {L1: "nn-1b", L2: "nn-2b"}}
    assert placement.spread(apart) == (
        f"split across 2 {L1} domains: nn-1a (node-a), nn-1b (node-b)"
    )


def test_rank_0_names_every_nodes_ranks_and_the_domains_the_cross_node_figure_spanned():
    def rows(name: str, layer3: str) -> list[CheckResult]:
        topology = {L1: "nn-1", L2: "nn-2", L3: layer3}
        return [CheckResult("inventory.topology_domain", "INFO", "...",
                            details={"node": name, "topology": topology})]  # fmt: skip

    slow = "busbw 300 GB/s at 2147483648 B is under the 444.0 GB/s floor"
    busbw = CheckResult(
        "collectives.allreduce_busbw_inter_node", "FAIL", 300.0, "GB/s", 444.0, reason=slow
    )
    per_rank = [
        (name, local, rows(name, layer3))
        for name, layer3 in (("node-a", "nn-3a"), ("node-b", "nn-3b"))
        for local in (0, 1)
    ]
    merged = [per_rank[0][2][0], busbw]
    topology, named = placement.name_domains(per_rank, merged)
    assert named.reason == (
        "busbw 300 GB/s at 2147483648 B is under the 444.0 GB/s floor; placement: under "
        f"{L2}=nn-2, split across 2 {L3} domains: nn-3a (node-a), nn-3b (node-b)"
    )
    assert (topology.status, topology.value) == ("INFO", "2 nodes")
    assert topology.reason == (
        f"node-a (ranks 0-1): {L1}=nn-1, {L2}=nn-2, {L3}=nn-3a; "
        f"node-b (ranks 2-3): {L1}=nn-1, {L2}=nn-2, {L3}=nn-3b"
    )


@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory) -> tuple[list[int], list[str], list, dict]:
    """Two processes with LOCAL_WORLD_SIZE=1 stand for two one-GPU nodes under different
    layer-3 network nodes: each process's exit code and output, the API server's requests, and
    the report's checks by name."""
    base = tmp_path_factory.mktemp("two-nodes")
    answers = {
        ("GET", "/api/v1/nodes/node-a"): (200, node("node-a", p5_labels("ip-a", "nn-3a"))),
        ("GET", "/api/v1/nodes/node-b"): (200, node("node-b", p5_labels("ip-b", "nn-3b"))),
    }
    out = base / "out"
    with ApiServer(base, answers) as api:
        env = {**os.environ, "PYTHONPATH": IMAGE_PYTHONPATH, "WORLD_SIZE": "2",
               "LOCAL_WORLD_SIZE": "1", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1",
               "MASTER_PORT": str(free_port()), **api.env(), **LEVELS}  # fmt: skip
        # What the run computes, not how fast this machine runs it: a 64 KiB all-reduce on
        # gloo falls under the CPU's 0.05 GB/s floor on a busy machine, and a FAIL exits 1.
        cmd = [sys.executable, "-m", "selftest", "--out", str(out), "--join-timeout", str(HANG_S),
               "--checks", "inventory,collectives", "--sizes", "1024,65536",
               "--floor", "inter_node_busbw_gbps=0",
               "--floor", "intra_node_busbw_gbps=0"]  # fmt: skip
        procs = [
            subprocess.Popen(cmd, cwd=ROOT, env={**env, "RANK": str(r), "NODE_NAME": name},
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for r, name in enumerate(("node-a", "node-b"))
        ]  # fmt: skip
        outputs = [p.communicate(timeout=HANG_S)[0] for p in procs]
    doc = json.loads((out / "report.json").read_text())
    return [p.returncode for p in procs], outputs, list(api.received), doc


def test_a_real_two_node_run_names_where_its_nodes_sat(two_nodes):
    codes, outputs, received, doc = two_nodes
    assert codes == [0, 0], outputs
    assert sorted(path for _, path, _, _ in received) == [
        "/api/v1/nodes/node-a",
        "/api/v1/nodes/node-b",
    ]
    checks = {c["name"]: c for c in doc["checks"]}
    busbw = checks["collectives.allreduce_busbw_inter_node"]
    assert busbw["status"] == "PASS"
    assert busbw["reason"] == (
        f"placement: under {L2}=nn-1a2b3c4d5e6f70002, split across 2 {L3} domains: "
        "nn-3a (node-a), nn-3b (node-b)"
    )
    assert checks["inventory.topology_domain"]["reason"].startswith(
        f"node-a (ranks 0): {L1}=nn-1a2b3c4d5e6f70001"
    )


def test_two_single_rank_nodes_measure_across_nodes_and_nothing_inside_one(two_nodes):
    """The same run, as the collectives see it: the cross-node sweep ran over both nodes, and a
    node of one rank has nothing to measure inside it."""
    codes, outputs, _, doc = two_nodes
    assert codes == [0, 0], outputs
    checks = {c["name"]: c for c in doc["checks"]}
    assert doc["nodes"] == 2
    assert checks["collectives.allreduce_busbw_inter_node"]["status"] == "PASS"
    assert checks["collectives.allreduce_busbw_intra_node"]["status"] == "SKIP"
    assert checks["collectives.allreduce_correct"]["status"] == "PASS"
