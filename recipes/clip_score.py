"""CLIP image-text cosine similarity from a staged transformers CLIPModel folder, the score
`prepare` filters on (LAION-5B keeps English pairs at 0.28 or above with ViT-B/32).

Images are preprocessed as CLIP was trained: shorter side resized to the vision tower's input
size (bicubic), centre-cropped square, scaled to [0, 1] and normalised per channel with CLIP's
mean and std (openai/CLIP `clip.py` `_transform`; the same values are transformers'
CLIPImageProcessor defaults, OPENAI_CLIP_MEAN / OPENAI_CLIP_STD)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from PIL import Image

CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)


def resize_crop(image: Image.Image, side: int) -> Image.Image:
    """Shorter side to `side` (bicubic), then the centred `side`×`side` square, in RGB.

    The longer side is truncated, not rounded, as torchvision's Resize (CLIP's preprocessing)
    and transformers' get_resize_output_image_size compute it, so CLIP sees the pixels it
    would see through either."""
    image = image.convert("RGB")
    width, height = image.size
    if width <= height:
        size = (side, int(side * height / width))
    else:
        size = (int(side * width / height), side)
    if size != image.size:
        image = image.resize(size, Image.Resampling.BICUBIC)
    left = (size[0] - side) // 2
    top = (size[1] - side) // 2
    return image.crop((left, top, left + side, top + side))


def pixel_values(images: Sequence[Image.Image], side: int) -> torch.Tensor:
    """The (N, 3, side, side) float batch CLIP's vision tower takes."""
    arrays = [np.asarray(resize_crop(image, side), dtype=np.float32) / 255.0 for image in images]
    batch = torch.from_numpy(np.stack(arrays)).permute(0, 3, 1, 2)
    mean = torch.tensor(CLIP_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(CLIP_STD).view(1, 3, 1, 1)
    return (batch - mean) / std


class ClipScorer:
    """Callable `(images, texts) -> cosine similarities`, one per pair, in order."""

    def __init__(self, model, tokenizer, device: torch.device) -> None:
        self.model = model.eval().to(device)
        self.tokenizer = tokenizer
        self.device = device
        self.image_size = model.config.vision_config.image_size
        # Captions longer than the text tower's positions are cut, as CLIP's own tokenizer does
        # with truncate=True; LAION captions often exceed 77 tokens.
        self.max_length = model.config.text_config.max_position_embeddings

    @torch.no_grad()
    def __call__(self, images: Sequence[Image.Image], texts: Sequence[str]) -> list[float]:
        tokens = self.tokenizer(
            list(texts),
            padding=True,
            truncation=True,
            max_length=self.max_length,
            return_tensors="pt",
        ).to(self.device)
        output = self.model(
            input_ids=tokens["input_ids"],
            attention_mask=tokens["attention_mask"],
            pixel_values=pixel_values(images, self.image_size).to(self.device),
        )
        # The forward pass returns unit-norm embeddings; a pair's cosine is their dot product
        # (logits_per_image would add CLIP's learned temperature, which thresholds must not see).
        similarity = (output.image_embeds * output.text_embeds).sum(dim=-1)
        return [float(value) for value in similarity.float().cpu()]


def load(folder: Path, device: torch.device) -> ClipScorer:
    """The scorer from a folder holding `CLIPModel.save_pretrained` and
    `CLIPTokenizer.save_pretrained` output (the staged `clip` weights)."""
    # Imported here: transformers takes seconds to import, and only the CLIP path needs it.
    from transformers import CLIPModel, CLIPTokenizer

    model = CLIPModel.from_pretrained(folder, local_files_only=True)
    tokenizer = CLIPTokenizer.from_pretrained(folder, local_files_only=True)
    return ClipScorer(model, tokenizer, device)
