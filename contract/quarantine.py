"""A quarantined node's marks (bootstrap/selftest/quarantine.py sets them, in one patch; the
program's job builder keeps GPU pods off the label, and `jobs status` reads the annotation):

- the label and the taint's key, valued with the first failed check;
- the annotation: when the node was quarantined, and for which checks, because the API keeps no
  time of its own for it: the taint is NoSchedule, and a taint's `timeAdded` is written only for
  NoExecute ones (k8s.io/api core/v1 Taint), and a label has no time. Its value is
  `<RFC 3339 UTC, whole seconds> <check>[,<check>...]`, read by `stamp_of`.

Returning the node (docs/monitoring.md, "Returning a quarantined node") removes all three."""

from __future__ import annotations

from datetime import UTC, datetime

LABEL = "gpu-platform/selftest-failed"
ANNOTATION = "gpu-platform/quarantined"


def stamp(at: datetime, failed: list[str]) -> str:
    """The annotation's value for a quarantine at `at` for the checks `failed`."""
    return f"{at.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%SZ')} {','.join(failed)}"


def stamp_of(value: str) -> tuple[datetime, str] | None:
    """(when, the checks) of an annotation's value; None where it is not one `stamp` wrote."""
    at, _, reason = value.partition(" ")
    try:
        when = datetime.strptime(at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None
    return when, reason
