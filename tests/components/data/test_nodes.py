"""What every managed node group is built from (components/data/nodes.py): nodeadm user data for
every catalog type, and the system node's rendered bytes, kept as a golden file
(tests/golden/user-data/m7i.xlarge.mime; `UPDATE_GOLDEN=1` rewrites it and fails, showing the
diff for review)."""

from __future__ import annotations

import pytest

from components.data.nodes import node_config, user_data
from model.catalog import CATALOG
from model.config import KubeletSettings
from tests.conftest import check_golden
from tests.helpers.instance_facts import FACTS
from tests.helpers.user_data import GOLDEN, parse_user_data


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_user_data_is_mime_and_asks_for_raid0_exactly_with_instance_storage(name):
    row = CATALOG[name]
    (config,) = parse_user_data(user_data([node_config(row, KubeletSettings(), 100)]))
    assert config["apiVersion"] == "node.eks.aws/v1alpha1"
    assert config["kind"] == "NodeConfig"
    strategy = config["spec"].get("instance", {}).get("localStorage", {}).get("strategy")
    assert strategy == ("RAID0" if FACTS[name].nvme_disks else None)
    kubelet = config["spec"]["kubelet"]["config"]
    assert kubelet["maxPods"] == 100
    assert kubelet["topologyManagerPolicy"] == "restricted"
    assert kubelet["cpuManagerPolicy"] == "static"


def test_rendered_system_node_user_data_matches_golden_file():
    row = CATALOG["m7i.xlarge"]
    rendered = user_data([node_config(row, KubeletSettings(), min(row.max_pods, 110))])
    check_golden(GOLDEN / "m7i.xlarge.mime", rendered)
