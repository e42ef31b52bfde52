"""A container's file system as a folder, so that a test runs what the plan renders in the layout
it has on a cluster (STYLE.md §18): the image as its Dockerfile lays it out, the pod's volumes at
their mountPaths, the command with its container paths mapped into the folder.

    layout = image_layout(ROOT / "bootstrap/Dockerfile", base=host_base())
    box = ContainerRoot(tmp_path / "root")
    box.install(layout)                                  # COPY destinations
    box.mount(volume, "/opt/gpu-platform/launcher", configmaps)  # a pod volume, as rendered
    env = {**box.env(layout.env), **box.env(container_env(container, fields))}
    subprocess.run(box.command(container, env), env=env, cwd=box.path(layout.workdir))

- `image_layout(dockerfile, context, base)` reads the Dockerfile's FROM/ARG/ENV/COPY/WORKDIR/USER
  into an `ImageLayout`: what the image's file system holds (COPY sources in the build context
  and their destinations), its environment (ENV, `${VAR}` expanded as Docker does) and where
  the process starts. RUN is not run: what a RUN line installs (pip packages, torch) is the
  interpreter the test runs with. An image built FROM another of the project's (recipes/
  Dockerfile on the bootstrap image) takes that one's layout as `base`; `host_base()` stands for
  a vendor base (NGC PyTorch): only its PATH, so that `${PATH}` expands as it would there.
- `ContainerRoot(folder)` stands for `/`: `install` copies an image's files in, `mount` puts a
  pod volume at its mountPath, hiding what the image had there (a ConfigMap as its items, each
  with its mode, behind the kubelet's `..data` links; an emptyDir or a claim as a folder; two
  mounts of one claim see the same folder, `claims`), `mount_all` every volumeMount of a
  container, `path` maps a container path into the folder, `value`, `env` and `command` map
  the paths in environment values and arguments.
- `container_env(container, value_from, configmaps)` builds a container's environment as the
  kubelet does: `envFrom` ConfigMaps first, then `env` in order, `value` with `$(VAR)` expanded
  (`expand`), `valueFrom` from what the caller says the pod's fields are.

What is no part of it: the network (a test maps a pod's DNS name and port to loopback itself),
users and permissions beyond file modes, and which Python runs (`python` is this interpreter).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
NONE: Mapping[str, Any] = MappingProxyType({})
# The kubelet's AtomicWriter names each version of a ConfigMap volume's files `..<timestamp>`.
ATOMIC_PAYLOAD = "..2026_01_01_00_00_00.000000000"
# Kubernetes API reference, ConfigMapVolumeSource `defaultMode`: "Defaults to 0644".
CONFIGMAP_DEFAULT_MODE = 0o644
_DOCKER_VAR = re.compile(r"\$(?:\{(\w+)\}|(\w+))")
# Kubernetes "Define Dependent Environment Variables": `$(VAR)` is replaced by a variable defined
# before it; `$$(VAR)` escapes to `$(VAR)`; an undefined reference is left as it is. The name is
# whatever stands before the closing parenthesis (third_party/forked/golang/expansion/expand.go
# `tryReadVariableName`).
_KUBE_VAR = re.compile(r"\$\$|\$\(([^)]*)\)")


@dataclass(frozen=True)
class Copy:
    """One COPY line: `source`, relative to `context`, lands at `destination` in the image."""

    context: Path
    source: str
    destination: str


@dataclass(frozen=True)
class ImageLayout:
    """What an image is to a process started in it: files, environment, directory, user."""

    copies: tuple[Copy, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    workdir: str = "/"
    user: str | None = None


def host_base() -> ImageLayout:
    """A vendor base image as far as a test can stand for it: this machine's PATH."""
    return ImageLayout(env={"PATH": os.environ.get("PATH", "")})


def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined, as moby/buildkit's
    frontend/dockerfile/parser/parser.go `Parse` joins them: a comment line or an empty line
    inside a continued instruction is dropped, a continuation line keeps its indentation."""
    found, pending = [], ""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#") or not stripped:
            continue
        body = line.rstrip()
        if body.endswith("\\"):
            pending += body[:-1] + " "
            continue
        keyword, _, rest = (pending + body).strip().partition(" ")
        pending = ""
        found.append((keyword.upper(), rest.strip()))
    return found


def _expand_docker(value: str, env: Mapping[str, str]) -> str:
    """Docker's `${VAR}` / `$VAR` substitution: an unset variable is empty."""
    return _DOCKER_VAR.sub(lambda m: env.get(m.group(1) or m.group(2), ""), value)


def _pairs(arguments: str, env: Mapping[str, str]) -> dict[str, str]:
    """`ENV A=1 B=2` (each value expanded against the environment before the line) or the
    legacy `ENV A 1`."""
    words = shlex.split(arguments)
    if "=" not in words[0]:
        return {words[0]: _expand_docker(" ".join(words[1:]), env)}
    return {
        name: _expand_docker(value, env)
        for name, _, value in (word.partition("=") for word in words)
    }


