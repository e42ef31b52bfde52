"""Quarantine, image side: a node that FAILs a hardware check cordons, labels and taints itself
through the in-cluster API (a TLS stand-in on 127.0.0.1 here), only when the Job asks for it, and
only for a fault of the node itself; the report records what was done. A job's preflight writes
its verdict as its termination message instead, and the platform's watcher quarantines the node
the failed pod ran on."""

from __future__ import annotations

import json
import re
import sys
from datetime import datetime

import pytest
from selftest import kube, quarantine, watch
from selftest.result import CheckResult

from tests.helpers.kube_api import TOKEN, ApiServer, node
from tests.helpers.loopback import free_port
from tests.helpers.rendered_policy import rendered_jobset
from tests.helpers.selftest_process import run

NODE_PATH = "/api/v1/nodes/node-a"
# Kubernetes "Labels and Selectors": a value is at most 63 characters, alphanumerics with '-',
# '_' and '.' between, beginning and ending with an alphanumeric.
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
# The quarantine annotation as written on a real clock: RFC 3339 in UTC, whole seconds, then
# the failed checks.
STAMPED = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ (\S+)$")
ON = {"SELFTEST_CORDON_ON_FAIL": "true", "SELFTEST_CORDON_LABEL": "gpu-platform/selftest-failed"}
# The GPU taint every GPU node carries (components/data/gpu_node_group.py), which a quarantine
# must keep: a node's taints are one atomic list (core/v1 NodeSpec, x-kubernetes-list-type
# atomic), replaced whole by a patch.
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
NODE_A = {**node("node-a", {"kubernetes.io/hostname": "node-a"}),
          "spec": {"taints": [GPU_TAINT]}}  # fmt: skip
NODE_A["metadata"]["resourceVersion"] = "4711"
READ = {("GET", NODE_PATH): (200, NODE_A)}


def AT() -> datetime:
    # 04:58:07 at UTC+1: the annotation is written in UTC whatever the clock's zone.
    return datetime.fromisoformat("2026-12-05T04:58:07+01:00")


@pytest.mark.parametrize(
    ("check", "hardware"),
    [
        ("hardware.pcie_link", True),
        ("hardware.ecc_uncorrectable", True),
        ("hardware.xid", True),
        ("hardware.dcgm_diag", True),
        ("nvme.randread", True),
        ("inventory.gpu_count", True),
        ("inventory.fabric_devices", True),
        ("collectives.allreduce_busbw_intra_node", True),
        ("collectives.allreduce_latency_intra_node", True),
        # The fabric's settings, the shared file system, a figure across nodes, training, and
        # a check group that crashed: none is a fault of this node.
        ("collectives.nccl_transport", False),
        ("collectives.gpudirect_rdma", False),
        ("collectives.allreduce_busbw_inter_node", False),
        ("storage.shared-data.read", False),
        ("training.resume", False),
        ("metrics.dcgm_exporter", False),
        ("distributed.rendezvous", False),
        ("hardware", False),
    ],
)
def test_which_failures_are_the_nodes_hardware(check, hardware):
    assert quarantine.is_hardware(check) is hardware


def test_each_node_gets_the_hardware_checks_its_own_ranks_failed():
    per_rank = [
        ("node-a", 0, [CheckResult("hardware.pcie_link", "FAIL"),
                       CheckResult("collectives.nccl_transport", "FAIL")]),
        ("node-a", 1, [CheckResult("hardware.xid", "FAIL"),
                       CheckResult("hardware.pcie_link", "FAIL")]),
        ("node-b", 0, [CheckResult("hardware.pcie_link", "PASS"),
                       CheckResult("storage.shared-data.read", "FAIL")]),
    ]  # fmt: skip
    assert quarantine.failures_by_node(per_rank) == {
        "node-a": ["hardware.pcie_link", "hardware.xid"]
    }


@pytest.mark.parametrize(
    ("check", "value"),
    [
        ("hardware.pcie_link", "hardware.pcie_link"),
        ("storage.shared-data.read", "storage.shared-data.read"),
        ("a check/with spaces", "a_check_with_spaces"),
        ("x" * 70, "x" * 63),
        ("_odd.", "odd"),
    ],
)
def test_the_label_value_is_the_check_made_valid(check, value):
    assert quarantine.label_value(check) == value
    assert LABEL_VALUE.match(value) and len(value) <= 63


