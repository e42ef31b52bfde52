"""trainkit, the eviction-safe training pieces teams' scripts use: the script docs/training.md
shows, run on two gloo ranks under torchrun, interrupted by SIGTERM as the kubelet sends it and
resumed; its checkpoint's manifest; and the keyed data loader."""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import trainkit
from trainkit.checkpoint import CheckpointError, checkpoint_root

from recipes.shards import KeyedBatches, ShardStream, micro_batch, rank_shards
from recipes.tiny import synthetic_shards
from tests.helpers.hang import HANG_S
from tests.helpers.image_path import IMAGE_PYTHONPATH
from tests.helpers.loopback import free_port

ROOT = Path(__file__).resolve().parents[3]
STEPS = 6


def documented_script() -> str:
    """The python block of docs/training.md's "Your own script" section, as a reader copies it."""
    page = (ROOT / "docs/training.md").read_text()
    section = page.split("## Your own script", 1)[1]
    return re.search(r"```python\n(.*?)```", section, flags=re.DOTALL).group(1)


def start(script: Path, checkpoints: Path) -> subprocess.Popen:
    env = {
        **os.environ,
        "PYTHONPATH": IMAGE_PYTHONPATH,
        "TRAINKIT_CHECKPOINT_DIR": str(checkpoints),
        "TRAINKIT_METRICS_PORT": "0",
        "MASTER_PORT": str(free_port()),
    }
    env.pop("TORCHELASTIC_USE_AGENT_STORE", None)
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    command += ["--nproc-per-node=2", str(script), f"--max_train_steps={STEPS}"]
    return subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def losses(lines: list[str]) -> dict[int, float]:
    """Step (1-based, as the script prints it) to loss, from rank 0's JSON lines."""
    found = {}
    for line in lines:
        if line.startswith("{"):
            figures = json.loads(line)
            found[figures["step"]] = figures["loss"]
    return found


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    base = tmp_path_factory.mktemp("trainkit")
    script = base / "train.py"
    script.write_text(documented_script())
    reference = start(script, base / "reference")
    out, err = reference.communicate(timeout=HANG_S)
    assert reference.returncode == 0, err[-3000:]
    interrupted = start(script, base / "run")
    seen = []
    for line in interrupted.stdout:
        seen.append(line)
        if losses(seen) and max(losses(seen)) >= 2:
            interrupted.send_signal(signal.SIGTERM)  # as the kubelet signals the container
            break
    rest, interrupted_err = interrupted.communicate(timeout=HANG_S)
    seen += rest.splitlines()
    checkpoints = sorted((base / "run").glob("step-*"))
    resumed = start(script, base / "run")
    resumed_out, resumed_err = resumed.communicate(timeout=HANG_S)
    return {
        "reference": losses(out.splitlines()), "interrupted": losses(seen),
        "interrupted_rc": interrupted.returncode, "interrupted_err": interrupted_err,
        "checkpoints": checkpoints, "resumed": losses(resumed_out.splitlines()),
        "resumed_rc": resumed.returncode, "resumed_err": resumed_err,
    }  # fmt: skip


def test_the_documented_script_stops_on_sigterm_with_a_checkpoint(runs):
    assert runs["interrupted_rc"] != 0, "torchrun ended by SIGTERM reports it"
    (checkpoint,) = runs["checkpoints"]
    stopped_at = max(runs["interrupted"])
    # Saved at the step boundary it stopped on, before the end, with its manifest.
    assert 2 <= stopped_at < STEPS
    assert checkpoint.name == f"step-{stopped_at:08d}"
    assert (checkpoint / "manifest.json").is_file()


def test_the_documented_script_resumes_exactly(runs):
    assert runs["resumed_rc"] == 0, runs["resumed_err"][-3000:]
    stopped_at = max(runs["interrupted"])
    assert sorted(runs["resumed"]) == list(range(stopped_at + 1, STEPS + 1))
    # Bitwise: a float's repr round-trips through JSON; both segments make the whole run.
    assert {**runs["interrupted"], **runs["resumed"]} == runs["reference"]
    assert runs["reference"][STEPS] < runs["reference"][1]


def test_the_manifest_holds_each_files_sha256_as_written(runs):
    """Each rank hashed its files while writing; read back, they must agree, and every file
    DCP wrote (both ranks' data and the metadata) is listed."""
    (checkpoint,) = runs["checkpoints"]
    manifest = json.loads((checkpoint / "manifest.json").read_text())
    on_disk = {p.name for p in checkpoint.iterdir() if p.name != "manifest.json"}
    assert set(manifest) == on_disk == {".metadata", "__0_0.distcp", "__1_0.distcp"}
    for name, digest in manifest.items():
        assert hashlib.sha256((checkpoint / name).read_bytes()).hexdigest() == digest


def test_no_checkpoint_directory_is_an_error_naming_the_variable(monkeypatch):
    monkeypatch.delenv("TRAINKIT_CHECKPOINT_DIR", raising=False)
    with pytest.raises(CheckpointError, match="set TRAINKIT_CHECKPOINT_DIR"):
        checkpoint_root()
    monkeypatch.setenv("TRAINKIT_CHECKPOINT_DIR", "/mnt/shared-data/runs/job")
    assert checkpoint_root() == Path("/mnt/shared-data/runs/job")