def image_layout(
    dockerfile: Path, context: Path = ROOT, base: ImageLayout | None = None
) -> ImageLayout:
    """The Dockerfile's final image on top of `base` (the image its FROM names). A COPY from
    another stage (`--from=`) or of a URL cannot be laid out here and is refused."""
    copies = list(base.copies) if base else []
    env = dict(base.env) if base else {}
    workdir, user = (base.workdir, base.user) if base else ("/", None)
    args: dict[str, str] = {}
    for keyword, arguments in instructions(dockerfile.read_text()):
        if keyword == "ARG":
            name, _, default = arguments.partition("=")
            args[name] = default
        elif keyword == "ENV":
            env.update(_pairs(arguments, {**args, **env}))
        elif keyword == "COPY":
            words = [w for w in shlex.split(arguments) if not w.startswith("--chown=")]
            flags = [w for w in words if w.startswith("--")]
            if flags or any("://" in w for w in words):
                raise ValueError(f"{dockerfile}: COPY {arguments}: not laid out by this helper")
            *sources, destination = (_expand_docker(w, {**args, **env}) for w in words)
            copies += [Copy(context, source, destination) for source in sources]
        elif keyword == "WORKDIR":
            workdir = str(PurePosixPath(workdir) / _expand_docker(arguments, {**args, **env}))
        elif keyword == "USER":
            user = arguments
    return ImageLayout(tuple(copies), env, workdir, user)


def expand(text: str, env: Mapping[str, str]) -> str:
    """Kubernetes' `$(VAR)` expansion of an env value, a command or an argument."""

    def one(match: re.Match) -> str:
        if match.group(0) == "$$":
            return "$"
        return env.get(match.group(1), match.group(0))

    return _KUBE_VAR.sub(one, text)


def kubelet_env(
    container: Mapping[str, Any],
    env_from: Callable[[Mapping[str, Any]], Mapping[str, str]],
    value_from: Callable[[Mapping[str, Any]], str],
) -> dict[str, str]:
    """A container's environment in the kubelet's order (pkg/kubelet/kubelet_pods.go
    `makeEnvironmentVariables`): each `envFrom` source's keys (`env_from`: an absent optional
    one gives none) under its prefix, then `env` in order, a `value` with `$(VAR)` expanded
    from the variables before it, a `valueFrom` as `value_from` reads the entry, neither ""."""
    env: dict[str, str] = {}
    for source in container.get("envFrom", []):
        prefix = source.get("prefix", "")
        env.update({prefix + k: v for k, v in env_from(source).items()})
    for entry in container.get("env", []):
        name = entry["name"]
        if "value" in entry:
            env[name] = expand(entry["value"], env)
        elif "valueFrom" in entry:
            env[name] = value_from(entry)
        else:
            env[name] = ""
    return env


def container_env(
    container: Mapping[str, Any],
    value_from: Mapping[str, str],
    configmaps: Mapping[str, Mapping[str, Any]] = NONE,
) -> dict[str, str]:
    """The container's environment as the kubelet builds it (`kubelet_env`). `value_from`: the
    value of each `valueFrom` variable (the pod's fields and resources, as the caller says they
    are); `configmaps`: ConfigMaps by name for `envFrom`. A missing one that is not `optional`
    is an error, as it keeps the container from starting."""

    def env_from(source: Mapping[str, Any]) -> Mapping[str, str]:
        ref = source["configMapRef"]
        if ref["name"] in configmaps:
            return configmaps[ref["name"]].get("data", {})
        if not ref.get("optional"):
            raise KeyError(f"envFrom: ConfigMap {ref['name']} not given")
        return {}

    return kubelet_env(container, env_from, lambda entry: value_from[entry["name"]])


def write_volume_files(folder: Path, files: Mapping[str, tuple[str, int]]) -> None:
    """A ConfigMap's or Secret's files (path in the volume -> text, mode) in `folder` as the
    kubelet writes them (pkg/volume/util/atomic_writer.go): in a timestamped folder, `..data` a
    link to it, each top-level name a link into `..data`. A process that resolves links
    (Python's sys.path[0] for a script does) sees the timestamped folder, not the mountPath."""
    payload = folder / ATOMIC_PAYLOAD
    payload.mkdir(parents=True)
    for path, (text, mode) in files.items():
        target = payload / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        target.chmod(mode)
    (folder / "..data").symlink_to(ATOMIC_PAYLOAD)
    for name in sorted({PurePosixPath(path).parts[0] for path in files}):
        (folder / name).symlink_to(f"..data/{name}")