def test_a_hardware_failure_cordons_labels_and_taints_the_node_as_read(tmp_path):
    answers = {**READ, ("PATCH", NODE_PATH): (200, {"kind": "Node"})}
    with ApiServer(tmp_path, answers) as api:
        done = quarantine.quarantine(
            {**api.env(), **ON}, "node-a", ["hardware.pcie_link", "hardware.xid"], AT
        )
    (read, (method, path, headers, body)) = api.received
    assert read[:2] == ("GET", NODE_PATH)
    assert (method, path) == ("PATCH", NODE_PATH)
    # Kubernetes API conventions, "Patch operations": a JSON merge patch (RFC 7386) replaces
    # the fields it gives, a list whole, and a resourceVersion in it makes the API refuse it if
    # the node changed since it was read; `kubectl cordon` sets spec.unschedulable.
    assert headers["Content-Type"] == "application/merge-patch+json"
    assert headers["Authorization"] == f"Bearer {TOKEN}"
    # The annotation is the quarantine's time (RFC 3339, UTC) and checks: the API has none of
    # its own for a NoSchedule taint (k8s.io/api core/v1 Taint: timeAdded "only written for
    # NoExecute taints").
    assert body == {
        "metadata": {
            "labels": {"gpu-platform/selftest-failed": "hardware.pcie_link"},
            "annotations": {
                "gpu-platform/quarantined": "2026-12-05T03:58:07Z hardware.pcie_link,hardware.xid"
            },
            "resourceVersion": "4711",
        },
        "spec": {
            "unschedulable": True,
            "taints": [
                GPU_TAINT,
                {"key": "gpu-platform/selftest-failed", "value": "hardware.pcie_link",
                 "effect": "NoSchedule"},
            ],
        },
    }  # fmt: skip
    assert done.cordoned and not done.problem
    row = quarantine.report_row([done])
    assert (row.name, row.status, row.value) == ("report.quarantine", "INFO", 1)
    assert row.reason == (
        "node-a (hardware.pcie_link, hardware.xid): cordoned, labelled and tainted "
        "gpu-platform/selftest-failed=hardware.pcie_link:NoSchedule"
    )


def test_a_second_quarantine_replaces_its_own_taint_and_keeps_the_others():
    tainted = {**NODE_A, "spec": {"taints": [
        GPU_TAINT, {"key": "gpu-platform/selftest-failed", "value": "nvme.randread",
                    "effect": "NoSchedule"}]}}  # fmt: skip
    patch = quarantine.quarantine_patch(
        tainted, "gpu-platform/selftest-failed", ["hardware.xid"], AT()
    )
    assert patch["spec"]["taints"] == [
        GPU_TAINT,
        {"key": "gpu-platform/selftest-failed", "value": "hardware.xid", "effect": "NoSchedule"},
    ]


def test_the_preflights_verdict_names_its_own_node_and_the_watcher_quarantines_only_that(
    tmp_path,
):
    """The verdict is the preflight container's termination message; the watcher believes a
    pod only about the node the API says it ran on, and only for a fault of a node."""
    path = tmp_path / "termination-log"
    path.touch()  # the kubelet creates it in every container
    assert quarantine.write_verdict("node-a", ["inventory.gpu_count"], path) is None
    message = path.read_text()

    def failed_pod(node_name: str, message: str, container: str = "preflight") -> dict:
        ended = {"name": container, "state": {"terminated": {"exitCode": 1, "message": message}}}
        return {
            "metadata": {"uid": f"uid-{node_name}-{container}"},
            "spec": {"nodeName": node_name},
            "status": {"initContainerStatuses": [ended]},
        }

    assert quarantine.node_fault(failed_pod("node-a", message)) == (
        "node-a",
        ["inventory.gpu_count"],
    )
    assert quarantine.node_fault(failed_pod("node-b", message)) is None
    assert quarantine.node_fault(failed_pod("node-a", message, "trainer")) is None
    assert quarantine.node_fault(failed_pod("node-a", "Error: not JSON")) is None
    fabric = json.dumps({"node": "node-a", "failed": ["collectives.nccl_transport"]})
    assert quarantine.node_fault(failed_pod("node-a", fabric)) is None
    assert quarantine.write_verdict("n", ["x"], tmp_path / "no" / "such") is not None

    pods = {"items": [failed_pod("node-a", message), failed_pod("node-b", message)]}
    selector = "/api/v1/namespaces/training/pods?labelSelector=gpu-platform%2Fpreflight%3Dtrue&"
    listing = selector + "fieldSelector=status.phase%3DFailed"
    answers = {**READ, ("GET", listing): (200, pods), ("PATCH", NODE_PATH): (200, {})}
    with ApiServer(tmp_path / "api", answers) as api:
        env = {**api.env(), "SELFTEST_WATCH_NAMESPACES": "training",
               "SELFTEST_CORDON_LABEL": "gpu-platform/selftest-failed"}  # fmt: skip
        seen: set[str] = set()
        (done,) = watch.sweep(env, kube.ApiServer.in_cluster(env), seen)
        assert watch.sweep(env, kube.ApiServer.in_cluster(env), seen) == []
    assert (done.node, done.failed, done.cordoned) == ("node-a", ("inventory.gpu_count",), True)
    patches = [body for method, _, _, body in api.received if method == "PATCH"]
    assert [p["metadata"]["labels"] for p in patches] == [
        {"gpu-platform/selftest-failed": "inventory.gpu_count"}
    ]
    assert [STAMPED.match(p["metadata"]["annotations"]["gpu-platform/quarantined"])[1]
            for p in patches] == ["inventory.gpu_count"]  # fmt: skip


