"""`python -m jobs usage` (jobs/usage.py) against a stand-in Prometheus that answers with known
GPU-hours: the query and the time it is asked at for a past month and the month under way, every
figure of the export checked by hand, bad input refused with exit 2, and the command
docs/cost.md shows."""

from __future__ import annotations

import re
import shlex
from datetime import UTC, datetime
from urllib.parse import quote

import pytest

from jobs.__main__ import main as jobs_main
from jobs.usage import main
from model.stacks import ROOT
from tests.helpers.jobset_objects import vector
from tests.helpers.kubectl import stand_in_kubectl
from tests.helpers.prometheus import Prometheus, sample

# 2026-12-05T00:00:00Z (tests/helpers/prometheus.ANSWERED_AT, 1796428800).
NOW = datetime(2026, 12, 5, tzinfo=UTC)
# burst: pools h100-spot (p5.48xlarge spot: $55.04/h on demand in us-east-1, less the assumed
# 60 % discount, over 8 GPUs: $2.752 a GPU-hour) and h100-block (a p5.48xlarge Capacity Block,
# $39.33 an instance-hour, aws.amazon.com/ec2/capacityblocks/pricing: $4.91625 a GPU-hour);
# teams training and research.
ANSWER = [
    sample(120, namespace="research", cluster_queue="burst", pool="h100-block", job_name="llm-a"),
    sample(10.5, namespace="training", cluster_queue="burst", pool="h100-spot", job_name=""),
]


def run(capsys, *argv: str, answer=ANSWER, now=NOW):
    with Prometheus(answer) as prometheus:
        code = main([*argv, "--prometheus-url", prometheus.url], ROOT, now)
    out = capsys.readouterr()
    return code, out.out, out.err, prometheus


def test_a_past_month_is_asked_at_its_end_over_its_whole_length(capsys):
    code, out, err, prometheus = run(
        capsys, "--stack", "burst", "--month", "2026-11", "--format", "csv"
    )
    assert code == 0, err
    # November 2026: 2026-11-01T00:00Z is 1793491200 (Dec 1, 1796083200, less 30 days of
    # 86,400 s); 30 days are 2,592,000 s; asked one second before Dec 1.
    assert prometheus.queries == [
        "sum by (namespace, cluster_queue, pool, job_name) "
        "(sum_over_time(gpu_platform_team:gpus_running[2592000s:300s])) * 300 / 3600"
    ]
    assert prometheus.times == ["1796083199"]
    # 120 GPU-hours x $4.91625 = $589.95; 10.5 x $2.752 = $28.896, $28.90.
    assert out == (
        "month,team,cluster_queue,pool,job,gpu_hours,gpu_hour_usd,usd\n"
        "2026-11,research,burst,h100-block,llm-a,120.000,4.91625,589.95\n"
        "2026-11,training,burst,h100-spot,,10.500,2.752,28.90\n"
    )


def test_the_month_under_way_is_asked_up_to_now_and_one_team_alone(capsys):
    now = datetime(2026, 12, 5, 0, 2, 30, tzinfo=UTC)
    code, out, err, prometheus = run(
        capsys,
        "--stack",
        "burst",
        "--month",
        "2026-12",
        "--team",
        "research",
        answer=ANSWER[:1],
        now=now,
    )
    assert code == 0, err
    # Dec 1 to Dec 5 00:00 (now, to the 5 minutes): 4 days, 345,600 s.
    assert prometheus.queries == [
        "sum by (namespace, cluster_queue, pool, job_name) (sum_over_time("
        'gpu_platform_team:gpus_running{namespace="research"}[345600s:300s])) * 300 / 3600'
    ]
    assert prometheus.times == ["1796428799"]
    assert "2026-12 research: 120.000 GPU-hours, $589.95" in out


