"""prepare: img2dataset's folders → filtered, cropped WebDataset shards and a manifest.

Sources named per test: LAION-Aesthetics V2 "5+" (scores above 5 kept), LAION-5B (Schuhmann et
al. 2022, section 3.1: CLIP similarity at or above the threshold kept), img2dataset's README
(the `output_format=files` layout), the WebDataset format (a tar, a sample's members adjacent and
sharing the key before the first dot), CLIP's preprocessing (openai/CLIP `_transform`)."""

from __future__ import annotations

import io
import json
import os
import signal
import tarfile
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from PIL import Image

from recipes import clip_score, prepare
from recipes.prepare import PrepareError
from recipes.tiny import stage_tiny_clip
from recipes.weights import checksums
from tests.helpers.hang import HANG_S
from tests.helpers.loopback import free_port

RED, GREEN, BLUE = (255, 0, 0), (0, 255, 0), (0, 0, 255)


def settings(**overrides) -> dict:
    """What recipe_settings(cfg, "prepare") hands the pod, at test scale."""
    base = {
        "recipe": "prepare",
        "source": "raw/laion",
        "output": "datasets/laion-32",
        "resolution": 32,
        "aesthetic_key": "aesthetic",
        "min_aesthetic": 5.0,
        "min_clip_similarity": 0.28,
        "samples_per_shard": 1000,
        "clip_batch": 4,
        "latents": False,
        "cpu_workers": 0,
        "weights": {"clip": {"path": "weights/clip", "sha256": {}}},
    }
    return {**base, **overrides}


def photo(seed: int, size: tuple[int, int] = (48, 40)) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8), "RGB")


def pair(
    folder: Path,
    key: str,
    caption: str | None = "a photo",
    aesthetic: object = 6.0,
    image: str | None = "jpg",
    metadata: bool = True,
) -> None:
    """One sample as img2dataset writes it: `<key>.<ext>`, `<key>.txt`, `<key>.json`."""
    folder.mkdir(parents=True, exist_ok=True)
    if image == "garbage":
        (folder / f"{key}.jpg").write_bytes(b"not an image at all")
    elif image is not None:
        photo(int(key)).save(folder / f"{key}.{image}", format="JPEG" if image == "jpg" else None)
    if caption is not None:
        (folder / f"{key}.txt").write_text(caption)
    if metadata:
        meta = {"key": key, "status": "success", "url": f"https://example.com/{key}"}
        if aesthetic is not ...:
            meta["aesthetic"] = aesthetic
        (folder / f"{key}.json").write_text(json.dumps(meta))


