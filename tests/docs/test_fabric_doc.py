"""docs/fabric.md, "InfiniBand as it is run", matches what the platform sets: every NCCL variable
an InfiniBand or RoCE pool's pods get (components/data/nccl.py) is named there, and the variables
the platform leaves to the site (NCCL docs, "Environment Variables": NCCL_IB_PKEY, the P_Key index;
NCCL_COLLNET_ENABLE, CollNet / SHARP) are set for no pool of any stack."""

from __future__ import annotations

import re

import pytest

from components.data.nccl import NCCL_ENV, nccl_env
from model.config.fabric import RDMA_FABRICS
from model.stacks import ROOT
from tests.conftest import STACKS, stack_config

LEFT_TO_THE_SITE = ("NCCL_IB_PKEY", "NCCL_COLLNET_ENABLE")


def section() -> str:
    page = (ROOT / "docs" / "fabric.md").read_text()
    (text,) = re.findall(r"^## InfiniBand as it is run\n(.*?)(?=^## )", page, re.S | re.M)
    return text


def test_the_section_names_every_nccl_variable_of_an_rdma_pool():
    text = section()
    for fabric in RDMA_FABRICS:
        for name in NCCL_ENV[fabric]:
            assert f"`{name}" in text, (fabric, name)
    for name in LEFT_TO_THE_SITE:
        assert f"`{name}" in text, name
    for said in ("subnet manager", "partitions.conf", "nvidia-peermem", "nccl-rdma-sharp-plugins",
                 "ibstat", "DeepOps"):  # fmt: skip
        assert said in text, said


@pytest.mark.parametrize("stack", STACKS)
def test_no_pool_sets_what_the_section_leaves_to_the_site(stack):
    cfg = stack_config(stack)
    for pool in cfg.gpu_pools:
        env = nccl_env(pool, cfg)
        assert not [name for name in LEFT_TO_THE_SITE if name in env], (stack, pool.name)
