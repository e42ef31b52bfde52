"""Every Helm release of a plan rendered offline, as `helm template` renders it: the pinned
chart from a local chart cache, the release's own values, name and namespace, the stack's
Kubernetes minor, and the API versions the stack installs (built-in ones gated by that minor and
every CRD the stack brings), so capability-gated templates render as on the cluster.

Rendering goes through helm-python-sdk (Helm v4's Go SDK behind a C ABI; no helm binary, no
cluster). A pinned chart missing from the cache is a warning that says how to get it, never an
error: the plan of the program stays whole without it. A stack's override (`charts`) renders
through the same path; one no cache holds, or whose chart changed a default the platform sets
whole, is refused like a bad value: it could not be checked as the pin is.
"""

from __future__ import annotations

import functools
import io
import json
import os
import re
import tarfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from model.config import NAMESPACE, ConfigError, stack_file
from model.stacks import ROOT
from model.versions import (
    BUILTIN_APIS_SINCE,
    CHARTS,
    CRDS_BESIDE_CHART,
    WHOLE_VALUES,
    kube_floor,
    minor_tuple,
    version_key,
)
from plan.charts import CACHE, LOCK, archive_name, read_lock
from plan.manifests import (
    Source,
    manifest_text,
    outline_source,
    outline_sources,
    parse_source,
    parse_sources,
)
from plan.model import Plan, PlannedResource

RELEASE = "kubernetes:helm.sh/v3:Release"
CRD = "CustomResourceDefinition"
# Where the plan looks for chart archives, in order: `make charts` fills .charts/ from each
# chart's repository; ../shared/helm/ holds the same pinned charts beside a checkout (tests, CI).
CHART_CACHES = (CACHE, ROOT.parent / "shared" / "helm")
# The CRD schemas every custom resource of a plan is validated against, at the pins; its README
# names each chart release they were taken from ("Versions to pin").
SHARED_CRDS = ROOT.parent / "shared" / "crds"


@dataclass(frozen=True)
class RenderedRelease:
    release: str  # the Pulumi resource name, e.g. prod-gpu-operator
    chart: str
    version: str
    namespace: str
    templates: tuple[Source, ...]  # rendered from templates, hooks included; no NOTES.txt
    crd_files: tuple[Source, ...]  # the charts' crds/ folders, installed before the templates

    @property
    def objects(self) -> tuple[dict[str, Any], ...]:
        return parse_sources(self.templates)

    @property
    def crds(self) -> tuple[dict[str, Any], ...]:
        return parse_sources(self.crd_files)

    def outlines(self) -> tuple[dict[str, Any], ...]:
        """Every object, CRDs first, each CRD without its schemas (plan/manifests.py)."""
        return outline_sources((*self.crd_files, *self.templates))

    def manifest(self) -> str:
        """The release as `helm template --include-crds` prints it."""
        return manifest_text((*self.crd_files, *self.templates))


@dataclass(frozen=True)
class Unrendered:
    """A release whose chart archive no cache holds: what it renders is unknown, not gone."""

    release: str
    chart: str
    version: str
    recorded: bool  # whether charts.lock.json holds the digest `make charts` checks it against

    def why(self) -> str:
        fill = (
            "fill it with `make charts`"
            if self.recorded
            else "fill it with `make charts-lock charts` where its repository is reachable "
            "(the lock records no digest for it, and `make charts` pulls only what it records)"
        )
        return (
            f"not rendered: chart {self.chart} version {self.version} is not in the cache; {fill}"
        )


@dataclass(frozen=True)
class Rendering:
    releases: tuple[RenderedRelease, ...]
    warnings: tuple[str, ...]
    api_versions: tuple[str, ...]
    unrendered: tuple[Unrendered, ...] = ()
    # Per release: why its custom resources were not checked against its own CRDs.
    unchecked_crds: dict[str, str] = field(default_factory=dict)

    def objects(self) -> list[tuple[RenderedRelease, dict[str, Any]]]:
        """Every rendered object, whole."""
        return [(r, obj) for r in self.releases for obj in (*r.crds, *r.objects)]

    def outlines(self) -> list[tuple[RenderedRelease, dict[str, Any]]]:
        """Every rendered object, CRDs without their schemas: what images, policies and the
        summary read."""
        return [(r, obj) for r in self.releases for obj in r.outlines()]


