"""Pushing to a Prometheus Pushgateway with the standard library: the text exposition format
(version 0.0.4) in one `PUT /metrics/job/<job>/<label>/<value>...`, which replaces the whole
group (Pushgateway README, "PUT method"), so a series that disappears does not linger. Shared by
the self-test's results (selftest.push) and trainkit's goodput (trainkit.goodput)."""

from __future__ import annotations

import base64
import urllib.parse
import urllib.request

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
TIMEOUT_S = 10.0


def escape(value: object) -> str:
    """A label value as the text format writes it: backslash, double quote and newline escaped."""
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def labels(**pairs: object) -> str:
    return "{" + ",".join(f'{k}="{escape(v)}"' for k, v in pairs.items()) + "}"


def group_path(job: str, grouping: dict[str, str]) -> str:
    """`/metrics/job/<job>/<name>/<value>...`. A value with a `/` or an empty one is written
    base64url-encoded as `<name>@base64/<encoded>`, an empty one as `=` (Pushgateway README,
    "URL"): a plain empty path segment is not accepted."""
    parts = ["metrics", "job", urllib.parse.quote(job, safe="")]
    for name, value in grouping.items():
        if value == "" or "/" in value:
            encoded = base64.urlsafe_b64encode(value.encode()).decode() or "="
            parts += [f"{name}@base64", encoded]
        else:
            parts += [name, urllib.parse.quote(value, safe="")]
    return "/" + "/".join(parts)


def put(url: str, body: str) -> None:
    request = urllib.request.Request(
        url, data=body.encode(), method="PUT", headers={"Content-Type": CONTENT_TYPE}
    )
    with urllib.request.urlopen(request, timeout=TIMEOUT_S):
        pass
