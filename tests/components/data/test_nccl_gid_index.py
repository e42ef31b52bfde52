"""The RoCE GID index reaches every pool's NCCL ConfigMap from config (STYLE.md §14): every
shipped stack says 3, so a `"3"` hard-coded in components/data/nccl.py would pass the shipped
tests; here the on-prem stack runs on GID index 1 and the plan follows it."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

from plan.cli import plan_stack
from tests.conftest import make_project, stack_file_config
from tests.helpers.bad_stacks import NS

# Still valid: `show_gids` on a ConnectX port lists each address twice, RoCE v1 then v2; index 0
# and 1 are the IPv6 link-local address's, 2 and 3 the first IPv4 address's (hence the usual 3).
# 1 is the RoCE v2 entry of a fabric that runs on link-local IPv6.
GID_INDEX = 1


@functools.cache
def onprem_on_gid_index_1():
    config = stack_file_config("onprem")
    config[f"{NS}:fabric"]["gid_index"] = GID_INDEX
    # The on-prem stack bursts to the burst stack (MultiKueue), which the plan reads beside it.
    stacks = {"gid1": config, "burst": stack_file_config("burst")}
    root = make_project(Path(tempfile.mkdtemp(prefix="gid-index-")), stacks)
    return plan_stack("gid1", root)


def test_every_roce_configmap_carries_the_configured_gid_index_not_3():
    maps = [
        o
        for o in onprem_on_gid_index_1().kubernetes_objects()
        if o["kind"] == "ConfigMap" and o["metadata"]["name"].startswith("nccl-")
    ]
    assert maps, "no nccl-<pool> ConfigMap planned"
    for cm in maps:
        # NCCL docs, "Environment variables", NCCL_IB_GID_INDEX: the GID index, as a number.
        assert cm["data"]["NCCL_IB_GID_INDEX"] == "1", cm["metadata"]
