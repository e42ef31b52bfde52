"""Every rate the cost estimate (model/cost.py) prices with, per region: the catalog types'
on-demand rates outside us-east-1 (us-east-1's are the rows', model/catalog_rows.py), and the
services' rates (NAT gateways, public IPv4 addresses, interface endpoints, EBS gp3, FSx for
Lustre, EKS) in each region a rate is recorded for. A region without a rate of some item is not
priced at another region's: the estimate lists that item as not priced and names what is missing.

Instances. Source: instances.vantage.sh's data (which it reads from the AWS Price List API's EC2
offer file), as tsaol/aws-gpu carries it in `data/<family>_instances.js` ("Auto-generated from
instances.vantage.sh data, Last updated: 2026-01-21"), read at commit 77fcd9fe1d06. Its
us-east-1 figures equal the catalog's own (model/catalog_rows.py) to the cent, which is why it
was taken; us-east-1 stays priced from the rows.

The system node types (m7i, m6i), which that data does not hold: the same instances.vantage.sh
data, `linux_on_demand`, as jpetrucciani/awl carries it in `data/ec2_instance_types.json`
("generated_at": "2026-05-13T23:22:41+00:00"), read at commit faac1318a02d; its us-east-1
figures equal the catalog's own too. eu-central-1 only is recorded.

Not recorded, so not priced there (the estimate says so): the system node types outside
us-east-1 and eu-central-1; p6-b200.48xlarge in ap-south-1, g5 in eu-south-2 and eu-west-3, g6e
in ap-northeast-3, ap-south-1, ap-south-2 and me-central-1 (the data has no price there);
p5e.48xlarge nowhere (Capacity Blocks only).
AWS reprices: check a figure against aws.amazon.com/ec2/pricing/on-demand before relying on it.
"""

from __future__ import annotations

from dataclasses import dataclass

GPU_PRICE_AS_OF = "2026-01-21"
GPU_PRICE_SOURCE = "instances.vantage.sh data via tsaol/aws-gpu 77fcd9fe1d06"
SYSTEM_PRICE_AS_OF = "2026-05-13"
SYSTEM_PRICE_SOURCE = "instances.vantage.sh data via jpetrucciani/awl faac1318a02d"

