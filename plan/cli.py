"""Offline plan: run the Pulumi program of one stack under Pulumi's mock engine.

    python -m plan <stack> [--out DIR] [--quiet] [--strict] [--against DIR [--changes-only]]
                             [--detail] [--graph]

No Pulumi CLI, no cloud account. It reads the files the CLI reads (Pulumi.yaml and its project
config, then stacks/Pulumi.<stack>.yaml), loads `main: infra` the way the Python language host does
(working directory = project root, `runpy.run_path(main)` inside a stack), and records every
resource the program registers. It prints a plan, writes out/<stack>/resources.json and the
Kubernetes objects the program declares directly (not what Helm releases render) under
out/<stack>/manifests/, and the IAM policy the runner of `pulumi up` needs as
out/<stack>/deploy-policy.json (plan/deploy_policy.py); it prints the critical path of a
first `pulumi up` with its estimate (plan/critical_path.py). Every refusal of the config (a
missing or broken stack file, a bad value) exits 2 with one message naming the file and the key.
Then the policy pack's rules run on every planned resource (plan/policy.py): a mandatory
violation makes the last line FAILED and exits 3; with `--strict`, so does a warning the stack's
`policy.waivers` do not name or an advisory its exemptions do not waive, exit 4 (the gate CI runs).
Every plan shows an exposure summary; `--against`
adds a diff with an earlier plan, `--detail` every input, `--graph` the resource graph
(plan/diff.py, plan/review.py, plan/graph.py); `--quiet` prints the warnings and unwaived
advisories one line each, then the last line.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from components.data.pull_through_cache import COPY_SCRIPT
from components.registry_mirror import image_route, nvidia_copies
from infra.stack_warnings import capacity_block_rolls
from model.config import ConfigError, PlatformConfig, config_from_pulumi, stack_file
from model.stacks import ROOT, read_project, read_stack_config, stack_config
from plan import deploy_policy, diff_report, migration
from plan import diff as plan_diff
from plan import graph as plan_graph
from plan import images as plan_images
from plan import review as plan_review
from plan.cost_text import format_cost
from plan.critical_path import format_critical_path
from plan.engine import DuplicateResourceError, StackOutputs, run_program
from plan.image_paths import format_image_paths
from plan.model import Plan, PlannedResource, build_plan, is_secret, render
from plan.policy import EXIT_STRICT, StrictCheck, check_plan, strict_check
from plan.render import Rendering, format_rendered, render_plan, write_rendered


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
    lines += repair_policies(plan)
    if "cost" in plan.outputs:
        lines += format_cost(plan.outputs["cost"])
    lines += ["", "Outputs:"]
    for key, value in sorted(plan.outputs.items()):
        if key == "cost":  # printed as its own section above
            continue
        shown = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        lines.append(f"  {key}: {shown}")
    return "\n".join(lines)


# nodeRepairConfig thresholds as the plan shows them; unset ones are EKS's defaults.
_REPAIR_THRESHOLDS = (
    ("maxUnhealthyNodeThresholdPercentage", "stop when unhealthy > {}%"),
    ("maxUnhealthyNodeThresholdCount", "stop when unhealthy > {} nodes"),
    ("maxParallelNodesRepairedPercentage", "repair {}% at once"),
    ("maxParallelNodesRepairedCount", "repair {} at once"),
)


def repair_policies(plan: Plan) -> list[str]:
    """Each managed node group's auto repair, read from what the program declared."""
    groups = sorted(plan.of_type("aws:eks/nodeGroup:NodeGroup"), key=lambda r: r.name)
    if not groups:
        return []
    lines = ["", "Node repair (EKS node auto repair per managed node group):"]
    for group in groups:
        config = group.inputs.get("nodeRepairConfig") or {}
        if not config.get("enabled"):
            lines.append(f"  {group.name}: off")
            continue
        limits = [words.format(config[key]) for key, words in _REPAIR_THRESHOLDS if key in config]
        lines.append(f"  {group.name}: on; " + ("; ".join(limits) or "EKS default thresholds"))
        for o in config.get("nodeRepairConfigOverrides", []):
            lines.append(
                f"    {o['nodeMonitoringCondition']}/{o['nodeUnhealthyReason']}: "
                f"{o['repairAction']} after {o['minRepairWaitTimeMins']} min"
            )
        rest = "every other" if config.get("nodeRepairConfigOverrides") else "every"
        lines.append(f"    {rest} condition and reason: EKS's default action and wait")
    return lines


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


