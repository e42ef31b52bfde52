"""The FSx CSI driver (components/storage/fsx_csi.py): its chart values, and the pinned chart each
AWS stack installs. What its dynamic-provisioning role may do is in test_least_privilege.py."""

from __future__ import annotations

import pytest

from components.storage.fsx_csi import fsx_csi_values
from model.versions import CHARTS
from tests.conftest import AWS_STACKS, find, planned
from tests.helpers.shared_data import stack_config

RELEASE = "kubernetes:helm.sh/v3:Release"


@pytest.mark.parametrize("stack", AWS_STACKS)
def test_fsx_csi_driver_is_the_pinned_chart(stack):
    plan = planned(stack)
    release = find(plan, RELEASE, f"{stack}-fsx-csi").inputs
    chart = CHARTS["aws-fsx-csi-driver"]
    assert (release["chart"], release["version"]) == (chart.name, chart.version)
    assert release["repositoryOpts"]["repo"] == chart.repository
    assert release["values"]["controller"]["region"] == stack_config(stack)["aws"]["region"]


def test_values_set_the_region_and_the_charts_own_service_account_names():
    """aws-fsx-csi-driver 1.17.0 values.yaml: `controller.region` (empty: looked up from the EC2
    metadata service), `controller.serviceAccount.name: fsx-csi-controller-sa` and
    `node.serviceAccount.name: fsx-csi-node-sa`; `controller.extraTags` only for dynamic
    provisioning, so a static-only cluster's driver tags nothing."""
    assert fsx_csi_values("eu-west-1", "c1", dynamic=False) == {
        "controller": {"region": "eu-west-1", "serviceAccount": {"name": "fsx-csi-controller-sa"}},
        "node": {"serviceAccount": {"name": "fsx-csi-node-sa"}},
    }
    dynamic = fsx_csi_values("eu-west-1", "c1", dynamic=True)
    assert dynamic["controller"]["extraTags"] == {"fsx.csi.aws.com/cluster": "c1"}