def chart_of(release: PlannedResource) -> tuple[str, str]:
    """(chart name, version): an OCI release names its chart by full reference."""
    return release.inputs["chart"].rsplit("/", 1)[-1], release.inputs["version"]


def find_archive(chart: str, version: str, caches: tuple[Path, ...]) -> Path | None:
    for cache in caches:
        path = cache / archive_name(chart, version)
        if path.is_file():
            return path
    return None


def cached_versions(chart: str, caches: tuple[Path, ...]) -> list[str]:
    """Every version of `chart` an archive in the caches holds."""
    found = {
        path.name.removeprefix(f"{chart}-").removesuffix(".tgz")
        for cache in caches
        for path in cache.glob(archive_name(chart, "*"))
    }
    return sorted(found, key=lambda v: (version_key(v), v))


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


def values_of(data: bytes) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """(the chart's own values.yaml, each subchart's by name) from a chart archive's bytes: what
    Helm merges a release's values over. A subchart sits unpacked under charts/<name>/, or
    packed as charts/<name>-<version>.tgz."""
    own: dict[str, Any] = {}
    subs: dict[str, dict[str, Any]] = {}
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for member in tar.getmembers():
            parts = member.name.split("/")
            if parts[1:] == ["values.yaml"]:
                own = yaml.safe_load(tar.extractfile(member).read()) or {}
            elif len(parts) == 4 and parts[1] == "charts" and parts[3] == "values.yaml":
                subs[parts[2]] = yaml.safe_load(tar.extractfile(member).read()) or {}
            elif len(parts) == 3 and parts[1] == "charts" and parts[2].endswith(".tgz"):
                packed = tar.extractfile(member).read()
                with tarfile.open(fileobj=io.BytesIO(packed)) as inner:
                    name = inner.getmembers()[0].name.split("/")[0]
                subs[name] = values_of(packed)[0]
    return own, subs


@functools.cache
def chart_values(archive: Path) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    return values_of(archive.read_bytes())


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


def missing_chart_warning(chart: str, version: str, caches: tuple[Path, ...]) -> str:
    pinned = CHARTS.get(chart)
    source = f" from {pinned.repository}" if pinned else ""
    return (
        f"chart {chart} {version} is not in the chart cache ({', '.join(map(str, caches))}): "
        f"its release is not rendered; `make charts` pulls it{source} into .charts/"
    )


def served_apis(crds: list[dict[str, Any]]) -> set[str]:
    """`group/version` and `group/version/Kind` of every version each CRD serves."""
    apis = set()
    for crd in crds:
        spec = crd.get("spec", {})
        kind = spec.get("names", {}).get("kind")
        for version in spec.get("versions", []):
            if version.get("served", True):
                gv = f"{spec.get('group')}/{version['name']}"
                apis |= {gv, f"{gv}/{kind}"}
    return apis


def existing_addon_apis(plan: Plan) -> set[str]:
    """What the cluster serves for the add-ons it runs itself (existing.addons): the CRDs the
    plan's `existing_addons` output tells the admin to confirm, each `group/version Kind`
    (infra/existing_addons.Crd)."""
    apis = set()
    for needs in (plan.outputs.get("existing_addons") or {}).values():
        for crd in needs["needs_crds"]:
            group_version, kind = crd.split(" ")
            apis |= {group_version, f"{group_version}/{kind}"}
    return apis


def crds_named(chart: str, version: str, readme: Path) -> bool:
    """Whether ../shared/crds/README.md says its schemas are the ones `chart` `version` serves:
    it names the release as `<chart>` <version> or by its git tag <chart>-chart-<version>."""
    text = readme.read_text() if readme.is_file() else ""
    named = rf"`{re.escape(chart)}` {re.escape(version)}(?![\w.])"
    tagged = rf"{re.escape(chart)}-chart-{re.escape(version)}(?![\w.])"
    return re.search(f"{named}|{tagged}", text) is not None


