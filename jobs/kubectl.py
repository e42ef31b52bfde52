"""kubectl, as `python -m jobs` runs it against a stack's cluster: look a job up, delete it,
apply it, make it the owner of what it needs, and read a Service through the API server's
proxy. Every call names the kubeconfig (and the stack's context, an existing cluster's
`existing.context`) first, so none can reach whatever cluster the shell happens to point at."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from model.config import PlatformConfig


class KubectlError(Exception):
    """kubectl exited non-zero; the message is its first line on stderr."""


def resource_type(api_version: str, kind: str) -> str:
    """`<kind>.<version>.<group>` (`jobset.v1alpha2.jobset.x-k8s.io`, `job.v1.batch`): kubectl's
    fully-qualified resource form (kubectl get --help: "TYPE[.VERSION][.GROUP]"), which cannot
    resolve to another group's kind of the same name."""
    group, _, version = api_version.rpartition("/")
    return ".".join(part for part in (kind.lower(), version, group) if part)


def _found(text: str) -> list[dict[str, Any]]:
    """`kubectl get NAME... -o json --ignore-not-found`'s objects: none when it printed nothing
    (`--ignore-not-found`: "the command will return exit code 0" and print nothing)."""
    if not text.strip():
        return []
    found = json.loads(text)
    # Several types or names answer as a List of what exists; one type and name, as the
    # object itself (kubectl pkg/cmd/get/get.go printGeneric: "coerce all items into a list"
    # unless a single item is implied).
    return list(found["items"]) if found.get("kind") == "List" else [found]


@dataclass(frozen=True)
class Kubectl:
    binary: str
    config: Path
    context: str | None = None

    @classmethod
    def of_stack(cls, binary: str, config: Path, cfg: PlatformConfig) -> Kubectl:
        return cls(binary, config, cfg.existing.context if cfg.existing else None)

    def argv(self, *args: str) -> list[str]:
        flags = ["--kubeconfig", str(self.config)]
        if self.context:
            flags += ["--context", self.context]
        return [self.binary, *flags, *args]

    def output(self, *args: str) -> str:
        run = subprocess.run(self.argv(*args), capture_output=True, text=True, check=False)
        if run.returncode != 0:
            first = (run.stderr.strip().splitlines() or [f"exit {run.returncode}"])[0]
            raise KubectlError(first)
        return run.stdout

    def streamed(self, *args: str) -> int:
        """kubectl's own messages go to the terminal (what it applied, deleted)."""
        return subprocess.run(self.argv(*args), check=False).returncode

    def get(self, types: str, name: str, namespace: str) -> list[dict[str, Any]]:
        """The objects of `types` (comma-separated) named `name`; none when there are none."""
        text = self.output("get", types, name, "-n", namespace, "-o", "json", "--ignore-not-found")
        return _found(text)

    def read(self, types: str, name: str, namespace: str) -> dict[str, Any]:
        """The one object of `types` named `name`, which must exist (kubectl exits 1 if not)."""
        return json.loads(self.output("get", types, name, "-n", namespace, "-o", "json"))

    def nodes(self, names: list[str]) -> list[dict[str, Any]]:
        """The Nodes named (cluster-scoped: no namespace) that exist."""
        return _found(self.output("get", "nodes", *names, "-o", "json", "--ignore-not-found"))

    def select(self, types: str, selector: str, namespace: str) -> list[dict[str, Any]]:
        """The objects of `types` whose labels match `selector` (a List, possibly empty)."""
        text = self.output("get", types, "-l", selector, "-n", namespace, "-o", "json")
        return list(json.loads(text).get("items") or [])

    def delete(self, types: str, name: str, namespace: str) -> int:
        """Delete and wait until it and its blocking dependents are gone (`--cascade=foreground`:
        the garbage collector removes the owner last, Kubernetes docs "Garbage Collection",
        "Foreground cascading deletion"), so the job applied again does not meet its
        predecessor's Jobs or pods, which carry the same names and whose owner references
        JobSet's controller writes with `blockOwnerDeletion`."""
        return self.streamed(
            "delete", types, name, "-n", namespace, "--cascade=foreground", "--wait=true"
        )

    def delete_dependent(self, types: str, name: str, namespace: str) -> int:
        """Delete one of a job's dependents and wait until it is gone, finalizers and all; gone
        already (the garbage collector was first) is fine. A foreground delete of the owner
        waits only for dependents whose reference sets `blockOwnerDeletion` (Kubernetes docs,
        "Garbage Collection": "the only dependents that block owner deletion"), which `jobs
        submit` does not set (jobs/submission.owner_reference), so it does not wait for these."""
        return self.streamed(
            "delete", types, name, "-n", namespace, "--wait=true", "--ignore-not-found"
        )

    def patch(self, types: str, name: str, namespace: str, merge: dict[str, Any]) -> int:
        """A JSON merge patch (`--type merge`, RFC 7386: lists are replaced whole)."""
        return self.streamed(
            "patch", types, name, "-n", namespace, "--type", "merge", "-p", json.dumps(merge)
        )

    def apply(self, path: Path) -> int:
        return self.streamed("apply", "-f", str(path))

    def raw(self, path: str) -> str:
        return self.output("get", "--raw", path)
