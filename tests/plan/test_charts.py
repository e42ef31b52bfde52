"""`make charts` and `make charts-lock` (plan/charts.py) against a chart repository and an
OCI registry served on 127.0.0.1: what lands in the cache, and every way a chart is refused."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import threading
from datetime import date
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import yaml

from model.versions import CHARTS, Chart
from plan import charts as cache
from tests.conftest import SHARED_HELM, make_project
from tests.helpers.loopback import SHUTDOWN_POLL_S, free_port

RECORDED = date(2026, 12, 1)
TOKEN = "anonymous-pull-token"
# Helm's chart layer media type (helm.sh docs, "Use OCI-based registries").
HELM_LAYER = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
# The first 16 hex digits of each archive's sha256 in ../shared/helm/README.md's table.
README_SHA256 = {"keda": "08e477a00622e95d", "kueue": "8a8b7cc1b057f52b"}


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def shared(name: str) -> bytes:
    assert SHARED_HELM.is_dir(), f"{SHARED_HELM} is missing: check out ../shared beside the repo"
    return (SHARED_HELM / name).read_bytes()


def republished(data: bytes) -> bytes:
    """The same chart packaged again: the same tar, another gzip header, another digest."""
    return gzip.compress(gzip.decompress(data), mtime=1)


class FakeRepositories:
    """A Helm HTTP repository under /repo and an OCI registry under /v2 that, as registry.k8s.io
    does, answers 401 with a Bearer challenge until given the token from /token."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.requests: list[tuple[str, str | None]] = []
        self.keda = shared("keda-2.20.2.tgz")
        self.pushgateway = shared("prometheus-pushgateway-3.8.0.tgz")
        self.kueue = shared("kueue-0.19.2.tgz")
        self.index_digests: dict[str, str] = {}
        self.layer_digest: str | None = None

    def serve(self, host: str) -> None:
        self.host = host
        self.url = f"http://{host}/repo"
        self.publish()

    def publish(self, versions: tuple[str, ...] = ("2.20.2", "2.20.1")) -> None:
        """index.yaml as a real one is written: `digest` is the archive's own sha256 (Helm,
        "The Chart Repository Guide": the index's digest field). keda's url is relative,
        pushgateway's absolute (prometheus-community's index points at GitHub releases)."""
        self.files["/repo/keda-2.20.2.tgz"] = self.keda
        self.files["/releases/prometheus-pushgateway-3.8.0.tgz"] = self.pushgateway
        keda = [
            {
                "name": "keda",
                "version": v,
                "urls": [f"keda-{v}.tgz"],
                "digest": self.index_digests.get("keda", digest(self.keda)),
            }
            for v in versions
        ]
        pushgateway = {
            "name": "prometheus-pushgateway",
            "version": "3.8.0",
            "urls": [f"http://{self.host}/releases/prometheus-pushgateway-3.8.0.tgz"],
            "digest": digest(self.pushgateway),
        }
        index = {
            "apiVersion": "v1",
            "entries": {"keda": keda, "prometheus-pushgateway": [pushgateway]},
        }
        self.files["/repo/index.yaml"] = yaml.safe_dump(index).encode()
        layer = self.layer_digest or f"sha256:{digest(self.kueue)}"
        self.files[f"/v2/kueue/charts/kueue/blobs/{layer}"] = self.kueue
        manifest = {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.cncf.helm.config.v1+json",
                "digest": "sha256:0",
            },
            "layers": [{"mediaType": HELM_LAYER, "digest": layer, "size": len(self.kueue)}],
        }
        self.files["/v2/kueue/charts/kueue/manifests/0.19.2"] = json.dumps(manifest).encode()

    def answer(self, path: str, authorization: str | None) -> tuple[int, dict[str, str], bytes]:
        self.requests.append((path, authorization))
        if path.startswith("/token?"):
            return 200, {}, json.dumps({"token": TOKEN}).encode()
        if path.startswith("/v2/") and authorization != f"Bearer {TOKEN}":
            challenge = (
                f'Bearer realm="http://{self.host}/token",service="{self.host}",'
                'scope="repository:kueue/charts/kueue:pull"'
            )
            return 401, {"WWW-Authenticate": challenge}, b"{}"
        if path in self.files:
            return 200, {}, self.files[path]
        return 404, {}, b"not found"

    def charts(self, *names: str) -> list[Chart]:
        every = {
            "keda": Chart("keda", self.url, "2.20.2"),
            "prometheus-pushgateway": Chart("prometheus-pushgateway", self.url, "3.8.0"),
            "kueue": Chart("kueue", f"oci://{self.host}/kueue/charts", "0.19.2"),
        }
        return [every[name] for name in names or every]


