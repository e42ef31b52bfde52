"""A kubelet for the cluster in a box (tests/cluster/): it runs a pod's containers as real
processes in the image's layout (tests/helpers/box_image.py), as the kubelet and the container
runtime would on a node.

- Volumes, each a folder at its `mountPath` (Kubernetes docs, "Volumes"): a ConfigMap's keys as
  files, only its `items` where it lists them (each at its `path`, with its `mode` or the
  volume's `defaultMode`, 0644 by default), a Secret's likewise, behind the kubelet's `..data`
  links (tests/helpers/image_layout.write_volume_files); an emptyDir the pod's own; a
  persistentVolumeClaim one folder per claim, shared by every pod that mounts it; a hostPath the
  node's. A ConfigMap, Secret or claim that does not exist fails the pod as the kubelet does
  (`MountVolume.SetUp failed for volume "<v>" : configmap "<n>" not found`).
- The environment as the kubelet builds it (pkg/kubelet/kubelet_pods.go `makeEnvironmentVariables`):
  `envFrom` first, then `env` in order, each value's `$(VAR)` expanded from the variables before
  it (`$$` escapes; an undefined reference stays as written: third_party/forked/golang/
  expansion), `valueFrom` from the pod (`fieldRef`: metadata.name, .namespace, .uid,
  .labels['k'], .annotations['k'], spec.nodeName, spec.serviceAccountName, status.podIP,
  status.hostIP; a missing label or annotation reads ""), its resources (`resourceFieldRef`, the
  value divided by the divisor and rounded up; a limit not set reads the node's allocatable)
  or a ConfigMap's key; laid over the image's ENV (the runtime's merge: the container's wins).
- The command and args `$(VAR)`-expanded from that environment, `python` found on the PATH the
  image sets.

Three maps stand between the cluster and this machine, and nothing else is changed:
- paths (`PathMap`): every absolute path of the image and of the pod's mounts -> the box's
  folder, applied to the command, args, every env value (PYTHONPATH, PATH) and the working folder;
- the network (`Network`): a cluster DNS name -> 127.0.0.1 (each JobSet pod's hostname through
  its headless Service, a Service's name) and a port -> a free port of this machine, so that
  several boxes run side by side; and, as every pod here shares one address where a cluster
  gives each its own, a port a process opens for itself (trainkit's metrics server, 8000 on
  every pod: bootstrap/trainkit/session.py) is one the system picks (`PER_POD_PORTS`);
- the node's devices (`tests/helpers/box_nodes.py`, `Node.stand_in`): a CPU stands in for the
  pod's GPUs and fabric.

A pod's containers run in one process group (its "sandbox", whose folder every process of the
pod names in SANDBOX_ENV, the box's stand-in for its cgroup): init containers one after another,
each to success, then the app container in their place (`exec`), so that the signal the
kubelet sends on deletion (SIGTERM, then SIGKILL after terminationGracePeriodSeconds: the
JobSet harness sends them) reaches the container's PID 1 as on a node. A failed init container
fails the pod with its exit code (restartPolicy Never).

Each container's termination message (Kubernetes docs, "Determine the Reason for Pod Failure"):
the kubelet gives every container an empty file, writable by any user, at its
`terminationMessagePath` (/dev/termination-log by default) and, when the container ends, reads
the file's last 4096 bytes back into its status (`state.terminated.message`, beside `exitCode`:
`status`). The image's code writes the fixed path /dev/termination-log, which no path map
reaches, and this machine's /dev is every process's: so each container runs in a mount
namespace of its own (`unshare -m`, private propagation) whose /dev is a tmpfs holding what a
container runtime gives a container (the OCI runtime spec's default devices, /dev/pts, /dev/shm
and the /dev/fd links: `CONTAINER_DEV`), bound from this machine's, and the container's file
bound at its path; this machine's /dev is not changed. pod.sh records each init container's exit
code beside its file; the app container's is the sandbox process's own."""

from __future__ import annotations

