"""Training recipes run on the platform as queue-admitted distributed jobs: `prepare` (image-text
pairs to filtered 512x512 WebDataset shards), `sd-finetune` (Stable Diffusion UNet) and `esrgan`
(RRDB super-resolution), submitted with `python -m recipes submit` (README, "Training recipes")."""
