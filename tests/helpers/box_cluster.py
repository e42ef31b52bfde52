"""A cluster in a box: what `python -m plan <stack>` writes (out/<stack>/manifests/*.yaml,
out/<stack>/rendered/<release>.yaml, resources.json), read back from those files, and run.

- Kueue, configured from the rendered ConfigMap (tests/helpers/box_kueue.py), admits a job or
  says why not, with tests/controllers/kueue_admission.py's model over the rendered queues and
  flavors;
- the nodes of each pool as planned, and the scheduler's fit (tests/helpers/box_nodes.py);
- the Job and JobSet controllers' rules (tests/helpers/jobset_harness.py: podFailurePolicy,
  failurePolicy, BlockingRecreate) drive the pods, which a kubelet per node runs as processes
  in the image's layout (tests/helpers/box_kubelet.py);
- an API server (`api_server`, tests/helpers/kube_api.py) that serves the nodes and the pods
  that failed, as their kubelets report them, and applies the nodes' patches; beside it the
  platform's quarantine watcher, the rendered `quarantine-watcher` Deployment's container run
  by a kubelet (`start_watcher`), which acts on a failed preflight as in a cluster.

One race of a cluster is closed here on purpose: there the watcher's taint may land after the
restarted group is placed, whose pod then fails its preflight on the node again and the next
restart keeps off it (bootstrap/selftest/watch.py); the box waits, before it places a pod, until
the watcher has swept every failed preflight pod (`publish_failed`), so a scenario's placements
are the same on every run.

Every refusal names the object, the controller and its rule, as a cluster's events would."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import tempfile
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from components.scheduling.training_job import RESTART_ATTEMPT_KEY
from components.selftest.access import WATCHER
from components.vocabulary import COMPLETION_INDEX_LABEL
from contract import preflight
from contract.env import SELFTEST_WATCH_NAMESPACES
from model.config import PlatformConfig
from plan.cli import write_outputs
from plan.engine import run_program
from plan.manifests import outline_source
from plan.model import Plan, build_plan
from plan.render import Rendering, render_plan, write_rendered
from tests.conftest import (
    SHARED_HELM,
    _plans,
    make_project,
    planned,
    rendered,
    stack_config,
    stack_file_config,
)
from tests.controllers.kueue_admission import Kueue, admission_problems, kueue_suspends
from tests.controllers.pod_security import enforce_level, violations
from tests.helpers.box_image import Image, PathMap, lay_out, read_image
from tests.helpers.box_kubelet import Kubelet, Network, Objects, sandbox_processes
from tests.helpers.box_kueue import manager_config, namespace_managed
from tests.helpers.box_nodes import Node, misfit, pool_nodes, requests, stand_in
from tests.helpers.hang import HANG_S
from tests.helpers.jobset_harness import POLL_S, JobSetHarness, Outcome, Pod, job_failure
from tests.helpers.kube_api import ApiServer, failed_pods_path
from tests.helpers.loopback import free_port

# JobSet's labels on its pods (JobSet pkg/constants: jobset.sigs.k8s.io/jobset-name, ...).
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
# Kubernetes' default terminationGracePeriodSeconds (core/v1 PodSpec).
DEFAULT_GRACE_S = 30
# The label selector the quarantine watcher lists failed pods with (bootstrap/selftest/watch.py),
# which the box's API server answers.
PREFLIGHT_SELECTOR = "=".join(preflight.POD_LABEL)
# The watcher sweeps every 2 s (bootstrap/selftest/watch.py POLL_S): one that has not swept twice
# in this long is stuck.
WATCH_GIVE_UP_S = 120


class Refused(AssertionError):
    """A controller would not act on an object: the message says which and why."""


def read_out(out: Path) -> tuple[list[dict], list[dict], list[dict]]:
    """(the manifests, the rendered releases' objects, the planned resources) as written."""
    manifests = [yaml.safe_load(p.read_text()) for p in sorted((out / "manifests").glob("*.yaml"))]
    # As Helm reads them, the CRDs' schemas left out (plan/manifests.py): no controller here
    # reads a schema.
    rendered = [
        o for p in sorted((out / "rendered").glob("*.yaml")) for o in outline_source(p.read_text())
    ]
    resources = json.loads((out / "resources.json").read_text())["resources"]
    return manifests, rendered, resources


@dataclass
class Cluster:
    cfg: PlatformConfig
    box: Path
    manifests: list[dict[str, Any]]
    rendered: list[dict[str, Any]]
    nodes: list[Node]
    # Image reference -> its layout; any other reference runs the self-test's image
    # (bootstrap/Dockerfile), which every stack's own jobs use.
    images: dict[str, tuple[Image, PathMap]]
    # Extra names the pods reach (a Service stand-in: its DNS name -> 127.0.0.1, port -> port).
    network: Network = field(default_factory=Network)
    # Each pod started: (node, pod, the JobSet's restart attempt).
    placed: list[tuple[str, str, int]] = field(default_factory=list)
    # The API server the pods reach (`api_server`), and how many of its requests are applied.
    api: ApiServer | None = None
    applied: int = 0
    # A pod's sandbox process -> its sandbox folder, which each of its processes carries.
    sandboxes: dict[int, Path] = field(default_factory=dict)
    # Every pod a kubelet started: (the pod, its sandbox process, that kubelet).
    started: list[tuple[dict[str, Any], subprocess.Popen, Kubelet]] = field(default_factory=list)
    # The failed pods the API server lists, by uid, as their kubelets reported them.
    failed: dict[str, dict[str, Any]] = field(default_factory=dict)
    # The quarantine watcher's pod, its process, its log, and the namespaces it watches.
    watcher: Watcher | None = None

    @classmethod
    def of(cls, cfg: PlatformConfig, out: Path, box: Path) -> Cluster:
        manifests, rendered, resources = read_out(out)
        box.mkdir(parents=True, exist_ok=True)
        nodes = pool_nodes(cfg, resources, [*manifests, *rendered])
        bootstrap = (read_image(), lay_out(box / "images" / "bootstrap"))
        return cls(cfg, box, manifests, rendered, nodes, {"": bootstrap})

    def add_image(self, reference: str, image: Image, name: str) -> Path:
        """`reference` runs `image`, laid out under the box; its root folder."""
        root = self.box / "images" / name
        self.images[reference] = (image, lay_out(root, image))
        return root

    def image_for(self, reference: str) -> tuple[Image, PathMap]:
        return self.images.get(reference, self.images[""])

    # ------------------------------------------------------------------ objects

    def objects(self) -> list[dict[str, Any]]:
        return [*self.manifests, *self.rendered]

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        for obj in self.objects():
            meta = obj["metadata"]
            if obj["kind"] == kind and meta["name"] == name and meta.get("namespace") == namespace:
                return obj
        return None

    def kueue_namespace(self) -> str:
        (deployment,) = [
            o
            for o in self.rendered
            if o["kind"] == "Deployment" and o["metadata"]["name"] == "kueue-controller-manager"
        ]
        return deployment["metadata"]["namespace"]

    # ------------------------------------------------------------------ Kueue

    def namespace_of(self, job: dict[str, Any]) -> dict[str, Any]:
        """The Namespace object the job is created in, or Refused as the API server says."""
        meta = job["metadata"]
        namespace = self.get("Namespace", meta["namespace"])
        if namespace is None:
            raise Refused(
                f"{job['kind']} {meta['namespace']}/{meta['name']}: namespaces "
                f'"{meta["namespace"]}" not found (API server)'
            )
        return namespace

    def admit(self, job: dict[str, Any]) -> None:
        """Kueue unsuspends the job, or Refused says why it never will."""
        what = f"{job['kind']} {job['metadata']['namespace']}/{job['metadata']['name']}"
        namespace = self.namespace_of(job)
        config = manager_config(self.rendered)
        why = namespace_managed(config, namespace, self.kueue_namespace())
        if why:
            raise Refused(
                f"{what} stays suspended: kueue-controller-manager (Kueue v0.19.2 "
                f"jobframework reconciler, rendered ConfigMap {self.kueue_namespace()}/"
                f"kueue-manager-config): {why}"
            )
        problems = admission_problems(Kueue.of(self.objects(), config, windows="open"), job)
        if problems:
            raise Refused(f"{what} is never admitted: Kueue v0.19.2: {'; '.join(problems)}")

    # ------------------------------------------------------------------ the API server

    @contextlib.contextmanager
    def api_server(self, folder: Path) -> Iterator[ApiServer]:
        """An API server the pods reach with their ServiceAccount (tests/helpers/kube_api.py):
        it serves the nodes, and a node PATCH a pod sends (the self-test's quarantine) is
        applied to the node before the scheduler places the next pod."""
        with ApiServer(folder, {}) as api:
            self.api = api
            self.serve_nodes()
            self.start_watcher(folder / "quarantine-watcher.log")
            try:
                yield api
            finally:
                self.stop_watcher()
                self.api = None

    def serve_nodes(self) -> None:
        for node in self.nodes:
            path = f"/api/v1/nodes/{node.name}"
            self.api.answers[("GET", path)] = self.api.answers[("PATCH", path)] = (
                200, node.as_object()
            )  # fmt: skip

    def start_watcher(self, log: Path) -> None:
        """The rendered `quarantine-watcher` Deployment's one replica, where the plan renders
        it, run by a kubelet in the self-test's image on the platform's system node."""
        found = [
            o for o in self.manifests
            if o["kind"] == "Deployment" and o["metadata"]["name"] == WATCHER
        ]  # fmt: skip
        if not found:
            return
        (deployment,) = found
        pod = deployment_pod(deployment)
        kubelet = self.kubelet(SYSTEM_NODE)
        (container,) = pod["spec"]["containers"]
        watched = kubelet.environment(pod, container).get(SELFTEST_WATCH_NAMESPACES, "")
        namespaces = set(filter(None, watched.split(",")))
        for namespace in namespaces:
            self.serve_failed(namespace)
        process = self.start_pod(pod, log, kubelet)
        self.watcher = Watcher(pod, process, log, namespaces)

    def stop_watcher(self) -> None:
        if self.watcher is None:
            return
        self.stop_pod(self.watcher.process)
        self.watcher = None

    def serve_failed(self, namespace: str) -> None:
        """The namespace's failed preflight pods, as the API lists them (an empty list where
        there are none, or no such namespace)."""
        key, value = preflight.POD_LABEL
        items = [
            p for p in self.failed.values()
            if p["metadata"]["namespace"] == namespace and p["metadata"]["labels"].get(key) == value
        ]  # fmt: skip
        self.api.answers[("GET", failed_pods_path(namespace, PREFLIGHT_SELECTOR))] = (
            200, {"apiVersion": "v1", "kind": "PodList", "items": items}
        )  # fmt: skip

    def publish_failed(self) -> None:
        """The API server lists every pod that has failed, its status as its kubelet reports it
        (the containers' exit codes and termination messages); if the quarantine watcher watches
        the namespace of a newly failed preflight pod, wait until it has swept it: its second
        list of that namespace's failed preflight pods since, as one sweep lists each namespace
        once and acts on what it listed before the next (bootstrap/selftest/watch.py)."""
        if self.api is None:
            return
        new = []
        for pod, process, kubelet in self.started:
            meta = pod["metadata"]
            if process.poll() in (None, 0) or meta["uid"] in self.failed:
                continue
            self.failed[meta["uid"]] = {
                "apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": pod["spec"],
                "status": kubelet.status(pod, process.returncode),
            }  # fmt: skip
            new.append(meta)
        if not new:
            return
        for namespace in {meta["namespace"] for meta in new}:
            self.serve_failed(namespace)
        mark = len(self.api.received)
        if self.watcher is None:
            return
        key, value = preflight.POD_LABEL
        for namespace in {
            m["namespace"] for m in new
            if m["labels"].get(key) == value and m["namespace"] in self.watcher.namespaces
        }:  # fmt: skip
            self.watcher.wait_for_sweeps(
                self.api, failed_pods_path(namespace, PREFLIGHT_SELECTOR), mark
            )

    def apply_api_requests(self) -> None:
        if self.api is None:
            return
        for method, path, _, body in self.api.received[self.applied :]:
            if method == "PATCH" and path.startswith("/api/v1/nodes/"):
                name = urllib.parse.unquote(path.rsplit("/", 1)[1])
                (node,) = [n for n in self.nodes if n.name == name]
                node.merge_patch(body)
        self.applied = len(self.api.received)
        self.serve_nodes()

    # ------------------------------------------------------------------ scheduler + kubelet

    def pod_security(self, pod: dict[str, Any]) -> None:
        """The API server's Pod Security admission of a pod the Job controller creates, at the
        level its namespace enforces (tests/controllers/pod_security.py): a refused pod is the
        Job's FailedCreate."""
        meta = pod["metadata"]
        level = enforce_level(self.get("Namespace", meta["namespace"]))
        found = violations((meta, pod["spec"]), level)
        if found:
            raise Refused(
                f'Job controller: FailedCreate: pods "{meta["name"]}" is forbidden: violates '
                f'PodSecurity "{level}:latest" (namespace {meta["namespace"]}): '
                + "; ".join(map(str, found))
            )

    def schedule(self, pod: dict[str, Any]) -> Node:
        self.publish_failed()
        self.apply_api_requests()
        spec = pod["spec"]
        for node in self.nodes:
            for name, (process, _) in list(node.pods.items()):
                if process.poll() is not None:
                    del node.pods[name]
        reasons: dict[str, int] = {}
        for node in self.nodes:
            why = misfit(spec, node)
            if why is None:
                return node
            reasons[why] = reasons.get(why, 0) + 1
        said = ", ".join(f"{n} {why}" for why, n in sorted(reasons.items()))
        raise Refused(
            f"Pod {pod['metadata']['namespace']}/{pod['metadata']['name']}: default-scheduler: "
            f"0/{len(self.nodes)} nodes are available: {said}"
        )

    def objects_index(self) -> Objects:
        by_kind: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
        for obj in self.objects():
            if "namespace" in obj["metadata"]:
                key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
                by_kind.setdefault(obj["kind"], {})[key] = obj
        return Objects(by_kind)

    def kubelet(self, node: Node, wrap: Wrap | None = None) -> Kubelet:
        """The node's kubelet. It gives a pod the API server's address (KUBERNETES_SERVICE_HOST,
        _PORT) and its ServiceAccount, at the path the self-test's override names (it opens the
        usual one inside its code, where no path map reaches); the system node's pods keep
        their own devices. `wrap`: a test's own change to each container's argv and env, last."""
        api_env = self.api.env() if self.api is not None else {}

        def on_node(argv: list[str], env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
            env = {**env, **api_env}
            if node is not SYSTEM_NODE:
                argv, env = stand_in(argv, env, node)
            return wrap(argv, env) if wrap else (argv, env)

        return Kubelet(self.box, node, self.image_for, self.objects_index(), self.network, on_node)

    def start_pod(self, pod: dict[str, Any], log: Path, kubelet: Kubelet) -> subprocess.Popen:
        """The pod, placed on `kubelet`'s node, started by it."""
        pod["spec"]["nodeName"] = kubelet.node.name
        process = kubelet.start(pod, log)
        self.sandboxes[process.pid] = kubelet.sandbox(pod)
        return process

    def stop_pod(self, process: subprocess.Popen) -> None:
        """Every process of the pod `process` started, killed."""
        for pid in sandbox_processes(self.sandboxes[process.pid]):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        process.wait(timeout=HANG_S)

    def run_pod(
        self, pod: dict[str, Any], log: Path, node: Node | None = None, wrap: Wrap | None = None
    ) -> subprocess.Popen:
        """The pod, admitted by Pod Security, placed by the scheduler (or on `node`, a node of
        no pool such as SYSTEM_NODE, where the platform's own controllers run) and started."""
        self.pod_security(pod)
        node = node or self.schedule(pod)
        kubelet = self.kubelet(node, wrap)
        process = self.start_pod(pod, log, kubelet)
        self.started.append((pod, process, kubelet))
        node.pods[pod["metadata"]["name"]] = (process, requests(pod["spec"]))
        return process

    # ------------------------------------------------------------------ JobSet

    def pods_of(self, jobset: dict[str, Any]) -> list[dict[str, Any]]:
        """The pods the JobSet and Job controllers make of its one replicatedJob, attempt 0."""
        meta = jobset["metadata"]
        name, namespace = meta["name"], meta["namespace"]
        (rj,) = jobset["spec"]["replicatedJobs"]
        template = rj["template"]["spec"]["template"]
        pods = []
        for index in range(rj["template"]["spec"]["parallelism"]):
            host = f"{name}-{rj['name']}-0-{index}"
            pods.append({
                "metadata": {
                    "name": f"{host}-{secrets.token_hex(3)[:5]}",
                    "namespace": namespace,
                    "uid": str(uuid.uuid4()),
                    "labels": {
                        **template.get("metadata", {}).get("labels", {}),
                        COMPLETION_INDEX_LABEL: str(index),
                        JOBSET_NAME_LABEL: name,
                        REPLICATED_JOB_LABEL: rj["name"],
                    },
                    "annotations": {
                        **template.get("metadata", {}).get("annotations", {}),
                        RESTART_ATTEMPT_KEY: "0",
                    },
                },
                "spec": {**json.loads(json.dumps(template["spec"])), "hostname": host,
                         "subdomain": name},
            })  # fmt: skip
        return pods

    def bind_all(self, jobset: dict[str, Any]) -> list[str]:
        """Admitted, every pod of the JobSet placed at once (each takes its requests from its
        node before the next is placed); the nodes, then released."""
        self.admit(jobset)
        placed = []
        try:
            for pod in self.pods_of(jobset):
                node = self.schedule(pod)
                node.pods[pod["metadata"]["name"]] = (_Bound(), requests(pod["spec"]))
                placed.append((node, pod["metadata"]["name"]))
        finally:
            for node, name in placed:
                del node.pods[name]
        return [node.name for node, _ in placed]

    def run_jobset(
        self, jobset: dict[str, Any], fault: Callable[[int, list[Pod]], None] | None = None
    ) -> Outcome:
        """Admitted by Kueue, then run by the JobSet and Job controllers to the end."""
        self.admit(jobset)
        meta = jobset["metadata"]
        name, namespace = meta["name"], meta["namespace"]
        (rj,) = jobset["spec"]["replicatedJobs"]
        job = rj["template"]["spec"]
        template = job["template"]
        hosts = [f"{name}-{rj['name']}-0-{i}" for i in range(job["parallelism"])]
        for host in hosts:
            for suffix in (f".{name}", f".{name}.{namespace}", f".{name}.{namespace}.svc"):
                self.network.hosts[host + suffix] = "127.0.0.1"
        ports = [p["containerPort"] for p in template["spec"]["containers"][0].get("ports", [])]
        for init in template["spec"].get("initContainers", []):
            ports += [
                int(w.split("=", 1)[1]) for w in init["command"] if w.startswith("--master-port=")
            ]

        def start(index: int, attempt: int, _env: dict, log: Path) -> subprocess.Popen:
            if index == 0:
                # Each attempt's pods are new pods: their ports are fresh on this machine, where
                # an old attempt's listening socket may linger (TIME_WAIT).
                self.network.ports.update({port: free_port() for port in ports})
            pod = self.pods_of(jobset)[index]
            pod["metadata"]["annotations"][RESTART_ATTEMPT_KEY] = str(attempt)
            process = self.run_pod(pod, log)
            self.placed.append((pod["spec"]["nodeName"], pod["metadata"]["name"], attempt))
            return process

        harness = JobSetHarness(
            start, job["parallelism"], jobset["spec"]["failurePolicy"], job["podFailurePolicy"],
            self.box / "logs" / name,
            grace_s=template["spec"].get("terminationGracePeriodSeconds", DEFAULT_GRACE_S),
            name=name, namespace=namespace,
            processes=lambda process: sandbox_processes(self.sandboxes[process.pid]),
        )  # fmt: skip
        return harness.run(fault)

    def run_job(
        self, job: dict[str, Any], node: Node | None = None, wrap: Wrap | None = None
    ) -> Outcome:
        """A batch/v1 Job of one pod (parallelism 1) that Kueue leaves alone, run by the Job
        controller to its end: its pod (Indexed: <job>-<index>-<suffix>, the completion index
        as label and annotation) placed (on `node` where given) and run (`wrap`: Cluster.kubelet),
        its failure by the Job's podFailurePolicy and backoffLimit
        (tests/helpers/jobset_harness.job_failure)."""
        meta, spec = job["metadata"], job["spec"]
        what = f"Job {meta['namespace']}/{meta['name']}"
        config = manager_config(self.rendered)
        if kueue_suspends(config, self.namespace_of(job), job):
            raise Refused(
                f"{what}: Kueue v0.19.2 suspends it until a queue admits it (rendered ConfigMap "
                f"{self.kueue_namespace()}/kueue-manager-config: manageJobsWithoutQueueName "
                f"{config.get('manageJobsWithoutQueueName', False)}, labels {meta.get('labels')})"
            )
        if spec.get("parallelism", 1) != 1:
            raise Refused(f"{what}: the box runs Jobs of one pod")
        template = spec["template"]
        index = "0"
        pod = {
            "metadata": {
                "name": f"{meta['name']}-{index}-{secrets.token_hex(3)[:5]}",
                "namespace": meta["namespace"],
                "uid": str(uuid.uuid4()),
                "labels": {
                    **template.get("metadata", {}).get("labels", {}),
                    COMPLETION_INDEX_LABEL: index,
                    "batch.kubernetes.io/job-name": meta["name"],
                },
                "annotations": {
                    **template.get("metadata", {}).get("annotations", {}),
                    COMPLETION_INDEX_LABEL: index,
                },
            },
            # An Indexed Job's pod is named <job>-<index> on its host (Kubernetes docs, "Jobs",
            # "Completion mode").
            "spec": {
                **json.loads(json.dumps(template["spec"])),
                "hostname": f"{meta['name']}-{index}",
            },
        }
        logs = self.box / "logs" / meta["name"]
        logs.mkdir(parents=True, exist_ok=True)
        log = logs / f"{pod['metadata']['name']}.log"
        started = time.monotonic()
        process = self.run_pod(pod, log, node, wrap)
        try:
            process.wait(timeout=HANG_S)
        finally:
            self.stop_pod(process)
        ended = Pod(0, 0, process, log, started, time.monotonic(), jobset=meta["name"])
        # backoffLimit's default is 6 (batch/v1 JobSpec).
        failure = (
            job_failure([ended], spec.get("podFailurePolicy", {"rules": []}),
                        spec.get("backoffLimit", 6), meta["namespace"])
            if ended.exit_code else None
        )  # fmt: skip
        if failure is None:
            return Outcome("Completed", "", 0, 0, [[ended]])
        return Outcome("Failed", failure[0], 0, 0, [[ended]], [(*failure, "")])

    def serve(self, url: str, port: int) -> None:
        """A Service the pods reach at `url` answered by a server of this machine on `port`.
        Only a rendered Service answers in a cluster: a URL whose host
        (<service>.<namespace>.svc[.cluster.local], Kubernetes docs "DNS for Services and
        Pods") and port no rendered Service has is one the pods could not reach."""
        parts = urllib.parse.urlsplit(url)
        name, namespace, *_ = [*parts.hostname.split("."), ""]
        service = self.get("Service", name, namespace)
        ports = [p["port"] for p in (service or {}).get("spec", {}).get("ports", [])]
        if parts.port not in ports:
            offered = sorted(
                f"{o['metadata']['name']}:{[p['port'] for p in o['spec'].get('ports', [])]}"
                for o in self.objects()
                if o["kind"] == "Service" and o["metadata"].get("namespace") == namespace
            )
            raise Refused(
                f"{url}: no rendered Service {namespace}/{name} with port {parts.port} "
                f"(cluster DNS): the namespace's Services are {offered}"
            )
        self.network.hosts[parts.hostname] = "127.0.0.1"
        self.network.ports[parts.port] = port

    def claim(self, namespace: str, name: str) -> Path:
        return self.box / "claims" / namespace / name


# The node the platform's own pods run on: no GPU pool's, no taint.
SYSTEM_NODE = Node("system", "system", {}, [], {})
# A test's change to a container's argv and env (Cluster.kubelet).
Wrap = Callable[[list[str], dict[str, str]], tuple[list[str], dict[str, str]]]


def deployment_pod(deployment: dict[str, Any]) -> dict[str, Any]:
    """The pod a Deployment's ReplicaSet makes: <deployment>-<pod-template-hash>-<suffix>."""
    template, meta = deployment["spec"]["template"], deployment["metadata"]
    return {
        "metadata": {
            "name": f"{meta['name']}-{secrets.token_hex(5)}-{secrets.token_hex(3)[:5]}",
            "namespace": meta["namespace"],
            "uid": str(uuid.uuid4()),
            "labels": dict(template["metadata"].get("labels", {})),
            "annotations": {},
        },
        "spec": json.loads(json.dumps(template["spec"])),
    }


@dataclass
class Watcher:
    """The quarantine watcher's pod as the box runs it."""

    pod: dict[str, Any]
    process: subprocess.Popen
    log: Path
    namespaces: set[str]

    def wait_for_sweeps(self, api: ApiServer, path: str, mark: int) -> None:
        """Until the watcher has listed `path` twice since request `mark`: the sweep that first
        listed it has acted on what it listed."""
        give_up = time.monotonic() + WATCH_GIVE_UP_S
        while sum(r[0] == "GET" and r[1] == path for r in api.received[mark:]) < 2:
            if self.process.poll() is not None or time.monotonic() > give_up:
                raise Refused(
                    f"Pod {self.pod['metadata']['namespace']}/{self.pod['metadata']['name']} "
                    f"(Deployment {WATCHER}): never listed {path} twice "
                    f"(exit {self.process.poll()}):\n{self.log.read_text(errors='replace')}"
                )
            time.sleep(POLL_S)


class _Bound:
    """A pod bound to a node and not started: it holds its requests."""

    def poll(self) -> None:
        return None


def outcome_text(outcome: Outcome) -> str:
    """What the JobSet did, pod by pod: for an assertion's message."""
    lines = [f"JobSet {outcome.state} ({outcome.reason}), restarts {outcome.restarts} "
             f"({outcome.restarts_counted} counted)"]  # fmt: skip
    for reason, message, action in outcome.job_failures:
        lines.append(f"  Job failed: {reason}: {message} -> JobSet failurePolicy: {action}")
    for pods in outcome.attempts:
        for pod in pods:
            tail = "\n".join(pod.output().splitlines()[-15:])
            lines.append(f"  attempt {pod.attempt} pod {pod.name}: exit {pod.exit_code}\n{tail}")
    return "\n".join(lines)


# ---------------------------------------------------------------------- the plan, as written

# A pinned image, as a stack that turns the self-test on sets `selftest.image`.
SELFTEST_IMAGE = "registry.example.com/gpu-platform/selftest@sha256:" + "0" * 64


def planned_with_selftest(stack: str) -> Plan:
    """The stack's plan with the self-test on: as shipped where it sets `selftest.image`, else
    planned with one (the path every AWS stack takes once its image is pushed), once per
    source tree like every plan (tests/helpers/plan_cache.py)."""
    if stack_config(stack).selftest.image:
        return planned(stack)

    def plan() -> Plan:
        config = stack_file_config(stack)
        config["gpu-platform:selftest"] = {
            **config.get("gpu-platform:selftest", {}),
            "image": SELFTEST_IMAGE,
        }
        root = make_project(Path(tempfile.mkdtemp(prefix="box-")), {stack: config})
        return build_plan(run_program(stack, root))

    return _plans().get(f"plan-{stack}-with-selftest", plan)


def write_out(stack: str, out: Path) -> Path:
    """out/<stack>/ as `python -m plan <stack>` writes it, from the plan with the self-test on."""
    plan = planned_with_selftest(stack)
    if stack_config(stack).selftest.image:
        rendering = rendered(stack)
    else:
        rendering = render_plan(plan, (SHARED_HELM,))
    return write_plan(plan, rendering, out)


def write_plan(plan: Plan, rendering: Rendering, out: Path) -> Path:
    """What `python -m plan` writes of a plan and its rendering (plan/cli.py)."""
    write_outputs(plan, out)
    write_rendered(rendering, out)
    return out
