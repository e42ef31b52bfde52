"""prepare's per-pair work before CLIP: the files of a key, its caption and aesthetic score, its
image decoded, resized and centre-cropped. Pure functions of the files, so a pool of CPU
processes runs them (recipes.prepare) while the rank's GPU scores the survivors."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from recipes.clip_score import resize_crop

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp")

# Why a pair is dropped, in the order the checks run: the cheap ones (files present, the
# aesthetic score in the metadata) before decoding the image, CLIP last and only on survivors.
REASONS = (
    "missing_image",
    "missing_caption",
    "missing_aesthetic",
    "low_aesthetic",
    "unreadable_image",
    "low_clip",
)


@dataclass(frozen=True)
class RawSample:
    """One key's files in a source folder; any may be absent."""

    key: str
    image: Path | None
    caption: Path | None
    metadata: Path | None


@dataclass(frozen=True)
class Candidate:
    """A pair that passed every check before CLIP: cropped image, caption, metadata."""

    key: str
    image: Image.Image
    caption: str
    metadata: dict
    # "jpg" for JPEG sources, else "png": lossless sources stay lossless.
    extension: str


def raw_samples(folder: Path) -> Iterator[RawSample]:
    """Every key in a shard folder, in key order, with whichever of its files exist."""
    files: dict[str, dict[str, Path]] = {}
    for path in folder.iterdir():
        suffix = path.suffix.lower()
        if path.is_file() and suffix in (*IMAGE_SUFFIXES, ".txt", ".json"):
            kind = "image" if suffix in IMAGE_SUFFIXES else suffix[1:]
            files.setdefault(path.stem, {})[kind] = path
    for key in sorted(files):
        found = files[key]
        yield RawSample(key, found.get("image"), found.get("txt"), found.get("json"))


def aesthetic_of(metadata: dict, key: str) -> float | None:
    """The score under `key`, or None when absent, null or not a finite number."""
    value = metadata.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def read_metadata(path: Path | None) -> dict:
    if path is None:
        return {}
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def load_image(path: Path, resolution: int) -> Image.Image | None:
    """The resized, centre-cropped RGB image, or None if Pillow cannot decode the file."""
    try:
        with Image.open(path) as image:
            image.load()
            return resize_crop(image, resolution)
    # UnidentifiedImageError and truncated files are OSErrors; corrupt headers can raise
    # SyntaxError or ValueError; DecompressionBombError guards against pixel bombs.
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError):
        return None


def screen(raw: RawSample, settings: dict) -> Candidate | str:
    """The candidate for CLIP scoring, or the reason (one of REASONS) the pair is dropped."""
    if raw.image is None:
        return "missing_image"
    caption = ""
    if raw.caption is not None:
        caption = raw.caption.read_text(encoding="utf-8", errors="replace").strip()
    if not caption:
        return "missing_caption"
    metadata = read_metadata(raw.metadata)
    score = aesthetic_of(metadata, settings["aesthetic_key"])
    if score is None:
        return "missing_aesthetic"
    # LAION-Aesthetics V2 "5+" keeps scores above 5: a score of exactly the threshold goes.
    if score <= settings["min_aesthetic"]:
        return "low_aesthetic"
    image = load_image(raw.image, settings["resolution"])
    if image is None:
        return "unreadable_image"
    extension = "jpg" if raw.image.suffix.lower() in (".jpg", ".jpeg") else "png"
    return Candidate(raw.key, image, caption, metadata, extension)
