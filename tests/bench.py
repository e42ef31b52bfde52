"""Plan benchmark: `make bench`.

For each stack: the cold wall time of `python -m plan <stack>` (a new process, imports
included), the warm in-process plan time, and the engine floor: the same resources (types,
names, inputs, parents, dependencies) replayed with no logic of ours under the same mock engine
in the same process. The mock engine's own scheduling is bimodal run to run (how Output
completions from its worker thread bunch up decides how often it rescans every pending output),
so each figure is the best of REPEATS interleaved runs, with the median beside it.
ratio = best warm plan / best floor.
"""

from __future__ import annotations

import gc
import inspect
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pulumi

from model.stacks import ROOT
from plan.cli import plan_stack, stack_references
from plan.engine import run_program
from plan.model import Plan, build_plan
from plan.outputs import sdk_class
from plan.render import clear_caches, render_plan
from tests.conftest import make_project

STACKS = ("dev", "staging", "prod", "onprem")
REPEATS = 15
SYNTHETIC_GROUPS = (1, 8, 64)
SCALING_REPEATS = 3  # a 64-group plan takes seconds


def floor_program(plan: Plan) -> Callable[[], None]:
    """Replay the plan's graph: each resource through its own provider SDK class, with its
    recorded inputs, parent and dependencies, and nothing else. What is left is the engine's
    cost for this graph (the SDK classes included: each declares and tracks its outputs)."""
    by_urn = plan.by_urn
    order: list[str] = []

    def visit(urn: str) -> None:
        resource = by_urn.get(urn)
        if resource is None or urn in order:
            return
        for before in (resource.parent, *resource.dependencies):
            visit(before)
        order.append(urn)

    for urn in sorted(by_urn):
        visit(urn)

    def register() -> None:
        made: dict[str, pulumi.Resource] = {}
        for urn in order:
            r = by_urn[urn]
            if r.type == "pulumi:pulumi:Stack":
                continue
            opts = pulumi.ResourceOptions(
                parent=made.get(r.parent),
                depends_on=[made[d] for d in r.dependencies if d in made],
            )
            cls = sdk_class(r.type)
            if not r.custom:
                made[urn] = pulumi.ComponentResource(r.type, r.name, None, opts)
            elif cls is None:
                made[urn] = pulumi.CustomResource(r.type, r.name, dict(r.inputs), opts)
            else:
                accepted = inspect.signature(cls._internal_init).parameters
                kwargs = {snake(k): v for k, v in r.inputs.items() if snake(k) in accepted}
                made[urn] = cls(r.name, opts=opts, **kwargs)

    return register


def snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def seconds(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


COLD_REPEATS = 3


def cold_seconds(stack: str) -> float:
    """The best of COLD_REPEATS new processes, rendering included."""
    runs = []
    for _ in range(COLD_REPEATS):
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "plan", stack, "--quiet", "--out", f"/tmp/bench-{stack}"],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        runs.append(time.perf_counter() - started)
    return min(runs)


def measure(stack: str, root: Path = ROOT, repeats: int = REPEATS) -> Measurement:
    """The plan of `stack`, its warm times and the floor's. A MultiKueue manager's worker
    stacks are planned once, before timing: both runs read the same stand-in outputs."""
    refs = stack_references(stack, root)
    plan = build_plan(run_program(stack, root, references=refs))
    floor = floor_program(plan)
    warm, base = [], []
    for _ in range(repeats):  # interleaved, so drift hits both alike
        warm.append(seconds(lambda: build_plan(run_program(stack, root, references=refs))))
        base.append(seconds(lambda: run_program(stack, root, program=floor, references=refs)))
    return Measurement(plan, warm, base)


