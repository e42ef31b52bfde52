"""The plan's cost estimate and budget check, against figures worked out by hand.

Every expected figure is a literal computed on paper from the published rate it names (the AWS
us-east-1 price list of 2026-07-20 for instances; the FSx, VPC, EKS and Capacity Block pricing
pages for the rest) and 730 hours a month, never read back from the catalog or model/cost.py.

What every us-east-1 stack also pays, by hand (AWS Price List API, 2026-08-20: gp3 $0.08 per
GB-month, usage type EBS:VolumeUsage.gp3, interface endpoint $0.01 per zone-hour,
USE1-VpcEndpoint-Hours; EBS pricing page, N. Virginia: $0.04 per MB/s-month above gp3's free
125 MB/s; public IPv4 $0.005 an hour, AWS Public IPv4 Address Charge):
- a node's root volume (250 MB/s, 3,000 IOPS): 50 GiB (system) 4.00 + 125 x 0.04 = 9.00 a
  month, 200 GiB (GPU default) 16.00 + 5.00 = 21.00;
- Prometheus's 50 GiB 4.00 and the Pushgateway's 2 GiB 0.16 (baseline gp3: storage only);
- 3 interface endpoints in each of 3 zones: 9 x 0.01 x 730 = 65.70; one NAT gateway's address:
  0.005 x 730 = 3.65.
"""

from __future__ import annotations

from datetime import date

import pytest

from model.config import ConfigError, PlatformConfig, parse_config
from model.config.node_join import canary_pools
from model.cost import (
    budget_warnings,
    cost_lines,
    cost_report,
    estimated_monthly_usd,
)
from plan.cli import format_plan
from plan.cost_change import format_cost_change
from plan.cost_text import format_cost
from plan.engine import run_program
from plan.model import build_plan
from tests.conftest import make_project, planned, stack_config
from tests.helpers.bad_stacks import ADMIN
from tests.helpers.canary_stacks import CANARY_STACKS, canary_env_and_config
from tests.helpers.leaves import walk
from tests.helpers.network_stacks import existing_vpc_config, existing_vpc_plan
from tests.helpers.varied_stacks import GB200_POOL, gb200_plan

TODAY = date(2026, 11, 30)
SOURCE = "stacks/Pulumi.test.yaml"


