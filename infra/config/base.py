"""What every config module shares: the strict base model, the error types, common field types.

A plane module raises `FieldProblem` from its validators; `infra.config` turns it into a
`ConfigError` that names the stack file and the `gpu-platform:` key path.
"""

from __future__ import annotations

import difflib
import re
from ipaddress import IPv4Network
from typing import Annotated

import pulumi
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from infra.catalog import CATALOG

NAMESPACE = "gpu-platform"

LOG_RETENTION_DAYS = (
    1,
    3,
    5,
    7,
    14,
    30,
    60,
    90,
    120,
    150,
    180,
    365,
    400,
    545,
    731,
    1096,
    1827,
)
DnsLabel = Annotated[
    str,
    Field(pattern=r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", description="A DNS-1123 label."),
]
RoleArn = Annotated[
    str,
    Field(
        pattern=r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]+$",
        description="An IAM role ARN.",
    ),
]
KmsKeyArn = Annotated[
    str,
    Field(
        pattern=r"^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key/[0-9a-f-]{36}$",
        description="A KMS key ARN.",
    ),
]
SecurityGroupId = Annotated[
    str,
    Field(pattern=r"^sg-[0-9a-f]{8,17}$", description="A security group id (sg-...)."),
]


class ConfigError(pulumi.RunError):
    """Invalid stack configuration. The Pulumi language host prints a RunError without a trace."""

    def __init__(self, source: str, problems: list[str]):
        self.source = source
        self.problems = problems
        noun = "problem" if len(problems) == 1 else "problems"
        lines = [f"{source}: invalid {NAMESPACE} configuration ({len(problems)} {noun}):"]
        lines += [f"  - {problem}" for problem in problems]
        lines.append("Nothing was declared. Fix the stack file, or `pulumi config set --path`.")
        super().__init__("\n".join(lines))


class FieldProblem(ValueError):
    """A cross-field rule broken at `field` (a path relative to the model that raised it)."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(message)


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


def _overlaps(named: list[tuple[str, IPv4Network]]) -> FieldProblem | None:
    for i, (name_a, net_a) in enumerate(named):
        for name_b, net_b in named[i + 1 :]:
            if net_a.overlaps(net_b):
                return FieldProblem(name_b, f"{net_b} overlaps {name_a} ({net_a})")
    return None


def _known_instance_type(value: str) -> str:
    if value not in CATALOG:
        close = difflib.get_close_matches(value, CATALOG, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ValueError(
            f"{value!r} is not in the instance catalog (infra/catalog.py); {hint}"
            f"known: {', '.join(sorted(CATALOG))}"
        )
    return value


InstanceTypeName = Annotated[str, AfterValidator(_known_instance_type)]

_PRINCIPAL_ARN = re.compile(r"arn:aws[a-z-]*:iam::\d{12}:(role|user)/[\w+=,.@/-]+")


def _principal_arn(value: str) -> str:
    if not _PRINCIPAL_ARN.fullmatch(value):
        raise ValueError(
            f"{value!r} is not an IAM role or user ARN: arn:aws:iam::<12-digit account id>:"
            "role/<name> or arn:aws:iam::<12-digit account id>:user/<name>"
        )
    return value


PrincipalArn = Annotated[str, AfterValidator(_principal_arn)]


def _check_retention(value: int) -> int:
    if value not in LOG_RETENTION_DAYS:
        raise ValueError(
            f"{value} is not a CloudWatch retention; valid: {list(LOG_RETENTION_DAYS)}"
        )
    return value


def _one_key_source(settings: BaseModel, arn_field: str, create_field: str) -> None:
    """A key is either given or created, never both."""
    if getattr(settings, arn_field) and getattr(settings, create_field):
        raise FieldProblem(create_field, f"set {arn_field} or {create_field}, not both")