@pytest.fixture
def repos():
    fake = FakeRepositories()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            status, headers, body = fake.answer(self.path, self.headers.get("Authorization"))
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(SHUTDOWN_POLL_S,), daemon=True)
    thread.start()
    fake.serve(f"127.0.0.1:{server.server_address[1]}")
    yield fake
    server.shutdown()
    server.server_close()


def recorded_lock(tmp_path, repos, *names):
    lock = tmp_path / "charts.lock.json"
    assert cache.record(repos.charts(*names), lock, RECORDED, timeout=5) == []
    return lock


def test_record_then_pull_lands_every_chart_verified(tmp_path, repos, capsys):
    lock = recorded_lock(tmp_path, repos)
    written = json.loads(lock.read_text())
    assert "make charts-lock" in written["note"]
    assert set(written["charts"]) == {"keda", "prometheus-pushgateway", "kueue"}
    for name, prefix in README_SHA256.items():
        (entry,) = written["charts"][name].values()
        assert entry["sha256"].startswith(prefix)
        assert entry["recorded"] == "2026-12-01"
    assert f"+ keda 2.20.2 sha256 {README_SHA256['keda']}" in capsys.readouterr().out

    dest = tmp_path / "charts"
    assert cache.pull(repos.charts(), dest, lock, timeout=5) == []
    assert sorted(p.name for p in dest.iterdir()) == [
        "keda-2.20.2.tgz",
        "kueue-0.19.2.tgz",
        "prometheus-pushgateway-3.8.0.tgz",
    ]
    assert (dest / "keda-2.20.2.tgz").read_bytes() == repos.keda
    assert (dest / "prometheus-pushgateway-3.8.0.tgz").read_bytes() == repos.pushgateway
    assert (dest / "kueue-0.19.2.tgz").read_bytes() == repos.kueue


def test_oci_pull_asks_anonymously_then_with_the_challenges_token(tmp_path, repos):
    lock = recorded_lock(tmp_path, repos, "kueue")
    repos.requests.clear()
    assert cache.pull(repos.charts("kueue"), tmp_path / "charts", lock, timeout=5) == []
    paths = [(path.split("?")[0], auth) for path, auth in repos.requests]
    blob = f"/v2/kueue/charts/kueue/blobs/sha256:{digest(repos.kueue)}"
    assert paths == [
        ("/v2/kueue/charts/kueue/manifests/0.19.2", None),
        ("/token", None),
        ("/v2/kueue/charts/kueue/manifests/0.19.2", f"Bearer {TOKEN}"),
        (blob, f"Bearer {TOKEN}"),
    ]
    token_query = repos.requests[1][0]
    assert "scope=repository%3Akueue%2Fcharts%2Fkueue%3Apull" in token_query


def test_moved_chart_fails_naming_both_digests_and_leaves_nothing(tmp_path, repos):
    lock = recorded_lock(tmp_path, repos)
    before = digest(repos.keda)
    repos.keda = republished(repos.keda)
    repos.publish()  # the index now publishes the new archive's digest, as upstream would
    dest = tmp_path / "charts"
    errors = cache.pull(repos.charts("keda"), dest, lock, timeout=5)
    assert len(errors) == 1
    assert f"keda 2.20.2 from {repos.url}" in errors[0]
    assert before in errors[0] and digest(repos.keda) in errors[0]
    assert "2026-12-01" in errors[0] and "make charts-lock" in errors[0]
    assert list(dest.iterdir()) == []


@pytest.mark.parametrize("name", ["keda", "kueue"])
def test_published_digest_not_matching_the_bytes_fails(tmp_path, repos, name):
    lock = recorded_lock(tmp_path, repos)
    served = republished(getattr(repos, name))
    if name == "keda":
        repos.index_digests["keda"] = digest(repos.keda)  # the index keeps the old digest
        repos.keda = served
    else:
        repos.layer_digest = f"sha256:{digest(repos.kueue)}"  # the layer keeps the old digest
        repos.kueue = served
    repos.publish()
    dest = tmp_path / "charts"
    errors = cache.pull(repos.charts(name), dest, lock, timeout=5)
    assert len(errors) == 1
    assert digest(served) in errors[0]
    assert digest(shared(f"{name}-{CHARTS[name].version}.tgz")) in errors[0]
    assert "the repository publishes" in errors[0] and name in errors[0]
    assert list(dest.iterdir()) == []
    # record refuses it too, and leaves the lock as it was
    before = lock.read_text()
    assert len(cache.record(repos.charts(), lock, date(2027, 1, 1), timeout=5)) == 1
    assert lock.read_text() == before