def test_the_exit_code_after_sigterm_is_the_shells_for_a_terminated_process():
    # POSIX shell: a process ended by signal N reports 128 + N; SIGTERM is 15.
    assert trainkit.INTERRUPTED == 143


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> list[Path]:
    folder = tmp_path_factory.mktemp("shards")
    synthetic_shards(folder, shards=6, per_shard=8, size=24)
    return rank_shards(folder, 0, 1)


def test_loader_workers_change_nothing_a_step_trains_on(shards):
    """Two worker processes give, position for position, what the training process would make
    itself; started mid-stream (a resume), the same batches from there on."""
    cpu = torch.device("cpu")
    serial = ShardStream(shards, seed=3)
    expected = [micro_batch(serial, at, 4, 16, 0, cpu) for at in range(0, 64, 4)]
    for start in (0, 20):
        with KeyedBatches(shards, 3, 0, 4, 16, start=start, workers=2, pin_memory=False) as batches:
            for want in expected[start // 4 :]:
                got = batches.next(cpu)
                assert torch.equal(got.images, want.images)
                assert got.captions == want.captions
                assert [g.initial_seed() for g in got.generators] == [
                    g.initial_seed() for g in want.generators
                ]
                assert got.images.dtype == torch.float32 and float(got.images.max()) <= 1.0


def test_the_loader_moves_uint8_and_converts_on_the_device(shards):
    crops = KeyedBatches(shards, 0, 0, 2, 16, start=0, workers=0, pin_memory=False).crops
    image, _ = crops[0]
    assert image.dtype == torch.uint8 and image.shape == (3, 16, 16)


def test_a_micro_batch_mixes_shards(shards):
    """The keyed shuffle: consecutive positions are not neighbours in one shard (prepare writes
    a source folder's samples together), and each epoch visits every sample once."""
    stream = ShardStream(shards, seed=0)
    order = stream._order(0)
    assert sorted(order) == [(s, i) for s in range(6) for i in range(8)]
    batches = [order[at : at + 4] for at in range(0, len(order), 4)]
    mixed = sum(len({shard for shard, _ in batch}) > 1 for batch in batches)
    assert mixed == len(batches)
    assert stream._order(1) != order  # a new order every epoch


# --- EMA, and what a Session keeps across a resume -------------------------------------------


def test_the_ema_warm_up_is_diffusers_schedule():
    """diffusers 0.42.1 training_utils.EMAModel.get_decay without use_ema_warmup: 0 at the first
    step, then min(decay, (1 + m) / (10 + m)) with m = step - 1."""
    assert trainkit.ema_decay(1, 0.9999) == 0.0
    assert trainkit.ema_decay(2, 0.9999) == pytest.approx(2 / 11)
    assert trainkit.ema_decay(101, 0.9999) == pytest.approx(101 / 110)
    assert trainkit.ema_decay(10**6, 0.9999) == 0.9999


def test_the_ema_matches_diffusers_emamodel_step_for_step():
    from diffusers.training_utils import EMAModel

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8))
    ours = trainkit.Ema(model, 0.999)
    theirs = EMAModel(model.parameters(), decay=0.999)
    for _ in range(30):
        with torch.no_grad():
            for parameter in model.parameters():
                parameter.add_(torch.randn_like(parameter))
        ours.update(model, theirs.optimization_step + 1)
        theirs.step(model.parameters())
    for mine, reference in zip(ours.module.parameters(), theirs.shadow_params, strict=True):
        torch.testing.assert_close(mine, reference, rtol=1e-6, atol=1e-6)
    assert not any(p.requires_grad for p in ours.module.parameters())


@pytest.fixture
def alone(tmp_path, monkeypatch):
    """A process group of one in this process (gloo), for a Session without torchrun."""
    import torch.distributed as dist

    monkeypatch.setenv("TRAINKIT_METRICS_PORT", "off")
    dist.init_process_group(
        "gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1
    )
    yield
    dist.destroy_process_group()


def _train(directory: Path, total: int) -> tuple[dict[int, float], torch.Tensor]:
    """`total` steps of a keyed regression with an EMA, resumed from `directory`."""
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    ema = trainkit.Ema(model, 0.5)
    session = trainkit.Session(
        model, optimizer, name="t", save_every=2, directory=directory,
        modules={"ema": ema.module},
    )  # fmt: skip
    for step in session.steps(total):
        draw = trainkit.keyed_generator(0, step)
        x, y = torch.randn(8, 3, generator=draw), torch.randn(8, 1, generator=draw)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        ema.update(model, step + 1)
        session.log(loss, samples=8)
    session.checkpoints.finish()
    return session.losses, ema.module.weight.detach().clone()


def test_a_resumed_session_keeps_the_whole_runs_losses_and_its_modules(alone, tmp_path):
    whole, whole_ema = _train(tmp_path / "whole", 4)
    first, _ = _train(tmp_path / "run", 2)
    resumed, resumed_ema = _train(tmp_path / "run", 4)
    assert list(first) == [0, 1] and list(resumed) == [0, 1, 2, 3]
    assert resumed == whole  # both segments, bit for bit
    assert torch.equal(resumed_ema, whole_ema)  # the EMA came back with the checkpoint
