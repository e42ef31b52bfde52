"""The IAM policy the principal that runs `pulumi up` for a stack needs, generated from the plan:
per resource type the stack declares, the calls its create, refresh, update and delete make
(plan/deploy_actions.py), scoped by the stack tag or by name where AWS allows, and linted
against the Service Authorization Reference's action names (plan/iam_actions.json).

Written to out/<stack>/deploy-policy.json, one managed policy document per entry of the list
(IAM's quota: 6,144 characters of a managed policy, whitespace not counted; IAM User Guide,
"IAM and AWS STS quotas", "Managed policy size"), split by statement when one would not do.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from plan.deploy_actions import (
    DEPLOY_ACTIONS,
    NO_AWS_CALLS,
    SERVICE_LINKED_ROLE_CALLS,
    TAG,
    TypeActions,
)
from plan.model import Plan, PlannedResource

STACK_TAG = "gpu-platform:stack"
MANAGED_POLICY_CHARS = 6144  # IAM and AWS STS quotas: managed policy size, no whitespace
CATALOG = Path(__file__).with_name("iam_actions.json")
TABLE = "plan/deploy_actions.py"
_UNKNOWN = "(known after apply"


class DeployPolicyError(Exception):
    """The plan declares what the table cannot grant, or the policy names an unknown action."""


@functools.cache
def catalog() -> dict[str, Any]:
    return json.loads(CATALOG.read_text())["services"]


def aws_types(plan: Plan) -> list[str]:
    """The resource types the runner's AWS principal calls AWS for."""
    return sorted({r.type for r in plan.resources if not r.type.startswith(NO_AWS_CALLS)})


def rows(plan: Plan) -> dict[str, TypeActions]:
    missing = [t for t in aws_types(plan) if t not in DEPLOY_ACTIONS]
    if missing:
        examples = {t: next(r.name for r in plan.of_type(t)) for t in missing}
        raise DeployPolicyError(
            f"stack {plan.stack}: no IAM actions for "
            + ", ".join(f"{t} (resource {examples[t]})" for t in missing)
            + f": add a row to DEPLOY_ACTIONS in {TABLE} with the calls its provider file "
            "(hashicorp/terraform-provider-aws internal/service/<service>/) makes"
        )
    return {t: DEPLOY_ACTIONS[t] for t in aws_types(plan)}


def _known(value: Any) -> bool:
    return isinstance(value, str) and not value.startswith(_UNKNOWN)


def _own_names(resources: Iterable[PlannedResource]) -> list[str]:
    """A resource's own name where the program sets it; else Pulumi's auto-name, `<logical>-*`."""
    names = set()
    for r in resources:
        given = r.inputs.get("name") or r.inputs.get("bucket")
        names.add(given if _known(given) else f"{r.name}-*")
    return sorted(names)


def _placeholders(plan: Plan, token: str) -> dict[str, list[str]]:
    return {
        "name": _own_names(plan.of_type(token)),
        "cluster": sorted(r.inputs["name"] for r in plan.of_type("aws:eks/cluster:Cluster")),
        "nodegroup": sorted(
            r.inputs["nodeGroupName"] for r in plan.of_type("aws:eks/nodeGroup:NodeGroup")
        ),
        "role": _own_names(plan.of_type("aws:iam/role:Role")),
        "bucket": _own_names(plan.of_type("aws:s3/bucket:Bucket")),
    }


def expand(template: str, values: dict[str, list[str]]) -> list[str]:
    """Every ARN a template names for the stack (one per combination of its placeholders)."""
    keys = re.findall(r"\{(\w+)\}", template)
    return [
        template.format(**dict(zip(keys, combo, strict=True)))
        for combo in itertools.product(*(values[k] for k in keys))
    ]


def _supports(action: str, key: str) -> bool:
    service, name = action.split(":", 1)
    if service not in catalog():
        raise DeployPolicyError(
            f"{action}: service {service!r} is not in {CATALOG.name}; add its actions and tag "
            "condition keys from the Service Authorization Reference"
        )
    return name in catalog()[service][key]


