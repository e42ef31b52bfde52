"""JobSet v0.12.0's webhook on the names a JobSet makes (tests/controllers/jobset_webhook.py):
its rule with a failing and a passing case each, then the class: every name `python -m jobs`
lets through is one the webhook admits and every one it refuses the webhook refuses too, at
every length 1-70, with a leading digit or dash or a trailing dash, on 1, 2, 10 and 100
nodes; every default name passes, however long the image's repository; and every job the
platform renders passes."""

from __future__ import annotations

import pytest

from components.scheduling.job_spec import spec_for_pool
from components.scheduling.training_job import render
from jobs.common import SubmitError, check_name, job_name
from jobs.team import TeamJob, name_prefix
from jobs.team import plan_job as plan_team_job
from tests.conftest import stack_config
from tests.controllers.jobset_webhook import (
    DNS1035_LABEL_MAX_LENGTH,
    POD_NAME_TOO_LONG,
    refusals,
)
from tests.helpers import jobsets
from tests.helpers.job_specs import IMAGE
from tests.helpers.rendered_jobs import SWEPT_STACKS, every_job

NODE_COUNTS = (1, 2, 10, 100)
# The longest name the webhook admits, worked by hand from jobset_webhook.go l. 249: the pod
# name `<name>-trainer-0-<nodes-1>-abcde` within 63 characters. `-trainer-0-0-abcde` and
# `-trainer-0-1-abcde` and `-trainer-0-9-abcde` are 18 characters, `-trainer-0-99-abcde` 19.
LONGEST = {1: 45, 2: 45, 10: 45, 100: 44}


def jobset(name: str, nodes: int) -> dict:
    cfg = stack_config("prod")
    pool = cfg.gpu_pools[0].name
    (obj,) = render(spec_for_pool(cfg, pool, name=name, image=IMAGE, command=["t.py"], nodes=nodes))
    return obj


def test_the_pod_name_with_its_five_random_characters_must_fit_63():
    assert refusals(jobset("a" * 45, 2)) == []
    (refusal,) = refusals(jobset("a" * 46, 2))
    assert refusal == f"{'a' * 46}-trainer-0-1-abcde: {POD_NAME_TOO_LONG}"
    assert len(f"{'a' * 46}-trainer-0-1-abcde") == DNS1035_LABEL_MAX_LENGTH + 1


def test_a_name_must_start_with_a_letter():
    assert refusals(jobset("a1", 2)) == []
    assert refusals(jobset("1a", 2)) and refusals(jobset("-a", 2))


def test_the_service_named_after_the_jobset_must_not_end_with_a_dash():
    (refusal,) = refusals(jobset("a-", 2))
    assert refusal.startswith("Service a-: ")


def test_the_model_reads_completions_and_replicas_from_the_jobset():
    obj = jobset("a" * 44, 100)
    assert refusals(obj) == []
    obj["spec"]["replicatedJobs"][0]["replicas"] = 11
    assert "-trainer-10-99-abcde" in refusals(obj)[0]


def names() -> list[str]:
    found = []
    for length in range(1, 71):
        rest = "a" * (length - 1)
        found += ["a" + rest, "1" + rest, "-" + rest, rest + "-"]
    return found


@pytest.mark.parametrize("nodes", NODE_COUNTS)
def test_jobs_refuses_exactly_the_names_the_webhook_refuses(nodes):
    """python -m jobs (submit and recipe both call check_name) refuses at render time what
    the webhook would refuse at apply, naming the limit for the node count and why."""
    problems = []
    for name in names():
        try:
            check_name(name, nodes)
            refused = None
        except SubmitError as error:
            (refused,) = error.problems
        webhook = refusals(jobset(name, nodes))
        if bool(refused) != bool(webhook):
            problems.append(f"{name!r} x{nodes}: jobs {refused or 'admits'}; webhook {webhook}")
        elif refused and f"at most {LONGEST[nodes]} characters" not in refused:
            problems.append(f"{name!r} x{nodes}: the message lacks the limit: {refused}")
    assert not problems, "\n".join(problems[:10])


REPOSITORIES = [
    *("r" * n for n in range(1, 81)),
    "3d-gan",
    "0" * 70,
    "___",
    "Team_Model-Trainer.Long-" + "x" * 50,
]


@pytest.mark.parametrize("nodes", NODE_COUNTS)
def test_every_default_name_passes_however_long_the_images_repository(nodes):
    for repository in REPOSITORIES:
        image = f"registry.example.com/team/{repository}:v1"
        name = job_name(name_prefix(image), [image, nodes], nodes)
        assert refusals(jobset(name, nodes)) == [], (repository, name)
        assert name[0].isalpha() and len(name) <= LONGEST[nodes], name


def test_a_team_jobs_default_name_passes_for_a_40_character_repository():
    """The derivation as python -m jobs submit calls it, on a shipped pool."""
    cfg = stack_config("prod")
    pool = cfg.gpu_pools[0]
    for repository in ("r" * 40, "9" * 45):
        image = f"registry.example.com/{repository}@sha256:{'a' * 64}"
        job = TeamJob(image=image, command=["t.py"],
                      nodes=2, pool=pool.name)  # fmt: skip
        (obj,) = render(plan_team_job(cfg, job))
        assert refusals(obj) == [], obj["metadata"]["name"]


@pytest.mark.parametrize("stack", SWEPT_STACKS)
def test_every_job_the_platform_renders_passes_the_webhook(stack):
    problems = [
        f"{stack}: {what}: {refusal}"
        for what, obj in every_job(stack)
        if obj["kind"] == jobsets.KIND
        for refusal in refusals(obj)
    ]
    assert not problems, "\n".join(problems[:10])
