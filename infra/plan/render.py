"""Every Helm release of a plan rendered offline, as `helm template` renders it: the pinned
chart from a local chart cache, the release's own values, name and namespace, the stack's
Kubernetes minor, and the API versions the stack installs (built-in ones gated by that minor and
every CRD the stack brings), so capability-gated templates render as on the cluster.

Rendering goes through helm-python-sdk (Helm v4's Go SDK behind a C ABI; no helm binary, no
cluster). A chart missing from the cache is a warning that says how to get it, never an error:
the plan of the program stays whole without it.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from infra.plan.engine import ROOT
from infra.plan.model import Plan, PlannedResource
from infra.versions import BUILTIN_APIS_SINCE, CHARTS

RELEASE = "kubernetes:helm.sh/v3:Release"
CRD = "CustomResourceDefinition"
# Where the plan looks for chart archives, in order: `make charts` fills .charts/ from each
# chart's repository; ../shared/helm/ holds the same pinned charts beside a checkout (tests, CI).
CHART_CACHES = (ROOT / ".charts", ROOT.parent / "shared" / "helm")


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """YAML as Helm reads it: a plain `=` (an enum value in some CRDs) is a string, where
    PyYAML's YAML 1.1 resolver makes it the unconstructible `value` tag."""


_Loader.add_constructor("tag:yaml.org,2002:value", yaml.SafeLoader.construct_scalar)


@dataclass(frozen=True)
class RenderedRelease:
    release: str  # the Pulumi resource name, e.g. prod-gpu-operator
    chart: str
    version: str
    namespace: str
    objects: tuple[dict[str, Any], ...]  # rendered from templates, hooks included
    crds: tuple[dict[str, Any], ...]  # from the charts' crds/ folders, installed before them


@dataclass(frozen=True)
class Rendering:
    releases: tuple[RenderedRelease, ...]
    warnings: tuple[str, ...]
    api_versions: tuple[str, ...]

    def objects(self) -> list[tuple[RenderedRelease, dict[str, Any]]]:
        return [(r, obj) for r in self.releases for obj in (*r.crds, *r.objects)]


def chart_of(release: PlannedResource) -> tuple[str, str]:
    """(chart name, version): an OCI release names its chart by full reference."""
    return release.inputs["chart"].rsplit("/", 1)[-1], release.inputs["version"]


def archive_name(chart: str, version: str) -> str:
    return f"{chart}-{version}.tgz"


def find_archive(chart: str, version: str, caches: tuple[Path, ...]) -> Path | None:
    for cache in caches:
        path = cache / archive_name(chart, version)
        if path.is_file():
            return path
    return None


def missing_chart_warning(chart: str, version: str, caches: tuple[Path, ...]) -> str:
    pinned = CHARTS.get(chart)
    source = f" from {pinned.repository}" if pinned else ""
    return (
        f"chart {chart} {version} is not in the chart cache ({', '.join(map(str, caches))}): "
        f"its release is not rendered; `make charts` pulls it{source} into .charts/"
    )


def parse_manifests(manifests: dict[str, str]) -> list[dict[str, Any]]:
    """The objects of a render, in template order; NOTES.txt and empty documents left out."""
    objects = []
    for path in sorted(manifests):
        if path.endswith("NOTES.txt"):
            continue
        for doc in yaml.load_all(manifests[path], Loader=_Loader):
            if isinstance(doc, dict) and doc.get("kind"):
                objects.append(doc)
    return objects


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


def builtin_apis(minor: str) -> set[str]:
    """Built-in APIs that templates gate on and that the SDK's default list lacks, from the
    minor that serves them by default."""
    as_tuple = tuple(map(int, minor.split(".")))
    return {
        api
        for api, since in BUILTIN_APIS_SINCE.items()
        if as_tuple >= tuple(map(int, since.split(".")))
    }