@dataclass
class Measurement:
    plan: Plan
    warm: list[float]
    floor: list[float]

    @property
    def resources(self) -> int:
        return sum(r.custom for r in self.plan.resources)

    @property
    def ratio(self) -> float:
        return min(self.warm) / min(self.floor)

    def row(self, label: str, extra: str = "") -> str:
        return (
            f"{label:<12}{self.resources:>10}{extra}"
            f"{min(self.warm) * 1e3:>9.0f}{statistics.median(self.warm) * 1e3:>9.0f}"
            f"{min(self.floor) * 1e3:>9.0f}{statistics.median(self.floor) * 1e3:>9.0f}"
            f"{self.ratio:>8.2f}"
        )


HEADER = (
    f"{'plan':>9}{'(median)':>9}{'floor':>9}{'(median)':>9}{'ratio':>8}   (ms, best of {REPEATS})"
)


def synthetic_stack(groups: int) -> dict:
    """A stack of `groups` EFA node groups (p5.48xlarge, 32 interfaces each) over two zones."""
    zones = ["us-east-1a", "us-east-1b"]
    return {
        "gpu-platform:aws": {"region": "us-east-1", "zones": zones},
        "gpu-platform:cluster": {
            "admin_principal_arns": ["arn:aws:iam::210987654321:role/platform-admins"]
        },
        "gpu-platform:gpu_node_groups": [
            {
                "name": f"h100-{i:02d}",
                "instance_types": ["p5.48xlarge"],
                "efa": True,
                "zone": zones[i % 2],
                "scaling": {"min_size": 0, "max_size": 1},
            }
            for i in range(groups)
        ],
    }


def scaling(sizes: tuple[int, ...] = SYNTHETIC_GROUPS) -> None:
    print(
        f"\n{'GPU groups':<12}{'resources':>10}"
        + HEADER.replace(str(REPEATS), str(SCALING_REPEATS))
    )
    with tempfile.TemporaryDirectory() as tmp:
        root = make_project(Path(tmp), {f"groups{n}": synthetic_stack(n) for n in sizes})
        results = {}
        for n in sizes:
            results[n] = measure(f"groups{n}", root, SCALING_REPEATS)
            print(results[n].row(str(n)))
    first, *rest = sizes
    for n in rest:
        added = n - first
        per_group = (min(results[n].warm) - min(results[first].warm)) / added
        floor = (min(results[n].floor) - min(results[first].floor)) / added
        resources = (results[n].resources - results[first].resources) / added
        print(
            f"per added group, {first}->{n}: {per_group * 1e3:.1f} ms plan, {floor * 1e3:.1f} ms "
            f"floor, {resources:.0f} resources"
        )


RENDER_REPEATS = 5


def rendering() -> None:
    """The Helm releases rendered offline (plan/render.py), apart from the engine: the
    plan's cold time includes it, the engine floor never does."""
    print(f"\n{'rendering':<12}{'releases':>10}{'objects':>9}{'best s':>9}{'median s':>10}")
    for stack in STACKS:
        plan = plan_stack(stack)
        runs, result = [], None
        for _ in range(RENDER_REPEATS):
            clear_caches()  # each run renders and parses as a new process does
            started = time.perf_counter()
            result = render_plan(plan)
            runs.append(time.perf_counter() - started)
        objects = len(result.outlines())
        print(
            f"{stack:<12}{len(result.releases):>10}{objects:>9}"
            f"{min(runs):>9.3f}{statistics.median(runs):>10.3f}"
        )


def main() -> None:
    plan_stack("onprem")  # imports and caches warm before anything is timed
    gc.collect()
    gc.freeze()
    print("Plan benchmark; cold = `python -m plan <stack>` in a new process (best of 3)\n")
    print(f"{'stack':<12}{'resources':>10}{'cold s':>9}" + HEADER)
    for stack in STACKS:
        m = measure(stack)
        print(m.row(stack, f"{cold_seconds(stack):>9.2f}"))
    rendering()
    scaling()
    print(
        "\ntargets: ratio <= 1.3 (engine floor; rendering apart); prod cold with rendering"
        " < 3.5 s on 2 cores; time per added group flat"
    )


if __name__ == "__main__":
    main()
