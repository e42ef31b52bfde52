"""The bootstrap self-test: proves, after every deploy, that the platform delivers what its
hardware promises — GPUs, collectives, storage, metrics and a real training run — and says
exactly what does not. Runs under torchrun: `python -m selftest`."""