def unchecked_crds(release: RenderedRelease, crds: Path = SHARED_CRDS) -> str | None:
    """Why the release's custom resources were checked against other CRDs than its version's:
    the CRD groups it brings (in its chart, or applied from its release's tag) have their
    schemas in ../shared/crds taken from another release. None when the README names this one,
    or the release brings no group ../shared/crds holds."""
    brought = {o["spec"]["group"] for o in release.outlines() if o["kind"] == CRD}
    brought |= set(CRDS_BESIDE_CHART.get(release.chart, ()))
    groups = sorted(g for g in brought if (crds / g).is_dir())
    if not groups or crds_named(release.chart, release.version, crds / "README.md"):
        return None
    pinned = CHARTS[release.chart].version if release.chart in CHARTS else "the pin"
    return (
        f"CRDs not checked: the custom resources of {', '.join(groups)} were validated against "
        f"the CRDs of {release.chart} {pinned} (../shared/crds), not those of {release.chart} "
        f"{release.version}, until ../shared/crds holds them and its README names "
        f"`{release.chart}` {release.version}"
    )


def builtin_apis(minor: str) -> set[str]:
    """Built-in APIs that templates gate on and that the SDK's default list lacks, from the
    minor that serves them by default."""
    as_tuple = tuple(map(int, minor.split(".")))
    return {
        api
        for api, since in BUILTIN_APIS_SINCE.items()
        if as_tuple >= tuple(map(int, since.split(".")))
    }


@functools.lru_cache(maxsize=256)
def render_chart(
    archive: Path,
    values: str,
    name: str,
    namespace: str,
    minor: str,
    api_versions: tuple[str, ...],
) -> tuple[tuple[Source, ...], tuple[Source, ...]]:
    """(template files, crds/ files) of one release, each file with its text; `values` as
    JSON. Cached per process: every plan of a stack in one process (tests, the benchmark's
    repeats aside) renders each release once. The chart is loaded afresh for each render: a
    render drops the subcharts its values disable from the loaded chart (shared/helm/README.md,
    "Caution")."""
    import helm_python  # imported here: only a plan that renders pays for the Go runtime

    options = {
        "name": name,
        "namespace": namespace,
        "kube_version": f"v{minor}.0",
        "api_versions": list(api_versions),
    }
    with helm_python.Chart.load_archive(archive.read_bytes()) as chart:
        # Chart.render exposes neither kube_version nor api_versions; the native call takes both.
        rendered = helm_python._native.call_string(
            "helm_render", chart._raw(), values, json.dumps(options)
        )
        # Read after the render, as Helm installs them: without disabled subcharts' CRDs.
        crd_files = tuple((c["filename"], c["data"]) for c in chart.crds)
    templates = sorted(json.loads(rendered).items())
    kept = tuple((path, text) for path, text in templates if _has_content(path, text))
    return kept, crd_files


def _has_content(path: str, text: str) -> bool:
    return not path.endswith("NOTES.txt") and bool(text.strip())