def test_chart_missing_from_the_lock_fails_with_the_instruction(tmp_path, repos):
    lock = tmp_path / "charts.lock.json"
    lock.write_text(json.dumps({"note": cache.LOCK_NOTE, "charts": {}}))
    errors = cache.pull(repos.charts(), tmp_path / "charts", lock, timeout=5)
    assert len(errors) == 3
    assert f"keda 2.20.2 from {repos.url}: not recorded in charts.lock.json" in errors[0]
    assert all("run `make charts-lock` where the repository is reachable" in e for e in errors)
    assert repos.requests == []  # nothing is downloaded that could not be checked


def test_lock_of_another_version_fails(tmp_path, repos):
    lock = recorded_lock(tmp_path, repos, "keda")
    data = json.loads(lock.read_text())
    data["charts"]["keda"] = {"2.20.1": data["charts"]["keda"]["2.20.2"]}
    lock.write_text(json.dumps(data))
    errors = cache.pull(repos.charts("keda"), tmp_path / "charts", lock, timeout=5)
    assert len(errors) == 1
    assert "keda 2.20.2 from" in errors[0] and "(it records 2.20.1)" in errors[0]


def test_version_missing_from_the_index_fails(tmp_path, repos):
    lock = recorded_lock(tmp_path, repos, "keda")
    repos.publish(versions=("2.20.1", "2.19.0"))
    errors = cache.pull(repos.charts("keda"), tmp_path / "charts", lock, timeout=5)
    assert len(errors) == 1
    assert "version 2.20.2 is not in the repository's index.yaml" in errors[0]
    assert "(newest offered: 2.20.1, 2.19.0)" in errors[0]


def test_unreachable_repository_fails_clearly(tmp_path):
    port = free_port()
    chart = Chart("keda", f"http://127.0.0.1:{port}/repo", "2.20.2")
    errors = cache.record([chart], tmp_path / "lock.json", RECORDED, timeout=5)
    assert len(errors) == 1
    assert (
        f"keda 2.20.2 from http://127.0.0.1:{port}/repo: cannot reach the repository" in errors[0]
    )
    assert not (tmp_path / "lock.json").exists()


def test_repository_answering_404_names_the_url(tmp_path, repos):
    chart = Chart("keda", repos.url + "/moved", "2.20.2")
    errors = cache.record([chart], tmp_path / "lock.json", RECORDED, timeout=5)
    assert len(errors) == 1
    assert f"{repos.url}/moved/index.yaml answered HTTP 404" in errors[0]


def test_every_chart_is_tried_and_each_failure_reported(tmp_path, repos):
    lock = recorded_lock(tmp_path, repos)
    repos.publish(versions=("2.20.1",))  # keda fails, the two others do not
    dest = tmp_path / "charts"
    errors = cache.pull(repos.charts(), dest, lock, timeout=5)
    assert [e.split(" ", 1)[0] for e in errors] == ["keda"]
    assert sorted(p.name for p in dest.iterdir()) == [
        "kueue-0.19.2.tgz",
        "prometheus-pushgateway-3.8.0.tgz",
    ]


def test_record_keeps_an_unchanged_digests_date_and_prints_the_changes(tmp_path, repos, capsys):
    lock = recorded_lock(tmp_path, repos)
    capsys.readouterr()
    assert cache.record(repos.charts(), lock, date(2027, 1, 1), timeout=5) == []
    assert capsys.readouterr().out == "no change against the previous lock\n"
    old = digest(repos.keda)
    repos.keda = republished(repos.keda)
    repos.publish()
    assert cache.record(repos.charts(), lock, date(2027, 2, 1), timeout=5) == []
    assert capsys.readouterr().out == f"~ keda 2.20.2, sha256 {old} -> {digest(repos.keda)}\n"
    entries = json.loads(lock.read_text())["charts"]
    assert entries["keda"]["2.20.2"]["recorded"] == "2027-02-01"
    assert entries["kueue"]["0.19.2"]["recorded"] == "2026-12-01"


