"""`make bench-rules` (tests/bench_rules.py) measures what it says: on its backfilled month, run
by Prometheus 2.42, the month to date rule answers one series per team, the dashboard's table
and `jobs usage` one per job, and the rule's samples do not grow with the jobs."""

from __future__ import annotations

from tests.bench_rules import TEAMS, measure


def test_the_bench_reads_each_teams_and_each_jobs_figures_and_the_rule_stays_flat():
    few, more = measure(16), measure(32)
    assert [series for _, _, series in few] == [TEAMS, 16, 16]
    assert [series for _, _, series in more] == [TEAMS, 32, 32]
    (_, rule_few, _), (_, rule_more, _) = few[0], more[0]
    assert rule_few == rule_more
    # The job-level readers load what the jobs ran: twice the jobs, twice the samples.
    assert more[1][1] == 2 * few[1][1]