import base64
import math
import os
import re
import shlex
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.controllers.kueue_admission import quantity
from tests.helpers.box_image import Image, PathMap
from tests.helpers.image_layout import (
    CONFIGMAP_DEFAULT_MODE,
    expand,
    kubelet_env,
    write_volume_files,
)

# The box's stand-in for a pod's cgroup: every process of the pod inherits this variable (torch's
# agent starts its workers in sessions of their own, out of the pod's process group), so that a
# pod is killed whole, as a container runtime kills its cgroup.
SANDBOX_ENV = "BOX_SANDBOX"
# Ports a process of each pod listens on, which pods sharing this machine's address would
# contend for: 0 lets the system pick one (unless the pod sets the variable itself).
PER_POD_PORTS = {"TRAINKIT_METRICS_PORT": "0"}
# core/v1 Container `terminationMessagePath`'s default, and how much of it the kubelet reads back
# (pkg/kubelet/kuberuntime/kuberuntime_container.go: tail.ReadAtMost(path,
# kubecontainer.MaxContainerTerminationMessageLength), the file's last 4096 bytes).
TERMINATION_PATH = "/dev/termination-log"
TERMINATION_MAX = 4096
# A container's /dev, set up inside its own mount namespace (`sh CONTAINER_DEV <this machine's
# /dev, bound here> <the container's file> <its terminationMessagePath> <argv...>`): the OCI
# runtime spec's default devices (config-linux.md, "Default Devices") and file systems (/dev/pts,
# /dev/shm: runtime-linux.md, "Default File Systems") and links (/dev/fd, stdin, stdout, stderr:
# "Dev symbolic links") from this machine's, then the termination file.
CONTAINER_DEV = """set -e
host=$1 file=$2 at=$3
shift 3
mount --rbind /dev "$host"
mount -t tmpfs -o mode=755 tmpfs /dev
for node in null zero full random urandom tty ptmx; do
  touch "/dev/$node"
  mount --bind "$host/$node" "/dev/$node"
done
for fs in pts shm; do
  mkdir "/dev/$fs"
  mount --rbind "$host/$fs" "/dev/$fs"
done
ln -s /proc/self/fd /dev/fd
for i in 0:stdin 1:stdout 2:stderr; do ln -s "/proc/self/fd/${i%%:*}" "/dev/${i#*:}"; done
mkdir -p "$(dirname "$at")"
touch "$at"
mount --bind "$file" "$at"
exec "$@"
"""


class PodStartError(Exception):
    """The kubelet could not start the pod (a volume or a reference it names is missing)."""


FIELD_PATH = re.compile(r"metadata\.(labels|annotations)\['([^']+)'\]")


def field_ref(pod: dict[str, Any], path: str) -> str:
    meta, spec = pod["metadata"], pod["spec"]
    match = FIELD_PATH.fullmatch(path)
    if match:
        return str(meta.get(match.group(1), {}).get(match.group(2), ""))
    simple = {
        "metadata.name": meta["name"],
        "metadata.namespace": meta["namespace"],
        "metadata.uid": meta.get("uid", ""),
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName", "default"),
        "status.podIP": "127.0.0.1",
        "status.hostIP": "127.0.0.1",
    }
    if path not in simple:
        raise PodStartError(f"fieldRef {path!r}: not a field the downward API offers")
    return str(simple[path])


def resource_ref(container: dict[str, Any], ref: dict[str, Any], allocatable: dict) -> str:
    kind, _, resource = ref["resource"].partition(".")
    resources = container.get("resources", {})
    value = resources.get(kind, {}).get(resource)
    if value is None and kind == "requests":
        value = resources.get("limits", {}).get(resource)
    if value is None:
        value = allocatable.get(resource, 0)
    return str(math.ceil(quantity(value) / quantity(ref.get("divisor", "1"))))


