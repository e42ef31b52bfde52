"""`make charts` (`python -m plan.charts pull [--dest .charts]`): every pinned chart, and every
version a stack file takes ahead of its pin (`gpu-platform:charts`), kept only when its sha256
matches the digest its repository publishes and the one review committed in
model/charts.lock.json (so a chart re-published under the same version fails). `make
charts-lock` (`record`) writes the lock: those same versions, each under its chart. Never
../shared/helm's digests: those archives are repackaged (its README, "Digests"). The plan finds
and reads archives in its caches through the same module (`find_archive`, `chart_values`).
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import io
import json
import os
import re
import sys
import tarfile
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from dataclasses import replace
from datetime import date
from pathlib import Path
from typing import Any

import yaml

from model.config import ConfigError
from model.config.loading import read_yaml
from model.stacks import ROOT
from model.versions import CHART_LOCK, CHARTS, Chart, read_chart_lock, version_key

CACHE = ROOT / ".charts"
LOCK = CHART_LOCK
LOCK_NOTE = (
    "Filled by `make charts-lock` on a machine that reaches the chart repositories (index.yaml "
    "or OCI layer digests): each pinned chart, and each version a stack file overrides one to "
    "(gpu-platform:charts), under its chart by version. Until a version is recorded here, "
    "`make charts` refuses it, a stack cannot take it, and the plan renders the pins from "
    "../shared/helm."
)
RECORD_HINT = "run `make charts-lock` where the repository is reachable, review and commit the lock"
# The OCI image manifest (OCI image spec) and Helm's chart layer (helm.sh, OCI registries).
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
HELM_LAYER = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
TIMEOUT_S = 60.0


class ChartError(Exception):
    """A chart that cannot be pulled or verified; the message says what to do."""


def archive_name(chart: str, version: str) -> str:
    return f"{chart}-{version}.tgz"


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


def label(chart: Chart) -> str:
    return f"{chart.name} {chart.version} from {chart.repository}"


def _get(url: str, timeout: float, headers: dict[str, str] | None = None) -> bytes:
    request = urllib.request.Request(url)
    for key, value in (headers or {}).items():
        # Not carried over a redirect: registries send blobs to storage that refuses a bearer.
        request.add_unredirected_header(key, value)
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return response.read()


def fetch_http(chart: Chart, timeout: float, indexes: dict[str, dict]) -> tuple[bytes, str]:
    """The archive at the first URL of the chart's index.yaml entry, and the entry's digest."""
    if chart.repository not in indexes:  # one download per repository
        text = _get(f"{chart.repository.rstrip('/')}/index.yaml", timeout)
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # indexes run to tens of MB
        indexes[chart.repository] = yaml.load(text, Loader=loader) or {}
    entries = indexes[chart.repository].get("entries", {}).get(chart.name, [])
    entry = next((e for e in entries if str(e.get("version")) == chart.version), None)
    if entry is None:
        offered = ", ".join(str(e.get("version")) for e in entries[:8]) or "none"
        raise ChartError(
            f"{label(chart)}: version {chart.version} is not in the repository's index.yaml "
            f"(newest offered: {offered}); fix the pin in model/versions.py CHARTS, or the "
            "stack file's override (gpu-platform:charts)"
        )
    if not entry.get("urls") or not entry.get("digest"):
        raise ChartError(f"{label(chart)}: its index entry has no url or no digest to check")
    # Helm resolves a relative url against the repository's URL as a folder.
    url = urllib.parse.urljoin(chart.repository.rstrip("/") + "/", entry["urls"][0])
    return _get(url, timeout), str(entry["digest"]).removeprefix("sha256:")


def _bearer(chart: Chart, challenge: str, timeout: float) -> dict[str, str]:
    """An anonymous pull token from the registry's `WWW-Authenticate: Bearer` challenge."""
    params = dict(re.findall(r'(\w+)="([^"]*)"', challenge))
    if not challenge.lower().startswith("bearer") or "realm" not in params:
        raise ChartError(f"{label(chart)}: the registry wants credentials: {challenge}")
    query = urllib.parse.urlencode({k: v for k, v in params.items() if k in ("service", "scope")})
    answer = json.loads(_get(f"{params['realm']}?{query}", timeout))
    token = answer.get("token") or answer.get("access_token")
    return {"Authorization": f"Bearer {token}"}


