"""Log groups (components/log_groups.py): the ARN their key policy names."""

from __future__ import annotations

from components.log_groups import log_group_arn


def test_a_log_group_arn_is_spelt_as_cloudwatch_logs_spells_it():
    # Service Authorization Reference, CloudWatch Logs resource types:
    # arn:${Partition}:logs:${Region}:${Account}:log-group:${LogGroupName}.
    assert log_group_arn("111122223333", "us-east-1", "/aws/eks/c/cluster") == (
        "arn:aws:logs:us-east-1:111122223333:log-group:/aws/eks/c/cluster"
    )
