"""What a mandatory rule of the policy pack (policy/rules) would refuse, refused at config time.

A mandatory rule fails `pulumi preview --policy-pack policy` and the plan after every resource
is declared; where the config alone decides the outcome, the stack is refused here instead,
with its key path, exit 2 and nothing declared. Each check names its rule; the rules that need
planned resources, and those the program itself keeps (no config reaches them), are listed in
tests/model/test_mandatory_twins.py with why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from model.config.base import FieldProblem
from model.config.nodes import RESERVED_CAPACITY

if TYPE_CHECKING:
    from model.config import PlatformConfig

# policy/rules/reliability.py, control-plane-logs: the log types every EKS cluster sends.
REQUIRED_LOG_TYPES = ("api", "audit", "authenticator")


def _open(networks) -> list[str]:
    return [str(n) for n in networks if n.prefixlen == 0]


def _exempted(cfg: PlatformConfig, rule: str) -> bool:
    return any(e.rule == rule for e in cfg.policy.exemptions)


def mandatory_problems(cfg: PlatformConfig) -> list[FieldProblem]:
    """Every problem a mandatory rule would find in what this config declares."""
    if cfg.provider != "aws":
        return []
    problems = []
    cluster = cfg.cluster
    world = _open(cluster.public_access_cidrs)
    if cfg.production and not cluster.endpoint_private_only and world:
        problems.append(
            FieldProblem(
                "cluster.public_access_cidrs",
                f"{world[0]} with a public endpoint in production: the whole internet reaches "
                "the API (mandatory rule prod-api-endpoint-private); list your runners' and "
                "VPN ranges, or set cluster.endpoint_private_only: true",
            )
        )
    world = _open(cluster.api_access_cidrs)
    if world and not _exempted(cfg, "no-open-ingress"):
        problems.append(
            FieldProblem(
                "cluster.api_access_cidrs",
                f"{world[0]} opens the cluster's security group to the whole internet "
                "(mandatory rule no-open-ingress); narrow it, or add policy.exemptions "
                "{rule: no-open-ingress, resource: <name>, reason}",
            )
        )
    missing = [t for t in REQUIRED_LOG_TYPES if t not in cluster.log_types]
    if missing:
        problems.append(
            FieldProblem(
                "cluster.log_types",
                f"leaves out {', '.join(missing)}: the control plane's "
                f"{', '.join(REQUIRED_LOG_TYPES)} logs are required (mandatory rule "
                "control-plane-logs); add them",
            )
        )
    fsx = cfg.storage.fsx
    if cfg.production and fsx is not None and fsx.deployment_type.startswith("PERSISTENT"):
        if not (fsx.kms_key_arn or fsx.create_kms_key):
            problems.append(
                FieldProblem(
                    "storage.fsx.create_kms_key",
                    "false, and no kms_key_arn: a persistent file system in production is "
                    "encrypted with a customer key, so access can be revoked (mandatory rule "
                    "prod-fsx-customer-key); set create_kms_key: true or kms_key_arn",
                )
            )
        if not fsx.automatic_backup_retention_days and fsx.data_repository is None:
            problems.append(
                FieldProblem(
                    "storage.fsx.automatic_backup_retention_days",
                    "0, and no data_repository: a production file system has backups or an "
                    "S3 repository that holds its data (mandatory rule prod-fsx-backups); set "
                    "automatic_backup_retention_days, or storage.fsx.data_repository",
                )
            )
    if not cfg.policy.allow_placement_group_with_reservation:
        for i, group in enumerate(cfg.gpu_node_groups):
            if group.uses_placement_group and group.capacity in RESERVED_CAPACITY:
                problems.append(
                    FieldProblem(
                        f"gpu_node_groups[{i}].placement_group",
                        f"true with capacity {group.capacity}: the launch fails unless the "
                        "reservation was made in that placement group (mandatory rule "
                        "no-placement-group-with-reservation); set placement_group: false, or "
                        "policy.allow_placement_group_with_reservation: true",
                    )
                )
    return problems