# Per instance type: `region:<USD per hour>` for each region (other than us-east-1) priced.
# fmt: off
_GPU_RATES: dict[str, str] = {
    "p4d.24xlarge": (
        "ap-northeast-1:30.09784 ap-northeast-2:30.41028 ap-south-1:26.3444 "
        "ap-southeast-2:28.54493 ca-central-1:25.25174 eu-central-1:27.43298 "
        "eu-north-1:23.71569 eu-west-1:23.71569 eu-west-2:28.54493 sa-east-1:35.5569 "
        "us-east-2:21.95764 us-west-2:21.95764"
    ),
    "p4de.24xlarge": (
        "ap-northeast-1:37.6223 ap-southeast-1:32.93646 eu-central-1:34.29122 "
        "il-central-1:35.57346 us-west-2:27.44705"
    ),
    "p5.48xlarge": (
        "ap-northeast-1:68.8 ap-northeast-2:75.9552 ap-south-1:66.048 ap-southeast-2:71.552 "
        "ap-southeast-3:75.9552 ca-central-1:63.296 eu-north-1:58.8928 eu-west-2:71.552 "
        "sa-east-1:92.4672 us-east-2:55.04 us-west-1:68.8 us-west-2:55.04"
    ),
    "p5en.48xlarge": (
        "ap-northeast-1:79.12 ap-northeast-2:87.34848 ap-south-1:75.9552 "
        "ap-southeast-3:87.34848 eu-north-1:67.72672 eu-south-2:68.35968 me-central-1:75.9552 "
        "us-east-2:63.296 us-west-1:79.12 us-west-2:63.296"
    ),
    "p6-b200.48xlarge": "us-east-2:113.9328 us-west-2:113.9328",
    "p3dn.24xlarge": "ap-northeast-1:42.783 eu-west-1:33.711 us-west-2:31.212",
    "g5.xlarge": (
        "ap-northeast-1:1.459 ap-northeast-2:1.237 ap-south-1:1.208 ap-southeast-2:1.308 "
        "ap-southeast-3:1.408 ca-central-1:1.117 eu-central-1:1.258 eu-north-1:1.067 "
        "eu-west-1:1.123 eu-west-2:1.277 il-central-1:1.17915 me-central-1:1.234 "
        "sa-east-1:1.71 us-east-2:1.006 us-west-2:1.006"
    ),
    "g5.2xlarge": (
        "ap-northeast-1:1.75776 ap-northeast-2:1.4903 ap-south-1:1.45536 "
        "ap-southeast-2:1.57584 ap-southeast-3:1.69632 ca-central-1:1.34573 "
        "eu-central-1:1.5156 eu-north-1:1.28549 eu-west-1:1.35296 eu-west-2:1.53849 "
        "il-central-1:1.42061 me-central-1:1.48669 sa-east-1:2.06016 us-east-2:1.212 "
        "us-west-2:1.212"
    ),
    "g5.4xlarge": (
        "ap-northeast-1:2.35528 ap-northeast-2:1.99691 ap-south-1:1.95009 "
        "ap-southeast-2:2.11152 ap-southeast-3:2.27295 ca-central-1:1.80319 "
        "eu-central-1:2.03081 eu-north-1:1.72247 eu-west-1:1.81287 eu-west-2:2.06148 "
        "il-central-1:1.90352 me-central-1:1.99206 sa-east-1:2.76048 us-east-2:1.624 "
        "us-west-2:1.624"
    ),
    "g5.8xlarge": (
        "ap-northeast-1:3.55033 ap-northeast-2:3.01012 ap-south-1:2.93955 "
        "ap-southeast-2:3.18289 ap-southeast-3:3.42623 ca-central-1:2.71811 "
        "eu-central-1:3.06122 eu-north-1:2.59644 eu-west-1:2.73271 eu-west-2:3.10745 "
        "il-central-1:2.86934 me-central-1:3.00282 sa-east-1:4.16111 us-east-2:2.448 "
        "us-west-2:2.448"
    ),
    "g5.12xlarge": (
        "ap-northeast-1:8.22609 ap-northeast-2:6.97442 ap-south-1:6.81091 "
        "ap-southeast-2:7.37473 ap-southeast-3:7.93854 ca-central-1:6.29784 "
        "eu-central-1:7.09282 eu-north-1:6.01593 eu-west-1:6.33167 eu-west-2:7.19994 "
        "il-central-1:6.64825 me-central-1:6.9575 sa-east-1:9.64127 us-east-2:5.672 "
        "us-west-2:5.672"
    ),
    "g5.16xlarge": (
        "ap-northeast-1:5.94042 ap-northeast-2:5.03653 ap-south-1:4.91846 "
        "ap-southeast-2:5.32561 ap-southeast-3:5.73277 ca-central-1:4.54794 "
        "eu-central-1:5.12204 eu-north-1:4.34437 eu-west-1:4.57237 eu-west-2:5.1994 "
        "il-central-1:4.80099 me-central-1:5.02432 sa-east-1:6.96239 us-east-2:4.096 "
        "us-west-2:4.096"
    ),
    "g5.24xlarge": (
        "ap-northeast-1:11.81123 ap-northeast-2:10.01404 ap-south-1:9.77928 "
        "ap-southeast-2:10.58882 ap-southeast-3:11.39836 ca-central-1:9.04259 "
        "eu-central-1:10.18405 eu-north-1:8.63782 eu-west-1:9.09117 eu-west-2:10.33786 "
        "il-central-1:9.54572 me-central-1:9.98976 sa-east-1:13.84318 us-east-2:8.144 "
        "us-west-2:8.144"
    ),
    "g5.48xlarge": (
        "ap-northeast-1:23.62246 ap-northeast-2:20.02809 ap-south-1:19.55855 "
        "ap-southeast-2:21.17764 ap-southeast-3:22.79672 ca-central-1:18.08518 "
        "eu-central-1:20.3681 eu-north-1:17.27564 eu-west-1:18.18233 eu-west-2:20.67572 "
        "il-central-1:19.09145 me-central-1:19.97951 sa-east-1:27.68636 us-east-2:16.288 "
        "us-west-2:16.288"
    ),
    "g6.xlarge": (
        "ap-northeast-1:1.1672 ap-northeast-2:0.9896 ap-south-1:0.9664 ap-southeast-2:1.0464 "
        "ca-central-1:0.8936 eu-central-1:1.0064 eu-central-2:1.085 eu-north-1:0.8536 "
        "eu-south-2:0.848 eu-west-2:1.0216 eu-west-3:1.0216 me-central-1:0.98824 "
        "sa-east-1:1.368 us-east-2:0.8048 us-west-2:0.8048"
    ),
    "g6.2xlarge": (
        "ap-northeast-1:1.41781 ap-northeast-2:1.20208 ap-south-1:1.1739 "
        "ap-southeast-2:1.27107 ca-central-1:1.08547 eu-central-1:1.22249 "
        "eu-central-2:1.31796 eu-north-1:1.03688 eu-south-2:1.03008 eu-west-2:1.24095 "
        "eu-west-3:1.24095 me-central-1:1.20043 sa-east-1:1.66173 us-east-2:0.9776 "
        "us-west-2:0.9776"
    ),
    "g6.4xlarge": (
        "ap-northeast-1:1.91903 ap-northeast-2:1.62704 ap-south-1:1.58889 "
        "ap-southeast-2:1.72042 ca-central-1:1.4692 eu-central-1:1.65466 eu-central-2:1.78389 "
        "eu-north-1:1.40343 eu-south-2:1.39423 eu-west-2:1.67965 eu-west-3:1.67965 "
        "me-central-1:1.6248 sa-east-1:2.24918 us-east-2:1.3232 us-west-2:1.3232"
    ),
    "g6.8xlarge": (
        "ap-northeast-1:2.92148 ap-northeast-2:2.47695 ap-south-1:2.41888 "
        "ap-southeast-2:2.61912 ca-central-1:2.23666 eu-central-1:2.519 eu-central-2:2.71574 "
        "eu-north-1:2.13655 eu-south-2:2.12253 eu-west-2:2.55705 eu-west-3:2.55705 "
        "me-central-1:2.47355 sa-east-1:3.42408 us-east-2:2.0144 us-west-2:2.0144"
    ),
    "g6.12xlarge": (
        "ap-northeast-1:6.67369 ap-northeast-2:5.65823 ap-south-1:5.52558 "
        "ap-southeast-2:5.98299 ca-central-1:5.10933 eu-central-1:5.75429 eu-central-2:6.2037 "
        "eu-north-1:4.88062 eu-south-2:4.8486 eu-west-2:5.8412 eu-west-3:5.8412 "
        "me-central-1:5.65045 sa-east-1:7.82181 us-east-2:4.6016 us-west-2:4.6016"
    ),
    "g6.16xlarge": (
        "ap-northeast-1:4.92637 ap-northeast-2:4.17678 ap-south-1:4.07886 "
        "ap-southeast-2:4.41652 ca-central-1:3.7716 eu-central-1:4.24769 eu-central-2:4.57943 "
        "eu-north-1:3.60277 eu-south-2:3.57913 eu-west-2:4.31184 eu-west-3:4.31184 "
        "me-central-1:4.17104 sa-east-1:5.77388 us-east-2:3.3968 us-west-2:3.3968"
    ),
    "g6.24xlarge": (
        "ap-northeast-1:9.68103 ap-northeast-2:8.20797 ap-south-1:8.01555 "
        "ap-southeast-2:8.67909 ca-central-1:7.41173 eu-central-1:8.34732 "
        "eu-central-2:8.99924 eu-north-1:7.07996 eu-south-2:7.03351 eu-west-2:8.47339 "
        "eu-west-3:8.47339 me-central-1:8.19669 sa-east-1:11.34651 us-east-2:6.6752 "
        "us-west-2:6.6752"
    ),
    "g6.48xlarge": (
        "ap-northeast-1:19.36206 ap-northeast-2:16.41595 ap-south-1:16.0311 "
        "ap-southeast-2:17.35817 ca-central-1:14.82346 eu-central-1:16.69464 "
        "eu-central-2:17.99849 eu-north-1:14.15992 eu-south-2:14.06702 eu-west-2:16.94678 "
        "eu-west-3:16.94678 me-central-1:16.39339 sa-east-1:22.69303 us-east-2:13.3504 "
        "us-west-2:13.3504"
    ),
    "g4dn.xlarge": (
        "af-south-1:0.698 ap-northeast-1:0.71 ap-northeast-2:0.647 ap-northeast-3:0.71 "
        "ap-south-1:0.579 ap-southeast-1:0.736 ap-southeast-2:0.684 ca-central-1:0.584 "
        "eu-central-1:0.658 eu-north-1:0.558 eu-south-1:0.616 eu-west-1:0.587 eu-west-2:0.615 "
        "eu-west-3:0.615 sa-east-1:0.894 us-east-2:0.526 us-west-1:0.631 us-west-2:0.526"
    ),
    "g4dn.2xlarge": (
        "af-south-1:0.998 ap-northeast-1:1.015 ap-northeast-2:0.925 ap-northeast-3:1.015 "
        "ap-south-1:0.828 ap-southeast-1:1.052 ap-southeast-2:0.978 ca-central-1:0.835 "
        "eu-central-1:0.94 eu-north-1:0.798 eu-south-1:0.88 eu-west-1:0.838 eu-west-2:0.88 "
        "eu-west-3:0.879 sa-east-1:1.278 us-east-2:0.752 us-west-1:0.902 us-west-2:0.752"
    ),
    "g4dn.4xlarge": (
        "af-south-1:1.597 ap-northeast-1:1.625 ap-northeast-2:1.481 ap-northeast-3:1.625 "
        "ap-south-1:1.325 ap-southeast-1:1.685 ap-southeast-2:1.566 ca-central-1:1.337 "
        "eu-central-1:1.505 eu-north-1:1.277 eu-south-1:1.41 eu-west-1:1.342 eu-west-2:1.409 "
        "eu-west-3:1.408 sa-east-1:2.046 us-east-2:1.204 us-west-1:1.445 us-west-2:1.204"
    ),
    "g4dn.8xlarge": (
        "af-south-1:2.887 ap-northeast-1:2.938 ap-northeast-2:2.677 ap-northeast-3:2.938 "
        "ap-south-1:2.395 ap-southeast-1:3.045 ap-southeast-2:2.83 ca-central-1:2.416 "
        "eu-central-1:2.72 eu-north-1:2.308 eu-south-1:2.547 eu-west-1:2.426 eu-west-2:2.546 "
        "eu-west-3:2.544 sa-east-1:3.698 us-east-2:2.176 us-west-1:2.611 us-west-2:2.176"
    ),
    "g4dn.12xlarge": (
        "af-south-1:5.19 ap-northeast-1:5.281 ap-northeast-2:4.812 ap-northeast-3:5.281 "
        "ap-south-1:4.306 ap-southeast-1:5.474 ap-southeast-2:5.087 ca-central-1:4.343 "
        "eu-central-1:4.89 eu-north-1:4.15 eu-south-1:4.58 eu-west-1:4.362 eu-west-2:4.577 "
        "eu-west-3:4.574 sa-east-1:6.649 us-east-2:3.912 us-west-1:4.694 us-west-2:3.912"
    ),
    "g4dn.16xlarge": (
        "af-south-1:5.774 ap-northeast-1:5.875 ap-northeast-2:5.353 ap-northeast-3:5.875 "
        "ap-south-1:4.791 ap-southeast-1:6.089 ap-southeast-2:5.659 ca-central-1:4.832 "
        "eu-central-1:5.44 eu-north-1:4.617 eu-south-1:5.095 eu-west-1:4.853 eu-west-2:5.092 "
        "eu-west-3:5.088 sa-east-1:7.397 us-east-2:4.352 us-west-1:5.222 us-west-2:4.352"
    ),
    "g4dn.metal": (
        "af-south-1:10.381 ap-northeast-1:10.562 ap-northeast-2:9.624 ap-northeast-3:10.562 "
        "ap-south-1:8.612 ap-southeast-1:10.948 ap-southeast-2:10.174 ca-central-1:8.687 "
        "eu-central-1:9.78 eu-north-1:8.3 eu-south-1:9.16 eu-west-1:8.724 eu-west-2:9.154 "
        "eu-west-3:9.148 sa-east-1:13.298 us-east-2:7.824 us-west-1:9.389 us-west-2:7.824"
    ),
    "g6e.xlarge": (
        "ap-northeast-1:2.699 ap-northeast-2:2.288 eu-central-1:2.327 eu-north-1:1.974 "
        "eu-south-2:1.961 us-east-2:1.861 us-west-2:1.861"
    ),
    "g6e.2xlarge": (
        "ap-northeast-1:3.25168 ap-northeast-2:2.75652 eu-central-1:2.8035 eu-north-1:2.37822 "
        "eu-south-2:2.36256 us-east-2:2.24208 us-west-2:2.24208"
    ),
    "g6e.12xlarge": (
        "ap-northeast-1:15.21742 ap-northeast-2:12.90014 eu-central-1:13.12002 "
        "eu-north-1:11.12975 eu-south-2:11.05645 us-east-2:10.49264 us-west-2:10.49264"
    ),
    "g6e.24xlarge": (
        "ap-northeast-1:21.84956 ap-northeast-2:18.52234 eu-central-1:18.83806 "
        "eu-north-1:15.98037 eu-south-2:15.87513 us-east-2:15.06559 us-west-2:15.06559"
    ),
    "g6e.48xlarge": (
        "ap-northeast-1:43.69912 ap-northeast-2:37.04468 eu-central-1:37.67612 "
        "eu-north-1:31.96075 eu-south-2:31.75027 us-east-2:30.13118 us-west-2:30.13118"
    ),
}
_SYSTEM_RATES: dict[str, str] = {
    "m7i.xlarge": "eu-central-1:0.2415",
    "m7i.2xlarge": "eu-central-1:0.483",
    "m6i.xlarge": "eu-central-1:0.23",
}
# fmt: on


