"""The launcher every job's container runs (components/scheduling/launcher.py): ConfigMap
`training-launcher` in every namespace jobs run in, on every stack (a MultiKueue worker is a
stack of its own), holding this checkout's contract/launch.py and the contract modules it
imports, under the keys the job builder's volume mounts."""

from __future__ import annotations

import pytest

from components.control.namespaces import job_namespaces
from components.scheduling.launcher import SOURCES, launcher_configmap
from components.scheduling.training_job import launcher_volume
from model.stacks import ROOT
from tests.conftest import STACKS, planned, stack_config

FILES = {
    "launch.py": "contract/launch.py",
    "contract.__init__.py": "contract/__init__.py",
    "contract.exits.py": "contract/exits.py",
}


def launchers(stack: str) -> dict[str, dict]:
    return {
        o["metadata"]["namespace"]: o
        for o in planned(stack).kubernetes_objects()
        if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "training-launcher"
    }


@pytest.mark.parametrize("stack", STACKS)
def test_every_namespace_jobs_run_in_holds_the_launcher(stack):
    assert sorted(launchers(stack)) == sorted(job_namespaces(stack_config(stack)))


@pytest.mark.parametrize("stack", STACKS)
def test_the_launcher_holds_the_contract_files_as_this_checkout_has_them(stack):
    for configmap in launchers(stack).values():
        expected = {key: (ROOT / path).read_text() for key, path in FILES.items()}
        assert configmap["data"] == expected
        assert configmap["metadata"]["labels"] == {
            "app.kubernetes.io/part-of": "gpu-platform",
            "gpu-platform/plane": "scheduling",
        }


def test_a_missing_contract_file_fails_the_plan_instead_of_shipping_a_launcher_without_it(
    monkeypatch,
):
    monkeypatch.setitem(SOURCES, "launch.py", ROOT / "contract" / "no-such-launch.py")
    with pytest.raises(FileNotFoundError, match=r"no-such-launch\.py"):
        launcher_configmap("training")


def test_the_volume_mounts_each_file_at_the_path_the_launcher_imports_it_from():
    """`python /opt/gpu-platform/launcher/launch.py` puts the script's folder first on sys.path
    (Python docs, sys.path), so `import contract.exits` reads contract/exits.py beside it."""
    items = {i["key"]: i["path"] for i in launcher_volume()["configMap"]["items"]}
    assert items == {
        "launch.py": "launch.py",
        "contract.__init__.py": "contract/__init__.py",
        "contract.exits.py": "contract/exits.py",
    }


@pytest.mark.parametrize("stack", STACKS)
def test_no_rendezvous_service_is_left_jobset_makes_its_own(stack):
    assert not [
        o
        for o in planned(stack).kubernetes_objects()
        if o["kind"] == "Service" and o["metadata"]["name"] == "rendezvous"
    ]
