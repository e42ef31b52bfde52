"""The cluster in a box's own rules, each with a case it refuses and one it takes, the expected
values from the Kubernetes, Kueue and Docker documentation named at each: what the scenarios
of this folder stand on."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers.box_cluster import Cluster, Refused
from tests.helpers.box_image import BASE_PATH, Image, PathMap, lay_out, read_image
from tests.helpers.box_kubelet import (
    Kubelet,
    Network,
    Objects,
    field_ref,
    resource_ref,
    sandbox_processes,
)
from tests.helpers.box_kueue import NOT_OPTED_IN, namespace_managed
from tests.helpers.box_nodes import Node, misfit, stand_in
from tests.helpers.hang import HANG_S
from tests.helpers.image_layout import expand, instructions


def test_var_references_expand_as_kubernetes_documents():
    # Kubernetes docs, "Define Dependent Environment Variables": a defined $(VAR) is replaced,
    # an undefined one stays as written, `$$(VAR)` escapes to `$(VAR)`.
    env = {"SERVICE_ADDRESS": "https://172.17.0.1:80", "JOB_COMPLETION_INDEX": "1"}
    assert expand("--node-rank=$(JOB_COMPLETION_INDEX)", env) == "--node-rank=1"
    assert expand("$(UNDEFINED)/x", env) == "$(UNDEFINED)/x"
    assert expand("$$(SERVICE_ADDRESS)", env) == "$(SERVICE_ADDRESS)"


def test_the_downward_api_reads_labels_annotations_and_the_node():
    pod = {
        "metadata": {"name": "p", "namespace": "ns", "labels": {"a": "1"}, "annotations": {}},
        "spec": {"nodeName": "n-0"},
    }
    assert field_ref(pod, "metadata.labels['a']") == "1"
    # Kubernetes docs, "Downward API": an annotation that is not there reads as "".
    assert field_ref(pod, "metadata.annotations['jobset.sigs.k8s.io/restart-attempt']") == ""
    assert field_ref(pod, "spec.nodeName") == "n-0"


def test_resource_refs_divide_by_the_divisor_rounding_up():
    # Kubernetes docs, "Expose Pod Information ... Through Environment Variables": 1m divisor of
    # a 250m request gives 250; 1Mi of 16Gi gives 16384; a limit not set reads allocatable.
    container = {"resources": {"requests": {"cpu": "250m", "memory": "16Gi"}}}
    assert resource_ref(container, {"resource": "requests.cpu", "divisor": "1m"}, {}) == "250"
    assert resource_ref(container, {"resource": "requests.memory", "divisor": "1Mi"}, {}) == (
        "16384"
    )
    assert resource_ref(container, {"resource": "limits.cpu", "divisor": "1"}, {"cpu": "8"}) == "8"


def test_the_dockerfile_gives_the_images_env_workdir_user_and_copies():
    image = read_image()
    # bootstrap/Dockerfile: ENV PYTHONPATH=/opt/bootstrap:/opt/platform, USER 1000:1000,
    # WORKDIR /tmp, contract/ copied to /opt/platform/contract.
    assert image.env["PYTHONPATH"] == "/opt/bootstrap:/opt/platform"
    assert (image.user, image.workdir) == ("1000:1000", "/tmp")
    assert ("contract", "/opt/platform/contract") in image.copies
    # A continued line is one instruction (Dockerfile reference, "Parser directives").
    assert instructions("ENV A=1 \\\n    B=2\n# c\nUSER 1\n") == [
        ("ENV", "A=1      B=2"),
        ("USER", "1"),
    ]


def test_paths_map_at_path_boundaries_only_and_the_longest_prefix_wins(tmp_path):
    paths = PathMap()
    paths.add("/opt", tmp_path / "opt")
    paths.add("/opt/gpu-platform/launcher", tmp_path / "mount")
    assert paths.apply("PYTHONPATH=/opt/bootstrap:/opt/platform") == (
        f"PYTHONPATH={tmp_path}/opt/bootstrap:{tmp_path}/opt/platform"
    )
    assert paths.apply("/opt/gpu-platform/launcher/launch.py") == f"{tmp_path}/mount/launch.py"
    assert paths.apply("/optional /x/opt") == "/optional /x/opt"
    # A folder no copy or mount names is the image's root file system's (a WORKDIR /tmp).
    paths.add("/", tmp_path / "root")
    assert paths.path("/tmp") == tmp_path / "root" / "tmp"
    assert paths.path("/opt/x") == tmp_path / "opt" / "x"


def test_cluster_names_and_ports_map_to_this_machine():
    net = Network({"job-trainer-0-0.job": "127.0.0.1"}, {29500: 40001})
    assert net.apply("--master-addr=job-trainer-0-0.job") == "--master-addr=127.0.0.1"
    assert net.apply("--master-port=29500") == "--master-port=40001"
    assert net.apply("--master-addr=xjob-trainer-0-0.job --steps=295001") == (
        "--master-addr=xjob-trainer-0-0.job --steps=295001"
    )


def test_a_cpu_node_runs_two_ranks_a_job_and_expects_no_gpu():
    argv = ["python", "launch.py", "--nnodes=2", "--nproc-per-node=8", "-m", "selftest"]
    env = {"SELFTEST_EXPECTED_GPUS": "8", "SELFTEST_DCGM_URL": "http://x:9400/metrics"}
    words, seen = stand_in(argv, env)
    assert words[3] == "--nproc-per-node=1"
    assert seen == {"SELFTEST_EXPECTED_GPUS": "0"}
    words, _ = stand_in(["torchrun", "--standalone", "--nproc_per_node", "4", "x.py"], {})
    assert words[3] == "2"


def test_a_cpu_node_keeps_the_prometheus_url_of_a_run_held_to_its_pools_baseline():
    url = "http://kube-prometheus-stack-prometheus.monitoring.svc:9090"
    _, seen = stand_in(["python"], {"SELFTEST_PROMETHEUS_URL": url})
    assert seen == {}
    held = {"SELFTEST_PROMETHEUS_URL": url, "SELFTEST_BASELINE_POOL": "h100"}
    _, seen = stand_in(["python"], {**held, "SELFTEST_DCGM_URL": "http://x:9400/metrics"})
    assert seen == held


def test_the_box_serves_only_a_url_a_rendered_service_answers(tmp_path):
    service = {
        "kind": "Service",
        "metadata": {"name": "prometheus-pushgateway", "namespace": "monitoring"},
        "spec": {"ports": [{"port": 9091}]},
    }
    cluster = Cluster(None, tmp_path, [service], [], [], {})  # type: ignore[arg-type]
    cluster.serve("http://prometheus-pushgateway.monitoring.svc:9091", 40001)
    assert cluster.network.ports == {9091: 40001}
    for url in (
        "http://prometheus-pushgateway.monitoring.svc:9090",  # no such port
        "http://pushgateway.monitoring.svc:9091",  # no such Service
        "http://prometheus-pushgateway.default.svc:9091",  # not in that namespace
    ):
        with pytest.raises(Refused, match="no rendered Service"):
            cluster.serve(url, 40002)


def node(**kw) -> Node:
    base = {"name": "n", "pool": "p", "labels": {"pool": "a"}, "taints": [],
            "allocatable": {"cpu": "8", "nvidia.com/gpu": 8}}  # fmt: skip
    return Node(**{**base, **kw})


def test_the_scheduler_fit_names_the_filter_that_refuses():
    toleration = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    pod = {
        "containers": [{"resources": {"requests": {"nvidia.com/gpu": 8}}}],
        "nodeSelector": {"pool": "a"},
        "tolerations": [toleration],
    }
    assert misfit(pod, node()) is None
    # kube-scheduler's plugins' reasons (NodeAffinity, TaintToleration, NodeResourcesFit,
    # NodeUnschedulable).
    assert misfit(pod, node(labels={"pool": "b"})) == (
        "node(s) didn't match Pod's node affinity/selector"
    )
    taint = {"key": "gpu-platform/selftest-failed", "value": "true", "effect": "NoSchedule"}
    assert misfit(pod, node(taints=[taint])) == (
        "node(s) had untolerated taint {gpu-platform/selftest-failed: true}"
    )
    assert misfit(pod, node(allocatable={"cpu": "8", "nvidia.com/gpu": 4})) == (
        "Insufficient nvidia.com/gpu"
    )
    assert misfit(pod, node(unschedulable=True)) == "node(s) were unschedulable"
    quarantine = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "gpu-platform/selftest-failed", "operator": "DoesNotExist"}]}]}}}  # fmt: skip
    labelled = node(labels={"pool": "a", "gpu-platform/selftest-failed": "x"})
    assert misfit({**pod, "affinity": quarantine}, labelled) is not None


def test_kueue_manages_only_the_namespaces_its_selector_selects():
    # Kueue v0.19.2 pkg/controller/jobframework/reconciler.go: "Namespace not opted in for
    # Kueue management"; the selector matches the namespace's labels, its name among them.
    name = {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["training"]}
    config = {"managedJobsNamespaceSelector": {"matchExpressions": [name]}}
    assert namespace_managed(config, {"metadata": {"name": "training"}}, "kueue-system") is None
    refused = namespace_managed(config, {"metadata": {"name": "selftest"}}, "kueue-system")
    assert refused is not None and refused.startswith(NOT_OPTED_IN)
    # Without a selector, every namespace but kube-system and Kueue's own.
    assert namespace_managed({}, {"metadata": {"name": "kube-system"}}, "kueue-system")
    assert namespace_managed({}, {"metadata": {"name": "team"}}, "kueue-system") is None


def kubelet_and_pod(tmp_path: Path, init: list[str], app: list[str]) -> tuple[Kubelet, dict]:
    image = Image({"PATH": BASE_PATH}, "/", "1000", ())
    paths = lay_out(tmp_path / "image", image)
    pod = {
        "metadata": {"name": "p", "namespace": "ns", "labels": {}, "annotations": {}},
        "spec": {
            "initContainers": [{"name": "i", "image": "x", "command": init}],
            "containers": [
                {
                    "name": "c",
                    "image": "x",
                    "command": app,
                    "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
                }
            ],
            # As every training pod mounts it: the box's own folders under /tmp stay its own.
            "volumes": [{"name": "tmp", "emptyDir": {}}],
        },
    }
    return Kubelet(tmp_path, node(), lambda _: (image, paths), Objects({}), Network()), pod


def start(tmp_path: Path, init: list[str], app: list[str]) -> tuple[subprocess.Popen, Path]:
    kubelet, pod = kubelet_and_pod(tmp_path, init, app)
    log = tmp_path / "log"
    return kubelet.start(pod, log), log


def test_init_containers_run_first_and_the_app_container_gets_sigterm_at_pid_1(tmp_path):
    """The sandbox `exec`s the app container in its place: the kubelet's SIGTERM on deletion
    reaches it, not a shell."""
    app = "import signal,sys,time; signal.signal(signal.SIGTERM, lambda *a: sys.exit(143)); "
    app += "print('app', flush=True); time.sleep(600)"
    process, log = start(tmp_path, ["python", "-c", "print('init')"], ["python", "-c", app])
    deadline = time.monotonic() + HANG_S
    while "app" not in log.read_text():
        assert process.poll() is None and time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=HANG_S) == 143
    assert log.read_text().split() == ["init", "app"]


def test_a_failed_init_container_fails_the_pod_with_its_code(tmp_path):
    process, log = start(tmp_path, ["python", "-c", "raise SystemExit(3)"], ["python", "-V"])
    assert process.wait(timeout=HANG_S) == 3
    assert log.read_text() == ""


def test_each_containers_termination_message_is_its_status_and_this_machines_dev_is_untouched(
    tmp_path,
):
    # Kubernetes docs, "Determine the Reason for Pod Failure": the container writes
    # /dev/termination-log and the kubelet puts it in state.terminated.message; the file is
    # there, empty, in every container (written, never created: "r+").
    write = "open('/dev/termination-log', 'r+').write({!r}); raise SystemExit({})"
    kubelet, pod = kubelet_and_pod(
        tmp_path, ["python", "-c", write.format("init said", 0)],
        ["python", "-c", write.format("x" * 5000 + "app said", 7)],
    )  # fmt: skip
    process = kubelet.start(pod, tmp_path / "log")
    assert process.wait(timeout=HANG_S) == 7, (tmp_path / "log").read_text()
    status = kubelet.status(pod, process.returncode)
    assert status["phase"] == "Failed"
    assert status["initContainerStatuses"] == [
        {"name": "i", "state": {"terminated": {"exitCode": 0, "reason": "Completed",
                                               "message": "init said"}}}
    ]  # fmt: skip
    # At most 4096 bytes, the file's last (pkg/kubelet/kuberuntime: tail.ReadAtMost,
    # MaxContainerTerminationMessageLength).
    ended = status["containerStatuses"][0]["state"]["terminated"]
    assert (ended["exitCode"], len(ended["message"])) == (7, 4096)
    assert ended["message"].endswith("xapp said")
    assert not Path("/dev/termination-log").exists()


def test_a_failed_init_containers_message_is_its_status_and_the_app_container_waits(tmp_path):
    write = "open('/dev/termination-log', 'r+').write('bad node'); raise SystemExit(3)"
    kubelet, pod = kubelet_and_pod(tmp_path, ["python", "-c", write], ["python", "-V"])
    process = kubelet.start(pod, tmp_path / "log")
    status = kubelet.status(pod, process.wait(timeout=HANG_S))
    assert status["phase"] == "Failed"
    assert status["initContainerStatuses"][0]["state"]["terminated"] == {
        "exitCode": 3, "reason": "Error", "message": "bad node"
    }  # fmt: skip
    assert status["containerStatuses"][0]["state"] == {"waiting": {"reason": "PodInitializing"}}


def test_a_killed_pod_takes_every_process_it_started_even_in_another_session(tmp_path):
    # torch's agent starts each worker with start_new_session (torch/distributed/elastic/
    # multiprocessing/subprocess_handler/subprocess_handler.py): a container's cgroup still
    # holds it, and the box finds it by the sandbox every process of the pod names.
    child = "import subprocess,sys,time; subprocess.Popen([sys.executable, '-c', "
    child += "'import time; time.sleep(600)'], start_new_session=True); print('up', flush=True); "
    child += "time.sleep(600)"
    process, log = start(tmp_path, ["python", "-c", "pass"], ["python", "-c", child])
    deadline = time.monotonic() + HANG_S
    sandbox = tmp_path / "pods" / "ns" / "p"
    while "up" not in log.read_text() or len(sandbox_processes(sandbox)) < 2:
        assert process.poll() is None and time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)
    for pid in sandbox_processes(sandbox):
        os.kill(pid, signal.SIGKILL)
    process.wait(timeout=HANG_S)
    while sandbox_processes(sandbox):
        assert time.monotonic() < deadline
        time.sleep(0.05)