# ------------------------------------------------------------------------- service rates


@dataclass(frozen=True)
class Price:
    """A published rate: `usd` per `unit` in `region` (ALL_REGIONS: one rate in every region),
    read from `source` as of `as_of`."""

    usd: float
    unit: str
    region: str
    as_of: str
    source: str


ALL_REGIONS = "all regions"


def by_region(*prices: Price) -> dict[str, Price]:
    return {price.region: price for price in prices}


def rate_in(rates: dict[str, Price], region: str) -> Price | None:
    """The rate of `rates` that applies in `region`, or None: none is recorded there."""
    return rates.get(region) or rates.get(ALL_REGIONS)


REGIONAL_PRICE_SOURCES = (GPU_PRICE_SOURCE, SYSTEM_PRICE_SOURCE)


def regional_on_demand(name: str, region: str) -> Price | None:
    """The on-demand hourly rate of `name` in `region` (not us-east-1), with its date and
    source, or None where none is recorded."""
    for rates, as_of, source in (
        (_GPU_RATES, GPU_PRICE_AS_OF, GPU_PRICE_SOURCE),
        (_SYSTEM_RATES, SYSTEM_PRICE_AS_OF, SYSTEM_PRICE_SOURCE),
    ):
        for entry in rates.get(name, "").split():
            where, usd = entry.split(":")
            if where == region:
                return Price(float(usd), "per instance-hour", region, as_of, source)
    return None


