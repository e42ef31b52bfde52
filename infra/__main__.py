"""Pulumi entry point: load the config, build the platform, export its outputs.

The Python language host runs this file with `runpy.run_path("infra")`, which puts only infra/
on sys.path; the project root goes in front so `infra` and `components` import as packages.
"""

import sys
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pulumi

from infra.composition import Platform
from infra.stack_warnings import config_warnings
from model.config import load_config
from model.cost import budget_warnings, cost_report

config = load_config()
today = date.today()
for message in [*config_warnings(config, today), *budget_warnings(config, today)]:
    pulumi.warn(message)
platform = Platform(pulumi.get_stack(), config)
for key, value in platform.outputs.items():
    pulumi.export(key, value)
pulumi.export("cost", cost_report(config, today))
