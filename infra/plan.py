"""Offline plan: run the Pulumi program of one stack under Pulumi's mock engine.

    python -m infra.plan <stack> [--out DIR] [--quiet]

No Pulumi CLI, no cloud account. It reads the files the CLI reads (Pulumi.yaml and its project
config, then stacks/Pulumi.<stack>.yaml), loads `main: infra` the way the Python language host
does (working directory = project root, `runpy.run_path(main)` inside a stack), and records
every resource the program registers. It prints a plan, writes out/<stack>/resources.json and
the Kubernetes objects the program declares directly (not what Helm releases render) under
out/<stack>/manifests/. Every refusal of the config (a missing or broken stack file, a bad value)
exits 2 with one message naming the file and the key.
"""

from __future__ import annotations

import argparse
import asyncio
import collections.abc
import functools
import importlib
import json
import logging
import os
import runpy
import sys
import threading
import time
import types
import typing
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import yaml
from google.protobuf import json_format
from pulumi import _types
from pulumi.runtime import mocks, rpc, settings
from pulumi.runtime.config import set_all_config
from pulumi.runtime.proto import engine_pb2
from pulumi.runtime.stack import run_in_stack

from infra.config import ConfigError
from infra.config.loading import read_stack_file, read_yaml
from infra.plan_warnings import capacity_block_rolls

ROOT = Path(__file__).resolve().parent.parent
STACK_TYPE = "pulumi:pulumi:Stack"
SECRET = "(secret)"
_SECRET_SIG = rpc._special_secret_sig
_SIG_KEY = rpc._special_sig_key
_RESOURCE_SIG = rpc._special_resource_sig
# The keys of a project-level config entry that declares a key rather than setting it.
_DECLARATION_KEYS = {"type", "description", "default", "value", "secret", "items"}


class DuplicateResourceError(Exception):
    """The real engine refuses two resources with one URN; the mock engine lets it pass."""


# ------------------------------------------------------------------------- stack files


@dataclass(frozen=True)
class Project:
    root: Path
    name: str
    main: str
    stack_config_dir: str
    config: dict[str, Any]

    def stack_file(self, stack: str) -> Path:
        return self.root / self.stack_config_dir / f"Pulumi.{stack}.yaml"


def read_project(root: Path) -> Project:
    doc = read_yaml(root / "Pulumi.yaml", "Pulumi.yaml")
    if not isinstance(doc, dict) or "name" not in doc:
        raise ConfigError("Pulumi.yaml", ["not a Pulumi project file: it needs a name: key"])
    return Project(
        root,
        doc["name"],
        doc.get("main", "."),
        doc.get("stackConfigDir", "."),
        doc.get("config") or {},
    )


def _encode(value: Any) -> tuple[str, bool]:
    """A config value as the CLI hands it to the program (a string, objects as JSON), and
    whether it holds a secret. Encrypted values cannot be read offline: they show as (secret)."""
    found = False

    def strip(v: Any) -> Any:
        nonlocal found
        if isinstance(v, dict) and set(v) == {"secure"}:
            found = True
            return SECRET
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items()}
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v

    value = strip(value)
    return (value if isinstance(value, str) else json.dumps(value)), found


def read_stack_config(project: Project, stack: str) -> tuple[dict[str, str], list[str]]:
    """Project config (values and declared defaults), overlaid by the stack file."""
    merged: dict[str, Any] = {}
    for key, entry in project.config.items():
        full = key if ":" in key else f"{project.name}:{key}"
        if isinstance(entry, dict) and entry and set(entry) <= _DECLARATION_KEYS:
            if "value" in entry or "default" in entry:
                merged[full] = entry.get("value", entry.get("default"))
        else:
            merged[full] = entry
    stack_path = project.stack_file(stack)
    source = str(stack_path.relative_to(project.root))
    if not stack_path.is_file():
        pattern = project.stack_file("*")
        found = sorted(p.name.split(".")[1] for p in pattern.parent.glob(pattern.name))
        raise ConfigError(
            source,
            [
                f"no such stack file; the stacks that exist: {', '.join(found) or 'none'} "
                f"(start one with `pulumi stack init {stack}`, or create {source})"
            ],
        )
    merged.update(read_stack_file(stack_path, source, project.name))
    config, secrets = {}, []
    for key, value in merged.items():
        config[key], secret = _encode(value)
        if secret:
            secrets.append(key)
    return config, sorted(secrets)