@dataclass
class _Statements:
    """Statements keyed by Sid and condition: the rows sharing both merge, their actions and
    resources joined (a name-scoped statement per service, every ARN in it the stack's own)."""

    found: dict[tuple[str, str], tuple[set[str], set[str]]]

    def add(self, sid: str, actions: Iterable[str], resources=("*",), condition=None) -> None:
        actions = set(actions)
        if actions:
            key = (sid, json.dumps(condition, sort_keys=True))
            held = self.found.setdefault(key, (set(), set()))
            held[0].update(actions)
            held[1].update(resources)

    def render(self) -> list[dict[str, Any]]:
        statements, sids = [], Counter(sid for sid, _ in self.found)
        seen: Counter[str] = Counter()
        for (sid, condition), (actions, resources) in sorted(self.found.items()):
            seen[sid] += 1
            statement = {
                "Sid": f"{sid}{seen[sid]}" if sids[sid] > 1 else sid,
                "Effect": "Allow",
                "Action": sorted(actions),
                "Resource": sorted(resources) if len(resources) > 1 else next(iter(resources)),
            }
            if condition != "null":
                statement["Condition"] = json.loads(condition)
            statements.append(statement)
        return statements


def statements(plan: Plan) -> list[dict[str, Any]]:
    env = plan.stack
    found = _Statements({})
    passed: set[str] = set()
    linked: set[str] = set()
    for token, row in rows(plan).items():
        found.add("Refresh", row.read)
        passed.update(row.passes_role_to)
        linked.update(row.service_linked)
        if row.scope == TAG:
            created = [a for a in (*row.create, *row.tag) if _supports(a, "request_tag")]
            found.add(
                "CreateTagged",
                created,
                condition={"StringEquals": {f"aws:RequestTag/{STACK_TAG}": env}},
            )
            changed = [a for a in row.changes() if _supports(a, "resource_tag")]
            found.add(
                "ChangeTagged",
                changed,
                condition={"StringEquals": {f"aws:ResourceTag/{STACK_TAG}": env}},
            )
            # Neither key on the action's row or resource: nothing narrower than `*`.
            found.add("Untaggable", set(row.changes()) - set(created) - set(changed))
        elif row.scope is None:
            found.add("Unscoped", row.changes())
        else:
            values = _placeholders(plan, token)
            arns = sorted({a for t in row.scope for a in expand(t, values)})
            service = row.changes()[0].split(":")[0]
            condition = None
            if row.policy_arn_input:
                arns_in = {r.inputs[row.policy_arn_input] for r in plan.of_type(token)}
                condition = {"ArnEquals": {"iam:PolicyARN": sorted(arns_in)}}
            found.add(f"ByName{service.capitalize()}", row.changes(), arns, condition)
    roles = expand("arn:aws:iam::*:role/{role}", _placeholders(plan, "aws:iam/role:Role"))
    found.add(
        "PassStackRoles",
        ["iam:PassRole"] if passed else [],
        roles,
        {"StringEquals": {"iam:PassedToService": sorted(passed)}},
    )
    found.add(
        "ServiceLinkedRoles",
        ["iam:CreateServiceLinkedRole"] if linked else [],
        [service_linked_role_path(service) for service in linked],
        {"StringEquals": {"iam:AWSServiceName": sorted(linked)}},
    )
    for service in linked:
        # A statement per service: merged, one service's calls would reach another's role.
        words = re.findall(r"[a-z0-9]+", service.removesuffix(".amazonaws.com"))
        found.add(
            "SetUp" + "".join(w.capitalize() for w in words),
            SERVICE_LINKED_ROLE_CALLS.get(service, ()),
            [service_linked_role_path(service)],
        )
    return found.render()


def service_linked_role_path(service: str) -> str:
    """Every role AWS links to `service` (IAM User Guide, "Using service-linked roles": the
    path aws-service-role/<service>/)."""
    return f"arn:aws:iam::*:role/aws-service-role/{service}/*"


def size(document: dict[str, Any]) -> int:
    """Characters IAM counts against the managed policy quota: whitespace is not counted."""
    return len(re.sub(r"\s", "", json.dumps(document)))