def format_warnings(strict: StrictCheck) -> str:
    """The warnings not waived, then the waived ones with their reasons: a waiver is a decision
    a reviewer should keep seeing."""
    lines = ["Warnings:", *(f"  - {w}" for w in strict.warnings)]
    lines += [f"  waived: {w} (reason: {reason})" for w, reason in strict.waived]
    lines += [f"  stale waiver, waives nothing: {line}" for line in strict.stale]
    return "\n".join(lines)


def image_sources(plan: Plan, rendering: Rendering) -> list[str]:
    """images.txt's lines: what the program declares and what its releases render."""
    sources = [("declared", obj) for obj in plan.kubernetes_objects()]
    sources += [(release.release, obj) for release, obj in rendering.outlines()]
    return plan_images.image_lines(sources)


def write_rendering(plan: Plan, rendering: Rendering, out_dir: Path) -> tuple[list[Path], Path]:
    """out/<stack>/rendered/<release>.yaml and out/<stack>/images.txt."""
    written = write_rendered(rendering, out_dir)
    return written, plan_images.write_images(image_sources(plan, rendering), out_dir)


def write_copy_script(
    stack: str, cfg: PlatformConfig, plan: Plan, rendering: Rendering, out_dir: Path
) -> Path | None:
    """out/<stack>/copy-nvidia-images.sh on a stack with a pull-through cache: every NVIDIA
    image images.txt lists, into the stack's ECR repositories."""
    pairs = nvidia_copies([line.split()[0] for line in image_sources(plan, rendering)], cfg)
    if not pairs:
        return None
    path = out_dir / COPY_SCRIPT
    path.write_text(plan_images.copy_script(stack, pairs))
    path.chmod(0o755)
    return path


def plan_stack(stack: str, root: Path = ROOT, _referrers: tuple[str, ...] = ()) -> Plan:
    """Plan `stack`; the worker stacks it references as a MultiKueue manager are planned
    first, from this project's stack files, and their outputs stand in for the references."""
    references = stack_references(stack, root, _referrers)
    return build_plan(run_program(stack, root, references=references))


def stack_references(
    stack: str, root: Path = ROOT, referrers: tuple[str, ...] = ()
) -> dict[str, StackOutputs]:
    """The planned outputs of the worker stacks `stack` refers to, by stack name."""
    project = read_project(root)
    values, _ = read_stack_config(project, stack)
    workers = config_from_pulumi(values, stack_file(stack)).multikueue.workers
    found = {}
    for i, worker in enumerate(workers):
        local = worker.local_stack
        if local == stack or local in referrers:
            raise ConfigError(
                stack_file(stack),
                [f"multikueue.workers[{i}].stack: {worker.stack!r} refers back to {stack}"],
            )
        if not project.stack_file(local).is_file():
            raise ConfigError(
                stack_file(stack),
                [
                    f"multikueue.workers[{i}].stack: {worker.stack!r}: the offline plan stands "
                    f"its outputs in from {project.stack_file(local).relative_to(root)}, "
                    "which does not exist"
                ],
            )
        worker_values, _ = read_stack_config(project, local)
        if not config_from_pulumi(worker_values, stack_file(local)).multikueue.serve_as_worker:
            raise ConfigError(
                stack_file(stack),
                [
                    f"multikueue.workers[{i}].stack: {worker.stack!r}: stack {local} does not "
                    "serve as a MultiKueue worker, so it exports no kubeconfig or queues; set "
                    "multikueue.serve_as_worker: true in "
                    f"{project.stack_file(local).relative_to(root)}"
                ],
            )
        upstream = stack_references(local, root, (*referrers, stack))
        found[worker.stack] = worker_outputs(local, root, upstream)
    return found


# A worker's outputs by everything its run reads: a process that plans many managers (the
# tests: every variant of onprem plans burst again) runs each unchanged worker once.
_WORKER_OUTPUTS: dict[str, StackOutputs] = {}


