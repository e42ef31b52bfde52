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
import json
import os
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from model.config import ConfigError, stack_file
from model.stacks import ROOT
from model.versions import (
    BUILTIN_APIS_SINCE,
    CHARTS,
)
from model.warning_kinds import warning
from plan.chart_overrides import is_override, override_problems, unchecked_crds
from plan.charts import CACHE, LOCK, find_archive, read_lock
from plan.manifests import (
    CRD,
    Source,
    manifest_text,
    outline_source,
    outline_sources,
    parse_source,
    parse_sources,
)
from plan.model import Plan, PlannedResource

RELEASE = "kubernetes:helm.sh/v3:Release"
# Where the plan looks for chart archives, in order: `make charts` fills .charts/ from each
# chart's repository; ../shared/helm/ holds the same pinned charts beside a checkout (tests, CI).
CHART_CACHES = (CACHE, ROOT.parent / "shared" / "helm")


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


def missing_chart_warning(chart: str, version: str, caches: tuple[Path, ...]) -> str:
    pinned = CHARTS.get(chart)
    source = f" from {pinned.repository}" if pinned else ""
    return warning(
        "chart-not-cached",
        f"chart {chart} {version} is not in the chart cache ({', '.join(map(str, caches))}): "
        f"its release is not rendered; `make charts` pulls it{source} into .charts/",
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
        if is_override(chart, version):
            overrides += override_problems(chart, version, path, caches, minor)
        if path is None and not is_override(chart, version):
            warnings.append(missing_chart_warning(chart, version, caches))
            recorded = version in locked.get(chart, {})
            unrendered.append(Unrendered(release.name, chart, version, recorded))
        elif path is not None:
            archives[release.urn] = path
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
    notes = {
        r.release: note
        for r in rendered
        if (note := unchecked_crds(r.chart, r.version, r.outlines())) is not None
    }
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
