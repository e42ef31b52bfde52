"""bootstrap/Dockerfile: a base pinned by digest, EFA at pinned versions, a non-root user, the
self-test package and its pinned Python needs. Read as text: no Docker daemon here."""

from __future__ import annotations

import re

from components.scheduling.training_job import RUN_AS
from model.stacks import ROOT
from plan.charts import chart_values
from tests.conftest import SHARED_HELM

DOCKERFILE = (ROOT / "bootstrap" / "Dockerfile").read_text()


def args() -> dict[str, str]:
    return dict(re.findall(r"^ARG (\w+)=(\S+)$", DOCKERFILE, flags=re.MULTILINE))


def test_the_base_is_ngc_pytorch_pinned_by_a_digest_the_build_cannot_do_without():
    (base,) = re.findall(r"^FROM (\S+)$", DOCKERFILE, flags=re.MULTILINE)
    assert base == "nvcr.io/nvidia/pytorch:${PYTORCH_TAG}@${PYTORCH_DIGEST}"
    assert re.search(r"^ARG PYTORCH_DIGEST$", DOCKERFILE, flags=re.MULTILINE), "no default"
    assert re.fullmatch(r"\d\d\.\d\d-py3", args()["PYTORCH_TAG"])


def test_efa_installer_and_aws_ofi_nccl_at_pinned_versions():
    versions = args()
    assert re.fullmatch(r"\d+\.\d+\.\d+", versions["EFA_INSTALLER_VERSION"])
    assert re.fullmatch(r"\d+\.\d+\.\d+", versions["AWS_OFI_NCCL_VERSION"])
    assert "aws-efa-installer-${EFA_INSTALLER_VERSION}.tar.gz" in DOCKERFILE
    assert "--skip-kmod" in DOCKERFILE
    assert "releases/download/v${AWS_OFI_NCCL_VERSION}/" in DOCKERFILE
    assert "--with-libfabric=/opt/amazon/efa" in DOCKERFILE


def test_runs_as_the_non_root_uid_the_job_builder_sets():
    (user,) = re.findall(r"^USER (\S+)$", DOCKERFILE, flags=re.MULTILINE)
    assert user == "1000:1000"
    assert RUN_AS == 1000


def test_the_selftest_package_and_numpy_for_distributed_checkpoints():
    assert "COPY --chown=root:root bootstrap/selftest /opt/bootstrap/selftest" in DOCKERFILE
    # The self-test and the recipes import trainkit: it travels in the image beside selftest.
    assert "COPY --chown=root:root bootstrap/trainkit /opt/bootstrap/trainkit" in DOCKERFILE
    assert "PYTHONPATH=/opt/bootstrap" in DOCKERFILE
    # FACTS.md: DCP needs numpy in the image; the CPU run's pins are installed, torch excepted.
    assert "requirements-selftest.txt" in DOCKERFILE
    assert "import numpy, torch.distributed.checkpoint" in DOCKERFILE
    pins = (ROOT / "requirements-selftest.txt").read_text()
    assert re.search(r"^numpy==\S+$", pins, flags=re.MULTILINE)


def test_fio_is_installed_for_the_nvme_checks_and_its_version_recorded():
    """selftest.nvme runs fio; the image installs the distribution's package, stops the build
    when apt brings another version than the pinned one, and keeps `fio --version`."""
    assert re.fullmatch(r"\d+\.\d+", args()["FIO_VERSION"])
    assert "apt-get install -y --no-install-recommends fio;" in DOCKERFILE
    assert "fio --version | tee /opt/bootstrap/fio.version" in DOCKERFILE
    assert 'grep -qx "fio-${FIO_VERSION}" /opt/bootstrap/fio.version' in DOCKERFILE


# The DCGM host engine the self-test's dcgmi asks: the GPU Operator's standalone nv-hostengine,
# image `dcgm` at version 4.6.0-1-ubuntu24.04 (gpu-operator v26.7.0 values.yaml, `dcgm.version`);
# its exporter 4.6.0-4.8.3 is built on the same DCGM 4.6.0 (shared/PINS.md).
ENGINE_DCGM = "4.6.0-1"
OPERATOR_CHART = SHARED_HELM / "gpu-operator-v26.7.0.tgz"


def test_dcgmi_is_installed_at_the_engines_dcgm_version_and_checked_by_the_build():
    """hardware.dcgm_diag runs `dcgmi diag --host <engine>`: without dcgmi in the image every
    run SKIPs; with another DCGM than the engine's, requests may not be understood. The build
    stops unless dcgmi reports the pinned version."""
    assert args()["DCGM_VERSION"] == ENGINE_DCGM
    chart, _ = chart_values(OPERATOR_CHART)
    assert chart["dcgm"]["version"].startswith(ENGINE_DCGM + "-")
    # The client only asks; the diagnostic and its CUDA plugins are the engine's.
    package = '"datacenter-gpu-manager-4-core=1:${DCGM_VERSION}";'
    assert f"apt-get install -y --no-install-recommends {package}" in DOCKERFILE
    assert "dcgmi --version | tee /opt/bootstrap/dcgmi.version" in DOCKERFILE
    assert 'grep -q "version: ${DCGM_VERSION%-*}$" /opt/bootstrap/dcgmi.version' in DOCKERFILE


def copied_onto_the_path(dockerfile: str, folder: str) -> bool:
    """`COPY ... <folder> <dest>/<folder>` with <dest> one of the image's PYTHONPATH entries."""
    dests = re.findall(rf"^COPY --chown=root:root {folder} (\S+)/{folder}$", dockerfile, re.M)
    paths = {p for line in re.findall(r"PYTHONPATH=(\S+)", dockerfile) for p in line.split(":")}
    return bool(dests) and set(dests) <= paths


def test_both_images_carry_the_contract_where_python_finds_it():
    """The self-test reads contract/ (env names, mount paths, floors), the recipes too (their
    batch rule); the recipes' image copies its own, its base may be an earlier build."""
    recipes = (ROOT / "recipes" / "Dockerfile").read_text()
    assert copied_onto_the_path(DOCKERFILE, "contract")
    # The recipes' PYTHONPATH is set in their Dockerfile, over the base's.
    assert copied_onto_the_path(recipes, "contract")
    assert copied_onto_the_path(recipes, "recipes")
    assert not copied_onto_the_path("COPY --chown=root:root contract /elsewhere/contract\n"
                                    "ENV PYTHONPATH=/opt/bootstrap", "contract")  # fmt: skip
