"""JobSet's validating webhook on the names a JobSet makes: a small model of its rule, written
from kubernetes-sigs/jobset at v0.12.0 (`f22e565ac3cc`), run over every job the platform and
`python -m jobs` render.

- pkg/webhooks/jobset_webhook.go l. 234-256 (ValidateCreate, for each replicatedJob): the longest
  Job name, `placement.GenJobName(js.Name, rJob.Name, replicas-1)`, must be a DNS-1035 label
  (`jobNameTooLongErrorMsg` when too long, l. 63); and when the Job is Indexed with completions
  set, the longest pod name, `placement.GenPodName(js.Name, rJob.Name, replicas-1,
  completions-1) + "-abcde"` ("Add 5 char suffix to the deterministic part of the pod name",
  l. 248-249), must be one too (`podNameTooLongErrorMsg`, l. 67).
- pkg/util/placement/placement.go l. 13-22: GenJobName is `%s-%s-%d`, GenPodName `%s-%s-%s-%s`.
- The mutating webhook runs first and defaults `completionMode` to Indexed (jobset_webhook.go
  l. 119-122, Default), so a replicatedJob without one is Indexed here.
- What the JobSet controller creates next: the headless Service named after the subdomain,
  which defaults to the JobSet's name (pkg/controllers/jobset_controller.go GetSubdomain,
  createHeadlessSvcIfNecessary); a Service's name must be a DNS-1035 label (kubernetes
  pkg/apis/core/validation ValidateServiceName, NameIsDNS1035Label). The webhook does not
  check it (the name `a-` passes its pod-name rule), the Service's create fails instead.
- IsDNS1035Label (k8s.io/apimachinery pkg/util/validation/validation.go): at most 63
  characters (DNS1035LabelMaxLength), matching `[a-z]([-a-z0-9]*[a-z0-9])?` (dns1035LabelFmt):
  lowercase letters, digits and '-', a letter first, no '-' last.
"""

from __future__ import annotations

import re
from typing import Any

DNS1035_LABEL_MAX_LENGTH = 63
DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
JOB_NAME_TOO_LONG = (
    "JobSet name is too long, job names generated for this JobSet will exceed 63 characters"
)
POD_NAME_TOO_LONG = (
    "JobSet name is too long, pod names generated for this JobSet will exceed 63 characters"
)


def dns1035_errors(value: str) -> list[str]:
    errors = []
    if len(value) > DNS1035_LABEL_MAX_LENGTH:
        errors.append("must be no more than 63 characters")
    if not DNS1035_LABEL.fullmatch(value):
        errors.append("a DNS-1035 label must start with a letter, then letters, digits or '-'")
    return errors


def refusals(jobset: dict[str, Any]) -> list[str]:
    """Why the webhook refuses the JobSet's names, or the Service named after it fails, or []
    when every name it makes is valid."""
    name = jobset["metadata"]["name"]
    subdomain = jobset["spec"].get("network", {}).get("subdomain") or name
    found = [f"Service {subdomain}: {error}" for error in dns1035_errors(subdomain)]
    for rj in jobset["spec"]["replicatedJobs"]:
        last_job = rj.get("replicas", 1) - 1
        job_name = f"{name}-{rj['name']}-{last_job}"
        for error in dns1035_errors(job_name):
            too_long = error.startswith("must be no more")
            found.append(f"{job_name}: {JOB_NAME_TOO_LONG if too_long else error}")
        spec = rj["template"]["spec"]
        if spec.get("completionMode", "Indexed") == "Indexed" and "completions" in spec:
            pod_name = f"{name}-{rj['name']}-{last_job}-{spec['completions'] - 1}-abcde"
            for error in dns1035_errors(pod_name):
                too_long = error.startswith("must be no more")
                found.append(f"{pod_name}: {POD_NAME_TOO_LONG if too_long else error}")
    return found
