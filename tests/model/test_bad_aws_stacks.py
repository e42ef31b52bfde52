"""Stack files that break a limit of AWS, EKS or Kubernetes, each refused by the plan with exit
2, the key path, the value and the limit in words. Each group of cases names its source, so a
check loosened in the config model fails here."""

from __future__ import annotations

import pytest

from tests.helpers.aws_limits import AWS_LIMITS
from tests.helpers.bad_stacks import assert_refused


@pytest.mark.parametrize(("stack", "path", "value", "valid"), AWS_LIMITS)
def test_aws_limit_is_refused_naming_key_value_and_limit(
    tmp_path, monkeypatch, capsys, stack, path, value, valid
):
    assert_refused(tmp_path, monkeypatch, capsys, stack, path, value, valid)
