"""The names JobSet v0.12.0's webhook admits (pkg/webhooks/jobset_webhook.go, ValidateCreate: the
longest pod name `<name>-trainer-0-<last index>` plus "-abcde" must be a DNS-1035 label of at
most 63 characters). The webhook's rule itself is modelled in tests/controllers/jobset_webhook.py
and held against `python -m jobs` there; these are its worked examples."""

import pytest

from components.scheduling.job_names import longest_name, name_problem


@pytest.mark.parametrize(
    ("nodes", "longest"),
    # 63 - len("-trainer-0-9-abcde") = 45; 63 - len("-trainer-0-99-abcde") = 44.
    [(1, 45), (2, 45), (10, 45), (11, 44), (100, 44)],
)
def test_the_longest_name_leaves_room_for_the_last_pods_name(nodes, longest):
    assert longest_name(nodes) == longest
    assert name_problem("a" * longest, nodes) is None
    assert "at most" in name_problem("a" * (longest + 1), nodes)


@pytest.mark.parametrize("name", ["1job", "-job", "job-", "Job", "job_1"])
def test_a_name_that_is_no_dns_1035_label_is_refused_saying_why(name):
    problem = name_problem(name, 2)
    assert problem is not None and "DNS-1035 label" in problem and "starts with a letter" in problem