def _document(statements: list[dict[str, Any]]) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": statements}


def _halves(statement: dict[str, Any]) -> list[dict[str, Any]]:
    actions = statement["Action"]
    middle = len(actions) // 2
    return [
        {**statement, "Sid": f"{statement['Sid']}{i + 1}", "Action": part}
        for i, part in enumerate((actions[:middle], actions[middle:]))
    ]


def documents(plan: Plan) -> list[dict[str, Any]]:
    """The stack's deploy policy as managed policy documents, each within IAM's size quota."""
    pending, docs, current = list(statements(plan)), [], []
    while pending:
        statement = pending.pop(0)
        if size(_document([statement])) > MANAGED_POLICY_CHARS:
            pending[:0] = _halves(statement)
            continue
        if size(_document([*current, statement])) > MANAGED_POLICY_CHARS:
            docs.append(_document(current))
            current = []
        current.append(statement)
    if current:
        docs.append(_document(current))
    lint(docs)
    return docs


def lint(docs: list[dict[str, Any]]) -> None:
    """Every action is one the Service Authorization Reference lists, every statement
    conditioned on a tag holds only actions that take that key (else it would never match), Sids
    are unique and plain, and each document fits the managed policy quota."""
    problems = []
    for statement in (s for d in docs for s in d["Statement"]):
        keys = [k for op in statement.get("Condition", {}).values() for k in op]
        for action in statement["Action"]:
            service, _, name = action.partition(":")
            if name not in catalog().get(service, {}).get("actions", ()):
                problems.append(f"{statement['Sid']}: {action} is not an IAM action")
                continue
            for key in keys:
                kind = {"aws:RequestTag": "request_tag", "aws:ResourceTag": "resource_tag"}.get(
                    key.split("/")[0]
                )
                if kind and not _supports(action, kind):
                    problems.append(f"{statement['Sid']}: {action} does not take {key}")
    for i, doc in enumerate(docs):
        sids = Counter(s["Sid"] for s in doc["Statement"])
        # IAM JSON policy element reference, "Sid": unique within a policy, A-Z, a-z, 0-9 only.
        problems += [f"policy {i + 1}: Sid {sid} repeats" for sid, n in sids.items() if n > 1]
        problems += [
            f"policy {i + 1}: Sid {sid!r} is not ASCII letters and digits"
            for sid in sids
            if not re.fullmatch(r"[A-Za-z0-9]+", sid)
        ]
        if size(doc) > MANAGED_POLICY_CHARS:
            problems.append(f"policy {i + 1}: {size(doc)} characters > {MANAGED_POLICY_CHARS}")
    if problems:
        raise DeployPolicyError(
            f"deploy policy (checked against {CATALOG.name}): " + "; ".join(problems)
        )


def write_policy(plan: Plan, out_dir: Path) -> Path | None:
    """out/<stack>/deploy-policy.json: a list of managed policy documents; None (and no file)
    for a stack without AWS resources."""
    path = out_dir / "deploy-policy.json"
    if not any(t.startswith("aws:") for t in aws_types(plan)):
        path.unlink(missing_ok=True)
        return None
    path.write_text(json.dumps(documents(plan), indent=2) + "\n")
    return path


def format_policy(plan: Plan, path: Path | None) -> str:
    if path is None:
        return (
            "Deploy policy: no AWS resources, so no IAM policy; the runner needs only "
            "Kubernetes access to the existing cluster (docs/review.md)."
        )
    docs = json.loads(path.read_text())
    sizes = ", ".join(f"{size(d)}" for d in docs)
    unscoped = sorted(
        {
            a
            for d in docs
            for s in d["Statement"]
            if s["Resource"] == "*" and "Condition" not in s and s["Sid"] != "Refresh"
            for a in s["Action"]
        }
    )
    return (
        f"Deploy policy: {path} ({len(docs)} managed "
        f"{'policy' if len(docs) == 1 else 'policies'}, {sizes} of {MANAGED_POLICY_CHARS} "
        f"characters); on `*` beyond the refresh's reads: {', '.join(unscoped) or 'none'}"
    )
