"""The names a job may take: what JobSet v0.12.0's validating webhook admits for a JobSet of a
given number of pods. `python -m jobs` refuses any other name at render time and derives its
default names to fit (jobs/common.py)."""

from __future__ import annotations

import re

from components.scheduling.training_job import REPLICATED_JOB

# What JobSet v0.12.0's validating webhook holds a JobSet's name to (pkg/webhooks/
# jobset_webhook.go, ValidateCreate): its longest pod name, `<name>-trainer-0-<last index>` with
# the 5 random characters the Job controller appends (`+ "-abcde"`), must be a DNS-1035 label:
# at most 63 characters, lowercase letters, digits and '-', starting with a letter and ending
# with a letter or a digit (k8s.io/apimachinery pkg/util/validation IsDNS1035Label).
DNS_1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
POD_NAME_SUFFIX = "-abcde"


def longest_name(nodes: int) -> int:
    """The longest JobSet name that JobSet's webhook admits with `nodes` pods ("JobSet name is
    too long, pod names generated for this JobSet will exceed 63 characters")."""
    return 63 - len(f"-{REPLICATED_JOB}-0-{nodes - 1}{POD_NAME_SUFFIX}")


def name_problem(name: str, nodes: int) -> str | None:
    """Why JobSet's webhook would refuse `name` for a job of `nodes` pods, or None."""
    longest = longest_name(nodes)
    if DNS_1035_LABEL.fullmatch(name) and len(name) <= longest:
        return None
    return (
        f"JobSet's webhook refuses it: each pod is named <name>-{REPLICATED_JOB}-0-<index> and "
        f"5 random characters, which must be a DNS-1035 label of at most 63 characters "
        f"(lowercase letters, digits and '-', starting with a letter, ending with a letter or "
        f"digit), so with {nodes} node(s) the name has at most {longest} characters and starts "
        "with a letter"
    )
