"""Training recipes run on the platform as queue-admitted distributed jobs: `prepare` (image-text
pairs to filtered 512x512 WebDataset shards), `sd-finetune` (Stable Diffusion UNet) and `esrgan`
(RRDB super-resolution), submitted from the program side with `python -m jobs recipe`
(docs/training.md)."""

import os

# Weights are staged, never fetched: the Hugging Face libraries must not try the network, and
# their progress bars would drown the per-step log.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("DIFFUSERS_VERBOSITY", "error")
