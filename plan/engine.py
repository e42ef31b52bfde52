"""The offline engine behind `python -m plan`: reads a stack's config as the Pulumi CLI
does, runs the program under Pulumi's mock engine as the Python language host would, and records
every registration (parents, dependencies, protection, inputs) and every warning the program
emits. Rendering and the command line live in plan/cli.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import runpy
import sys
import threading
import typing
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from google.protobuf import json_format
from pulumi.runtime import mocks, settings
from pulumi.runtime import resource as sdk_resource
from pulumi.runtime.config import set_all_config
from pulumi.runtime.proto import engine_pb2, source_pb2
from pulumi.runtime.stack import run_in_stack

from model.config import ConfigError
from model.stacks import ROOT, Project, read_project, read_stack_config
from plan.outputs import computed_outputs, known_after_apply, overlay

STACK_TYPE = "pulumi:pulumi:Stack"


class DuplicateResourceError(Exception):
    """The real engine refuses two resources with one URN; the mock engine lets it pass."""


# ---------------------------------------------------------------------- mock engine


STACK_REFERENCE = "pulumi:pulumi:StackReference"


@dataclass(frozen=True)
class StackOutputs:
    """What a referenced stack exports, as its own offline plan rendered it (secrets as
    (secret)), and which of its outputs are secrets."""

    outputs: dict[str, Any]
    secret_names: tuple[str, ...] = ()


class PlanMocks(pulumi.runtime.Mocks):
    """Echo inputs; stand a labelled placeholder in for each string the cloud would compute, so
    the program's own code runs on it and the plan says where each value will come from. A
    StackReference reads the referenced stack's planned outputs from `references`."""

    def __init__(self, references: dict[str, StackOutputs] | None = None):
        self.references = references or {}

    def new_resource(self, args: mocks.MockResourceArgs):
        if args.typ == STACK_REFERENCE:
            return self._stack_reference(args.inputs["name"])
        state = overlay(computed_outputs(args.typ, args.name), args.inputs)
        return known_after_apply(f"{args.name}.id"), state

    def _stack_reference(self, stack: str):
        found = self.references.get(stack)
        if found is None:
            raise ConfigError(
                STACK_REFERENCE,
                [f"no planned outputs stand in for stack {stack!r}; plan it with its referrer"],
            )
        state = {
            "name": stack,
            "outputs": found.outputs,
            "secretOutputNames": list(found.secret_names),
        }
        return stack, state

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
    # Input paths a later `pulumi up` leaves alone (a node group's desired size, owned by the
    # autoscaler): what a plan diff must not report as drift.
    ignore_changes: list[str] = field(default_factory=list)
    # How long `pulumi up` waits for it, per operation, where the program says (`30m`).
    custom_timeouts: dict[str, str] = field(default_factory=dict)
    # Input paths whose change makes `pulumi up` replace it, and whether the old one goes first.
    replace_on_changes: list[str] = field(default_factory=list)
    delete_before_replace: bool = False
    # What it was known by before (`aliases=`): a rename that keeps its state.
    aliases: list[dict[str, Any]] = field(default_factory=list)
    # Left in place by a delete (`retain_on_delete=`): `pulumi destroy` only forgets it.
    retain_on_delete: bool = False


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
                ignore_changes=list(request.ignoreChanges),
                custom_timeouts=json_format.MessageToDict(request.customTimeouts),
                replace_on_changes=list(request.replaceOnChanges),
                delete_before_replace=bool(request.deleteBeforeReplace),
                aliases=self._aliases(request),
                retain_on_delete=bool(request.retainOnDelete),
            )
        return super().RegisterResource(request)

    @staticmethod
    def _aliases(request) -> list[dict[str, Any]]:
        """What the resource was known by before (`aliases=`): whole URNs, or specs whose
        missing parts are the resource's own (plan/urns.py resolves them as the engine does)."""
        found: list[dict[str, Any]] = [{"urn": urn} for urn in request.aliasURNs]
        for alias in request.aliases:
            if alias.urn:
                found.append({"urn": alias.urn})
            else:
                found.append(json_format.MessageToDict(alias.spec))
        return found

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


@contextlib.contextmanager
def _no_source_positions() -> typing.Iterator[None]:
    """The SDK walks the Python stack on every registration (traceback.extract_stack and a file
    URI per frame) to tell the engine where the program declared each resource; a Registration
    keeps no source position, and the walk took a tenth of a plan's CPU. An empty stack trace is
    what the SDK itself sends when it finds no frame of the program."""
    saved = sdk_resource._get_stack_trace
    sdk_resource._get_stack_trace = source_pb2.StackTrace
    try:
        yield
    finally:
        sdk_resource._get_stack_trace = saved


def run_program(
    stack: str,
    root: Path = ROOT,
    program: typing.Callable[[], Any] | None = None,
    references: dict[str, StackOutputs] | None = None,
) -> Recording:
    """Run the program of `root` for `stack` as the language host would, under the mock engine.

    `program` replaces `main` (the benchmark's engine floor runs through the same harness).
    Raises ConfigError for bad stack config and DuplicateResourceError for clashing URNs.
    """
    project = read_project(root)
    recording = Recording(stack=stack, project=project.name)
    record(project, recording, program, references)
    if recording.duplicates:
        clashes = ", ".join(sorted(set(recording.duplicates)))
        raise DuplicateResourceError(
            f"two resources share one URN (the same type and name under the same parent "
            f"types); `pulumi up` would refuse: {clashes}"
        )
    return recording


def _unread_refusal(
    raised: list[BaseException], loop: asyncio.AbstractEventLoop, context: dict[str, Any]
) -> None:
    """The loop's handler of what nothing awaited: the error that stopped the program (a
    refused stack's ConfigError) reaches the caller, while the SDK's futures that also hold it
    are dropped unread. Reporting each would format its traceback inside the garbage collector,
    wherever it runs, and CPython 3.11's traceback parses source lines there: a parse nested in
    another thread's or frame's ast.parse upsets the interpreter's one AST depth counter, and
    that parse fails with "SystemError: AST constructor recursion depth mismatch" (cpython
    gh-106905). Anything else is reported as asyncio would."""
    if not any(context.get("exception") is error for error in raised):
        loop.default_exception_handler(context)


def record(
    project: Project,
    recording: Recording,
    program: typing.Callable[[], Any] | None = None,
    references: dict[str, StackOutputs] | None = None,
) -> None:
    """Fill `recording` with what the program registers for `recording.stack`."""
    stack, root = recording.stack, project.root
    config, secret_keys = read_stack_config(project, stack)
    monitor = RecordingMonitor(PlanMocks(references), recording)
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
    raised: list[BaseException] = []
    loop.set_exception_handler(functools.partial(_unread_refusal, raised))
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

        with _no_source_positions():
            loop.run_until_complete(run_in_stack(main))
    except BaseException as error:
        raised.append(error)
        raise
    finally:
        os.chdir(saved_cwd)
        sys.argv = saved_argv
        # The mock monitor runs in executor threads that each make an event loop; ending them
        # here lets those loops close while the interpreter is whole, not noisily at exit.
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()
        asyncio.set_event_loop(None)