def test_an_existing_clusters_export_has_gpu_hours_and_no_price(capsys):
    answer = [sample(8, namespace="research", cluster_queue="shared", pool="a100", job_name="j")]
    code, out, err, _ = run(
        capsys, "--stack", "onprem", "--month", "2026-11", "--format", "csv", answer=answer
    )
    assert code == 0, err
    assert out.splitlines()[1] == "2026-11,research,shared,a100,j,8.000,,"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--month", "2026-13"], "--month 2026-13: not a month; give YYYY-MM, e.g. 2026-11"),
        (["--month", "Nov-2026"], "--month Nov-2026: not a month; give YYYY-MM"),
        (["--month", "2027-01"], "--month 2027-01: has not begun (now 2026-12-05 00:00 UTC)"),
        (
            ["--month", "2026-11", "--team", "nobody"],
            "--team nobody: not a team of burst; one of training, research",
        ),
        (["--month", "2026-11", "--format", "xlsx"], "invalid choice: 'xlsx'"),
    ],
)
def test_bad_input_exits_2_saying_what_is_valid(capsys, argv, message):
    try:
        code = main(
            ["--stack", "burst", *argv, "--prometheus-url", "http://127.0.0.1:9"], ROOT, NOW
        )
    except SystemExit as refused:  # argparse's own refusal of a choice
        code = refused.code
    assert code == 2
    assert message in capsys.readouterr().err


def test_prometheus_unreachable_exits_1(capsys):
    code = main(
        ["--stack", "burst", "--month", "2026-11", "--prometheus-url", "http://127.0.0.1:9"],
        ROOT,
        NOW,
    )
    assert code == 1
    assert "Prometheus at http://127.0.0.1:9 could not be reached" in capsys.readouterr().err


def test_the_command_docs_cost_shows_runs(capsys):
    text = (ROOT / "docs" / "cost.md").read_text()
    (line,) = re.findall(r"^\s*(python -m jobs usage .*)$", text, re.MULTILINE)
    words = shlex.split(line)[4:]
    assert "--prometheus-url" in words
    # staging: pool a100-efa, p4d.24xlarge on demand in us-east-1, $21.958/h over 8 GPUs:
    # $2.74475 a GPU-hour; 10.5 GPU-hours: $28.819875, $28.82.
    answer = [
        sample(
            10.5, namespace="training", cluster_queue="shared", pool="a100-efa", job_name="llm-b"
        )
    ]
    with Prometheus(answer) as prometheus:
        words[words.index("--prometheus-url") + 1] = prometheus.url
        assert jobs_main(["usage", *words]) == 0
    assert "2026-11,training,shared,a100-efa,llm-b,10.500,2.74475,28.82" in capsys.readouterr().out


def test_without_a_url_it_asks_the_stacks_prometheus_through_the_api_server(
    tmp_path, monkeypatch, capsys
):
    """As `jobs status` does: kube-prometheus-stack 88.5.3's Service
    `kube-prometheus-stack-prometheus`, port 9090, in the monitoring namespace, through the API
    server's service proxy (tests/jobs/test_status.py)."""
    (tmp_path / "kc").write_text("apiVersion: v1\nkind: Config\n")
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kc"))
    kubectl = stand_in_kubectl(tmp_path / "bin", monkeypatch)
    query = (
        "sum by (namespace, cluster_queue, pool, job_name) "
        "(sum_over_time(gpu_platform_team:gpus_running[2592000s:300s])) * 300 / 3600"
    )
    proxy = (
        "/api/v1/namespaces/monitoring/services/kube-prometheus-stack-prometheus:9090/proxy"
        f"/api/v1/query?query={quote(query, safe='')}&time=1796083199"
    )
    labels = {"namespace": "training", "cluster_queue": "shared", "pool": "a100-efa"}
    kubectl.answer("get", "--raw", proxy, stdout=vector(({**labels, "job_name": "x"}, "2")))
    assert main(["--stack", "staging", "--month", "2026-11", "--format", "csv"], ROOT, NOW) == 0
    # 2 GPU-hours x $2.74475 = $5.4895, $5.49.
    assert capsys.readouterr().out.splitlines()[1] == (
        "2026-11,training,shared,a100-efa,x,2.000,2.74475,5.49"
    )