def worker_outputs(stack: str, root: Path, upstream: dict[str, StackOutputs]) -> StackOutputs:
    """What worker `stack` exports, planned with `upstream` standing in for its own references,
    once per process for the same config, program and references."""
    project = read_project(root)
    values, secret_keys = read_stack_config(project, stack)
    main = root / project.main
    program = (main / "__main__.py" if main.is_dir() else main).read_text()
    key = json.dumps(
        [stack, project.name, values, secret_keys, program, sorted(upstream.items())],
        sort_keys=True,
        default=vars,
    )
    if key not in _WORKER_OUTPUTS:
        recording = run_program(stack, root, references=upstream)
        secrets = tuple(sorted(k for k, v in recording.outputs.items() if is_secret(v)))
        _WORKER_OUTPUTS[key] = StackOutputs(render(recording.outputs), secrets)
    return _WORKER_OUTPUTS[key]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m plan", description=__doc__.split("\n")[0])
    parser.add_argument("stack", help="stack name: stacks/Pulumi.<stack>.yaml")
    parser.add_argument("--out", type=Path, help="output folder (default out/<stack>)")
    parser.add_argument(
        "--quiet",
        action="store_true",
        help="print the warnings and unwaived advisories one line each, and the summary line "
        "(FAILED on a mandatory policy violation)",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help=f"exit {EXIT_STRICT} on any warning not in policy.waivers and any advisory not in "
        "policy.exemptions (the CI gate)",
    )
    parser.add_argument("--against", type=Path, help="an earlier plan folder to diff with")
    parser.add_argument(
        "--changes-only",
        action="store_true",
        help="with --against: print the changes and the last line, not the whole plan",
    )
    parser.add_argument("--detail", action="store_true", help="print every resource's inputs")
    parser.add_argument(
        "--graph", action="store_true", help="write the resource graph (DOT, Mermaid)"
    )
    args = parser.parse_args(argv)
    if args.changes_only and args.against is None:
        parser.error("--changes-only needs --against: an earlier plan to compare with")
    started = time.perf_counter()
    try:
        plan = plan_stack(args.stack, ROOT)
        cfg = stack_config(args.stack, ROOT)
        # Before anything is written: a chart override no cache holds is refused like a bad
        # value (plan/render.py).
        rendering = render_plan(plan)
    except ConfigError as error:
        print(error, file=sys.stderr)
        return 2
    except DuplicateResourceError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    out_dir = args.out or ROOT / "out" / args.stack
    # The earlier plan a change is reviewed against, else this stack's last one here.
    note = compare_with_previous(plan, (args.against or out_dir) / "resources.json")
    try:  # Read before writing: the earlier plan may be the one this run replaces.
        previous = plan_diff.read_previous(args.against) if args.against else None
    except (OSError, ValueError, KeyError) as error:
        print(
            f"error: --against {args.against}: not a plan's resources.json ({error})",
            file=sys.stderr,
        )
        return 2
    if previous is not None:
        # A pool's GPU allocation moves in steps, never in place: refused before anything is
        # written (plan/migration.py).
        refused = migration.refusals(cfg, stack_file(args.stack), previous)
        if refused:
            print(f"error: {args.stack} cannot be planned against {args.against}:", file=sys.stderr)
            print("\n".join(f"  {line}" for line in refused), file=sys.stderr)
            return 2
    written = write_outputs(plan, out_dir)
    try:
        policy = deploy_policy.write_policy(plan, out_dir)
    except deploy_policy.DeployPolicyError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    plan.warnings.extend(rendering.warnings)
    rendered, images = write_rendering(plan, rendering, out_dir)
    copies = write_copy_script(args.stack, cfg, plan, rendering, out_dir)
    graphs = plan_graph.write_graphs(plan, out_dir) if args.graph else []
    elapsed = time.perf_counter() - started
    policies = check_plan(plan, ROOT, rendering)
    strict = strict_check(plan.warnings, cfg.policy.waivers, policies)
    if previous is not None and not args.quiet:  # first: what this change does
        changes = diff_report.changes_block(plan, previous, str(args.against), rendering)
        print(changes + ("" if args.changes_only else "\n"))
    if not (args.quiet or args.changes_only):
        print(format_plan(plan))
        print("\n".join(format_rendered(rendering)))
        if args.detail:
            print("\n" + plan_review.format_detail(plan))
        print(
            f"\nWrote {out_dir / 'resources.json'}, {len(written)} manifests, "
            f"{len(rendered)} rendered releases and {images}."
        )
        if copies is not None:
            print(f"Wrote {copies}: run it before NVIDIA's images are pulled from ECR.")
        if graphs:
            print("Wrote " + ", ".join(str(g) for g in graphs))
        if note:
            print(note)
        print("\n" + deploy_policy.format_policy(plan, policy))
        print("\n" + format_critical_path(plan))
        route = image_route(cfg)
        print("\n" + format_image_paths(plan, rendering, route))
        print("\n" + plan_review.format_exposure(plan))
        if plan.warnings or strict.stale:
            print(format_warnings(strict))
        print(policies.report)
    elif args.quiet and strict.lines():
        print("\n".join(strict.lines()))
    count = sum(r.custom for r in plan.resources)
    summary = policies.summary(args.stack, count, elapsed)
    if args.strict and not policies.status:
        strict_line = strict.summary(args.stack, count, elapsed)
        summary = strict_line if strict.status else f"{summary}; {strict_line}"
    print(summary)
    return policies.status or (strict.status if args.strict else 0)


if __name__ == "__main__":
    sys.exit(main())
