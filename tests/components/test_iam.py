"""IAM documents shared by components (components/iam.py): the trust policies that let one AWS
service assume a role. What each role may then do is checked over every stack by
test_least_privilege.py."""

from __future__ import annotations

import json

from components.iam import eks_trust_policy, pod_identity_trust_policy, service_trust_policy


def test_a_service_trust_policy_lets_exactly_that_service_assume_the_role():
    # IAM user guide, "Creating a role for an AWS service": Principal {"Service": ...},
    # Action sts:AssumeRole; policy language version 2012-10-17.
    assert json.loads(service_trust_policy("ec2.amazonaws.com")) == {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "ec2.amazonaws.com"},
                "Action": ["sts:AssumeRole"],
            }
        ],
    }


def test_pod_identity_assumes_with_session_tags():
    # EKS user guide, "Learn how EKS Pod Identity grants pods access to AWS services": the
    # role trusts pods.eks.amazonaws.com for sts:AssumeRole and sts:TagSession.
    (statement,) = json.loads(pod_identity_trust_policy())["Statement"]
    assert statement["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert statement["Action"] == ["sts:AssumeRole", "sts:TagSession"]


def test_the_cluster_role_trusts_eks():
    # EKS user guide, "Amazon EKS cluster IAM role": trusted by eks.amazonaws.com.
    (statement,) = json.loads(eks_trust_policy())["Statement"]
    assert statement["Principal"] == {"Service": "eks.amazonaws.com"}
    assert "sts:AssumeRole" in statement["Action"]
