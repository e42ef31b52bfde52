"""Key policies (components/kms.py) keep the account an administrator; each key's users are
checked over every stack by test_least_privilege.py."""

from __future__ import annotations

import json

from components.kms import key_policy


def test_every_key_policy_lets_the_account_administer_the_key_first():
    # AWS KMS developer guide, "Default key policy": the statement that "Allows access to the
    # AWS account and enables IAM policies", principal arn:aws:iam::<account>:root, kms:*.
    user = {"Sid": "U", "Effect": "Allow", "Principal": {"AWS": "x"}, "Action": "kms:Decrypt"}
    doc = json.loads(key_policy("111122223333", user))
    assert doc["Version"] == "2012-10-17"
    assert doc["Statement"] == [
        {
            "Sid": "AccountAdministers",
            "Effect": "Allow",
            "Principal": {"AWS": "arn:aws:iam::111122223333:root"},
            "Action": "kms:*",
            "Resource": "*",
        },
        user,
    ]
