"""Every problem of a stack file in one run (issue 38: four mistakes took three runs, fields, then
references, then regions). pydantic runs a model's rules only once its fields validate, and a
rule that raised stopped the ones after it; now the fields' problems are set aside for the rules
across sections (model/config/loading.py, past_field_problems), every stage of those rules runs
(PlatformConfig._rules_across_sections), and a rule that cannot run is named as not checked."""

from __future__ import annotations

import pytest

from model.config import ConfigError, parse_config
from model.config.loading import NOT_CHECKED, ON_DEFAULTS
from tests.helpers.bad_stacks import NS, SOURCE, aws, plan_bad

# moto's and the catalog's eu-west-1 offers no p5.48xlarge (tests/model/test_region_offerings.py).
EU_WEST_1 = {"region": "eu-west-1", "zones": ["eu-west-1a", "eu-west-1b"]}


def test_four_mistakes_of_four_kinds_are_reported_in_one_run(tmp_path, monkeypatch, capsys):
    stack = aws(
        aws=EU_WEST_1,
        gpu_node_groups=[
            # A field's own problem: a count that is not a number.
            {"name": "train", "instance_types": ["p5.48xlarge"], "scaling": {"max_size": "many"}}
        ],
        # A reference to nothing: no LocalQueue is named fast.
        recipes={"queue": "fast"},
        # A plane's rule: the self-test in mode warn needs its image.
        selftest={"mode": "warn"},
    )
    # And the region's: eu-west-1 offers no p5.48xlarge.
    code, output = plan_bad(tmp_path, monkeypatch, capsys, stack)
    assert code == 2, output
    assert output.startswith(f"{SOURCE}: invalid gpu-platform configuration (4 problems):")
    problems = [
        line.removeprefix("  - ") for line in output.splitlines() if line.startswith("  - ")
    ]
    assert [p.split(": ")[0] for p in problems] == [
        f"{NS}:gpu_node_groups[0].scaling.max_size",
        f"{NS}:recipes.queue",
        f"{NS}:gpu_node_groups[0].instance_types[0]",
        f"{NS}:selftest.image",
    ]
    field, reference, region, rule = problems
    # The messages each kind's own tests hold (tests/model/test_references.py,
    # test_region_offerings.py, test_selftest_defaults.py).
    assert "unable to parse string as an integer (got 'many')" in field
    assert "'fast' is not a LocalQueue the platform declares" in reference
    assert "p5.48xlarge is not offered in region eu-west-1 (aws.region)" in region
    assert "required with mode warn" in rule
    # Found with the count set aside: said so, since a rule may have read it.
    assert not field.endswith(ON_DEFAULTS)
    assert all(p.endswith(ON_DEFAULTS) for p in (reference, region, rule))


def test_every_stage_of_the_rules_across_sections_runs_past_a_failing_one():
    # A dangling reference (names), a type the region lacks (the provider's sections), and a
    # plane's rule, no field problem: each stage's problem, in the order of the stages.
    stack = {
        "aws": EU_WEST_1,
        "cluster": {"admin_principal_arns": ["arn:aws:iam::210987654321:role/admins"]},
        "gpu_node_groups": [{"name": "train", "instance_types": ["p5.48xlarge"]}],
        "recipes": {"queue": "fast"},
        "selftest": {"mode": "warn"},
    }
    with pytest.raises(ConfigError) as refused:
        parse_config(stack, SOURCE)
    assert [p.split(": ")[0] for p in refused.value.problems] == [
        f"{NS}:recipes.queue",
        f"{NS}:gpu_node_groups[0].instance_types[0]",
        f"{NS}:selftest.image",
    ]
    assert not any(p.endswith(ON_DEFAULTS) for p in refused.value.problems)


def test_rules_that_cannot_run_past_a_fields_problem_are_said_not_checked():
    # A bad item of a list cannot be set aside without renumbering the others.
    stack = {
        "aws": EU_WEST_1,
        "cluster": {"admin_principal_arns": ["arn:aws:iam::1111:group/admins"]},
    }
    with pytest.raises(ConfigError) as refused:
        parse_config(stack, SOURCE)
    first, *rest = refused.value.problems
    assert first.startswith(f"{NS}:cluster.admin_principal_arns[0]: ")
    assert rest == [NOT_CHECKED]
    assert NOT_CHECKED == (
        "gpu-platform: the rules across sections (references, the region's instance types and "
        "zones, each plane's rules) are not checked until the problems above are fixed"
    )


def test_a_rule_an_earlier_problem_leaves_unable_to_run_is_named(monkeypatch):
    def check_cost(cfg):  # a cost rule that looks a pool up by a name that does not resolve
        raise KeyError("h100")

    monkeypatch.setattr("model.config.check_cost", check_cost)
    dangling = {**{k.split(":")[1]: v for k, v in aws().items()}, "recipes": {"queue": "fast"}}
    with pytest.raises(ConfigError) as refused:
        parse_config(dangling, SOURCE)
    assert refused.value.problems[-1] == (
        "gpu-platform: not checked until the problems above are fixed: cost"
    )
    # Without an earlier problem the same failure is the program's, and is not hidden.
    clean = {k.split(":")[1]: v for k, v in aws().items()}
    with pytest.raises(KeyError, match="h100"):
        parse_config(clean, SOURCE)


def test_a_rule_that_fails_again_at_a_keys_default_is_said_once():
    """A GB200 group's max_size of 10 is not whole UltraServers; set aside, the key's default
    (a ceiling of 1) is not either. The round that finds only what was said already ends the
    search instead of saying it once per round."""
    with pytest.raises(ConfigError) as refused:
        parse_config(
            {
                "aws": {
                    "region": "us-east-1",
                    "zones": ["us-east-1a", "us-east-1b"],
                    "zone_offerings": {"p6e-gb200.36xlarge": ["us-east-1a"]},
                },
                "cluster": {"admin_principal_arns": ["arn:aws:iam::111122223333:role/a"]},
                "gpu_node_groups": [
                    {
                        "name": "nvl",
                        "instance_types": ["p6e-gb200.36xlarge"],
                        "capacity": "capacity_block",
                        "capacity_reservation_id": "cr-0123456789abcdef0",
                        "scaling": {"min_size": 0, "max_size": 10},
                    }
                ],
            },
            SOURCE,
        )
    problems = refused.value.problems
    assert len(problems) == len(set(problems)), problems
    assert [p.split(": ")[0] for p in problems] == [
        f"{NS}:gpu_node_groups[0].scaling.max_size",
        f"{NS}:gpu_node_groups[0].scaling.max_size",
        NOT_CHECKED.split(": ")[0],
    ]
    assert problems[1].endswith(ON_DEFAULTS)
