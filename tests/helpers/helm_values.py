"""Check Helm values against the chart's own defaults: the values.yaml of the archive the plan
renders (plan/render.py CHART_CACHES), at the pin or at a stack's override alike, so an override
is checked exactly as the pin is. For the pins these are ../shared/charts' files as packaged
(shared/charts/README.md: kueue's and jobset's as their release steps package them).

Helm ignores a value key the chart never reads, without a word: a misspelt or renamed key simply
has no effect. A key the project sets must therefore exist in the chart's `values.yaml`, except
where shared/charts/README.md ("Caveats") says the defaults cannot tell:

- below a free-form map (default `{}` or `null`, or documented free-form: `FREE_FORM`) any key goes;
- a `null` default accepts any value;
- keys are compared whole, never split on dots (`grafana.ini`, `kubernetes.io/os`);
- a key only the templates read needs an entry in `TEMPLATE_ONLY`, confirmed in the chart's
  templates at the pinned tag; the check is never loosened as a whole;
- a block named for a subchart is checked against the parent's block and the subchart's
  defaults together, since the parent's block overrides the subchart's.

Below a key the templates render into a pod spec field (`POD_SPEC_FIELDS`: tolerations,
affinity, node selector, topology spread), the value is checked against that Kubernetes type
instead, at the stack's Kubernetes version: a chart's default list or `{}` says nothing of it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate

from plan.charts import chart_values, find_archive
from plan.render import CHART_CACHES

Path_ = tuple[str, ...]

# Maps whose keys the user chooses although their default is not empty (README, caveat 1).
FREE_FORM: dict[str, set[Path_]] = {
    "cluster-autoscaler": {("extraArgs",)},
    "gpu-operator": {("operator", "nodeSelector")},
    "kube-prometheus-stack": {("grafana", "grafana.ini")},
}

# Keys the chart's templates read that its values.yaml lacks (README, caveat 4). Add one only
# after reading `.Values.<path>` in the templates at the pinned tag, and say where.
TEMPLATE_ONLY: dict[str, set[Path_]] = {
    # ceph/ceph-csi-operator v1.0.4 (29a66b683aa8),
    # deploy/charts/ceph-csi-drivers/templates/operatorConfig.yaml lines 141-142.
    "ceph-csi-drivers": {
        ("operatorConfig", "driverSpecDefaults", "controllerPlugin", "priorityClassName")
    },
    # prometheus-community/helm-charts@prometheus-pushgateway-3.8.0 (4fa56e1c264a),
    # charts/prometheus-pushgateway/templates/pushgateway-pvc.yaml lines 19-23 (values.yaml
    # holds it only as a comment).
    "prometheus-pushgateway": {("persistentVolume", "storageClass")},
}


# Chart keys whose value the templates copy into the pod spec field of the same name.
POD_SPEC_FIELDS = ("tolerations", "affinity", "nodeSelector", "topologySpreadConstraints")


def pod_spec_problems(field: str, value: Any, kubernetes_version: str) -> list[str]:
    """What the API server would refuse in `value` as the pod spec's `field`."""
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "check"},
        "spec": {"containers": [{"name": "c", "image": "c"}], field: value},
    }
    try:
        kubernetes_validate.validate(pod, f"{kubernetes_version}.0", strict=True)
    except kubernetes_validate.ValidationError as error:
        where = "/".join(str(p) for p in list(error.path)[2:])
        return [f"{where}: {str(error).splitlines()[0]}"]
    return []


def _archive(chart: str, version: str, caches: tuple[Path, ...]) -> Path:
    """The archive the plan renders `chart` `version` from; an OCI chart is named by its full
    reference, and found by its last path segment."""
    chart = chart.rsplit("/", 1)[-1]
    path = find_archive(chart, version, caches)
    if path is None:
        raise AssertionError(
            f"chart {chart} {version} is in no chart cache ({', '.join(map(str, caches))}): "
            "`make charts` pulls the pins and every stack's override"
        )
    return path


def defaults(chart: str, version: str, caches: tuple[Path, ...] = CHART_CACHES) -> dict[str, Any]:
    """The chart's own values.yaml at `version`."""
    return chart_values(_archive(chart, version, caches))[0]


def subcharts(
    chart: str, version: str, caches: tuple[Path, ...] = CHART_CACHES
) -> dict[str, dict[str, Any]]:
    """Each subchart's own values.yaml, by the subchart's name."""
    return chart_values(_archive(chart, version, caches))[1]


def _merge(parent: Any, sub: Any) -> Any:
    """The defaults a subchart sees: its own, overridden by the parent's block."""
    if isinstance(parent, dict) and isinstance(sub, dict):
        out = dict(sub)
        for key, value in parent.items():
            out[key] = _merge(value, sub[key]) if key in sub else value
        return out
    return sub if parent is None else parent


def _show(path: Path_) -> str:
    return ".".join(f"[{p}]" if "." in p else p for p in path)


def _walk(value: Any, default: Any, path: Path_, chart: str, k8s: str, found: list[str]) -> None:
    if path and path[-1] in POD_SPEC_FIELDS and not isinstance(default, (str, bool, int)):
        for problem in pod_spec_problems(path[-1], value, k8s):
            found.append(f"{chart}: {_show(path)}: not a valid pod spec {problem}")
        return
    if default is None or path in FREE_FORM.get(chart, set()):
        return
    if isinstance(default, dict):
        if not default:
            return
        if not isinstance(value, dict):
            found.append(f"{chart}: {_show(path)}: the chart expects a map here, got {value!r}")
            return
        for key, item in value.items():
            key = str(key)
            if key in default:
                _walk(item, default[key], (*path, key), chart, k8s, found)
            elif (*path, key) not in TEMPLATE_ONLY.get(chart, set()):
                near = ", ".join(sorted(map(str, default))[:12])
                found.append(
                    f"{chart}: {_show((*path, key))}: not a key of the chart at this version; "
                    f"Helm would ignore it (keys here: {near})"
                )
        return
    if isinstance(value, dict):
        found.append(f"{chart}: {_show(path)}: the chart expects {default!r} here, not a map")
    elif isinstance(default, bool) and not isinstance(value, bool):
        found.append(f"{chart}: {_show(path)}: the chart expects true or false, got {value!r}")


def unknown_keys(
    chart: str,
    version: str,
    values: dict[str, Any],
    kubernetes_version: str,
    caches: tuple[Path, ...] = CHART_CACHES,
) -> list[str]:
    """Every value key Helm would ignore, or pod spec value the API server would refuse, as
    `chart: key.path: why`; empty when all are good."""
    base = defaults(chart, version, caches)
    subs = subcharts(chart, version, caches)
    merged = {**base, **{name: _merge(base.get(name), sub) for name, sub in subs.items()}}
    found: list[str] = []
    _walk(values, merged, (), chart, kubernetes_version, found)
    return found