# ---------------------------------------------------------------------- mock engine


def known_after_apply(source: str | None = None) -> str:
    return f"(known after apply: {source})" if source else "(known after apply)"


def _getters(cls: type) -> dict[str, Any]:
    """Wire name -> resolved return type of each `@pulumi.getter` property of an SDK class."""
    found = {}
    for attr in vars(cls).values():
        getter = getattr(attr, "fget", None)
        if getter is None or not hasattr(getter, "_pulumi_name"):
            continue
        hints = typing.get_type_hints(getter, globalns=vars(sys.modules[getter.__module__]))
        found[getter._pulumi_name] = hints.get("return")
    return found


def _placeholder(annotation: Any, path: str, depth: int = 0) -> Any:
    """A value of the declared output type whose strings are labelled placeholders; None where
    no honest placeholder exists (numbers, booleans, maps), which leaves the value unknown."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is str:
        return known_after_apply(path)
    if depth > 4:
        return None
    if origin is pulumi.Output or origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        return _placeholder(inner[0], path, depth) if len(inner) == 1 else None
    if origin in (list, collections.abc.Sequence):
        item = _placeholder(args[0], f"{path}[0]", depth + 1)
        return None if item is None else [item]
    if isinstance(annotation, type) and _types.is_output_type(annotation):
        fields = {
            name: _placeholder(hint, f"{path}.{name}", depth + 1)
            for name, hint in _getters(annotation).items()
        }
        return {k: v for k, v in fields.items() if v is not None} or None
    return None


@functools.cache
def sdk_class(token: str) -> type | None:
    """The provider SDK class of a resource type token, if any: `aws:ec2/vpc:Vpc` lives in
    pulumi_aws.ec2, `kubernetes:storage.k8s.io/v1:StorageClass` in pulumi_kubernetes.storage.v1.
    Custom resources of operators (`kubernetes:ceph.rook.io/v1:CephCluster`) have none."""
    try:
        package, module, cls_name = token.split(":")
        group, _, version = module.partition("/")
        path = group.split(".")[0] + (f".{version}" if package == "kubernetes" else "")
        return getattr(importlib.import_module(f"pulumi_{package}.{path}"), cls_name)
    except (ValueError, ImportError, AttributeError):
        return None


@functools.cache
def computed_outputs(token: str, name: str) -> dict[str, Any]:
    """Placeholders for the outputs a provider resource type declares (read from its SDK class),
    each naming the resource and attribute it will come from."""
    cls = sdk_class(token)
    if cls is None:
        return {}
    placeholders = {
        output: _placeholder(hint, f"{name}.{output}") for output, hint in _getters(cls).items()
    }
    return {k: v for k, v in placeholders.items() if v is not None}


def _overlay(computed: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Any]:
    """Inputs win; an input object keeps the placeholders of computed fields it does not set
    (EKS's `vpcConfig.clusterSecurityGroupId` beside the subnets we pass)."""
    merged = dict(computed)
    for key, value in inputs.items():
        below = computed.get(key)
        both_dicts = isinstance(value, dict) and isinstance(below, dict)
        merged[key] = _overlay(below, value) if both_dicts else value
    return merged


class PlanMocks(pulumi.runtime.Mocks):
    """Echo inputs; stand a labelled placeholder in for each string the cloud would compute, so
    the program's own code runs on it and the plan says where each value will come from."""

    def new_resource(self, args: mocks.MockResourceArgs):
        state = _overlay(computed_outputs(args.typ, args.name), args.inputs)
        return known_after_apply(f"{args.name}.id"), state

    def call(self, args: mocks.MockCallArgs):
        # Policies name the deploying account; offline there is none, so say where it comes from.
        if args.token == "aws:index/getCallerIdentity:getCallerIdentity":
            return {
                field: f"(from the deploying credentials: {field})"
                for field in ("accountId", "arn", "userId", "id")
            }
        return {}


@dataclass
class Registration:
    urn: str
    type: str
    name: str
    parent: str
    custom: bool
    protect: bool
    dependencies: list[str]
    property_dependencies: dict[str, list[str]]
    raw_inputs: dict[str, Any]


@dataclass
class Recording:
    stack: str
    project: str
    resources: dict[str, Registration] = field(default_factory=dict)
    outputs: dict[str, Any] = field(default_factory=dict)
    duplicates: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


class RecordingEngine(mocks.MockEngine):
    """The SDK's mock engine, which only logs messages; this one also keeps the program's
    warnings (`pulumi.warn`), which `pulumi up` would show."""

    def __init__(self, recording: Recording):
        super().__init__(logging.getLogger("pulumi-plan"))
        self.recording = recording

    def Log(self, request):
        if request.severity == engine_pb2.WARNING:
            # Printed once, in the plan's Warnings section, rather than also on stderr.
            self.recording.warnings.append(request.message)
            return None
        return super().Log(request)


class RecordingMonitor(mocks.MockMonitor):
    """The SDK's mock monitor, also keeping each registration as the engine would see it."""

    def __init__(self, plan_mocks: PlanMocks, recording: Recording):
        super().__init__(plan_mocks)
        self.recording = recording
        self._lock = threading.Lock()

    def RegisterResource(self, request):
        urn = self.make_urn(request.parent, request.type, request.name)
        with self._lock:
            if urn in self.recording.resources:
                self.recording.duplicates.append(urn)
            self.recording.resources[urn] = Registration(
                urn=urn,
                type=request.type,
                name=request.name,
                parent=request.parent,
                custom=request.custom,
                protect=bool(request.protect),
                dependencies=sorted(set(request.dependencies)),
                property_dependencies={
                    k: sorted(v.urns) for k, v in request.propertyDependencies.items()
                },
                raw_inputs=json_format.MessageToDict(request.object),
            )
        return super().RegisterResource(request)

    def RegisterResourceOutputs(self, request):
        if request.urn.split("::")[2] == STACK_TYPE:
            self.recording.outputs = json_format.MessageToDict(request.outputs)
        return super().RegisterResourceOutputs(request)


async def _settle() -> None:
    """Wait for every pending Output in waves. The SDK's own wait that follows rescans all
    pending Outputs each time one completes, quadratic in the platform's size; after this it
    finds them done. Errors stay in their tasks for the SDK to raise as it always does."""
    while True:
        with settings.SETTINGS.lock:
            pending = [task for task in settings.SETTINGS.outputs if not task.done()]
        if not pending:
            return
        await asyncio.wait(pending)


def run_program(
    stack: str, root: Path = ROOT, program: typing.Callable[[], Any] | None = None
) -> Recording:
    """Run the program of `root` for `stack` as the language host would, under the mock engine.

    `program` replaces `main` (the benchmark's engine floor runs through the same harness).
    Raises ConfigError for bad stack config and DuplicateResourceError for clashing URNs.
    """
    project = read_project(root)
    recording = Recording(stack=stack, project=project.name)
    record(project, recording, program)
    if recording.duplicates:
        clashes = ", ".join(sorted(set(recording.duplicates)))
        raise DuplicateResourceError(
            f"two resources share one URN (the same type and name under the same parent "
            f"types); `pulumi up` would refuse: {clashes}"
        )
    return recording


def record(
    project: Project, recording: Recording, program: typing.Callable[[], Any] | None = None
) -> None:
    """Fill `recording` with what the program registers for `recording.stack`."""
    stack, root = recording.stack, project.root
    config, secret_keys = read_stack_config(project, stack)
    monitor = RecordingMonitor(PlanMocks(), recording)
    settings.ROOT.set(None)
    settings.configure(
        mocks.MockSettings(
            monitor=monitor,
            monitor_features=set(monitor.GetDeploymentInfo(None).supportedFeatures),
            engine=RecordingEngine(recording),
            project=project.name,
            stack=stack,
            dry_run=True,
            organization="organization",
            root_directory=str(root),
            callbacks=None,
            outputs=set(),
            lock=threading.Lock(),
        )
    )
    set_all_config(config, secret_keys)

    loop = asyncio.new_event_loop()
    # The SDK sends each registration through the loop's executor; the mock monitor answers
    # at once, so one worker saves the GIL hand-offs of a pool without queueing anything.
    loop.set_default_executor(ThreadPoolExecutor(max_workers=1))
    asyncio.set_event_loop(loop)
    saved_cwd, saved_argv = os.getcwd(), sys.argv
    os.chdir(root)
    sys.argv = [project.main]
    try:
        # Absolute, so import caches keyed by a relative path cannot serve another project.
        main_path = str(root / project.main)
        declare = program or (lambda: runpy.run_path(main_path, run_name="__main__"))

        async def main() -> None:
            declare()
            await _settle()

        loop.run_until_complete(run_in_stack(main))
    finally:
        os.chdir(saved_cwd)
        sys.argv = saved_argv
        # The mock monitor runs in executor threads that each make an event loop; ending them
        # here lets those loops close while the interpreter is whole, not noisily at exit.
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()
        asyncio.set_event_loop(None)


# ------------------------------------------------------------------------- rendering


def _name_of(urn: str) -> str:
    return urn.rsplit("::", 1)[-1]


def render(value: Any, sources: list[str] = ()) -> Any:
    """Plain, deterministic JSON: integral floats back to ints (the wire has only doubles),
    secrets and unknowns as readable markers naming where an unknown comes from."""
    if isinstance(value, dict):
        sig = value.get(_SIG_KEY)
        if sig == _SECRET_SIG:
            return SECRET
        if sig == _RESOURCE_SIG:
            return _name_of(value.get("urn", ""))
        return {k: render(v, sources) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [render(v, sources) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if value == rpc.UNKNOWN:
        return known_after_apply(", ".join(sorted({_name_of(s) for s in sources})))
    return value


@dataclass(frozen=True)
class PlannedResource:
    urn: str
    type: str
    name: str
    parent: str
    inputs: dict[str, Any]
    dependencies: list[str]
    protect: bool
    custom: bool

    def as_json(self) -> dict[str, Any]:
        return {
            "urn": self.urn,
            "type": self.type,
            "name": self.name,
            "parent": self.parent,
            "inputs": self.inputs,
            "dependencies": self.dependencies,
            "protect": self.protect,
        }


@dataclass
class Plan:
    stack: str
    project: str
    resources: list[PlannedResource]
    outputs: dict[str, Any]
    warnings: list[str] = field(default_factory=list)

    @functools.cached_property
    def by_urn(self) -> dict[str, PlannedResource]:
        return {r.urn: r for r in self.resources}

    def of_type(self, token: str) -> list[PlannedResource]:
        return [r for r in self.resources if r.type == token]

    def plane_of(self, resource: PlannedResource) -> str:
        """The plane named by the nearest enclosing `gpu-platform:<plane>:*` component."""
        index, node = self.by_urn, resource
        while node is not None:
            if node.type.startswith("gpu-platform:") and node is not resource:
                return node.type.split(":")[1]
            node = index.get(node.parent)
        return "platform"

    def kubernetes_objects(self) -> list[dict[str, Any]]:
        return [
            r.inputs
            for r in self.resources
            if r.type.startswith("kubernetes:") and "apiVersion" in r.inputs
        ]

    def to_json(self) -> str:
        doc = {
            "stack": self.stack,
            "resources": [r.as_json() for r in self.resources],
            "outputs": self.outputs,
        }
        return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def build_plan(recording: Recording) -> Plan:
    resources = []
    for reg in sorted(recording.resources.values(), key=lambda r: r.urn):
        inputs = {
            key: render(value, reg.property_dependencies.get(key, []))
            for key, value in reg.raw_inputs.items()
        }
        resources.append(
            PlannedResource(
                urn=reg.urn,
                type=reg.type,
                name=reg.name,
                parent=reg.parent,
                inputs=dict(sorted(inputs.items())),
                dependencies=reg.dependencies,
                protect=reg.protect,
                custom=reg.custom,
            )
        )
    return Plan(
        recording.stack,
        recording.project,
        resources,
        render(recording.outputs),
        list(recording.warnings),
    )


def manifest_filename(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata", {})
    scope = meta.get("namespace", "cluster")
    return f"{obj['kind'].lower()}-{scope}-{meta.get('name', 'unnamed')}.yaml"


def write_outputs(plan: Plan, out_dir: Path) -> list[Path]:
    """resources.json and one YAML file per Kubernetes object; stale files are removed."""
    manifests = out_dir / "manifests"
    manifests.mkdir(parents=True, exist_ok=True)
    for stale in manifests.glob("*.yaml"):
        stale.unlink()
    (out_dir / "resources.json").write_text(plan.to_json())
    written = []
    for obj in plan.kubernetes_objects():
        path = manifests / manifest_filename(obj)
        path.write_text(yaml.safe_dump(obj, sort_keys=True))
        written.append(path)
    return written


def format_plan(plan: Plan) -> str:
    children: dict[str, list[PlannedResource]] = {}
    for r in plan.resources:
        children.setdefault(r.parent, []).append(r)
    lines = [
        f"Plan for stack {plan.stack} (project {plan.project}), offline: Pulumi mock engine",
        "",
    ]

    def walk(parent: str, depth: int) -> None:
        for r in sorted(children.get(parent, []), key=lambda r: (r.custom, r.type, r.name)):
            lock = "  [protected]" if r.protect else ""
            lines.append(f"{'  ' * depth}+ {r.type} {r.name}{lock}")
            walk(r.urn, depth + 1)

    walk("", 1)
    custom = [r for r in plan.resources if r.custom]
    lines += ["", f"Plan: {len(custom)} to create ({len(plan.resources) - len(custom)} components)"]
    planes = Counter(plan.plane_of(r) for r in custom)
    lines.append("  by plane: " + ", ".join(f"{p} {n}" for p, n in sorted(planes.items())))
    lines.append("  by type:")
    for token, n in sorted(Counter(r.type for r in custom).items()):
        lines.append(f"    {n:4d}  {token}")
    lines += ["", "Outputs:"]
    for key, value in sorted(plan.outputs.items()):
        shown = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        lines.append(f"  {key}: {shown}")
    return "\n".join(lines)


def compare_with_previous(plan: Plan, previous_path: Path) -> str | None:
    """Add the warnings only a comparison with the previous plan gives (Capacity Block groups
    that would roll); say so when there is no previous plan to compare with."""
    blocks = [
        r
        for r in plan.of_type("aws:eks/nodeGroup:NodeGroup")
        if r.inputs.get("capacityType") == "CAPACITY_BLOCK"
    ]
    if not blocks:
        return None
    if not previous_path.is_file():
        return f"No previous plan at {previous_path}: Capacity Block rolls not checked."
    previous = json.loads(previous_path.read_text())["resources"]
    current = [r.as_json() for r in plan.resources]
    plan.warnings.extend(capacity_block_rolls(previous, current))
    return None


def format_warnings(warnings: list[str]) -> str:
    return "\n".join(["Warnings:", *(f"  - {w}" for w in warnings)])


def plan_stack(stack: str, root: Path = ROOT) -> Plan:
    return build_plan(run_program(stack, root))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m infra.plan", description=__doc__.split("\n")[0]
    )
    parser.add_argument("stack", help="stack name: stacks/Pulumi.<stack>.yaml")
    parser.add_argument("--out", type=Path, help="output folder (default out/<stack>)")
    parser.add_argument("--quiet", action="store_true", help="print only the summary line")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    try:
        plan = plan_stack(args.stack, ROOT)
    except ConfigError as error:
        print(error, file=sys.stderr)
        return 2
    except DuplicateResourceError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    out_dir = args.out or ROOT / "out" / args.stack
    note = compare_with_previous(plan, out_dir / "resources.json")
    written = write_outputs(plan, out_dir)
    elapsed = time.perf_counter() - started
    if not args.quiet:
        print(format_plan(plan))
        print(f"\nWrote {out_dir / 'resources.json'} and {len(written)} manifests.")
        if note:
            print(note)
    if plan.warnings:
        print(format_warnings(plan.warnings))
    count = sum(r.custom for r in plan.resources)
    print(f"Planned {args.stack}: {count} resources in {elapsed:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