class ContainerRoot:
    """A folder standing for a container's `/`."""

    def __init__(self, folder: Path, claims: dict[str, Path] | None = None):
        self.root = folder
        self.root.mkdir(parents=True, exist_ok=True)
        # Claim name -> its folder, shared by every ContainerRoot given the same dict.
        self.claims = {} if claims is None else claims
        self.mounts: dict[str, Path] = {}

    def path(self, container_path: str) -> Path:
        """Where a container path lies on this machine: under its mount, else under the root."""
        pure = PurePosixPath(container_path)
        if not pure.is_absolute():
            raise ValueError(f"{container_path!r}: not an absolute container path")
        for mount in sorted(self.mounts, key=len, reverse=True):
            if pure == PurePosixPath(mount) or PurePosixPath(mount) in pure.parents:
                return self.mounts[mount] / pure.relative_to(mount)
        return self.root / pure.relative_to("/")

    def install(self, layout: ImageLayout) -> None:
        """The image's COPY destinations (a folder's contents into its destination, as COPY
        does), and its working directory."""
        for copy in layout.copies:
            source = copy.context / copy.source
            target = self.path(copy.destination)
            if source.is_dir():
                shutil.copytree(
                    source, target, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
                )  # fmt: skip
            else:
                if copy.destination.endswith("/"):
                    target = target / source.name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(source, target)
        self.path(layout.workdir).mkdir(parents=True, exist_ok=True)

    def mount(
        self,
        volume: Mapping[str, Any],
        mount_path: str,
        configmaps: Mapping[str, Mapping[str, Any]] = NONE,
    ) -> Path:
        """A pod volume at `mount_path`: a ConfigMap's items (or every key) with their modes, an
        emptyDir as an empty folder, a claim as its shared folder. Returns the folder."""
        folder = self.root.parent / f"{self.root.name}.mounts" / mount_path.strip("/")
        if "persistentVolumeClaim" in volume:
            claim = volume["persistentVolumeClaim"]["claimName"]
            folder = self.claims.setdefault(claim, self.root.parent / "claims" / claim)
            folder.mkdir(parents=True, exist_ok=True)
        elif "configMap" in volume:
            source = volume["configMap"]
            data = configmaps[source["name"]].get("data", {})
            default = source.get("defaultMode", CONFIGMAP_DEFAULT_MODE)
            items = source.get("items") or [{"key": k, "path": k} for k in data]
            folder.mkdir(parents=True)
            write_volume_files(
                folder,
                {i["path"]: (data[i["key"]], i.get("mode", default)) for i in items},
            )
        elif "emptyDir" in volume:
            folder.mkdir(parents=True)
        else:
            raise ValueError(f"volume {volume['name']}: a kind this helper does not lay out")
        self.mounts[mount_path] = folder
        return folder

    def mount_all(
        self,
        pod_spec: Mapping[str, Any],
        container: Mapping[str, Any],
        configmaps: Mapping[str, Mapping[str, Any]] = NONE,
    ) -> None:
        """Every volumeMount of the container, from the pod's volumes."""
        volumes = {v["name"]: v for v in pod_spec.get("volumes", [])}
        for mount in container.get("volumeMounts", []):
            self.mount(volumes[mount["name"]], mount["mountPath"], configmaps)

    def value(self, text: str) -> str:
        """A path, a `--flag=path` or a `:`-separated list of paths mapped; anything else (a
        URL, a name, a number) as it is."""
        if text.startswith("-") and "=" in text:
            flag, _, rest = text.partition("=")
            return f"{flag}={self.value(rest)}"
        parts = text.split(":")
        if not any(map(_is_path, parts)):
            return text
        return ":".join(str(self.path(p)) if _is_path(p) else p for p in parts)

    def env(self, env: Mapping[str, str]) -> dict[str, str]:
        return {name: self.value(value) for name, value in env.items()}

    def command(
        self, container: Mapping[str, Any], env: Mapping[str, str], python: str = sys.executable
    ) -> list[str]:
        """The container's command and args as rendered, `$(VAR)` expanded against its
        environment (unmapped), paths mapped, `python` this interpreter."""
        words = [expand(w, env) for w in [*container["command"], *container.get("args", [])]]
        head = python if words[0] in ("python", "python3") else words[0]
        return [head, *(self.value(w) for w in words[1:])]


def _is_path(text: str) -> bool:
    """An absolute path, not the `//host` of a URL split at its `:`."""
    return text.startswith("/") and not text.startswith("//")


def rewrite(words: Sequence[str], replacements: Mapping[str, str]) -> list[str]:
    """Arguments with each substring replaced (a pod's DNS name by 127.0.0.1, its port by a free
    one): the network a test stands in for."""
    out = []
    for word in words:
        for old, new in replacements.items():
            word = word.replace(old, new)
        out.append(word)
    return out
