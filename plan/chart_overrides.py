"""What the plan checks of a stack's chart override (`gpu-platform:charts`) beyond the lock the
config checks: that a cache holds it, that its chart did not change a default the platform sets
whole, that its kubeVersion admits the stack's minor (each a refusal, as a bad value is), and
whose CRDs its custom resources were validated against (a note at the release, until
../shared/crds holds the new version's).
"""

from __future__ import annotations

import re
import tarfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from model.config import NAMESPACE
from model.stacks import ROOT
from model.versions import CHARTS, CRDS_BESIDE_CHART, WHOLE_VALUES, kube_floor, minor_tuple
from plan.charts import cached_versions, chart_values, find_archive
from plan.manifests import CRD

# The CRD schemas every custom resource of a plan is validated against, at the pins; its README
# names each chart release they were taken from ("Versions to pin").
SHARED_CRDS = ROOT.parent / "shared" / "crds"


def is_override(chart: str, version: str) -> bool:
    return chart in CHARTS and version != CHARTS[chart].version


def override_problems(
    chart: str, version: str, archive: Path | None, caches: tuple[Path, ...], minor: str
) -> list[str]:
    """Why the plan cannot take this override as it takes the pin; empty when it can."""
    if archive is None:
        return [missing_override(chart, version, caches)]
    refusal = kube_version_refusal(chart, version, archive, minor)
    return [*replaced_defaults(chart, version, archive, caches), *([refusal] if refusal else [])]


def missing_override(chart: str, version: str, caches: tuple[Path, ...]) -> str:
    """A stack's override (`charts`) no cache holds: it cannot be rendered and validated like
    the pin, so the plan refuses it rather than leave it unknown."""
    cached = ", ".join(cached_versions(chart, caches)) or "none"
    folders = ", ".join(map(str, caches))
    return (
        f"{NAMESPACE}:charts.{chart}.version: {version!r} is in no chart cache ({folders}"
        f"; cached versions of {chart}: {cached}), so the plan cannot render and validate it "
        "like the pin; `make charts` pulls it into .charts/ once model/charts.lock.json records "
        "it (`make charts-lock charts` where the repository is reachable records and pulls it)"
    )


def _at(values: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        values = values.get(key) if isinstance(values, dict) else None
    return values


def _changed_keys(pinned: Any, other: Any) -> str:
    """The top-level keys two defaults differ in; a YAML string is compared as what it holds."""
    old, new = (yaml.safe_load(v) if isinstance(v, str) else v for v in (pinned, other))
    if not (isinstance(old, dict) and isinstance(new, dict)):
        return "the whole value"
    return ", ".join(sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k)))


def replaced_defaults(
    chart: str, version: str, archive: Path, caches: tuple[Path, ...]
) -> list[str]:
    """An override's chart whose default differs, at a value the platform sets whole, from the
    pin's that value was written against: the new defaults would be dropped."""
    problems = []
    pin = CHARTS[chart].version
    for path, where in WHOLE_VALUES.get(chart, {}).items():
        key = f"{NAMESPACE}:charts.{chart}.version: {version!r}"
        pinned = find_archive(chart, pin, caches)
        if pinned is None:
            problems.append(
                f"{key}: the platform sets {'.'.join(path)} whole, written against {chart} "
                f"{pin}'s default ({where}), and no chart cache holds {chart} {pin} to compare "
                "this version's default with; `make charts` pulls it"
            )
            continue
        old, new = (_at(chart_values(a)[0], path) for a in (pinned, archive))
        if old != new:
            problems.append(
                f"{key}: the chart's default {'.'.join(path)} differs from {chart} {pin}'s "
                f"(changed: {_changed_keys(old, new)}), and the platform sets it whole, written "
                f"against {pin}'s ({where}): the new defaults would be dropped. Take this "
                "version in model/versions.py, with that value brought up to its defaults"
            )
    return problems


def kube_version_refusal(chart: str, version: str, archive: Path, minor: str) -> str | None:
    """An override whose chart's kubeVersion (its Chart.yaml) does not admit the stack's minor:
    Helm refuses to install it, and the offline render does not check it (shared/helm/README.md).
    The pins' are in model/versions.py CHART_KUBE_VERSIONS, checked by the config."""
    with tarfile.open(archive) as tar:
        meta = yaml.safe_load(tar.extractfile(f"{chart}/Chart.yaml").read()) or {}
    constraint = meta.get("kubeVersion")
    if constraint is None:
        return None
    floor = kube_floor(str(constraint))
    key = f"{NAMESPACE}:charts.{chart}.version: {version!r}"
    if floor is None:
        return (
            f"{key}: its Chart.yaml's kubeVersion {constraint!r} is not a single lower bound "
            f"the plan can check Kubernetes {minor} against; take this version in code, with "
            "its kubeVersion in model/versions.py CHART_KUBE_VERSIONS"
        )
    if minor_tuple(minor) < minor_tuple(floor):
        return (
            f"{key}: its Chart.yaml's kubeVersion {constraint!r} does not admit the stack's "
            f"Kubernetes {minor}, so Helm would refuse to install it; keep the pin "
            f"({CHARTS[chart].version}) until the cluster runs {floor} or later"
        )
    return None


def crds_named(chart: str, version: str, readme: Path) -> bool:
    """Whether ../shared/crds/README.md says its schemas are the ones `chart` `version` serves:
    it names the release as `<chart>` <version> or by its git tag <chart>-chart-<version>."""
    text = readme.read_text() if readme.is_file() else ""
    named = rf"`{re.escape(chart)}` {re.escape(version)}(?![\w.])"
    tagged = rf"{re.escape(chart)}-chart-{re.escape(version)}(?![\w.])"
    return re.search(f"{named}|{tagged}", text) is not None


def unchecked_crds(
    chart: str, version: str, objects: Iterable[dict[str, Any]], crds: Path = SHARED_CRDS
) -> str | None:
    """Why a release's custom resources were checked against other CRDs than its version's:
    the CRD groups it brings (among its rendered `objects`, or applied from its release's tag)
    have their schemas in ../shared/crds taken from another release. None when the README names
    this one, or the release brings no group ../shared/crds holds."""
    brought = {o["spec"]["group"] for o in objects if o["kind"] == CRD}
    brought |= set(CRDS_BESIDE_CHART.get(chart, ()))
    groups = sorted(g for g in brought if (crds / g).is_dir())
    if not groups or crds_named(chart, version, crds / "README.md"):
        return None
    pinned = CHARTS[chart].version if chart in CHARTS else "the pin"
    return (
        f"CRDs not checked: the custom resources of {', '.join(groups)} were validated against "
        f"the CRDs of {chart} {pinned} (../shared/crds), not those of {chart} {version}, until "
        f"../shared/crds holds them and its README names `{chart}` {version}"
    )