def render_plan(plan: Plan, caches: tuple[Path, ...] = CHART_CACHES) -> Rendering:
    minor = plan.outputs["kubernetes_version"]
    releases = sorted(plan.of_type(RELEASE), key=lambda r: r.name)
    archives, warnings, unrendered = {}, [], []
    locked = read_lock(LOCK).get("charts", {})
    overrides = []
    for release in releases:
        chart, version = chart_of(release)
        path = find_archive(chart, version, caches)
        override = chart in CHARTS and version != CHARTS[chart].version
        if path is None and override:
            overrides.append(missing_override(chart, version, caches))
        elif path is None:
            warnings.append(missing_chart_warning(chart, version, caches))
            recorded = version in locked.get(chart, {})
            unrendered.append(Unrendered(release.name, chart, version, recorded))
        else:
            archives[release.urn] = path
            if override:
                overrides += replaced_defaults(chart, version, path, caches)
                refusal = kube_version_refusal(chart, version, path, minor)
                overrides += [refusal] if refusal else []
    if overrides:
        raise ConfigError(stack_file(plan.stack), overrides)
    present = [r for r in releases if r.urn in archives]
    declared = [o for o in plan.kubernetes_objects() if o["kind"] == CRD]
    apis = builtin_apis(minor) | served_apis(declared) | existing_addon_apis(plan)
    renders: dict[str, tuple[tuple[Source, ...], tuple[Source, ...]]] = {}
    failed: list[Exception] = []

    def render(release: PlannedResource, known: tuple[str, ...]):
        from helm_python.errors import HelmRenderError  # as render_chart imports the SDK

        inputs = release.inputs
        values = json.dumps(inputs.get("values", {}), sort_keys=True)
        try:
            return render_chart(
                archives[release.urn], values, inputs["name"], inputs["namespace"], minor, known
            )
        except HelmRenderError as error:  # a template's `fail`, e.g. on an API not known yet
            return error

    # The native library renders without the GIL, so releases render side by side, the
    # largest charts first so that no core is left with one big chart at the end.
    present.sort(key=lambda r: -archives[r.urn].stat().st_size)
    with ThreadPoolExecutor(max_workers=max(1, min(len(present), os.cpu_count() or 1))) as pool:
        # Twice at most: CRDs a chart brings (crds/ or templates) are only known after a first
        # render, and a template of another chart may gate on them, or `fail` without them
        # (jobset's ServiceMonitor without kube-prometheus-stack's CRD): such a failure counts
        # only once the APIs known stop growing.
        for _ in range(2):
            known = tuple(sorted(apis))
            results = list(pool.map(lambda r, k=known: render(r, k), present))
            failed = [result for result in results if isinstance(result, Exception)]
            renders = {
                r.urn: result
                for r, result in zip(present, results, strict=True)
                if not isinstance(result, Exception)
            }
            for templates, crd_files in renders.values():
                outlines = outline_sources((*crd_files, *templates))
                apis |= served_apis([o for o in outlines if o["kind"] == CRD])
            if tuple(sorted(apis)) == known:
                break
    if failed:
        raise failed[0]
    rendered = tuple(
        RenderedRelease(
            release.name,
            *chart_of(release),
            release.inputs["namespace"],
            *renders[release.urn],
        )
        for release in releases
        if release.urn in renders
    )
    notes = {r.release: note for r in rendered if (note := unchecked_crds(r)) is not None}
    return Rendering(rendered, tuple(warnings), tuple(sorted(apis)), tuple(unrendered), notes)


def clear_caches() -> None:
    """Forget every render and parse of this process: the benchmark times cold renders."""
    for cached in (render_chart, parse_source, outline_source):
        cached.cache_clear()


def write_rendered(rendering: Rendering, out_dir: Path) -> list[Path]:
    """out/<stack>/rendered/<release>.yaml as `helm template --include-crds` prints it, the
    chart's CRDs first as Helm installs them; stale files are removed."""
    folder = out_dir / "rendered"
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("*.yaml"):
        stale.unlink()
    written = []
    for release in rendering.releases:
        path = folder / f"{release.release}.yaml"
        path.write_text(release.manifest())
        written.append(path)
    return written


def format_rendered(rendering: Rendering) -> list[str]:
    """The plan's section: per release, its chart and what it renders, counted by kind."""
    if not rendering.releases:
        return []
    total = len(rendering.outlines())
    lines = ["", f"Rendered Helm releases: {total} objects in {len(rendering.releases)} releases"]
    for release in rendering.releases:
        kinds = Counter(o["kind"] for o in release.outlines())
        lines.append(
            f"  {release.release} ({release.chart} {release.version}, "
            f"namespace {release.namespace}): {sum(kinds.values())} objects"
        )
        lines.append("    " + ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items())))
        if release.release in rendering.unchecked_crds:
            lines.append(f"    {rendering.unchecked_crds[release.release]}")
    return lines
