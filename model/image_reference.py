"""The image reference grammar of distribution/reference (reference/regexp.go; the grammar in
reference/reference.go's package comment), as the container runtimes parse `image:` values:

    reference  := name [ ":" tag ] [ "@" digest ]
    name       := [ domain "/" ] path-component [ "/" path-component ]*
    domain     := domain-component [ "." domain-component ]* [ ":" port-number ]
    tag        := [\\w][\\w.-]{0,127}
    digest     := algorithm ":" hex (at least 32 hex digits)

A first component is a registry (`domain`) when it holds a dot or a port or is `localhost`
(reference/normalize.go, splitDockerDomain); otherwise the image is on Docker Hub.

Where a field is not an image field (a ConfigMap's data, an env value, an argument), a string
names an image only when a whole token of it is a reference with a registry and a tag or
digest: `quay.io/cephcsi/cephcsi:v3.17.0`. A bare `busybox` or `team/app:1` in free text is not
taken for one, since names like those are everywhere in Kubernetes objects.
"""

from __future__ import annotations

import functools
import re

_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*(?::[0-9]+)?"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
REFERENCE = re.compile(
    rf"(?:(?P<domain>{_DOMAIN})/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
    rf"(?::(?P<tag>{_TAG}))?(?:@(?P<digest>{_DIGEST}))?"
)
# What separates tokens in free text: white space, quotes, `key=value`, lists and brackets.
_TOKEN = re.compile(r"[^\s\"'`=,;()\[\]{}<>|]+")


def is_registry(component: str) -> bool:
    return "." in component or ":" in component or component == "localhost"


def registry_of(reference: str) -> str | None:
    """The registry a reference names, or None for Docker Hub's implicit one."""
    m = REFERENCE.fullmatch(reference)
    domain = m["domain"] if m else None
    return domain if domain is not None and is_registry(domain) else None


def references_in(text: str) -> list[str]:
    """The image references free text names: whole tokens that are references with a
    registry and a tag or a digest, in order of appearance."""
    return list(_references_in(text))


# A plan's objects repeat the same strings (labels, images, selectors) in every pod template and
# every stack: images.txt and the policy ran the grammar a million times a `make test`.
@functools.lru_cache(maxsize=8192)
def _references_in(text: str) -> tuple[str, ...]:
    return tuple(
        token
        for token in _TOKEN.findall(text)
        if (m := REFERENCE.fullmatch(token))
        and (m["tag"] or m["digest"])
        and registry_of(token) is not None
    )