def test_make_charts_without_a_recorded_digest_says_so_for_every_pinned_chart(tmp_path, capsys):
    lock = tmp_path / "charts.lock.json"
    lock.write_text(json.dumps({"note": cache.LOCK_NOTE, "charts": {}}))
    status = cache.main(["--lock", str(lock), "pull", "--dest", str(tmp_path / "charts")])
    assert status == 1
    err = capsys.readouterr().err
    for chart in CHARTS.values():
        assert f"{chart.name} {chart.version} from {chart.repository}: not recorded" in err
    assert err.strip().endswith(f"{len(CHARTS)} of {len(CHARTS)} chart(s) failed")


def test_the_committed_lock_records_only_pins_and_the_stacks_overrides():
    """Filled by `make charts-lock`; a pin bumped, or an override removed, without
    re-recording fails here, before `make charts` would."""
    lock = json.loads(cache.LOCK.read_text())
    assert set(lock) == {"note", "charts"} and "make charts-lock" in lock["note"]
    wanted = {(c.name, c.version): c.repository for c in cache.wanted()}
    for name, versions in lock["charts"].items():
        for version, entry in versions.items():
            assert (name, version) in wanted, f"{name} {version}: neither a pin nor an override"
            assert entry["repository"] == wanted[name, version]
            assert re.fullmatch(r"[0-9a-f]{64}", entry["sha256"]), entry
            date.fromisoformat(entry["recorded"])


def test_an_empty_lock_is_said_first_with_the_command_that_fills_it(tmp_path, repos, capsys):
    """Issue 26: the lock is committed empty (model/charts.lock.json), so `make charts`
    cannot succeed out of the box; its output says so before the per-chart refusals."""
    lock = tmp_path / "charts.lock.json"
    lock.write_text(json.dumps({"note": cache.LOCK_NOTE, "charts": {}}))
    errors = cache.pull(repos.charts(), tmp_path / "charts", lock, timeout=5)
    out = capsys.readouterr().out
    assert len(errors) == len(repos.charts())
    assert out.startswith(
        f"note: charts.lock.json records no digests, so every one of the "
        f"{len(repos.charts())} charts is refused"
    )
    assert "`make charts-lock charts` where the repositories are reachable" in out
    assert "unknown, never as deleted" in out


def test_a_lock_that_records_a_chart_says_nothing_of_an_empty_one(tmp_path, repos, capsys):
    lock = recorded_lock(tmp_path, repos, "keda")
    cache.pull(repos.charts("keda"), tmp_path / "charts", lock, timeout=5)
    assert "records no digests" not in capsys.readouterr().out


def test_the_lock_takes_every_version_a_stack_file_overrides_a_chart_to(tmp_path, repos, capsys):
    """A stack's override (gpu-platform:charts) is recorded and pulled beside the pin, under
    its chart by version: `make charts-lock charts` is how a stack comes to take one. Entries
    that name no pinned chart, or the pin itself, are not versions to record."""
    config = {
        "gpu-platform:charts": {
            "keda": {"version": "2.20.1"},
            "kueue": {"version": CHARTS["kueue"].version},
            "not-a-chart": {"version": "1.0.0"},
        }
    }
    root = make_project(tmp_path, {"dev": config, "prod": {}})
    assert cache.stack_overrides(root) == [
        Chart("keda", "https://kedacore.github.io/charts", "2.20.1")
    ]
    assert cache.wanted(root)[: len(CHARTS)] == list(CHARTS.values())

    repos.files["/repo/keda-2.20.1.tgz"] = repos.keda  # the index lists 2.20.1 too
    charts = [*repos.charts("keda"), Chart("keda", repos.url, "2.20.1")]
    lock = tmp_path / "charts.lock.json"
    assert cache.record(charts, lock, RECORDED, timeout=5) == []
    assert set(json.loads(lock.read_text())["charts"]["keda"]) == {"2.20.1", "2.20.2"}
    assert "+ keda 2.20.1 sha256" in capsys.readouterr().out
    dest = tmp_path / "charts"
    assert cache.pull(charts, dest, lock, timeout=5) == []
    assert sorted(p.name for p in dest.iterdir()) == ["keda-2.20.1.tgz", "keda-2.20.2.tgz"]