def aws_config(*groups: dict, **sections) -> PlatformConfig:
    raw = {
        "aws": {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1b", "us-east-1c"]},
        "cluster": {"admin_principal_arns": [ADMIN]},
        "gpu_node_groups": list(groups),
        **sections,
    }
    return parse_config(raw, SOURCE)


def group(name: str, types: list[str], max_size: int, **settings) -> dict:
    return {
        "name": name,
        "instance_types": types,
        "scaling": {"min_size": 0, "max_size": max_size},
        **settings,
    }


def line(cfg: PlatformConfig, starts: str, today: date = TODAY):
    (found,) = [x for x in cost_lines(cfg, today) if x.item.startswith(starts)]
    return found


# ------------------------------------------------------------------------ node groups


def test_eight_p5_on_demand_cost_the_price_list_rate_times_730_hours():
    # p5.48xlarge on demand, us-east-1 price list 2026-07-20: $55.04/h. 8 × 55.04 = 440.32/h;
    # × 730 h = 321,433.60 a month. At min size 0: nothing.
    cfg = aws_config(group("h100", ["p5.48xlarge"], 8))
    found = line(cfg, "GPU node group h100")
    assert (found.hourly_min, found.hourly_max) == (0, 440.32)
    assert (found.monthly_min, found.monthly_max) == (0, 321433.60)
    assert "on-demand $55.04/h, us-east-1, 2026-07-20" in found.basis


def test_hours_per_month_is_the_configured_month():
    # 8 × 55.04 × 720 h = 317,030.40.
    cfg = aws_config(group("h100", ["p5.48xlarge"], 8), cost={"hours_per_month": 720})
    assert line(cfg, "GPU node group h100").monthly_max == 317030.40


def test_spot_is_an_estimate_at_the_configured_discount_off_the_dearest_listed_type():
    # Dearest of g5.2xlarge $1.212, g6e.2xlarge $2.242 (price list 2026-07-20): g6e.2xlarge.
    # 2.242 × (1 − 0.75) = 0.5605/h a node; × 4 = 2.242/h; × 730 = 1,636.66 a month.
    cfg = aws_config(
        group("spot", ["g5.2xlarge", "g6e.2xlarge"], 4, capacity="spot"),
        cost={"spot_discount": 0.75},
    )
    found = line(cfg, "GPU node group spot (g6e.2xlarge, spot)")
    assert found.estimate is True
    assert found.hourly_max == 2.242
    assert found.monthly_max == 1636.66
    assert found.basis.startswith("spot ESTIMATE: on-demand $2.242/h less the assumed 75%")


def test_a_reservation_costs_the_on_demand_rate_whether_its_instances_run_or_not():
    # p4d.24xlarge on demand $21.958/h; 2 reserved: 43.916/h; × 730 = 32,058.68.
    cfg = aws_config(
        group(
            "a100",
            ["p4d.24xlarge"],
            2,
            capacity="reservation",
            capacity_reservation_id="cr-0a1b2c3d4e5f60718",
        )
    )
    found = line(cfg, "GPU node group a100")
    assert (found.hourly_max, found.monthly_max) == (43.916, 32058.68)
    assert "whether it runs or not" in found.basis


def test_a_capacity_block_outside_us_east_1_is_not_priced_at_the_us_east_1_rate():
    """The catalog's one block rate is us-east-1's: an eu-west-2 block is not priced, and the
    line names the key that would price it."""
    cfg = aws_config(
        group(
            "block",
            ["p5.48xlarge"],
            2,
            capacity="capacity_block",
            capacity_reservation_id="cr-0a1b2c3d4e5f60718",
        ),
        aws={"region": "eu-west-2", "zones": ["eu-west-2a", "eu-west-2b"]},
    )
    block = line(cfg, "GPU node group block")
    assert block.hourly_max is None
    assert block.basis == (
        "no published eu-west-2 Capacity Block rate for p5.48xlarge is recorded: set "
        "gpu-platform:cost.capacity_block_hourly_usd.p5.48xlarge"
    )


def test_a_p5_capacity_block_takes_the_published_block_rate():
    # EC2 Capacity Blocks pricing, p5.48xlarge, US East (N. Virginia): $39.33 per instance-hour.
    # 4 × 39.33 = 157.32/h; × 730 = 114,843.60.
    cfg = aws_config(
        group(
            "block",
            ["p5.48xlarge"],
            4,
            capacity="capacity_block",
            capacity_reservation_id="cr-0a1b2c3d4e5f60718",
        )
    )
    found = line(cfg, "GPU node group block")
    assert (found.hourly_max, found.monthly_max) == (157.32, 114843.60)
    assert "Capacity Block $39.33/instance-h, us-east-1" in found.basis
    assert "paid up front" in found.basis


def test_a_configured_block_rate_replaces_the_catalogs():
    # 2 × 31.464 = 62.928/h; × 730 = 45,937.44.
    cfg = aws_config(
        group(
            "block",
            ["p5.48xlarge"],
            2,
            capacity="capacity_block",
            capacity_reservation_id="cr-0a1b2c3d4e5f60718",
        ),
        cost={"capacity_block_hourly_usd": {"p5.48xlarge": 31.464}},
    )
    assert line(cfg, "GPU node group block").monthly_max == 45937.44


def test_a_block_without_a_rate_is_left_out_of_the_total_and_names_the_key_to_set():
    # p4d blocks are not sold in us-east-1 (EC2 User Guide, "Capacity Blocks for ML").
    cfg = aws_config(
        group(
            "block",
            ["p4d.24xlarge"],
            2,
            capacity="capacity_block",
            capacity_reservation_id="cr-0a1b2c3d4e5f60718",
        )
    )
    found = line(cfg, "GPU node group block")
    assert found.monthly_max is None
    assert "gpu-platform:cost.capacity_block_hourly_usd.p4d.24xlarge" in found.basis
    report = cost_report(cfg, TODAY)
    assert [x["item"] for x in report["unpriced"]] == [
        "GPU node group block (p4d.24xlarge, capacity_block)"
    ]
    assert (
        "  GPU node group block (p4d.24xlarge, capacity_block): not priced, not in the total"
        in (format_cost(report))
    )
    # What is left at max: system nodes 588.67 and their 4 root volumes 36.00, the block's 2
    # root volumes 42.00 (EBS, billed apart from the block), Prometheus 4.00, Pushgateway 0.16,
    # 1 NAT 32.85 and its address 3.65, endpoints 65.70, EKS 73.00 (no FSx by default).
    assert report["total_monthly_max"] == 846.03


def test_system_nodes_are_priced_at_min_and_max_size():
    # Default system group: m7i.xlarge $0.2016/h, 2 to 4 nodes: 294.34 .. 588.67 a month.
    found = line(aws_config(), "system nodes (m7i.xlarge)")
    assert (found.hourly_min, found.hourly_max) == (0.4032, 0.8064)
    assert (found.monthly_min, found.monthly_max) == (294.34, 588.67)


# ------------------------------------------------------------------------- services


@pytest.mark.parametrize(
    "fsx, item, monthly",
    [
        # FSx for Lustre pricing, us-east-1: SCRATCH_2 $0.140 per GB-month; 1,200 × 0.14 = 168.
        ({}, "FSx for Lustre SCRATCH_2 200 MB/s/TiB, 1200 GiB", 168.00),
        # PERSISTENT_2 at 125 MB/s/TiB (its default tier): $0.145; 2,400 × 0.145 = 348.
        (
            {"deployment_type": "PERSISTENT_2", "storage_capacity_gib": 2400},
            "FSx for Lustre PERSISTENT_2 125 MB/s/TiB, 2400 GiB",
            348.00,
        ),
        # PERSISTENT_2 at 500: $0.340; 9,600 × 0.34 = 3,264.
        (
            {
                "deployment_type": "PERSISTENT_2",
                "storage_capacity_gib": 9600,
                "per_unit_storage_throughput": 500,
            },
            "FSx for Lustre PERSISTENT_2 500 MB/s/TiB, 9600 GiB",
            3264.00,
        ),
    ],
)
def test_fsx_is_priced_per_gb_month_by_deployment_type_and_tier(fsx, item, monthly):
    cfg = aws_config(storage={"fsx": fsx})
    found = line(cfg, "FSx for Lustre")
    assert found.item == item
    assert found.monthly_min == found.monthly_max == monthly


@pytest.mark.parametrize("nats, count, monthly", [("single", 1, 32.85), ("per_zone", 3, 98.55)])
def test_nat_gateways_are_priced_per_gateway_hour(nats, count, monthly):
    # Amazon VPC pricing, us-east-1: $0.045 per NAT gateway-hour; × 730 = 32.85 each.
    found = line(aws_config(network={"nat_gateways": nats}), "NAT gateways")
    assert found.item == f"NAT gateways ({count}, {nats})"
    assert found.monthly_max == monthly


def test_the_estimate_counts_the_nat_gateways_the_plan_declares(aws_plan):
    cfg = stack_config(aws_plan.stack)
    count = len(aws_plan.of_type("aws:ec2/natGateway:NatGateway"))
    assert line(cfg, "NAT gateways").item.startswith(f"NAT gateways ({count},")


def test_an_existing_vpc_costs_no_nat_gateway_it_does_not_declare():
    # Its NAT gateways (if any) are its owner's: the plan declares none, the estimate counts none.
    config = {key.removeprefix("gpu-platform:"): v for key, v in existing_vpc_config().items()}
    cfg = parse_config(config, "byovpc")
    assert existing_vpc_plan().of_type("aws:ec2/natGateway:NatGateway") == []
    assert [x.item for x in cost_lines(cfg, TODAY) if x.item.startswith("NAT")] == []


def test_eks_costs_ten_cents_an_hour_and_sixty_in_extended_support():
    # Amazon EKS pricing: $0.10 per cluster-hour (73.00 a month), $0.60 in extended support
    # (438.00). 1.35 leaves standard support on 2027-03-27 (model/versions.py, EKS calendar).
    cfg = aws_config(cluster={"admin_principal_arns": [ADMIN], "kubernetes_version": "1.35"})
    assert line(cfg, "EKS control plane").monthly_max == 73.00
    later = line(cfg, "EKS control plane", date(2027, 4, 1))
    assert later.monthly_max == 438.00
    assert "extended support" in later.item


# --------------------------------------------------------------------- totals and budget


def test_prod_totals_at_min_and_max_size_add_up_by_hand():
    # Shipped prod: system 294.34 .. 588.67; h100-block 4 × 39.33 × 730 = 114,843.60 at max;
    # h100-ondemand 8 × 55.04 × 730 = 321,433.60 at max; 3 NATs 98.55; EKS 73.00; FSx
    # PERSISTENT_2 500, 9,600 GiB: 3,264.00. Min: the block at its count, min_size 4, 114,843.60
    # + 294.34 + 98.55 + 73 + 3,264 = 118,573.49, and 2 system root volumes 18.00 and 4 block
    # ones 84.00, Prometheus and Pushgateway 4.16, 3 addresses 10.95, endpoints 65.70:
    # 118,756.30. Max: 440,301.42 + root volumes 4 × 9 + 4 × 21 + 8 × 21 = 288 + 4.16 + 10.95
    # + 65.70 = 440,670.23.
    report = cost_report(stack_config("prod"), TODAY)
    assert report["total_monthly_min"] == 118756.30
    assert report["total_monthly_max"] == 440670.23
    assert estimated_monthly_usd(stack_config("prod"), TODAY) == 440670.23


def test_prod_at_desired_size_is_what_runs_from_day_one():
    # Shipped prod: the block group at 4, its count, at min, desired and max size (4 × 39.33 ×
    # 730 = 114,843.60), the on-demand group at min_size 0 (no desired_size set), system nodes
    # at min_size 2 (294.34); with NATs, EKS and FSx as at min: 3,729.89 + 114,843.60 =
    # 118,573.49; with the 2 system and 4 block root volumes (18.00 + 84.00), Prometheus and
    # Pushgateway 4.16, 3 addresses 10.95 and the endpoints 65.70: 118,756.30.
    report = cost_report(stack_config("prod"), TODAY)
    assert report["total_monthly_desired"] == 118756.30
    assert report["total_hourly_desired"] == 162.68  # 5.24 + 4 × 39.33 + 4 × 21 / 730
    block = line(stack_config("prod"), "GPU node group h100-block")
    assert (block.monthly_min, block.monthly_desired, block.monthly_max) == (114843.6,) * 3
    text = "\n".join(format_cost(report))
    # One figure: min, desired and max agree.
    assert (
        "  GPU node group h100-block (p5.48xlarge, capacity_block): $157.320/h, $114,843.60/month\n"
    ) in text
    assert (
        "  total: $162.680 / $162.680 / $603.660/h, $118,756.30 / $118,756.30 / $440,670.23/month "
        "(730 h)\n"
    ) in text
    # An item that does not scale shows one figure: 3 NAT gateways × $0.045 × 730 = 98.55.
    assert "  NAT gateways (3, per_zone): $0.135/h, $98.55/month\n" in text


def test_a_desired_size_is_priced_between_min_and_max():
    # m7i.xlarge $0.2016/h; a system group of 2 .. 6 starting at 3: 3 × 0.2016 × 730 = 441.50.
    cfg = aws_config(system_nodes={"scaling": {"min_size": 2, "max_size": 6, "desired_size": 3}})
    found = line(cfg, "system nodes (m7i.xlarge)")
    assert (found.monthly_min, found.monthly_desired, found.monthly_max) == (294.34, 441.5, 883.01)


def test_a_removed_group_saves_its_cost_and_an_added_one_costs_its_own():
    # Shipped prod without its on-demand group, against shipped prod: 8 × 55.04 × 730 =
    # 321,433.60 at max comes back, and its 8 root volumes' 8 × 21.00 = 168.00; its min and
    # desired size are 0, so nothing there.
    cfg = stack_config("prod")
    smaller = cfg.model_copy(update={"gpu_node_groups": cfg.gpu_node_groups[:1]})
    before, after = cost_report(cfg, TODAY), cost_report(smaller, TODAY)
    text = "\n".join(format_cost_change(before, after))
    assert (
        "  GPU node group h100-ondemand (p5.48xlarge, on_demand): "
        "$0.00 / $0.00 / $321,433.60 -> (none)\n"
        "      -$321,433.60/month at max size\n"
        "  root volumes of GPU node group h100-ondemand (200 GiB gp3 each): "
        "$0.00 / $0.00 / $168.00 -> (none)\n"
        "      -$168.00/month at max size\n"
        "  total: $118,756.30 / $118,756.30 / $440,670.23 -> $118,756.30 / $118,756.30 / "
        "$119,068.63\n"
        "      -$321,601.60/month at max size"
    ) in text
    assert "+$321,433.60/month at max size" in "\n".join(format_cost_change(after, before))


def test_an_earlier_plan_without_desired_figures_is_compared_where_it_has_them():
    """A plan folder from before the desired size was priced: its lines have no key and no
    desired figure. Items match by their words; the desired size is not compared."""
    now = cost_report(stack_config("prod"), TODAY)
    earlier = {**now, "lines": [], "unpriced": []}
    del earlier["total_monthly_desired"]
    for line in now["lines"]:
        old = {k: v for k, v in line.items() if k not in ("key", "monthly_desired")}
        if line["key"] == "system_nodes":  # one m7i.xlarge fewer at max: 588.67 - 0.2016 × 730
            old["monthly_max"] = 441.50
        earlier["lines"].append(old)
    earlier["total_monthly_max"] = round(now["total_monthly_max"] - 147.17, 2)
    assert format_cost_change(earlier, now) == [
        "",
        "Cost change (USD/month at node groups' min / desired / max size):",
        "  system nodes (m7i.xlarge): $294.34 / n/a / $441.50 -> $294.34 / $294.34 / $588.67",
        "      +$147.17/month at max size",
        "  total: $118,756.30 / n/a / $440,523.06 -> $118,756.30 / $118,756.30 / $440,670.23",
        "      +$147.17/month at max size",
        "  the earlier plan has no figures at desired size: not compared there",
    ]


def test_a_diff_between_unpriced_plans_has_no_cost_part_and_a_half_priced_one_says_so():
    onprem = cost_report(stack_config("onprem"), TODAY)
    assert format_cost_change(onprem, onprem) == []
    assert format_cost_change(None, cost_report(stack_config("prod"), TODAY))[-1] == (
        "  not compared: the earlier plan is not priced (no cost estimate)"
    )


def test_over_budget_warns_with_the_figures_and_the_key():
    # One p5 on demand at max: 40,179.20 + system 588.67 + 1 NAT 32.85 + EKS 73 = 40,873.72,
    # and root volumes 4 × 9.00 + 21.00, Prometheus and Pushgateway 4.16, the NAT's address
    # 3.65, endpoints 65.70: 41,004.23 a month, over a 20,000 budget; at min 294.34 + 32.85 +
    # 73 + 2 × 9.00 + 4.16 + 3.65 + 65.70 = 491.70.
    cfg = aws_config(group("h100", ["p5.48xlarge"], 1), cost={"monthly_budget_usd": 20000})
    (warning,) = budget_warnings(cfg, TODAY)
    assert warning.startswith(
        "gpu-platform:cost.monthly_budget_usd: the estimate at max size, $41,004.23/month, "
        "is over the budget of $20,000.00 (at min size $491.70)"
    )
    assert cost_report(cfg, TODAY)["over_budget"] is True


def test_within_budget_or_without_one_nothing_warns():
    cfg = aws_config(group("h100", ["p5.48xlarge"], 1), cost={"monthly_budget_usd": 50000})
    assert budget_warnings(cfg, TODAY) == []
    assert budget_warnings(aws_config(group("h100", ["p5.48xlarge"], 1)), TODAY) == []
    assert "over_budget" not in cost_report(aws_config(), TODAY)


def test_an_over_budget_stack_plans_with_the_warning(tmp_path):
    stack = {
        "gpu-platform:aws": {"region": "us-east-1", "zones": ["us-east-1a", "us-east-1b"]},
        "gpu-platform:cluster": {"admin_principal_arns": [ADMIN]},
        "gpu-platform:cost": {"monthly_budget_usd": 100},
    }
    plan = build_plan(run_program("tight", make_project(tmp_path, {"tight": stack})))
    assert any(w.startswith("gpu-platform:cost.monthly_budget_usd") for w in plan.warnings)
    assert "budget: $100.00/month; at max size OVER BUDGET" in format_plan(plan)


# -------------------------------------------------------------------- plan and on-prem


def test_every_aws_plan_prints_its_cost_section_and_exports_it(aws_plan):
    text = format_plan(aws_plan)
    assert (
        "Cost estimate (USD at node groups' min / desired / max size; one figure where they "
        "agree; desired is what runs from day one):"
    ) in text
    assert "  left out: data transfer (NAT gateway and endpoint processing per GB" in text
    assert aws_plan.outputs["cost"]["priced"] is True


def test_shipped_stacks_stay_within_their_budgets():
    for stack in ("dev", "staging", "prod"):
        assert planned(stack).outputs["cost"]["over_budget"] is False, stack


def test_onprem_has_no_aws_prices_and_says_so():
    cfg = stack_config("onprem")
    assert estimated_monthly_usd(cfg, TODAY) is None
    report = cost_report(cfg, TODAY)
    assert format_cost(report)[2] == (
        "  provider existing: the cluster runs on your own machines; no AWS prices apply"
    )
    assert planned("onprem").outputs["cost"] == report


def test_onprem_burst_is_priced_at_its_quota_on_the_workers_and_checked_against_its_budget():
    # The shipped onprem `burst` queue: 32 GPUs on p5.48xlarge spot = 4 nodes (8 H100 each,
    # AWS P5 page). us-east-1 on-demand $55.04/h (the catalog's dated price) less the default
    # 60 % spot discount: 4 x 55.04 x 0.4 x 730 h = $64,286.72 a month, under its $120,000.
    report = cost_report(stack_config("onprem"), TODAY)
    (burst,) = report["burst"]
    assert burst["queue"] == "burst"
    assert burst["monthly_max"] == 64286.72
    assert burst["monthly_min"] == 0
    assert burst["monthly_budget_usd"] == 120000
    assert "at most $64,286.72/month; budget $120,000.00: within budget" in format_cost(report)[3]


def test_a_burst_over_its_budget_is_warned_of_by_name():
    cfg = stack_config("onprem")
    queues = [q.model_dump() for q in cfg.scheduling.cluster_queues]
    queues[1]["burst"]["monthly_budget_usd"] = 50000
    raw = cfg.model_dump(exclude_unset=True)
    raw["scheduling"]["cluster_queues"] = queues
    over = PlatformConfig.model_validate(raw)
    (warning,) = budget_warnings(over, TODAY)
    assert "burst of queue burst may spend $64,286.72/month" in warning
    assert "$50,000.00" in warning
    assert budget_warnings(cfg, TODAY) == []


# -------------------------------------------------------------------------- config


@pytest.mark.parametrize(
    "cost, path",
    [
        ({"spot_discount": True}, "cost.spot_discount"),
        ({"spot_discount": 1}, "cost.spot_discount"),
        ({"monthly_budget_usd": 0}, "cost.monthly_budget_usd"),
        ({"hours_per_month": 800}, "cost.hours_per_month"),
        ({"capacity_block_hourly_usd": {"p9.huge": 1.0}}, "cost.capacity_block_hourly_usd"),
    ],
)
def test_bad_cost_settings_are_refused(cost, path):
    with pytest.raises(ConfigError) as error:
        aws_config(cost=cost)
    assert path in str(error.value)


def test_a_budget_on_an_existing_cluster_is_refused():
    raw = {
        "provider": "existing",
        "existing": {"name": "lab", "kubeconfig_path": "~/.kube/lab.yaml"},
        "cost": {"monthly_budget_usd": 1000},
    }
    with pytest.raises(ConfigError) as error:
        parse_config(raw, SOURCE)
    assert "cost.monthly_budget_usd" in str(error.value)
    assert "only valid with provider aws" in str(error.value)


def test_a_stack_without_a_budget_or_a_price_exports_no_null():
    # The plan renders no value as null (DESIGN, "No silent nulls"): unknowns are listed instead.
    cfg = aws_config(
        group(
            "block",
            ["p4d.24xlarge"],
            2,
            capacity="capacity_block",
            capacity_reservation_id="cr-0a1b2c3d4e5f60718",
        )
    )
    assert None not in list(walk(cost_report(cfg, TODAY)))


# ------------------------------------------------------------------------ regions

EU_WEST_1 = {"region": "eu-west-1", "zones": ["eu-west-1a", "eu-west-1b"]}


def eu_west_1(*groups: dict, **sections) -> PlatformConfig:
    return aws_config(*groups, aws=EU_WEST_1, **sections)


def test_an_eu_west_1_group_is_priced_at_eu_west_1_rates():
    """Issue 26: an eu-west-1 stack was priced at us-east-1 rates. g5.12xlarge in eu-west-1:
    $6.33167/h, p4d.24xlarge $23.71569/h (instances.vantage.sh data of 2026-01-21 from the AWS
    price list; us-east-1's are $5.672 and $21.958). 4 x 6.33167 = 25.3267/h; 2 x 23.71569 x
    730 = 34,624.91 a month; spot at the default 60% off: 0.4 x 25.3267 = 10.1307/h."""
    cfg = eu_west_1(
        group("a10g", ["g5.12xlarge"], 4),
        group("a100", ["p4d.24xlarge"], 2),
        group("cheap", ["g5.12xlarge"], 4, capacity="spot"),
    )
    a10g = line(cfg, "GPU node group a10g")
    assert a10g.hourly_max == 25.3267
    assert "on-demand $6.33167/h, eu-west-1, 2026-01-21" in a10g.basis
    assert a10g.region == "eu-west-1"
    assert line(cfg, "GPU node group a100").monthly_max == 34624.91
    assert line(cfg, "GPU node group cheap").hourly_max == 10.1307


def test_the_dearest_type_of_a_group_is_the_dearest_in_its_region():
    # us-east-1: p4d.24xlarge $21.958 < p3dn.24xlarge $31.212; eu-west-1: p4d $23.71569 <
    # p3dn $33.711 (vantage data, 2026-01-21). Picked by the region's rates either way.
    cfg = eu_west_1(group("mixed", ["p4d.24xlarge", "p3dn.24xlarge"], 1))
    assert line(cfg, "GPU node group mixed").hourly_max == 33.711


def test_what_a_region_has_no_rate_of_is_not_priced_and_says_what_is_missing():
    """No eu-west-1 rate of m7i (system nodes), NAT gateways, gp3 volumes, interface endpoints
    or FSx for Lustre is recorded: each is a line of its own, not priced and out of the totals,
    naming the rate it lacks; none is priced at us-east-1's. Public IPv4 addresses and EKS have
    one rate in every region."""
    cfg = eu_west_1(
        group("a10g", ["g5.12xlarge"], 4),
        storage={"fsx": {"storage_capacity_gib": 1200}},
        cost={"monthly_budget_usd": 100000},
    )
    report = cost_report(cfg, TODAY)
    unpriced = {x["key"]: x["why"] for x in report["unpriced"]}
    assert sorted(unpriced) == [
        "gpu_node_groups.a10g.root_volumes",
        "network.nat_gateways",
        "network.vpc_endpoints",
        "storage.fsx",
        "system_nodes",
        "system_nodes.root_volumes",
        "volumes.prometheus",
        "volumes.pushgateway",
    ]
    assert unpriced["system_nodes"] == (
        "NOT PRICED: no eu-west-1 rate of m7i.xlarge on demand is recorded "
        "(model/catalog_prices.py); another region's is not used"
    )
    assert (
        "no eu-west-1 rate of gp3 storage and gp3 throughput"
        in unpriced["system_nodes.root_volumes"]
    )
    assert sorted(x["key"] for x in report["lines"]) == [
        "cluster",
        "gpu_node_groups.a10g",
        "network.public_ipv4",
    ]
    text = "\n".join(format_cost(report))
    assert "  NAT gateways (1, single): not priced, not in the total\n" in text
    assert "us-east-1" not in text
    # The budget is checked against a total without them, and says so.
    assert "at max size within budget (the total leaves out 8 items not priced)" in text


def test_scheduled_self_test_nodes_are_priced_at_the_stack_regions_rate():
    """The scheduled self-test's node on a pool that scales from zero, in eu-central-1:
    g5.12xlarge at $7.09282/h there (instances.vantage.sh data of 2026-01-21), its 200 GiB root
    volume at $0.0952 per GB-month and $0.0476 per MB/s-month (AWS Price List API queried for
    eu-central-1, 2026-08-26). Its pricing once called the region-aware helpers without the
    region, a TypeError on any AWS stack that asks the schedule to provision nodes
    (tests/suite/test_user_stacks.py met it). In eu-west-1, whose gp3 rate is not recorded,
    the line is not priced and says so, rather than dropped."""
    image = "210987654321.dkr.ecr.eu-central-1.amazonaws.com/selftest@sha256:" + "0" * 64
    selftest = {"image": image, "mode": "off", "schedule": {"provision_nodes": True}}
    cfg = aws_config(
        group("a10g", ["g5.12xlarge"], 4),
        aws={"region": "eu-central-1", "zones": ["eu-central-1a", "eu-central-1b"]},
        selftest=selftest,
    )
    scheduled = line(cfg, "scheduled self-test nodes on a10g")
    assert "on-demand $7.09282/h, eu-central-1, 2026-01-21" in scheduled.basis
    assert "200 GiB at $0.0952 per GB-month + 125 MB/s at $0.0476 per MB/s-month" in (
        scheduled.basis
    )
    elsewhere = line(eu_west_1(group("a10g", ["g5.12xlarge"], 4), selftest=selftest), "scheduled")
    assert elsewhere.monthly_max is None
    assert "no eu-west-1 rate of gp3 storage" in elsewhere.basis


@pytest.mark.parametrize("stack", CANARY_STACKS)
def test_a_canary_group_is_listed_at_nothing_a_month_and_priced_per_roll(stack):
    """A tested pool's canary group (selftest.node_join.canary) holds no node at rest: the
    month's totals are those of the stack without it, and its line says what a roll costs: one
    node for the check (selftest.node_join.timeout_minutes' default, 30) and the scale-down
    wait (gpu_node_groups[].scale_down_unneeded_minutes' default, 30, where the stack keeps
    it)."""
    _, cfg = canary_env_and_config(stack)
    off = cfg.model_copy(
        update={
            "selftest": cfg.selftest.model_copy(
                update={"node_join": cfg.selftest.node_join.model_copy(update={"canary": False})}
            )
        }
    )
    today = date(2026, 12, 5)
    with_canary, without = cost_report(cfg, today), cost_report(off, today)
    canaries = [line for line in with_canary["lines"] if line["key"].endswith(".canary")]
    assert [line["key"] for line in canaries] == [
        f"gpu_node_groups.{p.name}.canary" for p in canary_pools(cfg)
    ]
    for line in canaries:
        assert {line[f"monthly_{size}"] for size in ("min", "desired", "max")} == {0}
        assert "per roll" in line["basis"] and "the check (30 min)" in line["basis"]
    for size in ("min", "desired", "max"):
        assert with_canary[f"total_monthly_{size}"] == without[f"total_monthly_{size}"]


def test_a_gb200_block_is_unpriced_rather_than_given_an_invented_rate():
    """P6e-GB200 is sold only as UltraServer Capacity Blocks (EC2 User Guide, "Launch instances
    using Capacity Blocks") and no AWS page read here gives its rate: the group is listed as
    unpriced, with the key that prices it, and no line charges it."""
    report = gb200_plan().outputs["cost"]
    unpriced = {x["key"]: x["why"] for x in report["unpriced"]}
    assert unpriced[f"gpu_node_groups.{GB200_POOL}"] == (
        "no published us-east-1 Capacity Block rate for p6e-gb200.36xlarge is recorded: set "
        "gpu-platform:cost.capacity_block_hourly_usd.p6e-gb200.36xlarge"
    )
    assert f"gpu_node_groups.{GB200_POOL}" not in {line["key"] for line in report["lines"]}