def test_a_refused_patch_is_a_warn_naming_the_apis_answer(tmp_path):
    forbidden = {"kind": "Status", "status": "Failure", "reason": "Forbidden", "code": 403,
                 "message": 'nodes "node-a" is forbidden: User "system:serviceaccount:training:'
                            'default" cannot patch resource "nodes"'}  # fmt: skip
    with ApiServer(tmp_path, {**READ, ("PATCH", NODE_PATH): (403, forbidden)}) as api:
        done = quarantine.quarantine({**api.env(), **ON}, "node-a", ["nvme.randread"])
    assert done.problem and not done.cordoned
    assert done.message == f"could not cordon: PATCH {NODE_PATH}: HTTP 403: {forbidden['message']}"
    assert quarantine.report_row([done]).status == "WARN"


def test_outside_a_pod_the_api_is_out_of_reach_and_says_why(tmp_path):
    with pytest.raises(kube.KubeError, match="not in a Kubernetes pod"):
        kube.ApiServer.in_cluster({})
    with pytest.raises(kube.KubeError, match=r"no ServiceAccount token at .*/token"):
        kube.ApiServer.in_cluster(
            {"KUBERNETES_SERVICE_HOST": "10.100.0.1", "SELFTEST_KUBE_SERVICEACCOUNT": str(tmp_path)}
        )
    (tmp_path / "token").write_text("t")
    ipv6 = kube.ApiServer.in_cluster(
        {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443",
         "SELFTEST_KUBE_SERVICEACCOUNT": str(tmp_path)}
    )  # fmt: skip
    assert ipv6.url == "https://[fd00::1]:443"


def run_selftest(tmp_path, api: ApiServer, *args: str, **env: str):
    out = tmp_path / "out"
    done = run([sys.executable, "-m", "selftest", "--out", str(out), *args],
               RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", NODE_NAME="node-a",
               **api.env(), **env)  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    return {c["name"]: c for c in json.loads((out / "report.json").read_text())["checks"]}


def test_a_real_run_cordons_its_node_only_when_asked_and_only_for_hardware(tmp_path):
    """8 GPUs expected on this CPU: inventory.gpu_count FAILs, a hardware check. With quarantine
    on the node is patched and the report says so; with it off nothing is sent. A DCGM exporter
    that is down FAILs too, but it is no fault of the node: nothing is patched."""
    answers = {**READ, ("PATCH", NODE_PATH): (200, {"kind": "Node"})}
    with ApiServer(tmp_path / "on", answers) as api:
        checks = run_selftest(tmp_path / "on", api, "--checks", "inventory",
                              "--expected-gpus", "8", **ON)  # fmt: skip
    (_, (method, path, _, body)) = api.received
    assert (method, path) == ("PATCH", NODE_PATH)
    assert body["metadata"]["labels"] == {"gpu-platform/selftest-failed": "inventory.gpu_count"}
    assert STAMPED.match(body["metadata"]["annotations"]["gpu-platform/quarantined"])[1] == (
        "inventory.gpu_count"
    )
    row = checks["report.quarantine"]
    assert (row["status"], row["value"]) == ("INFO", 1)

    with ApiServer(tmp_path / "off", answers) as api:
        checks = run_selftest(tmp_path / "off", api, "--checks", "inventory",
                              "--expected-gpus", "8")  # fmt: skip
    assert api.received == [] and "report.quarantine" not in checks

    url = f"http://127.0.0.1:{free_port()}/metrics"
    with ApiServer(tmp_path / "other", answers) as api:
        checks = run_selftest(tmp_path / "other", api, "--checks", "metrics",
                              "--dcgm-url", url, **ON)  # fmt: skip
    assert checks["metrics.dcgm_exporter"]["status"] == "FAIL"
    assert api.received == [] and "report.quarantine" not in checks


def test_the_watcher_reads_the_preflight_of_a_job_as_python_m_jobs_renders_it(tmp_path):
    """onprem names a self-test image, so its multi-node jobs run the preflight: the pod the
    Job makes from the rendered template, failed on its node with the verdict the preflight
    wrote, carries what the watcher selects by and names that node."""
    (replicated,) = rendered_jobset("onprem", 2)["spec"]["replicatedJobs"]
    template = replicated["template"]["spec"]["template"]
    key, value = watch.SELECTOR.split("=")
    assert template["metadata"]["labels"][key] == value
    path = tmp_path / "termination-log"
    path.touch()  # the kubelet creates it in every container
    assert quarantine.write_verdict("gpu-7", ["hardware.xid"], path) is None
    (init,) = template["spec"]["initContainers"]
    ended = {"name": init["name"],
             "state": {"terminated": {"exitCode": 1, "message": path.read_text()}}}  # fmt: skip
    pod = {"metadata": {"uid": "u", **template["metadata"]},
           "spec": {**template["spec"], "nodeName": "gpu-7"},
           "status": {"phase": "Failed", "initContainerStatuses": [ended]}}  # fmt: skip
    assert quarantine.node_fault(pod) == ("gpu-7", ["hardware.xid"])