def fetch_oci(chart: Chart, timeout: float) -> tuple[bytes, str]:
    """The blob of the Helm chart layer in the tag's manifest, and that layer's digest."""
    host, _, path = chart.repository.removeprefix("oci://").partition("/")
    # A loopback registry speaks plain HTTP, as Docker allows for 127.0.0.0/8 by default.
    scheme = "http" if host.split(":")[0] in ("127.0.0.1", "localhost") else "https"
    base = f"{scheme}://{host}/v2/{path.strip('/')}/{chart.name}"
    headers = {"Accept": OCI_MANIFEST}
    try:
        manifest_bytes = _get(f"{base}/manifests/{chart.version}", timeout, headers)
    except urllib.error.HTTPError as error:
        if error.code != 401:
            raise
        headers |= _bearer(chart, error.headers.get("WWW-Authenticate", ""), timeout)
        manifest_bytes = _get(f"{base}/manifests/{chart.version}", timeout, headers)
    layers = json.loads(manifest_bytes).get("layers", [])
    layers = [layer for layer in layers if layer.get("mediaType") == HELM_LAYER]
    if len(layers) != 1:
        raise ChartError(f"{label(chart)}: the manifest has no single {HELM_LAYER} layer")
    digest = layers[0]["digest"]
    return _get(f"{base}/blobs/{digest}", timeout, headers), digest.removeprefix("sha256:")


def fetch(chart: Chart, timeout: float, indexes: dict[str, dict]) -> tuple[bytes, str]:
    """The chart's archive, checked against the digest its repository publishes."""
    try:
        if chart.repository.startswith("oci://"):
            data, published = fetch_oci(chart, timeout)
        else:
            data, published = fetch_http(chart, timeout, indexes)
    except urllib.error.HTTPError as error:
        raise ChartError(
            f"{label(chart)}: {error.url} answered HTTP {error.code} ({error.reason}); check the "
            "chart's repository and version in model/versions.py CHARTS (or a stack's override)"
        ) from None
    except (OSError, ValueError, yaml.YAMLError) as error:  # URLError, timeouts, bad JSON/YAML
        raise ChartError(
            f"{label(chart)}: cannot reach the repository ({error}); run this where the "
            "repository is reachable (network, proxy); the plan keeps rendering from ../shared/helm"
        ) from None
    actual = hashlib.sha256(data).hexdigest()
    if actual != published:
        raise ChartError(
            f"{label(chart)}: the download has sha256 {actual} but the repository publishes "
            f"{published}; the download or the repository is corrupt: do not use it, retry "
            "later or report it upstream"
        )
    return data, published


def read_lock(path: Path) -> dict:
    return read_chart_lock(path) | ({} if path.is_file() else {"note": LOCK_NOTE})


def recorded_entry(recorded: dict, chart: Chart) -> dict | None:
    """The lock's entry for this chart at this version, or None."""
    return recorded.get(chart.name, {}).get(chart.version)


def stack_overrides(root: Path = ROOT) -> list[Chart]:
    """Every chart version a stack file of `root` takes ahead of its pin (`gpu-platform:charts`),
    read from the files as written: a stack whose override the lock does not record yet fails
    its config check, and this is how the lock comes to record it. Entries that name no pinned
    chart or no version are the config check's to report."""
    found = set()
    for path in sorted((root / "stacks").glob("Pulumi.*.yaml")):
        doc = read_yaml(path, str(path.relative_to(root))) or {}
        charts = (doc.get("config") or {}).get("gpu-platform:charts") or {}
        for key, override in charts.items() if isinstance(charts, dict) else ():
            version = override.get("version") if isinstance(override, dict) else None
            if key in CHARTS and isinstance(version, str) and version != CHARTS[key].version:
                found.add(replace(CHARTS[key], version=version))
    return sorted(found, key=lambda c: (c.name, version_key(c.version), c.version))


def wanted(root: Path = ROOT) -> list[Chart]:
    """What `make charts` pulls and `make charts-lock` records: the pins, then the overrides."""
    return [*CHARTS.values(), *stack_overrides(root)]


def _each(charts: Sequence[Chart], step) -> list[str]:
    """`step` on every chart: each failure reported, none stopping the others."""
    errors = []
    for chart in charts:
        try:
            step(chart)
        except ChartError as error:
            errors.append(str(error))
            print(f"error: {error}", file=sys.stderr)
    return errors


def empty_lock_note(lock: Path, charts: Sequence[Chart]) -> str:
    """What `make charts` says first when the lock records none of the charts."""
    return (
        f"note: {lock.name} records no digests, so every one of the {len(charts)} charts is "
        "refused (the lock was committed empty: no chart repository was reachable where it "
        "was made). Fill it with `make charts-lock charts` where the repositories are "
        "reachable, then review and commit the lock. Until then the plan renders the charts "
        "../shared/helm holds, and `--against` shows a release whose chart version no cache "
        "holds as unknown, never as deleted."
    )