class CaptionScorer:
    """Similarity read from the caption ("sim=0.28"), so thresholds are exact; records calls."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, images, texts) -> list[float]:
        assert all(image.size == (32, 32) and image.mode == "RGB" for image in images)
        self.calls.append(list(texts))
        return [float(text.split("sim=")[1]) if "sim=" in text else 1.0 for text in texts]


def shard_names(output: Path) -> list[str]:
    return sorted(path.name for path in output.iterdir() if path.name.startswith("shard-"))


def read_tar(path: Path) -> list[tuple[str, bytes]]:
    with tarfile.open(path) as tar:
        return [(member.name, tar.extractfile(member).read()) for member in tar.getmembers()]


def three_folders(source: Path) -> None:
    """Folders 00000, 00001, 00002 keeping 3, 2 and 1 of 4, 4 and 1 pairs."""
    for folder, kept, dropped in (("00000", 3, 1), ("00001", 2, 2), ("00002", 1, 0)):
        for index in range(kept + dropped):
            key = f"{folder[-1]}{index:08d}"
            pair(source / folder, key, aesthetic=7.0 if index < kept else 1.0)


# --- filters -------------------------------------------------------------------------------


def test_aesthetic_at_five_is_dropped_and_just_above_is_kept(tmp_path):
    # LAION-Aesthetics V2 "5+" and the issue: "drop pairs whose aesthetic score is <= 5".
    shard = tmp_path / "raw/laion/00000"
    pair(shard, "000000000", aesthetic=5.0)
    pair(shard, "000000001", aesthetic=5.01)
    pair(shard, "000000002", aesthetic=4.99)
    report = prepare.run(settings(), tmp_path, tmp_path / "out", scorer=CaptionScorer())
    assert report["kept"] == 1
    assert report["dropped"]["low_aesthetic"] == 2
    members = read_tar(tmp_path / "datasets/laion-32/shard-00000-00000.tar")
    assert [name for name, _ in members] == ["000000001.jpg", "000000001.txt", "000000001.json"]


def test_clip_similarity_at_threshold_is_kept_and_just_below_is_dropped(tmp_path):
    # LAION-5B section 3.1: pairs with similarity below 0.28 removed; equal stays.
    shard = tmp_path / "raw/laion/00000"
    pair(shard, "000000000", caption="sim=0.28")
    pair(shard, "000000001", caption="sim=0.2799")
    pair(shard, "000000002", caption="sim=0.9")
    report = prepare.run(settings(), tmp_path, tmp_path / "out", scorer=CaptionScorer())
    assert (report["kept"], report["dropped"]["low_clip"]) == (2, 1)
    members = read_tar(tmp_path / "datasets/laion-32/shard-00000-00000.tar")
    assert [name for name, _ in members if name.endswith(".txt")] == [
        "000000000.txt",
        "000000002.txt",
    ]


def test_clip_scores_only_pairs_that_passed_the_aesthetic_filter_in_clip_batches(tmp_path):
    shard = tmp_path / "raw/laion/00000"
    for index in range(7):
        pair(shard, f"{index:09d}", caption=f"pair {index}", aesthetic=6.0 if index != 3 else 2.0)
    scorer = CaptionScorer()
    prepare.run(settings(clip_batch=4), tmp_path, tmp_path / "out", scorer=scorer)
    assert scorer.calls == [
        ["pair 0", "pair 1", "pair 2", "pair 4"],
        ["pair 5", "pair 6"],
    ]


def test_manifest_counts_every_reason(tmp_path):
    source = tmp_path / "raw/laion"
    shard = source / "00000"
    pair(shard, "000000000", image=None)  # failed download: caption and metadata only
    pair(shard, "000000001", caption=None)
    pair(shard, "000000002", caption="   \n")  # blank caption
    pair(shard, "000000003", aesthetic=...)  # no score column
    pair(shard, "000000004", aesthetic=None)  # null score
    pair(shard, "000000005", metadata=False)  # no .json at all
    pair(shard, "000000006", aesthetic=3.5)
    pair(shard, "000000007", image="garbage")
    pair(shard, "000000008", caption="sim=0.1")
    pair(shard, "000000009")
    pair(shard, "000000010", image="png")
    pair(source / "00001", "000010000", image="webp")
    # img2dataset writes a parquet and stats beside each folder; they are not samples.
    (source / "00000.parquet").write_bytes(b"PAR1")
    (source / "00000_stats.json").write_text("{}")
    prepare.run(settings(), tmp_path, tmp_path / "out", scorer=CaptionScorer())
    manifest = json.loads((tmp_path / "datasets/laion-32/manifest.json").read_text())
    assert manifest == {
        "source": "raw/laion",
        "seen": 12,
        "kept": 3,
        "dropped": {
            "missing_image": 1,
            "missing_caption": 2,
            "missing_aesthetic": 3,
            "low_aesthetic": 1,
            "unreadable_image": 1,
            "low_clip": 1,
        },
        # Folder 00000 keeps 000000009 and 000000010; folder 00001 its webp.
        "shards": [
            {"name": "shard-00000-00000.tar", "samples": 2},
            {"name": "shard-00001-00000.tar", "samples": 1},
        ],
        "resolution": 32,
        "thresholds": {
            "aesthetic_key": "aesthetic",
            "min_aesthetic": 5.0,
            "min_clip_similarity": 0.28,
        },
    }


def test_aesthetic_key_names_the_metadata_column(tmp_path):
    shard = tmp_path / "raw/laion/00000"
    shard.mkdir(parents=True)
    photo(1).save(shard / "000000001.jpg")
    (shard / "000000001.txt").write_text("a photo")
    (shard / "000000001.json").write_text(json.dumps({"aesthetic_score": 6.5}))
    report = prepare.run(
        settings(aesthetic_key="aesthetic_score"),
        tmp_path,
        tmp_path / "out",
        scorer=CaptionScorer(),
    )
    assert report["kept"] == 1


# --- resize and crop -------------------------------------------------------------------------


def stripes(colours: list[tuple[int, int, int]], vertical: bool) -> Image.Image:
    """One-pixel stripes: columns (vertical) or rows of the given colours, 3 pixels long."""
    row = np.array(colours, dtype=np.uint8)
    array = np.stack([row] * 3) if vertical else np.stack([row] * 3, axis=1)
    return Image.fromarray(array, "RGB")


def test_crop_keeps_the_centre_columns_of_a_wide_image():
    # 6×3, shorter side already 3: no resize; the centre 3 columns start at (6 - 3) // 2 = 1.
    image = stripes([RED, RED, GREEN, GREEN, BLUE, BLUE], vertical=True)
    cropped = clip_score.resize_crop(image, 3)
    assert cropped.size == (3, 3)
    assert [cropped.getpixel((x, 1)) for x in range(3)] == [RED, GREEN, GREEN]


def test_crop_keeps_the_centre_rows_of_a_tall_image():
    image = stripes([RED, RED, GREEN, GREEN, BLUE, BLUE], vertical=False)
    cropped = clip_score.resize_crop(image, 3)
    assert cropped.size == (3, 3)
    assert [cropped.getpixel((1, y)) for y in range(3)] == [RED, GREEN, GREEN]


def test_shorter_side_is_resized_bicubically_then_centre_cropped():
    # 300×200 to 64: the shorter side 200 → 64, the longer 300 × 64 / 200 = 96; the centred
    # window starts at (96 - 64) / 2 = 16. Pillow's own bicubic resize is the reference.
    image = photo(7, size=(300, 200))
    expected = image.resize((96, 64), Image.Resampling.BICUBIC).crop((16, 0, 80, 64))
    result = clip_score.resize_crop(image, 64)
    assert result.size == (64, 64)
    assert np.array_equal(np.asarray(result), np.asarray(expected))


def test_small_and_non_rgb_images_come_out_square_rgb():
    grey = Image.new("L", (20, 10), 128)
    result = clip_score.resize_crop(grey, 32)
    assert (result.size, result.mode) == ((32, 32), "RGB")
    assert result.getpixel((16, 16)) == (128, 128, 128)


# --- shards --------------------------------------------------------------------------------


def test_shards_are_webdataset_tars_with_each_samples_members_adjacent(tmp_path):
    shard = tmp_path / "raw/laion/00000"
    for index in range(5):
        pair(shard, f"{index:09d}", caption=f"caption {index}", aesthetic=5.5 + index)
    pair(shard, "000000005", image="png", caption="a png")
    report = prepare.run(
        settings(samples_per_shard=2), tmp_path, tmp_path / "out", scorer=CaptionScorer()
    )
    output = tmp_path / "datasets/laion-32"
    assert shard_names(output) == [
        "shard-00000-00000.tar",
        "shard-00000-00001.tar",
        "shard-00000-00002.tar",
    ]
    assert report["shards"] == 3
    members = [m for name in shard_names(output) for m in read_tar(output / name)]
    names = [name for name, _ in members]
    assert names[:3] == ["000000000.jpg", "000000000.txt", "000000000.json"]
    # A JPEG source stays JPEG; a PNG source stays lossless.
    assert names[-3:] == ["000000005.png", "000000005.txt", "000000005.json"]
    # WebDataset groups consecutive members by the name before the first dot.
    keys = [name.split(".", 1)[0] for name in names]
    assert keys == [key for key in dict.fromkeys(keys) for _ in range(3)]
    payload = dict(members)
    image = Image.open(io.BytesIO(payload["000000004.jpg"]))
    assert (image.format, image.size, image.mode) == ("JPEG", (32, 32), "RGB")
    assert payload["000000004.txt"] == b"caption 4"
    metadata = json.loads(payload["000000004.json"])
    assert (metadata["aesthetic"], metadata["clip_similarity"]) == (9.5, 1.0)
    assert metadata["url"] == "https://example.com/000000004"
    assert not list(output.glob("*.partial"))


def test_rerun_replaces_the_previous_output(tmp_path):
    shard = tmp_path / "raw/laion/00000"
    for index in range(3):
        pair(shard, f"{index:09d}")
    prepare.run(settings(samples_per_shard=1), tmp_path, tmp_path / "out", scorer=CaptionScorer())
    prepare.run(settings(samples_per_shard=3), tmp_path, tmp_path / "out", scorer=CaptionScorer())
    assert shard_names(tmp_path / "datasets/laion-32") == ["shard-00000-00000.tar"]


def test_report_has_the_common_fields_and_the_counts(tmp_path):
    shard = tmp_path / "raw/laion/00000"
    pair(shard, "000000000")
    pair(shard, "000000001", aesthetic=1.0)
    report = prepare.run(settings(), tmp_path, tmp_path / "out", scorer=CaptionScorer())
    written = json.loads((tmp_path / "out/report.json").read_text())
    assert written == report
    assert (report["steps"], report["kept"], report["dropped"]["low_aesthetic"]) == (2, 1, 1)
    assert (report["loss_first"], report["loss_last"], report["resumed"]) == (None, None, False)
    assert report["samples_per_s"] > 0 and report["duration_s"] > 0


# --- interruption and resume ----------------------------------------------------------------


class Gauges:
    """Stands in for trainkit.metrics.MetricsServer: records each update."""

    def __init__(self) -> None:
        self.updates: list[dict] = []

    def update(self, **values: float) -> None:
        self.updates.append(values)


def shard_bytes(output: Path) -> dict[str, bytes]:
    return {name: (output / name).read_bytes() for name in shard_names(output)}


def test_sigterm_after_a_folder_stops_without_a_manifest_and_a_rerun_resumes_exactly(
    tmp_path, capsys
):
    # The issue: a recipe "saves on SIGTERM within the grace period, resumes exactly".
    three_folders(tmp_path / "raw/laion")
    whole = tmp_path / "whole"
    three_folders(whole / "raw/laion")
    prepare.run(settings(samples_per_shard=2), whole, tmp_path / "w", scorer=CaptionScorer())
    capsys.readouterr()
    output = tmp_path / "datasets/laion-32"
    before = signal.getsignal(signal.SIGTERM)
    first = prepare.run(
        settings(samples_per_shard=2),
        tmp_path,
        tmp_path / "out",
        scorer=CaptionScorer(),
        interrupt_after=1,
    )
    assert signal.getsignal(signal.SIGTERM) is before
    assert [json.loads(line)["folder"] for line in capsys.readouterr().out.splitlines()] == [
        "00000"
    ]
    assert (first["interrupted"], first["resumed"], first["folders_done"]) == (True, False, 1)
    assert (first["steps"], first["kept"]) == (4, 3)
    assert json.loads((tmp_path / "out/report.json").read_text()) == first
    assert not (output / "manifest.json").exists()
    assert sorted(p.name for p in (output / "progress").iterdir()) == ["00000.json"]
    record = json.loads((output / "progress/00000.json").read_text())
    assert record["counts"]["seen"] == 4 and record["counts"]["low_aesthetic"] == 1
    assert record["shards"] == [
        {"name": "shard-00000-00000.tar", "samples": 2},
        {"name": "shard-00000-00001.tar", "samples": 1},
    ]
    gauges = Gauges()
    second = prepare.run(
        settings(samples_per_shard=2),
        tmp_path,
        tmp_path / "out",
        scorer=CaptionScorer(),
        metrics=gauges,
    )
    assert (second["interrupted"], second["resumed"], second["folders_done"]) == (False, True, 3)
    assert (second["steps"], second["kept"]) == (9, 6)
    # Byte for byte what the uninterrupted run wrote.
    whole_output = whole / "datasets/laion-32"
    assert (output / "manifest.json").read_bytes() == (whole_output / "manifest.json").read_bytes()
    assert shard_bytes(output) == shard_bytes(whole_output)
    assert len(shard_bytes(output)) == 4
    # One log line and one metrics update per folder this run did; the step counts every folder.
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(line["folder"], line["seen"], line["kept"]) for line in lines] == [
        ("00001", 4, 2),
        ("00002", 1, 1),
    ]
    assert set(lines[0]) == {
        "recipe", "folder", "seen", "kept", "samples_per_second", "gpu_memory_bytes",
    }  # fmt: skip
    assert lines[0]["recipe"] == "prepare" and lines[0]["gpu_memory_bytes"] > 0
    assert [update["step"] for update in gauges.updates] == [2, 3]
    assert set(gauges.updates[0]) == {"step", "samples_per_second", "gpu_memory_bytes"}


def test_sigterm_inside_a_folder_deletes_its_shards_and_writes_no_record(tmp_path):
    three_folders(tmp_path / "raw/laion")
    scored: list[str] = []

    def scorer(images, texts):
        scored.extend(texts)
        if len(scored) == 4:  # the first pair of folder 00001, once its shard is complete
            os.kill(os.getpid(), signal.SIGTERM)
        return [1.0] * len(texts)

    report = prepare.run(
        settings(samples_per_shard=1, clip_batch=1), tmp_path, tmp_path / "out", scorer=scorer
    )
    assert (report["interrupted"], report["folders_done"]) == (True, 1)
    output = tmp_path / "datasets/laion-32"
    # Folder 00001's first shard was closed before the stop: gone with the folder.
    assert shard_names(output) == [
        "shard-00000-00000.tar",
        "shard-00000-00001.tar",
        "shard-00000-00002.tar",
    ]
    assert sorted(p.name for p in (output / "progress").iterdir()) == ["00000.json"]
    assert not list(output.rglob("*.partial"))


def test_changed_settings_wipe_the_records_instead_of_resuming(tmp_path):
    three_folders(tmp_path / "raw/laion")
    output = tmp_path / "datasets/laion-32"
    prepare.run(settings(), tmp_path, tmp_path / "out", scorer=CaptionScorer(), interrupt_after=2)
    assert len(list((output / "progress").iterdir())) == 2
    # A threshold of 6.5 still keeps the 7.0 pairs: the counts come out the same, but the
    # records were written under 5.0 and are not reused.
    scorer = CaptionScorer()
    report = prepare.run(settings(min_aesthetic=6.5), tmp_path, tmp_path / "out", scorer=scorer)
    assert (report["resumed"], report["kept"], report["steps"]) == (False, 6, 9)
    assert len(scorer.calls) == 3  # every folder scored again
    manifest = json.loads((output / "manifest.json").read_text())
    assert manifest["thresholds"]["min_aesthetic"] == 6.5


def test_a_rerun_after_a_finished_run_with_the_same_settings_redoes_nothing(tmp_path):
    three_folders(tmp_path / "raw/laion")
    output = tmp_path / "datasets/laion-32"
    prepare.run(settings(), tmp_path, tmp_path / "out", scorer=CaptionScorer())
    manifest = (output / "manifest.json").read_bytes()
    scorer = CaptionScorer()
    report = prepare.run(settings(), tmp_path, tmp_path / "out", scorer=scorer)
    assert (report["resumed"], report["kept"], report["samples_per_s"]) == (True, 6, 0.0)
    assert scorer.calls == []
    assert (output / "manifest.json").read_bytes() == manifest


def test_resume_removes_debris_and_keeps_recorded_shards(tmp_path):
    three_folders(tmp_path / "raw/laion")
    output = tmp_path / "datasets/laion-32"
    prepare.run(settings(), tmp_path, tmp_path / "out", scorer=CaptionScorer(), interrupt_after=1)
    recorded = (output / "shard-00000-00000.tar").read_bytes()
    # What a SIGKILL mid-write leaves: a tar and a record half written, a complete shard of
    # a folder whose record was never written.
    (output / "shard-00001-00000.tar.partial").write_bytes(b"half a tar")
    (output / "shard-00001-00000.tar").write_bytes(b"a shard without a record")
    (output / "progress/00001.json.partial").write_text("{")
    scorer = CaptionScorer()
    report = prepare.run(settings(), tmp_path, tmp_path / "out", scorer=scorer)
    assert report["resumed"] is True
    assert len(scorer.calls) == 2  # folders 00001 and 00002 only
    assert (output / "shard-00000-00000.tar").read_bytes() == recorded
    redone = [name for name, _ in read_tar(output / "shard-00001-00000.tar")]
    assert redone[:3] == ["100000000.jpg", "100000000.txt", "100000000.json"]
    assert len(redone) == 6  # its 2 kept pairs, written again
    assert not list(output.rglob("*.partial"))
    assert sorted(p.name for p in (output / "progress").iterdir()) == [
        "00000.json",
        "00001.json",
        "00002.json",
    ]


# --- bad input -----------------------------------------------------------------------------


def test_filters_that_keep_nothing_stop_before_any_shard_and_name_the_setting(tmp_path):
    shard = tmp_path / "raw/laion/00000"
    pair(shard, "000000000", aesthetic=4.0)
    pair(shard, "000000001", aesthetic=5.0)
    pair(shard, "000000002", caption="sim=0.1")
    scorer = CaptionScorer()
    with pytest.raises(PrepareError) as error:
        prepare.run(settings(), tmp_path, tmp_path / "out", scorer=scorer)
    message = str(error.value)
    assert "kept none of the 3 pairs" in message
    assert "low_aesthetic 2, low_clip 1" in message
    assert "lower recipes.prepare.min_aesthetic (now 5.0)" in message
    assert "lower recipes.prepare.min_clip_similarity (now 0.28)" in message
    output = tmp_path / "datasets/laion-32"
    assert list(output.iterdir()) == []
    assert not (tmp_path / "out/report.json").exists()


def test_a_wrong_aesthetic_key_says_which_setting_names_the_column(tmp_path):
    pair(tmp_path / "raw/laion/00000", "000000000")
    with pytest.raises(PrepareError, match=r"missing_aesthetic 1") as error:
        prepare.run(
            settings(aesthetic_key="score"), tmp_path, tmp_path / "out", scorer=CaptionScorer()
        )
    assert "set recipes.prepare.aesthetic_key" in str(error.value)
    assert "(now 'score')" in str(error.value)


def test_missing_source_names_the_path_and_the_setting(tmp_path):
    with pytest.raises(PrepareError) as error:
        prepare.run(settings(), tmp_path, tmp_path / "out", scorer=CaptionScorer())
    assert f"recipes.prepare.source: {tmp_path / 'raw/laion'} does not exist" in str(error.value)


def test_empty_source_names_the_path_and_the_setting(tmp_path):
    (tmp_path / "raw/laion/00000").mkdir(parents=True)
    # Shard folders holding no sample files (only img2dataset's parquet) are empty too.
    (tmp_path / "raw/laion/00001").mkdir()
    (tmp_path / "raw/laion/00001/00001.parquet").write_bytes(b"PAR1")
    with pytest.raises(PrepareError) as error:
        prepare.run(settings(), tmp_path, tmp_path / "out", scorer=CaptionScorer())
    assert f"recipes.prepare.source: {tmp_path / 'raw/laion'} holds no shard folders" in str(
        error.value
    )


# --- a real (tiny) CLIP from a staged folder -------------------------------------------------


@pytest.fixture(scope="module")
def staged_clip(tmp_path_factory) -> tuple[Path, dict]:
    shared = tmp_path_factory.mktemp("shared")
    return shared, checksums(stage_tiny_clip(shared / "weights/clip"))


def test_clip_scorer_matches_transformers_preprocessing_and_cosine(staged_clip):
    # Reference: transformers' CLIPImageProcessor (PIL backend, its OpenAI mean/std defaults)
    # and CLIPModel's logits_per_image, which are cosine × exp(logit_scale).
    from transformers import CLIPModel, CLIPTokenizer
    from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil

    shared, _ = staged_clip
    folder = shared / "weights/clip"
    images = [photo(1, (64, 48)), photo(2, (50, 90)), photo(3, (32, 32))]
    texts = ["a cat", "a very long caption " * 10, "x"]
    scores = clip_score.load(folder, torch.device("cpu"))(images, texts)
    processor = CLIPImageProcessorPil(
        size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}
    )
    model = CLIPModel.from_pretrained(folder).eval()
    tokens = CLIPTokenizer.from_pretrained(folder)(
        texts, padding=True, truncation=True, max_length=16, return_tensors="pt"
    )
    with torch.no_grad():
        output = model(**tokens, pixel_values=processor(images, return_tensors="pt").pixel_values)
    expected = torch.diagonal(output.logits_per_image) / model.logit_scale.exp()
    assert scores == pytest.approx(expected.tolist(), abs=1e-6)
    assert all(-1.0 <= score <= 1.0 for score in scores)


def test_prepare_scores_with_the_staged_clip(staged_clip, tmp_path):
    shared, sha256 = staged_clip
    for index in range(3):
        pair(shared / "raw/laion/00000", f"{index:09d}", caption=f"photo number {index}")
    staged = {"clip": {"path": "weights/clip", "sha256": sha256}}
    # Cosine similarity is never below -1: every pair passes; none of random CLIP's reaches 1.
    report = prepare.run(
        settings(min_clip_similarity=-1.0, weights=staged), shared, tmp_path / "out"
    )
    assert report["kept"] == 3
    members = dict(read_tar(shared / "datasets/laion-32/shard-00000-00000.tar"))
    similarity = json.loads(members["000000000.json"])["clip_similarity"]
    assert -1.0 <= similarity < 1.0
    with pytest.raises(PrepareError, match=r"low_clip 3"):
        prepare.run(settings(min_clip_similarity=1.0, weights=staged), shared, tmp_path / "out")


def test_prepare_refuses_unverified_clip_weights(staged_clip, tmp_path):
    from recipes.weights import WeightsError

    shared, sha256 = staged_clip
    pair(shared / "raw/laion/00000", "000000000")
    altered = {**sha256, "config.json": "0" * 64}
    with pytest.raises(WeightsError, match=r"config\.json has sha256"):
        prepare.run(
            settings(weights={"clip": {"path": "weights/clip", "sha256": altered}}),
            shared,
            tmp_path / "out",
        )


# --- distributed ---------------------------------------------------------------------------


def _rank(rank: int, world: int, port: int, shared: Path, interrupt: dict) -> None:
    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world,
        timeout=timedelta(seconds=HANG_S),
    )
    torch.set_num_threads(1)
    report = prepare.run(
        settings(),
        shared,
        shared / f"out{rank}",
        scorer=CaptionScorer(),
        interrupt_after=interrupt.get(rank),
    )
    (shared / f"report{rank}.json").write_text(json.dumps(report))
    dist.destroy_process_group()


def spawn(shared: Path, world: int, interrupt: dict) -> None:
    port = free_port()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    mp.spawn(_rank, args=(world, port, shared, interrupt), nprocs=world)


def test_two_ranks_split_the_folders_and_rank_zero_merges_the_manifest(tmp_path):
    # Rank 0 takes folders 00000 and 00002, rank 1 folder 00001; shards are named per folder.
    three_folders(tmp_path / "raw/laion")
    spawn(tmp_path, 2, {})
    output = tmp_path / "datasets/laion-32"
    manifest = json.loads((output / "manifest.json").read_text())
    assert manifest["shards"] == [
        {"name": "shard-00000-00000.tar", "samples": 3},
        {"name": "shard-00001-00000.tar", "samples": 2},
        {"name": "shard-00002-00000.tar", "samples": 1},
    ]
    assert (manifest["seen"], manifest["kept"], manifest["dropped"]["low_aesthetic"]) == (9, 6, 3)
    folder1 = [name for name, _ in read_tar(output / "shard-00001-00000.tar")]
    assert folder1[0] == "100000000.jpg"
    # Every rank reports the job's totals; only rank 0 writes report.json.
    assert json.loads((tmp_path / "report1.json").read_text())["kept"] == 6
    assert (tmp_path / "out0/report.json").exists()
    assert not (tmp_path / "out1/report.json").exists()


def test_a_sigterm_on_one_rank_stops_both_at_the_folder_boundary(tmp_path):
    # Rank 1 stops itself after its only folder (00001) while rank 0 finishes 00000; both
    # return at that boundary, before rank 0 starts 00002; one rank alone then finishes it.
    three_folders(tmp_path / "raw/laion")
    spawn(tmp_path, 2, {1: 1})
    output = tmp_path / "datasets/laion-32"
    for rank in (0, 1):
        report = json.loads((tmp_path / f"report{rank}.json").read_text())
        assert (report["interrupted"], report["folders_done"], report["kept"]) == (True, 2, 5)
    assert sorted(p.name for p in (output / "progress").iterdir()) == ["00000.json", "00001.json"]
    assert not (output / "manifest.json").exists()
    report = prepare.run(settings(), tmp_path, tmp_path / "out", scorer=CaptionScorer())
    assert (report["resumed"], report["interrupted"], report["kept"]) == (True, False, 6)
    assert shard_names(output) == [
        "shard-00000-00000.tar",
        "shard-00001-00000.tar",
        "shard-00002-00000.tar",
    ]


# --- the CPU pool and the latents -------------------------------------------------------------


def test_a_cpu_pool_writes_the_shards_the_rank_alone_writes(tmp_path):
    three_folders(tmp_path / "raw/laion")
    outputs = {}
    for workers in (0, 2):
        output = f"datasets/w{workers}"
        report = prepare.run(
            settings(cpu_workers=workers, output=output, samples_per_shard=2), tmp_path,
            tmp_path / f"out{workers}", scorer=CaptionScorer(),
        )  # fmt: skip
        assert report["kept"] == 6
        outputs[workers] = {
            path.name: read_tar(path) for path in (tmp_path / output).glob("shard-*.tar")
        }
    assert outputs[2] == outputs[0] and len(outputs[0]) == 4


def test_latents_are_the_vaes_moments_of_the_image_and_its_mirror(tmp_path):
    """prepare with latents: each kept sample's <key>.latents.npy is float16 [2, 2C, h, w], the
    staged VAE's posterior parameters (diffusers' DiagonalGaussianDistribution: mean, then log
    variance) of the image it stored and of that image flipped left-right. PNG sources stay
    PNG, so the stored image is exactly what was encoded."""
    from diffusers import AutoencoderKL

    from recipes.tiny import stage_tiny_sd

    for index in range(3):
        pair(tmp_path / "raw/laion/00000", f"{index:09d}", image="png")
    sd = stage_tiny_sd(tmp_path / "weights/sd")
    weights = {"stable-diffusion": {"path": "weights/sd", "sha256": checksums(sd)}}
    prepare.run(
        settings(latents=True, weights=weights), tmp_path, tmp_path / "out",
        scorer=CaptionScorer(),
    )  # fmt: skip
    (shard,) = (tmp_path / "datasets/laion-32").glob("shard-*.tar")
    members = dict(read_tar(shard))
    assert sorted(name.partition(".")[2] for name in members) == (
        ["json"] * 3 + ["latents.npy"] * 3 + ["png"] * 3 + ["txt"] * 3
    )
    vae = AutoencoderKL.from_pretrained(sd / "vae").eval()
    for index in range(3):
        key = f"{index:09d}"
        moments = np.load(io.BytesIO(members[f"{key}.latents.npy"]))
        # The tiny VAE: 4 latent channels, one downsampling (block_out_channels 16, 32).
        assert moments.dtype == np.float16 and moments.shape == (2, 8, 16, 16)
        image = np.asarray(Image.open(io.BytesIO(members[f"{key}.png"])))
        pixels = torch.from_numpy(image.copy()).permute(2, 0, 1)[None].float() / 127.5 - 1
        with torch.no_grad():
            for flipped, x in enumerate((pixels, pixels.flip(-1))):
                expected = vae.encode(x).latent_dist.parameters[0]
                got = torch.from_numpy(moments[flipped]).float()
                torch.testing.assert_close(got, expected, rtol=2e-3, atol=2e-3)
