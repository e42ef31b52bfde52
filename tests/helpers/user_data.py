"""Reading rendered node user data the way the node does: the MIME parts, nodeadm's NodeConfigs
and cloud-init's shell parts."""

from __future__ import annotations

import email

import yaml

from model.stacks import ROOT

# EKS user guide, AL2023 nodeadm: NodeConfig parts are `application/node.eks.aws`; cloud-init
# runs `text/x-shellscript` parts.
NODEADM = "application/node.eks.aws"
SHELL = "text/x-shellscript"
# The rendered user data a review reads byte for byte (`UPDATE_GOLDEN=1` rewrites it).
GOLDEN = ROOT / "tests" / "golden" / "user-data"


def user_data_parts(text: str) -> list[tuple[str, str]]:
    """(content type, payload) of each MIME part; the nodeadm parts come first."""
    message = email.message_from_string(text)
    assert message.is_multipart()
    parts = [(p.get_content_type(), p.get_payload()) for p in message.get_payload()]
    kinds = [kind for kind, _ in parts]
    assert kinds[0] == NODEADM
    assert kinds == sorted(kinds, key=lambda k: k != NODEADM), kinds
    assert set(kinds) <= {NODEADM, SHELL}, kinds
    return parts


def parse_user_data(text: str) -> list[dict]:
    """The NodeConfigs of the user data."""
    return [yaml.safe_load(body) for kind, body in user_data_parts(text) if kind == NODEADM]


def shell_parts(text: str) -> list[str]:
    return [body for kind, body in user_data_parts(text) if kind == SHELL]