def pull(charts: Sequence[Chart], dest: Path, lock: Path, timeout: float = TIMEOUT_S) -> list[str]:
    """Every chart into `dest`, verified; returns one error per chart that failed."""
    recorded, indexes = read_lock(lock).get("charts", {}), {}
    if not any(recorded_entry(recorded, chart) for chart in charts):
        print(empty_lock_note(lock, charts))
    dest.mkdir(parents=True, exist_ok=True)

    def one(chart: Chart) -> None:
        entry = recorded_entry(recorded, chart)
        if entry is None:
            others = ", ".join(sorted(recorded.get(chart.name, {}), key=version_key))
            besides = f" (it records {others})" if others else ""
            raise ChartError(f"{label(chart)}: not recorded in {lock.name}{besides}; {RECORD_HINT}")
        if entry["repository"] != chart.repository:
            raise ChartError(
                f"{label(chart)}: {lock.name} records {chart.version} from "
                f"{entry['repository']}, not the pinned repository; {RECORD_HINT}"
            )
        data, published = fetch(chart, timeout, indexes)
        if published != entry["sha256"]:
            raise ChartError(
                f"{label(chart)}: the repository now serves sha256 {published}, but "
                f"{lock.name} recorded {entry['sha256']} on {entry['recorded']}: the chart was "
                "re-published under the same version. Review what changed upstream before "
                f"trusting it; then {RECORD_HINT}"
            )
        target = dest / archive_name(chart.name, chart.version)
        # Verified in memory, then renamed into place: dest never holds a partial archive.
        with tempfile.NamedTemporaryFile(dir=dest, prefix=".part-", delete=False) as part:
            part.write(data)
        os.replace(part.name, target)
        print(f"ok: {chart.name} {chart.version} -> {target} (sha256 {entry['sha256']})")

    return _each(charts, one)


def record(
    charts: Sequence[Chart], lock: Path, today: date, timeout: float = TIMEOUT_S
) -> list[str]:
    """Every chart's published digest into the lock, all or nothing; prints the changes. A
    version no longer wanted (a pin moved on, an override removed) leaves the lock."""
    before, after, indexes = read_lock(lock).get("charts", {}), {}, {}

    def one(chart: Chart) -> None:
        entry = {"repository": chart.repository, "sha256": fetch(chart, timeout, indexes)[1]}
        old = recorded_entry(before, chart) or {}
        # An unchanged digest keeps its date: the date says since when it has been trusted.
        same = all(old.get(key) == value for key, value in entry.items())
        recorded = old["recorded"] if same else today.isoformat()
        after.setdefault(chart.name, {})[chart.version] = entry | {"recorded": recorded}

    errors = _each(charts, one)
    if errors:
        print(f"{lock} left unchanged: {len(errors)} chart(s) failed", file=sys.stderr)
        return errors
    print("\n".join(changes(before, after)))
    lock.write_text(json.dumps({"note": LOCK_NOTE, "charts": after}, indent=2) + "\n")
    return []


def changes(before: dict, after: dict) -> list[str]:
    """What a new lock changes, for the maintainer to review before committing it."""
    lines = []
    versions = {(n, v) for lock in (before, after) for n, by in lock.items() for v in by}
    for name, version in sorted(versions, key=lambda nv: (nv[0], version_key(nv[1]), nv[1])):
        old, new = before.get(name, {}).get(version), after.get(name, {}).get(version)
        if old is None or new is None:
            sign, entry = ("+", new) if old is None else ("-", old)
            lines.append(f"{sign} {name} {version} sha256 {entry['sha256']}")
        elif old["sha256"] != new["sha256"]:
            lines.append(f"~ {name} {version}, sha256 {old['sha256']} -> {new['sha256']}")
    return lines or ["no change against the previous lock"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m plan.charts", description=__doc__)
    parser.add_argument("--lock", type=Path, default=LOCK, help="the lock file")
    commands = parser.add_subparsers(dest="command", required=True)
    pulling = commands.add_parser(
        "pull", help="pull every pinned chart and every stack's override into .charts/"
    )
    pulling.add_argument("--dest", type=Path, default=CACHE, help="another cache folder")
    commands.add_parser(
        "record", help="record the published digest of every pin and override in the lock"
    )
    args = parser.parse_args(argv)
    try:
        charts = wanted()
    except ConfigError as error:  # a stack file that is no YAML: its overrides cannot be read
        print(error, file=sys.stderr)
        return 2
    if args.command == "pull":
        errors = pull(charts, args.dest, args.lock)
    else:
        errors = record(charts, args.lock, date.today())
    if errors:
        print(f"{len(errors)} of {len(charts)} chart(s) failed", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
