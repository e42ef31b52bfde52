"""contract/: what the program and the image side both read, spelled once. The floors are
shared/FACTS.md's figures and agree with the catalog; no module of either side writes one of
the contract's environment variable names or mount paths as its own literal."""

from __future__ import annotations

from contract import env, floors, mounts
from model.catalog import CATALOG
from model.stacks import ROOT
from tests.helpers.spelled import respelled

SIDES = ("components", "jobs", "bootstrap", "recipes")


def test_busbw_floors_are_the_facts_md_figures():
    # shared/FACTS.md "Self-test numbers": one 8-GPU node A100 ≈ 228 GB/s, H100 ≈ 460,
    # H200 ≈ 431; two nodes: 2 × p4de ≈ 78 GB/s at 2 GiB, 2 × p5 ≈ 444.
    assert floors.INTRA_NODE_BUSBW_GBPS == {"A100": 228.0, "H100": 460.0, "H200": 431.0}
    assert floors.INTER_NODE_BUSBW_GBPS == {"p4de.24xlarge": 78.0, "p5.48xlarge": 444.0}
    assert floors.busbw_floor("intra", "p5en.48xlarge") == 431.0
    assert floors.busbw_floor("intra", "g5.48xlarge") is None
    assert floors.busbw_floor("inter", "p5e.48xlarge") is None


def test_the_images_gpu_models_are_the_catalogs():
    """The image knows an instance type's GPU model only from the contract: every 8-GPU type of
    a model with a floor is there, as the catalog has it."""
    wanted = {
        t: c.gpu_model
        for t, c in CATALOG.items()
        if c.gpu_model in floors.INTRA_NODE_BUSBW_GBPS and c.gpus == 8
    }
    assert wanted == floors.GPU_MODEL_OF
    assert set(floors.INTER_NODE_BUSBW_GBPS) <= set(CATALOG)


def test_mount_paths():
    # The platform's choice (docs/storage.md): shared data and the node's NVMe cache.
    assert mounts.SHARED_DATA_MOUNT_PATH == "/mnt/shared-data"
    assert mounts.NVME_CACHE_MOUNT_PATH == "/mnt/nvme-cache"


def contract_values() -> set[str]:
    return {
        value
        for module in (env, mounts)
        for name, value in vars(module).items()
        if name.isupper() and isinstance(value, str)
    }


def test_each_env_name_is_its_own_value():
    """A name is the variable it names: a typo on either side is an ImportError, not a variable
    nobody sets."""
    names = {n: v for n, v in vars(env).items() if n.isupper()}
    assert names and all(n == v for n, v in names.items())


def test_no_module_of_either_side_spells_the_contract_again():
    values = contract_values()
    assert {"SELFTEST_FLOORS", "RECIPE_SETTINGS", "NODE_NAME", "/mnt/nvme-cache"} <= values
    allowed = set((ROOT / "contract").rglob("*.py"))
    assert respelled(values, SIDES, allowed) == []
    # The scan finds a copy: contract/ itself writes them.
    assert respelled({"/mnt/nvme-cache"}, ("contract",), set()) == [
        "contract/mounts.py: /mnt/nvme-cache"
    ]
