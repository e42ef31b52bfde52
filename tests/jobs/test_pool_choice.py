"""A job without `--pool` goes to the cheapest pool of the stack that can hold it (GPUs per node,
GPU memory asked for, a shared fabric for a multi-node job), priced as the cost estimate prices
the pool's nodes (model/cost.node_hourly: on-demand or spot as the group buys them, in the
stack's region), and says which pool and why, on stderr and in the job's
`gpu-platform/pool-choice` annotation. The issue's case: a 1-GPU job landed on the p4d pool,
the stack's first, though a spot g6 pool fits."""

from __future__ import annotations

import copy

import pytest
import yaml

from components.scheduling.training_job import render
from jobs.common import POOL_CHOICE
from jobs.team import TeamJob, main, plan_job
from model.config import parse_config
from tests.conftest import make_project, stack_config
from tests.helpers.job_specs import IMAGE
from tests.helpers.sharing_stacks import RAW, SOURCE, stack_file, teams_config

# Prices (model/catalog_rows.py, from the AWS price list, us-east-1): p4d.24xlarge $21.958/h
# for 8 A100s, $2.74475 a GPU; g6.2xlarge $0.9776/h for 1 L4, bought as spot at the cost
# settings' assumed 60% off (gpu-platform:cost.spot_discount): $0.39104.


def chosen(cfg, **asked) -> tuple[str, str]:
    spec = plan_job(cfg, TeamJob(IMAGE, ["train.py"], **{"nodes": 1, **asked}))
    (job,) = render(spec)
    return spec.pool.name, job["metadata"]["annotations"][POOL_CHOICE]


def test_a_one_gpu_job_takes_the_spot_g6_pool_not_the_first_and_dearest_p4d():
    pool, why = chosen(teams_config(), gpus_per_node=1)
    assert pool == "l4-spot"
    assert why.startswith("the cheapest pool that fits: $0.39/h (spot ESTIMATE: on-demand ")
    assert "; also fit: a100 $2.74/h" in why


def test_a_job_on_whole_nodes_is_priced_by_the_nodes_it_takes():
    """Without --gpus-per-node a job takes every GPU of its nodes: two g6.2xlarge nodes cost
    $0.78/h, two p4d $43.92/h."""
    pool, why = chosen(teams_config(), nodes=2)
    assert pool == "l4-spot"
    assert "$0.78/h" in why and "a100 $43.92/h" in why


def test_a_job_that_asks_for_more_gpu_memory_than_the_cheap_pool_has_goes_where_it_fits():
    """AWS EC2 User Guide: an L4 has 24 GB, a p4d's A100 40 GB."""
    pool, why = chosen(teams_config(), gpus_per_node=1, min_gpu_memory_gib=32)
    assert pool == "a100"
    assert why.startswith("the only pool that fits: $2.74/h (on-demand $21.958/h, us-east-1")
    assert "cannot hold it: l4-spot (L4 with 24 GiB, below the 32 GiB the job needs" in why


def test_a_multi_node_job_takes_a_pool_whose_nodes_share_a_fabric_before_a_cheaper_one():
    data = copy.deepcopy(RAW)
    data["gpu_node_groups"][0].update(efa=True, zone="us-east-1a")
    cfg = parse_config(data, SOURCE)
    pool, why = chosen(cfg, nodes=2, gpus_per_node=1)
    assert pool == "a100"
    assert "its nodes talk over efa, as a multi-node job needs" in why
    assert "also fit: l4-spot $0.78/h" in why
    # One node needs no fabric: the spot pool again.
    assert chosen(cfg, gpus_per_node=1)[0] == "l4-spot"


def test_pools_that_cost_the_same_keep_the_stacks_order_and_a_pool_asked_for_is_taken():
    """prod: two p5.48xlarge groups, a Capacity Block at $39.33/h (AWS Capacity Blocks pricing
    table the catalog carries) before on-demand at $55.04/h; staging has one pool."""
    assert chosen(stack_config("prod"), gpus_per_node=1)[0] == "h100-block"
    assert chosen(stack_config("prod"), gpus_per_node=1, pool="h100-ondemand") == (
        "h100-ondemand",
        "asked for with --pool",
    )


def test_an_existing_clusters_pools_carry_no_price_and_go_in_config_order():
    pool, why = chosen(stack_config("onprem"), gpus_per_node=1)
    assert pool == "a100"
    assert why.startswith("the first of the stack's pools that fits, in config order")


def test_the_cli_says_which_pool_and_why_on_stderr(tmp_path, capsys):
    root = make_project(tmp_path, {"teams": stack_file()})
    argv = ["--stack", "teams", "--nodes", "1", "--gpus-per-node", "1", "--image", IMAGE]
    assert main([*argv, "--out", str(tmp_path / "out"), "--", "python", "t.py"], root=root) == 0
    err = capsys.readouterr().err
    assert "pool l4-spot: the cheapest pool that fits: $0.39/h" in err
    (path,) = (tmp_path / "out").glob("*/job.yaml")
    (job,) = yaml.safe_load_all(path.read_text())
    assert job["metadata"]["annotations"][POOL_CHOICE].startswith("the cheapest pool that fits")


@pytest.mark.parametrize("cheap_first", [True, False])
def test_the_choice_does_not_depend_on_the_order_of_the_stacks_pools(cheap_first):
    data = copy.deepcopy(RAW)
    if cheap_first:
        data["gpu_node_groups"].reverse()
    assert chosen(parse_config(data, SOURCE), gpus_per_node=1)[0] == "l4-spot"