# The eu-central-1 rates below are the AWS Price List API's (the offer and usage type are named),
# as public cost reports that queried it quote them; each gives the day it was read.
_EUC1_QUERY = "AWS Price List API as queried 2026-08-26 for eu-central-1"

# Amazon VPC pricing page, NAT gateway: per gateway-hour; its per-GB processing charge is data
# transfer, which the estimate leaves out. eu-central-1: AmazonEC2 offer, usage type
# EUC1-NatGateway-Hours, $0.052, flat in every hour of a cost and usage report of 2026-09.
NAT_GATEWAY_HOURLY = by_region(
    Price(0.045, "per gateway-hour", "us-east-1", "2026-11-30", "aws.amazon.com/vpc/pricing"),
    Price(
        0.052,
        "per gateway-hour",
        "eu-central-1",
        "2026-09-22",
        "AWS Price List API, AmazonEC2, usage type EUC1-NatGateway-Hours",
    ),
)
# Every public IPv4 address, an Elastic IP of a NAT gateway included, from 2024-02-01: $0.005
# per address-hour in every AWS region (AWS announcement "New - AWS Public IPv4 Address Charge",
# July 2023; AmazonVPC usage types USE1-/EUC1-PublicIPv4:InUseAddress both read $0.005).
PUBLIC_IPV4_HOURLY = by_region(
    Price(
        0.005,
        "per address-hour",
        ALL_REGIONS,
        "2026-08-26",
        "AWS Public IPv4 Address Charge (all regions); AmazonVPC PublicIPv4:InUseAddress",
    ),
)
# AWS PrivateLink pricing: an interface endpoint is billed per hour in each Availability Zone it
# is provisioned in (a subnet each); AmazonVPC usage type <REGION>-VpcEndpoint-Hours. A gateway
# endpoint (S3) is free. Per-GB processing is data transfer, left out.
INTERFACE_ENDPOINT_HOURLY = by_region(
    Price(
        0.01,
        "per endpoint-zone-hour",
        "us-east-1",
        "2026-08-20",
        "AWS Price List API, AmazonVPC, usage type USE1-VpcEndpoint-Hours",
    ),
    Price(
        0.012,
        "per endpoint-zone-hour",
        "eu-central-1",
        "2026-09-22",
        "AWS Price List API, AmazonVPC, usage type EUC1-VpcEndpoint-Hours",
    ),
)
# Amazon EBS pricing, gp3: storage per GB-month, and IOPS above 3,000 and throughput above
# 125 MB/s per volume, per provisioned IOPS-month and MB/s-month (the baseline is free; the EBS
# pricing page's gp3 example). AmazonEC2 usage types EBS:VolumeUsage.gp3,
# EBS:VolumeP-IOPS.gp3 and EBS:VolumeP-Throughput.gp3 (EUC1- prefixed in eu-central-1).
GP3_BASELINE_IOPS = 3000
GP3_BASELINE_THROUGHPUT_MBPS = 125
GP3_GB_MONTH = by_region(
    Price(
        0.08,
        "per GB-month",
        "us-east-1",
        "2026-08-20",
        "AWS Price List API, AmazonEC2, usage type EBS:VolumeUsage.gp3",
    ),
    Price(
        0.0952, "per GB-month", "eu-central-1", "2026-08-26", f"{_EUC1_QUERY}, EBS:VolumeUsage.gp3"
    ),
)
# IOPS and throughput above the baseline: us-east-1's as the EBS pricing page gives them for N.
# Virginia (quoted by saisci.com, "gp2 vs gp3 Cost Comparison", 2021, and unchanged in the
# Price List API answers public pricing clients record); eu-central-1's are the Price List API's
# answers for EUC1-EBS:VolumeP-IOPS.gp3 and EUC1-EBS:VolumeP-Throughput.gp3 as such a client's
# tests record them (read 2026-12-04). Not yet re-read from the offer file: check before
# trusting a figure that provisions more than the baseline.
GP3_IOPS_MONTH = by_region(
    Price(0.005, "per IOPS-month", "us-east-1", "2026-12-04", "aws.amazon.com/ebs/pricing"),
    Price(
        0.006,
        "per IOPS-month",
        "eu-central-1",
        "2026-12-04",
        "AWS Price List API, AmazonEC2, usage type EUC1-EBS:VolumeP-IOPS.gp3",
    ),
)
GP3_THROUGHPUT_MONTH = by_region(
    Price(0.04, "per MB/s-month", "us-east-1", "2026-12-04", "aws.amazon.com/ebs/pricing"),
    Price(
        0.0476,
        "per MB/s-month",
        "eu-central-1",
        "2026-12-04",
        "AWS Price List API, AmazonEC2, usage type EUC1-EBS:VolumeP-Throughput.gp3",
    ),
)
# FSx for Lustre pricing page, SSD storage per GB-month by deployment type and per-TiB
# throughput tier (MB/s/TiB). On 2026-11-30 the us-east-1 SCRATCH_2 and PERSISTENT_2-125 rates
# were confirmed by pages quoting it; the 250, 500 and 1000 tiers were not: check them against
# the page before trusting a PERSISTENT_2 figure. Backups are billed apart (left out). No other
# region's rate is recorded: an FSx file system elsewhere is listed as not priced.
FSX_LUSTRE_GB_MONTH: dict[tuple[str, int], dict[str, Price]] = {
    (deployment, tier): by_region(
        Price(usd, "per GB-month", "us-east-1", "2026-11-30", "aws.amazon.com/fsx/lustre/pricing")
    )
    for deployment, tier, usd in (
        ("SCRATCH_2", 200, 0.140),
        ("PERSISTENT_2", 125, 0.145),
        ("PERSISTENT_2", 250, 0.210),
        ("PERSISTENT_2", 500, 0.340),
        ("PERSISTENT_2", 1000, 0.600),
    )
}
# Amazon EKS pricing page: per cluster-hour in standard support, and in extended support (a
# minor past its standard support; model/versions.py says when each minor gets there), the same
# in every region. The $0.60 is also AWS's notice of 2024 to extended-support customers
# ("charged at $0.60 per cluster hour"), quoted in github.com/WGBH-MLA/chowda issue 217.
EKS_STANDARD_HOURLY = by_region(
    Price(0.10, "per cluster-hour", ALL_REGIONS, "2026-11-30", "aws.amazon.com/eks/pricing")
)
EKS_EXTENDED_HOURLY = by_region(
    Price(0.60, "per cluster-hour", ALL_REGIONS, "2026-11-30", "aws.amazon.com/eks/pricing")
)
# EC2 Capacity Blocks for ML pricing page, "Effective Instance Hourly Rate" (reservation fee per
# instance-hour, paid up front for the whole block). The table read is the one AWS published to
# be replaced on 2025-01-01: AWS reprices blocks regularly, so this rate is old and indicative;
# set gpu-platform:cost.capacity_block_hourly_usd to the rate of the block actually bought.
# p4d blocks are sold in us-east-2 and us-west-2 only (EC2 User Guide, "Capacity Blocks for
# ML"), so us-east-1 has no p4d rate and such a block must be priced in the config.
CAPACITY_BLOCK_HOURLY: dict[str, dict[str, Price]] = {
    "p5.48xlarge": by_region(
        Price(
            39.33,
            "per instance-hour",
            "us-east-1",
            "2024-Q4 table (repriced 2025-01-01)",
            "aws.amazon.com/ec2/capacityblocks/pricing",
        )
    ),
}
