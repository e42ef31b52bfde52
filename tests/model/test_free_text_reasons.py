"""Every reason or justification the config model takes refuses a blank or whitespace-only
answer: a reviewer reads them (the namespace's gpu-platform/pod-security-reason annotation, a
policy exemption's reason), and `pod_security_reason: " "` passed as a reason for `baseline`."""

from __future__ import annotations

import re
import typing

import pytest
from pydantic import BaseModel, ValidationError

from model.config import PlatformConfig
from model.config.loading import unwrap
from model.config.policy import PolicyExemption, WarningWaiver
from model.config.repair import RepairOverride
from model.config.scheduling import TeamSettings
from tests.helpers.bad_stacks import assert_refused, aws, case

NAMED = re.compile(r"reason|justification|rationale")
BLANKS = ["", " ", "          ", "\t\n  ", "\u00a0" * 12]


def reason_fields(model: type[BaseModel] = PlatformConfig, seen=None) -> set[tuple[type, str]]:
    """(model, field) of every string field named like a reason anywhere under `model`."""
    seen = set() if seen is None else seen
    found = set()
    if model in seen:
        return found
    seen.add(model)
    for name, field in model.model_fields.items():
        inner = unwrap(field.annotation)
        if isinstance(inner, type) and issubclass(inner, BaseModel):
            found |= reason_fields(inner, seen)
        elif (
            NAMED.search(name)
            and "str" in str(field.annotation)
            and "list" not in str(typing.get_origin(field.annotation))
        ):
            found.add((model, name))
    return found


# A valid instance of each model holding a reason, the reason aside.
VALID = {
    (TeamSettings, "pod_security_reason"): {"name": "vendor", "pod_security": "baseline"},
    (PolicyExemption, "reason"): {"rule": "no-open-ingress", "resource": "dev-lb"},
    (WarningWaiver, "reason"): {"id": "over-budget"},
    (RepairOverride, "reason"): {"condition": "AcceleratedHardwareReady", "action": "Replace"},
}


def test_every_reason_field_of_the_model_has_a_blank_case():
    assert reason_fields() == set(VALID)


@pytest.mark.parametrize("blank", BLANKS, ids=repr)
@pytest.mark.parametrize(
    ("model", "field"), sorted(VALID, key=str), ids=lambda x: getattr(x, "__name__", x)
)
def test_a_blank_reason_is_refused(model, field, blank):
    with pytest.raises(ValidationError) as refused:
        model.model_validate({**VALID[(model, field)], field: blank})
    assert any(e["loc"][:1] == (field,) for e in refused.value.errors()), refused.value


def test_a_reason_in_words_is_taken():
    team = TeamSettings.model_validate(
        {
            **VALID[(TeamSettings, "pod_security_reason")],
            "pod_security_reason": "vendor image runs as root",
        }
    )
    assert team.pod_security_reason == "vendor image runs as root"


@pytest.mark.parametrize(
    ("stack", "path", "value", "valid"),
    [
        case(
            aws(
                scheduling={
                    "teams": [
                        {"name": "vendor", "pod_security": "baseline", "pod_security_reason": "   "}
                    ]
                }
            ),
            "gpu-platform:scheduling.teams[0].pod_security_reason",
            "'   '",
            "a reason in words, not blank or only white space",
            id="pod-security-reason",
        ),
        case(
            aws(
                policy={
                    "exemptions": [
                        {"rule": "no-open-ingress", "resource": "dev-lb", "reason": " " * 12}
                    ]
                }
            ),
            "gpu-platform:policy.exemptions[0].reason",
            "'            '",
            "a reason in words, not blank or only white space",
            id="exemption-reason",
        ),
    ],
)
def test_a_blank_reason_in_a_stack_file_is_refused_with_its_path(
    tmp_path, monkeypatch, capsys, stack, path, value, valid
):
    assert_refused(tmp_path, monkeypatch, capsys, stack, path, value, valid)