def render_chart(
    archive: bytes,
    values: dict[str, Any],
    name: str,
    namespace: str,
    minor: str,
    api_versions: list[str],
) -> tuple[str, list[dict[str, str]]]:
    """(rendered manifests as the SDK's JSON, crds/ files) of one release. The chart is loaded
    afresh: a render drops the subcharts its values disable from the loaded chart
    (shared/helm/README.md, "Caution")."""
    import helm_python  # imported here: only a plan that renders pays for the Go runtime

    options = {
        "name": name,
        "namespace": namespace,
        "kube_version": f"v{minor}.0",
        "api_versions": api_versions,
    }
    with helm_python.Chart.load_archive(archive) as chart:
        # Chart.render exposes neither kube_version nor api_versions; the native call takes both.
        rendered = helm_python._native.call_string(
            "helm_render", chart._raw(), json.dumps(values), json.dumps(options)
        )
        # Read after the render, as Helm installs them: without disabled subcharts' CRDs.
        return rendered, chart.crds


def render_plan(plan: Plan, caches: tuple[Path, ...] = CHART_CACHES) -> Rendering:
    minor = plan.outputs["kubernetes_version"]
    releases = sorted(plan.of_type(RELEASE), key=lambda r: r.name)
    archives, warnings = {}, []
    for release in releases:
        chart, version = chart_of(release)
        path = find_archive(chart, version, caches)
        if path is None:
            warnings.append(missing_chart_warning(chart, version, caches))
        else:
            archives[release.urn] = path.read_bytes()
    declared = [o for o in plan.kubernetes_objects() if o["kind"] == CRD]
    apis = builtin_apis(minor) | served_apis(declared)
    renders: dict[str, tuple[list, list]] = {}
    parsed: dict[str, list[dict[str, Any]]] = {}  # parsing, not rendering, is the cost

    def parse(text: str) -> list[dict[str, Any]]:
        if text not in parsed:
            parsed[text] = parse_manifests(json.loads(text))
        return parsed[text]

    # Twice at most: CRDs a chart renders from templates (not crds/) are only known after a
    # first render, and a template of another chart may gate on them.
    for _ in range(2):
        known = sorted(apis)
        for release in releases:
            if release.urn in archives:
                text, crd_files = render_chart(
                    archives[release.urn],
                    release.inputs.get("values", {}),
                    release.inputs["name"],
                    release.inputs["namespace"],
                    minor,
                    known,
                )
                crd_text = json.dumps({f"{i:04d}": c["data"] for i, c in enumerate(crd_files)})
                renders[release.urn] = (parse(text), parse(crd_text))
        for objects, crds in renders.values():
            apis |= served_apis(crds + [o for o in objects if o["kind"] == CRD])
        if sorted(apis) == known:
            break
    rendered = tuple(
        RenderedRelease(
            release.name,
            *chart_of(release),
            release.inputs["namespace"],
            tuple(renders[release.urn][0]),
            tuple(renders[release.urn][1]),
        )
        for release in releases
        if release.urn in renders
    )
    return Rendering(rendered, tuple(warnings), tuple(sorted(apis)))


def write_rendered(rendering: Rendering, out_dir: Path) -> list[Path]:
    """out/<stack>/rendered/<release>.yaml, the chart's CRDs first as Helm installs them; stale
    files are removed."""
    folder = out_dir / "rendered"
    folder.mkdir(parents=True, exist_ok=True)
    for stale in folder.glob("*.yaml"):
        stale.unlink()
    written = []
    for release in rendering.releases:
        path = folder / f"{release.release}.yaml"
        docs = (*release.crds, *release.objects)
        path.write_text(yaml.safe_dump_all(docs, sort_keys=True))
        written.append(path)
    return written


def format_rendered(rendering: Rendering) -> list[str]:
    """The plan's section: per release, its chart and what it renders, counted by kind."""
    if not rendering.releases:
        return []
    total = sum(len(r.objects) + len(r.crds) for r in rendering.releases)
    lines = ["", f"Rendered Helm releases: {total} objects in {len(rendering.releases)} releases"]
    for release in rendering.releases:
        kinds = Counter(o["kind"] for o in (*release.crds, *release.objects))
        lines.append(
            f"  {release.release} ({release.chart} {release.version}, "
            f"namespace {release.namespace}): {sum(kinds.values())} objects"
        )
        lines.append("    " + ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items())))
    return lines
