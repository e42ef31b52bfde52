"""Check 4, storage: real files on this machine's disk stand in for `shared-data` and `nvme-cache`;
the WebDataset shards are real tars read back through Pillow; a missing mount fails its own
volume's checks and leaves the rest of the report intact."""

from __future__ import annotations

import tarfile

import pytest
import torch
from selftest import data, storage
from selftest.context import SelfTestContext

from tests.helpers.selftest_group import run_group


def _ctx(tmp_path, **overrides) -> SelfTestContext:
    (tmp_path / "shared").mkdir(exist_ok=True)
    (tmp_path / "nvme").mkdir(exist_ok=True)
    settings = dict(
        run_id="t", rank=0, world_size=1, local_rank=0, device="cpu", out_dir=tmp_path / "out",
        shared_data=tmp_path / "shared", nvme_cache=tmp_path / "nvme",
        storage_bytes=4 * 1024 * 1024, small_files=50,
    )  # fmt: skip
    settings.update(overrides)
    return SelfTestContext(**settings)


def _by_name(results):
    return {result.name: result for result in results}


def test_percentiles_interpolate_linearly():
    # numpy.percentile's default ("linear") and statistics.quantiles(method="inclusive") agree:
    # over 1..100 the median is 50.5 and the 99th percentile 1 + 0.99 × 99 = 99.01.
    values = [float(v) for v in range(1, 101)]
    assert storage.percentile(values, 50) == pytest.approx(50.5)
    assert storage.percentile(values, 99) == pytest.approx(99.01)


def test_a_missing_mount_fails_that_volume_only(tmp_path):
    ctx = _ctx(tmp_path, nvme_cache=tmp_path / "absent")
    results = _by_name(storage.run(ctx))
    assert results["storage.nvme-cache"].status == "FAIL"
    assert results["storage.nvme-cache"].reason == f"not mounted: {tmp_path / 'absent'}"
    # Measured with no floor: reported as INFO, neither passed nor failed.
    for name in ("write", "read", "small_file_p99"):
        assert results[f"storage.shared-data.{name}"].status == "INFO"
        assert results[f"storage.shared-data.{name}"].value > 0
    assert results["storage.pipeline"].status == "INFO"
    # The measurement leaves nothing behind on the volume but the shards.
    assert not list((tmp_path / "shared" / "selftest" / "t").glob("storage-*"))


def test_without_shared_storage_the_pipeline_fails_with_the_reason(tmp_path):
    ctx = _ctx(tmp_path, shared_data=tmp_path / "gone")
    results = _by_name(storage.run(ctx))
    assert results["storage.shared-data"].reason == f"not mounted: {tmp_path / 'gone'}"
    assert results["storage.pipeline"].status == "FAIL"
    assert (
        results["storage.pipeline"].reason == f"FileNotFoundError: not mounted: {tmp_path / 'gone'}"
    )
    assert results["storage.nvme-cache.write"].status == "INFO"


def test_figures_are_held_to_the_floors_from_the_context(tmp_path):
    floors = {
        "nvme-cache.write_mb_s": 1e9,  # no disk writes a petabyte per second
        "nvme-cache.small_file_p99_us": 200.0,
        "shared-data.read_mb_s": 0.001,
    }
    ctx = _ctx(tmp_path, floors=floors, floor_sources={"nvme-cache.small_file_p99_us": "plan"})
    results = _by_name(
        storage.check_volume(ctx, "nvme-cache", ctx.nvme_cache)
        + storage.check_volume(ctx, "shared-data", ctx.shared_data)
    )
    write = results["storage.nvme-cache.write"]
    assert (write.status, write.threshold) == ("FAIL", 1e9)
    assert write.reason.endswith("MB/s below 1e+09")
    assert results["storage.shared-data.read"].status == "PASS"
    p99 = results["storage.nvme-cache.small_file_p99"]
    assert (p99.threshold, p99.source, p99.unit) == (200.0, "plan", "us")
    assert len(p99.details["latencies_us"]) == 50
    assert p99.details["p50_us"] <= p99.details["p99_us"]
    unjudged = results["storage.shared-data.write"]
    assert (unjudged.status, unjudged.reason) == ("INFO", "no floor set (shared-data.write_mb_s)")


def test_a_latency_over_its_ceiling_fails(tmp_path):
    ctx = _ctx(tmp_path, floors={"nvme-cache.small_file_p99_us": 0.001})
    p99 = _by_name(storage.check_volume(ctx, "nvme-cache", ctx.nvme_cache))[
        "storage.nvme-cache.small_file_p99"
    ]
    assert p99.status == "FAIL"
    assert p99.reason.endswith("us above 0.001")


def test_shards_are_webdataset_tars_of_png_and_json_members(tmp_path):
    # WebDataset's format (its README): a plain tar; members sharing a basename form a sample.
    paths = data.write_shards(tmp_path, seed=0, shards=2)
    assert [p.name for p in paths] == ["shard-00000.tar", "shard-00001.tar"]
    with tarfile.open(paths[1]) as tar:
        names = tar.getnames()
    assert names[:4] == ["00000008.png", "00000008.json", "00000009.png", "00000009.json"]
    assert len(names) == 16
    samples = list(data.iter_samples(paths))
    assert len(samples) == 16
    meta, image = samples[9]
    assert meta == {"key": "00000009", "index": 9, "seed": 0}
    assert (image.shape, image.dtype) == ((3, 512, 512), torch.uint8)
    assert not list(tmp_path.glob("*.partial"))


def test_augmentation_crops_and_flips_reproducibly():
    # Columns numbered left to right: a flipped crop's columns run right to left.
    image = torch.arange(256, dtype=torch.uint8).repeat(3, 512, 1)
    ascending = descending = 0
    for seed in range(20):
        crop = data.augment(image, 64, torch.Generator().manual_seed(seed))
        assert crop.shape == (3, 64, 64)
        assert crop.min() >= -1.0 and crop.max() <= 1.0
        same = data.augment(image, 64, torch.Generator().manual_seed(seed))
        assert torch.equal(crop, same)
        row = crop[0, 0]
        ascending += bool((row[1:] > row[:-1]).all())
        descending += bool((row[1:] < row[:-1]).all())
    assert ascending + descending == 20
    assert ascending and descending


def test_two_ranks_split_the_shards_and_report_one_rate(tmp_path):
    (tmp_path / "shared").mkdir()
    (tmp_path / "nvme").mkdir()
    ranks = run_group(
        "selftest.storage:run", tmp_path / "ranks", run_id="g", out_dir=tmp_path / "out",
        shared_data=tmp_path / "shared", nvme_cache=tmp_path / "nvme",
        storage_bytes=4 * 1024 * 1024, small_files=20,
    )  # fmt: skip
    pipeline = [_by_name(results)["storage.pipeline"] for results in ranks]
    # 4 shards of 8 samples (data.SHARDS, data.SAMPLES_PER_SHARD), counted across both ranks.
    assert [p.details["samples"] for p in pipeline] == [32, 32]
    assert pipeline[0].value == pipeline[1].value > 0
    # Only local rank 0 measures the node's volumes.
    assert "storage.nvme-cache.write" in _by_name(ranks[0])
    assert "storage.nvme-cache.write" not in _by_name(ranks[1])
