"""What every config module shares: the strict base model, the error types, common field types.

A plane module raises `FieldProblem` from its validators; `model.config` turns it into a
`ConfigError` that names the stack file and the `gpu-platform:` key path. Every shape a value
must have is described in words, because the user reads the message, not the regular expression.
"""

from __future__ import annotations

import difflib
import re
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from fractions import Fraction
from ipaddress import IPv4Network
from typing import Annotated, Any

import pulumi
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    ValidationInfo,
    field_validator,
)
from pydantic_core import core_schema

from model.catalog import CATALOG
from model.config.bounds import standard_bounds
from model.config.regions import SUPPORTED_PARTITION

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


def visible(text: str) -> str:
    """`text` with every character that prints nothing, or prints misleadingly, escaped as
    Python's repr escapes it (a control character, a zero-width space, a bidirectional
    override, a no-break space: `\\x07`, `\\u200b`, `\\u202e`, `\\xa0`): a key or value
    echoed in an error must show what the file holds, not hide it or reorder the line."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)


class ConfigError(pulumi.RunError):
    """Invalid stack configuration. The Pulumi language host prints a RunError without a trace.
    Every problem is shown `visible`: the keys and values it echoes come from the stack file."""

    def __init__(self, source: str, problems: list[str]):
        self.source = source
        self.problems = problems = [visible(p) for p in problems]
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


# What a boolean field takes: YAML 1.2's booleans, as they reach the program typed or as the
# strings `pulumi config set` stores (go-yaml v3 resolve.go; YAML 1.2.2 section 10.3.2).
TRUE_WORDS = ("true", "True", "TRUE")
BOOLEAN_WORDS = (*TRUE_WORDS, "false", "False", "FALSE")


def _takes_bool(annotation: Any) -> bool:
    return annotation is bool or bool in typing.get_args(annotation)


class FieldProblems(ValueError):
    """Every problem one rule found, each at its own path: reported together, so a stack with
    three dangling names is fixed in one round."""

    def __init__(self, problems: list[FieldProblem]):
        self.problems = problems
        super().__init__("; ".join(f"{p.field}: {p}" for p in problems))


class Settings(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, validate_default=True, json_schema_extra=standard_bounds
    )

    @field_validator("*", mode="before")
    @classmethod
    def _only_true_or_false(cls, value: Any, info: ValidationInfo) -> Any:
        # pydantic would also take yes/no/on/off/1/0, which Pulumi's YAML reads as strings and
        # numbers: a stack file meant for `pulumi up` says true or false, nothing else.
        field = cls.model_fields.get(info.field_name or "")
        if field is None or not _takes_bool(field.annotation):
            return value
        if isinstance(value, bool) or value is None or value in BOOLEAN_WORDS:
            return value
        raise ValueError(
            "not a boolean; write true or false (Pulumi reads stack files as YAML 1.2, where "
            "yes, no, on and off are strings)"
        )


# ----------------------------------------------------------------------------- value types


def _not_a_boolean(value: Any) -> Any:
    # pydantic turns true into 1; `max_size: true` is a mistake, never a count.
    if isinstance(value, bool):
        raise ValueError(f"{str(value).lower()} is a boolean; give a whole number, e.g. 4")
    return value


# The project's integer: a whole number, or a string holding one ("4", as `pulumi config set`
# stores it), never a boolean. Every integer field of the config model uses it.
Int = Annotated[int, BeforeValidator(_not_a_boolean)]


@dataclass(frozen=True)
class Shape:
    """A string check whose message is `words`, the shape said for a reader. The JSON Schema of
    the stack files carries `pattern`, so that editors check it too; the config reference
    shows `words`."""

    pattern: str
    words: str

    def check(self, value: str) -> str:
        if not re.fullmatch(self.pattern, value):
            raise ValueError(f"expected {self.words}")
        return value

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> Any:
        return core_schema.no_info_after_validator_function(self.check, handler(source))

    def __get_pydantic_json_schema__(self, schema: Any, handler: GetJsonSchemaHandler) -> Any:
        return {**handler(schema), "pattern": f"^(?:{self.pattern})$"}


def shaped(pattern: str, words: str) -> Shape:
    return Shape(pattern, words)


@dataclass(frozen=True)
class Documented:
    """What a function check beside it accepts: in words for the config reference, and as
    JSON Schema keywords (an enum, a pattern) where editors can check it too."""

    words: str
    keywords: tuple[tuple[str, Any], ...] = ()

    def __get_pydantic_json_schema__(self, schema: Any, handler: GetJsonSchemaHandler) -> Any:
        return {**handler(schema), **dict(self.keywords)}


# Free text a reviewer reads (why a team needs baseline, why a rule is waived): at least one
# character that is not white space, so that a blank or whitespace-only answer is no answer.
Reason = Annotated[
    str, shaped(r"[\s\S]*\S[\s\S]*", "a reason in words, not blank or only white space")
]

DNS_LABEL_WORDS = (
    "a DNS label: at most 63 characters: lowercase letters, digits and hyphens, beginning and "
    "ending with a letter or digit"
)
DnsLabel = Annotated[str, shaped(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", DNS_LABEL_WORDS)]

# IAM identifiers (IAM user guide, "IAM identifiers" and "IAM and AWS STS quotas"): a 12-digit
# account, a path of /-separated segments, a name of at most 64 characters from letters,
# digits and + = , . @ _ -.
# KMS developer guide, "Key identifiers (KeyId)": key ARNs end in key/<UUID>, multi-Region keys
# in key/mrk-<32 hex digits>. ARNs of the one partition the program builds for (regions.py).
KmsKeyArn = Annotated[
    str,
    shaped(
        rf"arn:{SUPPORTED_PARTITION}:kms:[a-z]{{2}}(-[a-z]+)+-\d:\d{{12}}:key/"
        r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|mrk-[0-9a-f]{32})",
        "a KMS key ARN: arn:aws:kms:<region>:<12-digit account>:key/<key id>, the key id a "
        "UUID or mrk- and 32 hexadecimal digits",
    ),
]
# EC2 resource ids are a prefix and 17 hexadecimal digits (8 for the oldest resources).
CapacityReservationId = Annotated[
    str,
    shaped(
        r"cr-([0-9a-f]{8}|[0-9a-f]{17})",
        "a capacity reservation id: cr- and 17 (or 8) lowercase hexadecimal digits",
    ),
]
SecurityGroupId = Annotated[
    str, shaped(r"sg-[0-9a-f]{8,17}", "a security group id: sg- and 8 to 17 hex digits")
]


def ec2_id(prefix: str, what: str) -> Shape:
    return shaped(
        rf"{prefix}-([0-9a-f]{{8}}|[0-9a-f]{{17}})",
        f"a {what} id: {prefix}- and 17 (or 8) lowercase hexadecimal digits",
    )


VpcId = Annotated[str, ec2_id("vpc", "VPC")]
SubnetId = Annotated[str, ec2_id("subnet", "subnet")]
TransitGatewayId = Annotated[str, ec2_id("tgw", "transit gateway")]
VpnGatewayId = Annotated[str, ec2_id("vgw", "virtual private gateway")]


def _aws_tag(key: str, value: str) -> str | None:
    """Why a tag is refused by AWS, or None (Tagging AWS resources user guide, "Tag naming
    limits and requirements": key 1-128 and value 0-256 Unicode characters, letters, digits,
    spaces and _ . : / = + - @; the aws: prefix is reserved for AWS)."""
    allowed = r"[\w\s.:/=+\-@]*"
    if key.lower().startswith("aws:"):
        return f"tag key {key!r} begins with aws:, which AWS reserves for its own tags"
    if not 1 <= len(key) <= 128:
        return f"tag key {key!r} is {len(key)} characters; AWS allows 1 to 128"
    if len(value) > 256:
        return f"tag {key!r} has a value of {len(value)} characters; AWS allows at most 256"
    for what, text in (("key", key), ("value", value)):
        if not re.fullmatch(allowed, text):
            return f"tag {what} {text!r} may hold only letters, digits, spaces and _ . : / = + - @"
    return None


def each_entry(problem: Callable[[str, str], str | None]) -> AfterValidator:
    """A validator of a string map that refuses the first entry `problem` finds fault with."""

    def check(entries: dict[str, str]) -> dict[str, str]:
        for key, value in entries.items():
            why = problem(key, value)
            if why:
                raise ValueError(why)
        return entries

    return AfterValidator(check)


AwsTags = Annotated[
    dict[str, str],
    each_entry(_aws_tag),
    Documented(
        "AWS tags: keys of 1 to 128 and values of at most 256 letters, digits, spaces and "
        "_ . : / = + - @; no key under aws:"
    ),
]

# Kubernetes "Labels and Selectors": a name of at most 63 characters, alphanumeric at both ends
# with - _ . between, after an optional DNS-subdomain prefix of at most 253 characters and /.
_LABEL_NAME = r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)"
_DNS_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
# The kubelet may set labels under kubernetes.io and k8s.io only with these prefixes (kubelet
# --node-labels reference; NodeRestriction admission).
_KUBELET_PREFIXES = ("kubelet.kubernetes.io", "node.kubernetes.io")


def _label_problem(key: str, value: str) -> str | None:
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not re.fullmatch(_DNS_SUBDOMAIN, prefix)):
        return (
            f"label key {key!r} has a prefix that is not a DNS subdomain: at most 253 "
            "characters, lowercase letters, digits, hyphens and dots"
        )
    if not re.fullmatch(_LABEL_NAME, name):
        return (
            f"label key {key!r} has a name that is not at most 63 characters of letters, "
            "digits, - _ and ., beginning and ending with a letter or digit"
        )
    reserved = prefix.endswith(("kubernetes.io", "k8s.io"))
    if reserved and not prefix.endswith(_KUBELET_PREFIXES):
        return (
            f"label key {key!r} lies under kubernetes.io or k8s.io, which nodes may not set "
            f"themselves; use your own prefix, or {' or '.join(_KUBELET_PREFIXES)}"
        )
    if value and not re.fullmatch(_LABEL_NAME, value):
        return (
            f"label {key!r} has value {value!r}: a label value is empty or at most 63 "
            "characters of letters, digits, - _ and ., beginning and ending with a letter or digit"
        )
    return None


KubernetesLabels = Annotated[
    dict[str, str],
    each_entry(_label_problem),
    Documented(
        "Kubernetes labels: [prefix/]name, a name of at most 63 letters, digits, - _ and .; "
        f"no prefix under kubernetes.io or k8s.io but {' and '.join(_KUBELET_PREFIXES)}"
    ),
]

# Kubernetes "Resource Management for Pods and Containers" / the quantity type: a decimal
# number with an optional binary (Ki..Ei) or decimal (m, k, M..E) suffix, or an exponent.
_QUANTITY = r"(\d+(\.\d*)?|\.\d+)([KMGTPE]i|[mkMGTPE]|[eE][+-]?\d+)?"
_SUFFIXES = {
    "m": Fraction(1, 1000), "": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12,
    "P": 10**15, "E": 10**18, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50,
    "Ei": 2**60,
}  # fmt: skip


def cpu_quantity(text: str) -> Fraction:
    """A quantity as a number, CPUs for a CPU: `500m`, `2`, `1.5`, `1e3` (Kubernetes
    apimachinery pkg/api/resource/quantity.go)."""
    number, _, suffix = re.fullmatch(_QUANTITY, str(text)).groups()
    if suffix and suffix[0] in "eE":
        return Fraction(number) * Fraction(10) ** int(suffix[1:])
    return Fraction(number) * _SUFFIXES[suffix or ""]


# What kubelet --system-reserved / --kube-reserved account for (kubelet configuration
# reference, "Reserve Compute Resources for System Daemons").
RESERVABLE_RESOURCES = ("cpu", "memory", "ephemeral-storage", "pid")


def _check_reserved(reserved: dict[str, str]) -> dict[str, str]:
    for resource, quantity in reserved.items():
        if resource not in RESERVABLE_RESOURCES:
            raise ValueError(
                f"{resource!r} cannot be reserved; the kubelet reserves "
                f"{', '.join(RESERVABLE_RESOURCES)}"
            )
        if not re.fullmatch(_QUANTITY, str(quantity)):
            raise ValueError(
                f"{resource}: {quantity!r} is not a Kubernetes quantity: a non-negative number "
                "with an optional suffix, e.g. 500m, 1Gi or 2"
            )
    return reserved


ReservedResources = Annotated[
    dict[str, str],
    AfterValidator(_check_reserved),
    Documented(f"keys {', '.join(RESERVABLE_RESOURCES)}; values Kubernetes quantities (500m, 1Gi)"),
]


def _overlaps(named: list[tuple[str, IPv4Network]]) -> FieldProblem | None:
    for i, (name_a, net_a) in enumerate(named):
        for name_b, net_b in named[i + 1 :]:
            if net_a.overlaps(net_b):
                return FieldProblem(name_b, f"{net_b} overlaps {name_a} ({net_a})")
    return None


def one_of(value: str, known: Iterable[str], what: str, listing: str = "known") -> str:
    """`value` if it is known, else an error naming the closest known name and all of them."""
    known = list(known)
    if value not in known:
        close = difflib.get_close_matches(value, known, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ValueError(f"{value!r} is not {what}; {hint}{listing}: {', '.join(known)}")
    return value


def _known_instance_type(value: str) -> str:
    return one_of(value, sorted(CATALOG), "in the instance catalog (model/catalog.py)")


InstanceTypeName = Annotated[
    str,
    AfterValidator(_known_instance_type),
    # An enum, so that editors complete instance types from the catalog.
    Documented("an instance type of the catalog (model/catalog.py)", (("enum", sorted(CATALOG)),)),
]

_PRINCIPAL_ARN = re.compile(rf"arn:{SUPPORTED_PARTITION}:iam::\d{{12}}:(role|user)/[\w+=,.@/-]+")


def _principal_arn(value: str) -> str:
    if not _PRINCIPAL_ARN.fullmatch(value):
        raise ValueError(
            f"{value!r} is not an IAM role or user ARN: arn:aws:iam::<12-digit account id>:"
            "role/<name> or arn:aws:iam::<12-digit account id>:user/<name>"
        )
    return value


PrincipalArn = Annotated[
    str,
    AfterValidator(_principal_arn),
    Documented(
        "an IAM role or user ARN: arn:aws:iam::<12-digit account>:role/<name> or user/<name>",
        (("pattern", f"^(?:{_PRINCIPAL_ARN.pattern})$"),),
    ),
]


def _check_retention(value: int) -> int:
    if value not in LOG_RETENTION_DAYS:
        raise ValueError(
            f"{value} is not a CloudWatch retention; valid: {list(LOG_RETENTION_DAYS)}"
        )
    return value


# CloudWatch Logs PutRetentionPolicy: retentionInDays takes only these values.
RetentionDays = Annotated[
    Int,
    AfterValidator(_check_retention),
    Documented(
        f"a CloudWatch Logs retention in days: {', '.join(map(str, LOG_RETENTION_DAYS))}",
        (("enum", list(LOG_RETENTION_DAYS)),),
    ),
]


def _one_key_source(settings: BaseModel, arn_field: str, create_field: str) -> None:
    """A key is either given or created, never both."""
    if getattr(settings, arn_field) and getattr(settings, create_field):
        raise FieldProblem(create_field, f"set {arn_field} or {create_field}, not both")
