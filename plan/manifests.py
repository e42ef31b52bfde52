"""Rendered Helm output as text and as objects. Parsing is most of a render's cost, and nearly
all of it is the OpenAPI schemas of CRDs (kube-prometheus-stack's alone are 4.5 MB), which only
schema validation and a diff of the CRD itself read: the plan reads every file through
`outline_source`, the schemas left out, and parses a file whole only when asked. Both parses
are cached by text, so another render pass or another plan in the process parses only files
whose text changed.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import yaml

Source = tuple[str, str]  # (file in the chart, its rendered text)
CRD = "CustomResourceDefinition"


class _Loader(yaml.CSafeLoader):
    """YAML as Helm reads it: a plain `=` (an enum value in some CRDs) is a string, where
    PyYAML's YAML 1.1 resolver makes it the unconstructible `value` tag."""


_Loader.add_constructor("tag:yaml.org,2002:value", yaml.SafeLoader.construct_scalar)

# A CRD version's block-style `openAPIV3Schema:` and every line below it that is indented
# deeper or holds only whitespace (a blank line inside a block scalar may be indented less).
# Flow style does not match and is parsed whole: slower, never wrong.
_SCHEMA_BLOCK = re.compile(r"^( *)openAPIV3Schema:[ \t]*\n(?:(?:\1 .*|[ \t]*)\n)*", re.MULTILINE)


@functools.lru_cache(maxsize=2048)
def parse_source(text: str) -> tuple[dict[str, Any], ...]:
    """The objects of one rendered file, whole; empty documents left out."""
    docs = yaml.load_all(text, Loader=_Loader)
    return tuple(doc for doc in docs if isinstance(doc, dict) and doc.get("kind"))


@functools.lru_cache(maxsize=2048)
def outline_source(text: str) -> tuple[dict[str, Any], ...]:
    """The objects of one rendered file with each CRD version's `openAPIV3Schema` empty:
    everything else (kinds, metadata, pod templates, a CRD's group, names and served
    versions) as `parse_source` reads it."""
    return parse_source(_SCHEMA_BLOCK.sub(r"\1openAPIV3Schema: {}\n", text))


def parse_sources(sources: tuple[Source, ...]) -> tuple[dict[str, Any], ...]:
    return tuple(obj for _, text in sources for obj in parse_source(text))


def outline_sources(sources: tuple[Source, ...]) -> tuple[dict[str, Any], ...]:
    return tuple(obj for _, text in sources for obj in outline_source(text))


_SOURCE_LINE = "# Source: "


def manifest_text(sources: tuple[Source, ...]) -> str:
    """The files as `helm template` prints them, each after a `# Source:` line."""
    return "".join(f"---\n{_SOURCE_LINE}{path}\n{text.strip()}\n" for path, text in sources)


def split_manifest(text: str) -> tuple[Source, ...]:
    """The files of a `manifest_text`, back: an earlier plan's rendered release."""
    sources = []
    for chunk in text.split(f"---\n{_SOURCE_LINE}")[1:]:
        path, _, body = chunk.partition("\n")
        sources.append((path, body))
    return tuple(sources)
