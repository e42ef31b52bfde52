"""`python -m tools.offers <region>`: the catalog's instance types EC2 offers in a region, each
with the zones that offer it and its on-demand hourly price there, and the types it does not
offer. What to read before moving a stack to a region: the config model refuses the types
listed as not offered (model/config/layout.py, all of them in one run).

Zones are zone IDs (model/catalog_offerings.py says why); a price is the region's where one is
recorded (model/catalog_prices.py), else the us-east-1 rate marked NOT REGIONAL.
"""

from __future__ import annotations

import argparse
import sys

from model.catalog import CATALOG, PRICE_REGION, InstanceType, on_demand_rate
from model.catalog_offerings import OFFERINGS_AS_OF, OFFERINGS_READ
from model.catalog_prices import REGIONAL_PRICE_SOURCES
from model.config.regions import REGION_ZONES


def _gpus(row: InstanceType) -> str:
    return f"{row.gpus} x {row.gpu_model}" if row.gpus else "no GPU"


def _price(name: str, region: str) -> str:
    rate = on_demand_rate(name, region)
    if rate.usd is None:
        return "not sold on demand (Capacity Blocks)"
    said = f"${rate.usd}/h ({rate.region}, {rate.as_of})"
    return said if rate.regional else f"{said} NOT REGIONAL: no {region} price recorded"


def offers(region: str) -> list[str]:
    """The report's lines for a region the catalog read."""
    offered = [row for row in CATALOG.values() if row.offered_in(region)]
    lacking = [row.name for row in CATALOG.values() if not row.offered_in(region)]
    lines = [
        f"Catalog instance types EC2 offers in {region} (DescribeInstanceTypeOfferings as of "
        f"{OFFERINGS_AS_OF}; zones by zone ID: `aws ec2 describe-availability-zones --region "
        f"{region}` gives your account's name of each):"
    ]
    width = max((len(row.name) for row in offered), default=0)
    for row in offered:
        zones = " ".join(row.zones[region])
        lines.append(
            f"  {row.name:<{width}}  {_gpus(row):<10}  {zones:<32}  {_price(row.name, region)}"
        )
    if not offered:
        lines.append("  (none)")
    lines.append(f"Not offered in {region}: {', '.join(lacking) or 'none'}")
    lines.append(
        f"Prices: on demand, Linux; {PRICE_REGION} from model/catalog_rows.py, other regions "
        f"from model/catalog_prices.py ({'; '.join(REGIONAL_PRICE_SOURCES)})."
    )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.offers", description=__doc__)
    parser.add_argument("region", help="an AWS region, e.g. eu-west-1")
    region = parser.parse_args(argv).region
    if region not in REGION_ZONES:
        print(
            f"{region!r} is not an AWS region this project knows (model/config/regions.py); "
            f"known regions: {', '.join(REGION_ZONES)}",
            file=sys.stderr,
        )
        return 2
    if region not in OFFERINGS_READ:
        print(
            f"the catalog has no reading of {region}'s offerings (model/catalog_offerings.py "
            f"reads {', '.join(OFFERINGS_READ)}); `aws ec2 describe-instance-type-offerings "
            f"--region {region} --location-type availability-zone-id` lists them",
            file=sys.stderr,
        )
        return 2
    print("\n".join(offers(region)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
