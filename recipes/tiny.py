"""Tiny stand-ins staged exactly as an admin stages the real models, and img2dataset-shaped input,
for `make recipes-smoke` and the tests: randomly initialised CLIP, Stable Diffusion and VGG19
weights written by the libraries' own savers into the layouts the recipes load, so the smoke runs
the recipes' real loading, checksum and training code on a CPU in seconds."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from PIL import Image

# CLIP's BPE vocabulary starts with the 256 byte-level symbols, each also with the end-of-word
# mark; with no merges every word tokenizes to its characters (openai/CLIP simple_tokenizer.py).
START, END = "<|startoftext|>", "<|endoftext|>"


def _byte_symbols() -> list[str]:
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1)]
    printable += range(ord("®"), ord("ÿ") + 1)
    symbols, extra = [], 0
    for byte in range(256):
        if byte in printable:
            symbols.append(chr(byte))
        else:
            symbols.append(chr(256 + extra))
            extra += 1
    return symbols


def stage_tiny_tokenizer(folder: Path) -> int:
    """A CLIPTokenizer's vocab.json and merges.txt in `folder`; returns the vocabulary size."""
    from transformers import CLIPTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    symbols = _byte_symbols()
    vocab = {token: i for i, token in enumerate([*symbols, *(s + "</w>" for s in symbols)])}
    vocab[START], vocab[END] = len(vocab), len(vocab) + 1
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    tokenizer = CLIPTokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"))
    tokenizer.model_max_length = 16
    (folder / "vocab.json").unlink()
    (folder / "merges.txt").unlink()
    tokenizer.save_pretrained(folder)
    return len(vocab)


def _text_config(vocab_size: int) -> dict:
    return {
        "hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 4,
        "num_hidden_layers": 2, "vocab_size": vocab_size, "max_position_embeddings": 16,
        "bos_token_id": vocab_size - 2, "eos_token_id": vocab_size - 1,
        "pad_token_id": vocab_size - 1,
    }  # fmt: skip


def stage_tiny_clip(folder: Path, seed: int = 0) -> Path:
    """transformers' CLIPModel folder with its tokenizer beside it, as `clip` is staged."""
    from transformers import CLIPConfig, CLIPModel

    torch.manual_seed(seed)
    vocab_size = stage_tiny_tokenizer(folder)
    config = CLIPConfig(
        text_config=_text_config(vocab_size),
        vision_config={
            "hidden_size": 32, "intermediate_size": 64, "num_attention_heads": 4,
            "num_hidden_layers": 2, "image_size": 32, "patch_size": 8,
        },
        projection_dim=16,
    )  # fmt: skip
    CLIPModel(config).save_pretrained(folder)
    return folder


def stage_tiny_sd(folder: Path, seed: int = 0) -> Path:
    """A diffusers Stable Diffusion folder (unet, vae, text_encoder, tokenizer, scheduler) with
    the real classes at toy widths; the scheduler keeps SD 1.x's noise schedule (its
    scheduler_config.json: scaled_linear, 0.00085 to 0.012, 1000 steps)."""
    from diffusers import AutoencoderKL, DDPMScheduler, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    torch.manual_seed(seed)
    vocab_size = stage_tiny_tokenizer(folder / "tokenizer")
    CLIPTextModel(CLIPTextConfig(**_text_config(vocab_size))).save_pretrained(
        folder / "text_encoder"
    )
    AutoencoderKL(
        down_block_types=("DownEncoderBlock2D",) * 2, up_block_types=("UpDecoderBlock2D",) * 2,
        block_out_channels=(16, 32), latent_channels=4, norm_num_groups=8, sample_size=32,
    ).save_pretrained(folder / "vae")  # fmt: skip
    UNet2DConditionModel(
        sample_size=16, layers_per_block=1, block_out_channels=(32, 64), norm_num_groups=16,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=32, attention_head_dim=8,
    ).save_pretrained(folder / "unet")  # fmt: skip
    DDPMScheduler(
        num_train_timesteps=1000, beta_start=0.00085, beta_end=0.012,
        beta_schedule="scaled_linear", clip_sample=False,
    ).save_pretrained(folder / "scheduler")  # fmt: skip
    return folder


def stage_tiny_vgg(folder: Path, seed: int = 0) -> Path:
    """`vgg19.pth`: torchvision's VGG19 `features` keys and layout at a sixteenth of the widths
    (the loader reads the widths from the file)."""
    from recipes.esrgan.losses import VGG19_FILE, VGG19Features, conv_widths

    torch.manual_seed(seed)
    folder.mkdir(parents=True, exist_ok=True)
    model = VGG19Features([width // 16 for width in conv_widths()])
    torch.save(model.state_dict(), folder / VGG19_FILE)
    return folder


WORDS = ["red", "blue", "green", "cat", "dog", "tree", "sky", "river", "house", "photo"]


def synthetic_img2dataset(folder: Path, count: int, seed: int = 0, per_shard: int = 16) -> Path:
    """img2dataset's `output_format="files"` layout: `<shard>/<key>.jpg|.txt|.json`, keys
    `<shard><index>` zero-padded, the parquet's columns (here `aesthetic`) in the .json. Sizes
    vary and most images are not square, so prepare's resize and crop do real work; aesthetic
    scores spread over 3.5-7.5 so its filter drops some."""
    rng = np.random.default_rng(seed)
    for index in range(count):
        shard = folder / f"{index // per_shard:05d}"
        shard.mkdir(parents=True, exist_ok=True)
        key = f"{index // per_shard:05d}{index % per_shard:04d}"
        width, height = (int(v) for v in rng.integers(40, 96, size=2))
        field = rng.integers(0, 256, size=(6, 6, 3), dtype=np.uint8)
        image = Image.fromarray(field, "RGB").resize((width, height), Image.Resampling.BICUBIC)
        image.save(shard / f"{key}.jpg", quality=90)
        caption = " ".join(rng.choice(WORDS, size=3))
        (shard / f"{key}.txt").write_text(caption)
        meta = {
            "url": f"https://example.com/{key}.jpg", "key": key, "status": "success",
            "caption": caption, "width": width, "height": height,
            "aesthetic": round(float(rng.uniform(3.5, 7.5)), 3),
        }  # fmt: skip
        (shard / f"{key}.json").write_text(json.dumps(meta))
    return folder


def synthetic_shards(folder: Path, shards: int, per_shard: int, size: int, seed: int = 0) -> Path:
    """WebDataset shards as prepare writes them (`<key>.jpg`, `<key>.txt` adjacent), without
    running prepare: for the training recipes' tests."""
    import io
    import tarfile

    from trainkit.shards import add_member, synthetic_image

    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for shard in range(shards):
        with tarfile.open(folder / f"shard-{shard:05d}.tar", "w") as tar:
            for offset in range(per_shard):
                key = f"{shard:05d}{offset:04d}"
                jpeg = io.BytesIO()
                synthetic_image(shard * per_shard + offset, seed, size).save(jpeg, format="JPEG")
                caption = " ".join(rng.choice(WORDS, size=3)).encode()
                for name, payload in ((f"{key}.jpg", jpeg.getvalue()), (f"{key}.txt", caption)):
                    add_member(tar, name, payload)
    return folder
