"""An eu-west-1 stack, planned end to end (issue 26 §2): what it pulls and what it costs are
eu-west-1's, and what the catalog has no eu-west-1 rate of is not priced (issue 38 §6).

Expected values: the EKS user guide's registry table ("View Amazon container image registries
for Amazon EKS add-ons": eu-west-1 is 602401143452.dkr.ecr.eu-west-1.amazonaws.com);
on-demand p4d.24xlarge in eu-west-1 $23.71569/h and g5.12xlarge $6.33167/h (instances.vantage.sh
data of 2026-01-21, read from the AWS price list; us-east-1's are $21.958 and $5.672)."""

from __future__ import annotations

import pytest

from plan.engine import run_program
from plan.model import build_plan
from tests.conftest import make_project
from tests.helpers.bad_stacks import ADMIN

NS = "gpu-platform"
EU_WEST_1 = {
    f"{NS}:aws": {"region": "eu-west-1", "zones": ["eu-west-1a", "eu-west-1b"]},
    f"{NS}:cluster": {"admin_principal_arns": [ADMIN]},
    f"{NS}:gpu_node_groups": [
        {
            "name": "a100",
            "instance_types": ["p4d.24xlarge"],
            "efa": True,
            "scaling": {"min_size": 0, "max_size": 2},
        },
        {"name": "a10g", "instance_types": ["g5.12xlarge"], "scaling": {"max_size": 4}},
    ],
}


@pytest.fixture(scope="module")
def plan(tmp_path_factory):
    root = make_project(tmp_path_factory.mktemp("eu"), {"eu": EU_WEST_1})
    return build_plan(run_program("eu", root))


def test_the_efa_plugin_is_pulled_from_eu_west_1s_eks_registry(plan):
    (release,) = [
        r for r in plan.of_type("kubernetes:helm.sh/v3:Release") if r.name == "eu-efa-device-plugin"
    ]
    assert release.inputs["values"]["image"]["repository"] == (
        "602401143452.dkr.ecr.eu-west-1.amazonaws.com/eks/aws-efa-k8s-device-plugin"
    )


def test_the_gpu_groups_are_priced_at_eu_west_1_rates(plan):
    lines = {line["key"]: line for line in plan.outputs["cost"]["lines"]}
    # 2 x 23.71569 = 47.43138, 4 x 6.33167 = 25.32668: the estimate rounds hourly figures to
    # four places.
    assert lines["gpu_node_groups.a100"]["hourly_max"] == 47.4314
    assert lines["gpu_node_groups.a10g"]["hourly_max"] == 25.3267


def test_what_has_no_eu_west_1_rate_is_not_priced_at_another_regions(plan):
    cost = plan.outputs["cost"]
    assert cost["region"] == "eu-west-1"
    # No eu-west-1 rate of m7i or of NAT gateways is recorded: each is not priced, and says
    # which rate is missing, rather than standing at us-east-1's.
    unpriced = {x["key"]: x["why"] for x in cost["unpriced"]}
    assert "no eu-west-1 rate of m7i.xlarge on demand" in unpriced["system_nodes"]
    assert "no eu-west-1 rate of NAT gateways" in unpriced["network.nat_gateways"]