@dataclass
class Network:
    """Cluster names and ports as this machine reaches them."""

    hosts: dict[str, str] = field(default_factory=dict)
    ports: dict[int, int] = field(default_factory=dict)

    def apply(self, text: str) -> str:
        for name in sorted(self.hosts, key=len, reverse=True):
            text = re.sub(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", self.hosts[name], text)
        for port, free in self.ports.items():
            text = re.sub(rf"(?<=[=:]){port}(?!\d)", str(free), text)
        return text


@dataclass
class Objects:
    """What a pod can name: ConfigMaps, Secrets and claims by namespace and name."""

    by_kind: dict[str, dict[tuple[str, str], dict[str, Any]]]

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.by_kind.get(kind, {}).get((namespace, name))


@dataclass
class Kubelet:
    """One node's kubelet: `start(pod, log)` runs the pod and returns its sandbox process."""

    box: Path
    node: Any  # tests/helpers/box_nodes.Node
    # A container's image reference -> its layout in the box and the map of its paths.
    images: Callable[[str], tuple[Image, PathMap]]
    objects: Objects
    network: Network
    # Applied to each container's argv and env last: what the node's CPU stands in for.
    stand_in: Callable[[list[str], dict[str, str]], tuple[list[str], dict[str, str]]] = (
        lambda argv, env: (argv, env)
    )

    def claim_folder(self, namespace: str, claim: str) -> Path:
        return self.box / "claims" / namespace / claim

    def _files(self, kind: str, source: dict[str, Any], ns: str, volume: str, to: Path) -> None:
        name = source.get("name") or source.get("secretName")
        obj = self.objects.get(kind, ns, name)
        if obj is None:
            if source.get("optional"):
                return
            raise PodStartError(
                f'MountVolume.SetUp failed for volume "{volume}" : {kind.lower()} "{name}" '
                "not found"
            )
        data = dict(obj.get("data", {}))
        if kind == "Secret":
            data = {k: base64.b64decode(v).decode() for k, v in data.items()}
            data.update(obj.get("stringData", {}))
        items = source.get("items") or [{"key": k, "path": k} for k in data]
        for item in items:
            if item["key"] not in data:
                raise PodStartError(
                    f'MountVolume.SetUp failed for volume "{volume}" : configmap references '
                    f"non-existent config key: {item['key']}"
                )
        default = source.get("defaultMode", CONFIGMAP_DEFAULT_MODE)
        write_volume_files(to, {i["path"]: (data[i["key"]], i.get("mode", default)) for i in items})

    def volumes(self, pod: dict[str, Any], sandbox: Path) -> dict[str, Path]:
        ns = pod["metadata"]["namespace"]
        found = {}
        for volume in pod["spec"].get("volumes", []):
            name = volume["name"]
            if "configMap" in volume or "secret" in volume:
                kind = "ConfigMap" if "configMap" in volume else "Secret"
                folder = sandbox / "volumes" / name
                folder.mkdir(parents=True)
                self._files(kind, volume.get("configMap") or volume["secret"], ns, name, folder)
            elif "emptyDir" in volume:
                folder = sandbox / "volumes" / name
                folder.mkdir(parents=True)
            elif "persistentVolumeClaim" in volume:
                claim = volume["persistentVolumeClaim"]["claimName"]
                if self.objects.get("PersistentVolumeClaim", ns, claim) is None:
                    raise PodStartError(f'persistentvolumeclaim "{claim}" not found')
                folder = self.claim_folder(ns, claim)
                folder.mkdir(parents=True, exist_ok=True)
            elif "hostPath" in volume:
                folder = (
                    self.box / "nodes" / self.node.name / volume["hostPath"]["path"].lstrip("/")
                )
                folder.mkdir(parents=True, exist_ok=True)
            else:
                raise PodStartError(f"volume {name}: a kind this kubelet does not mount: {volume}")
            found[name] = folder
        return found

    def environment(self, pod: dict[str, Any], container: dict[str, Any]) -> dict[str, str]:
        ns = pod["metadata"]["namespace"]

        def env_from(source: Mapping[str, Any]) -> dict[str, str]:
            ref = source.get("configMapRef") or source.get("secretRef")
            kind = "ConfigMap" if "configMapRef" in source else "Secret"
            obj = self.objects.get(kind, ns, ref["name"])
            if obj is None:
                if ref.get("optional"):
                    return {}
                raise PodStartError(f'{kind.lower()} "{ref["name"]}" not found (envFrom)')
            return {
                key: base64.b64decode(value).decode() if kind == "Secret" else value
                for key, value in obj.get("data", {}).items()
            }

        def value_from(entry: Mapping[str, Any]) -> str:
            source = entry["valueFrom"]
            if "fieldRef" in source:
                return field_ref(pod, source["fieldRef"]["fieldPath"])
            if "resourceFieldRef" in source:
                return resource_ref(container, source["resourceFieldRef"], self.node.allocatable)
            if "configMapKeyRef" in source:
                ref = source["configMapKeyRef"]
                obj = self.objects.get("ConfigMap", ns, ref["name"])
                if obj is None or ref["key"] not in obj.get("data", {}):
                    raise PodStartError(
                        f"couldn't find key {ref['key']} in ConfigMap {ns}/{ref['name']}"
                    )
                return obj["data"][ref["key"]]
            raise PodStartError(f"env {entry['name']}: a source this kubelet does not read")

        return kubelet_env(container, env_from, value_from)

    def argv_and_env(
        self, pod: dict[str, Any], container: dict[str, Any], image: Image, paths: PathMap
    ) -> tuple[list[str], dict[str, str], Path]:
        """The process the runtime starts for `container`: argv, environment, working folder."""
        own = self.environment(pod, container)
        words = [
            expand(w, own) for w in [*container.get("command", []), *container.get("args", [])]
        ]
        env = {
            **image.env,
            **PER_POD_PORTS,
            "HOSTNAME": pod["spec"].get("hostname", pod["metadata"]["name"]),
        }
        env.update(own)
        env = {k: self.network.apply(paths.apply(v)) for k, v in env.items()}
        # A folder of this machine, past the maps (a pod's /tmp mount would take /tmp/...).
        env[SANDBOX_ENV] = str(self.sandbox(pod))
        words = [self.network.apply(paths.apply(w)) for w in words]
        words, env = self.stand_in(words, env)
        words[0] = self.executable(words[0], env["PATH"], container["name"])
        cwd = paths.path(container.get("workingDir", image.workdir))
        return words, env, cwd

    def executable(self, name: str, path: str, container: str) -> str:
        """`name` as the runtime finds it: a path in the box, or the first on the image's PATH
        that the box holds (a folder of this machine outside the box is not the image's)."""
        if "/" in name:
            return name
        for folder in path.split(":"):
            candidate = Path(folder) / name
            if candidate.is_relative_to(self.box) and os.access(candidate, os.X_OK):
                return str(candidate)
        raise PodStartError(
            f'container {container}: exec: "{name}": executable file not found in $PATH'
        )

    def sandbox(self, pod: dict[str, Any]) -> Path:
        return self.box / "pods" / pod["metadata"]["namespace"] / pod["metadata"]["name"]

    def container_folder(self, pod: dict[str, Any], container: str) -> Path:
        return self.sandbox(pod) / "containers" / container

    def status(self, pod: dict[str, Any], returncode: int | None) -> dict[str, Any]:
        """The pod's status as the kubelet reports it, from its sandbox process's `returncode`
        (None while it runs): phase, and each container's state, an ended one's exit code (a
        signal N as 128 + N) and termination message."""
        spec = pod["spec"]
        app = None if returncode is None else (128 - returncode if returncode < 0 else returncode)
        codes = []
        for container in spec.get("initContainers", []):
            recorded = self.container_folder(pod, container["name"]) / "exit-code"
            codes.append(int(recorded.read_text()) if recorded.is_file() else None)
        # The container the sandbox ended in, or is running: the first init container that did
        # not succeed (its code, if pod.sh did not record it, is the sandbox's), else the app.
        at = next((i for i, code in enumerate(codes) if code != 0), len(codes))
        if at < len(codes) and codes[at] is None:
            codes[at] = app
        app_state = app if at == len(codes) else None
        phase = "Succeeded" if app == 0 else "Failed" if app is not None else "Running"
        if app is None and at < len(codes):
            phase = "Pending"
        return {
            "phase": phase,
            "initContainerStatuses": [
                self._container_status(pod, c, code)
                for c, code in zip(spec.get("initContainers", []), codes, strict=True)
            ],
            "containerStatuses": [
                self._container_status(pod, c, app_state) for c in spec["containers"]
            ],
        }

    def _container_status(
        self, pod: dict[str, Any], container: dict[str, Any], code: int | None
    ) -> dict[str, Any]:
        name = container["name"]
        if code is None:
            return {"name": name, "state": {"waiting": {"reason": "PodInitializing"}}}
        terminated: dict[str, Any] = {
            "exitCode": code, "reason": "Completed" if code == 0 else "Error"
        }  # fmt: skip
        message = termination_message(self.container_folder(pod, name) / "termination-log")
        if message:
            terminated["message"] = message
        return {"name": name, "state": {"terminated": terminated}}

    def start(self, pod: dict[str, Any], log: Path) -> subprocess.Popen:
        """Every container of the pod, init containers first, in one new session."""
        sandbox = self.sandbox(pod)
        sandbox.mkdir(parents=True)
        volumes = self.volumes(pod, sandbox)
        steps = []
        spec = pod["spec"]
        containers = [*spec.get("initContainers", []), *spec["containers"]]
        if len(spec["containers"]) != 1:
            raise PodStartError("this kubelet runs pods of one app container")
        for i, container in enumerate(containers):
            image, image_paths = self.images(container["image"])
            paths = image_paths.copy()
            for mount in container.get("volumeMounts", []):
                if mount["name"] not in volumes:
                    raise PodStartError(
                        f"container {container['name']}: volumeMount {mount['name']} names no "
                        "volume of the pod"
                    )
                paths.add(mount["mountPath"], volumes[mount["name"]] / mount.get("subPath", ""))
            argv, env, cwd = self.argv_and_env(pod, container, image, paths)
            cwd.mkdir(parents=True, exist_ok=True)
            own = self.container_folder(pod, container["name"])
            (own / "dev").mkdir(parents=True)
            message = own / "termination-log"
            message.touch()
            message.chmod(0o666)
            at = container.get("terminationMessagePath", TERMINATION_PATH)
            if not at.startswith("/dev/"):
                raise PodStartError(
                    f"container {container['name']}: terminationMessagePath {at}: this kubelet "
                    "mounts it under /dev only"
                )
            run = shlex.join([
                "unshare", "-m", "/bin/sh", str(sandbox / "dev.sh"), str(own / "dev"),
                str(message), at, "env", "-i", *(f"{k}={v}" for k, v in env.items()), *argv,
            ])  # fmt: skip
            steps.append(f"cd {shlex.quote(str(cwd))} || exit 1")
            if i == len(containers) - 1:
                steps.append(f"exec {run}")
            else:
                code = shlex.quote(str(own / "exit-code"))
                steps.append(f"{run}; code=$?; echo $code > {code}; [ $code = 0 ] || exit $code")
        (sandbox / "dev.sh").write_text(CONTAINER_DEV)
        (sandbox / "pod.sh").write_text("\n".join(steps) + "\n")
        with log.open("w") as out:
            return subprocess.Popen(
                ["/bin/sh", str(sandbox / "pod.sh")],
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip


def termination_message(path: Path) -> str:
    """What the kubelet reads back of a container's termination file: its last TERMINATION_MAX
    bytes."""
    if not path.is_file():
        return ""
    with path.open("rb") as file:
        file.seek(max(0, path.stat().st_size - TERMINATION_MAX))
        return file.read().decode(errors="replace")


def sandbox_processes(sandbox: Path) -> list[int]:
    """Every live process of the pod whose sandbox is `sandbox` (its SANDBOX_ENV)."""
    marker = f"{SANDBOX_ENV}={sandbox}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            found.append(int(entry.name))
    return found
