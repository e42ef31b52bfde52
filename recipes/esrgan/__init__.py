"""ESRGAN super-resolution (Wang et al. 2018, "ESRGAN: Enhanced Super-Resolution Generative
Adversarial Networks"): the RRDB generator (`model`), the degradations that make its
low-resolution inputs (`degrade`), its pixel + VGG19 perceptual loss (`losses`) and the task the
training loop drives (`task`). Progressive: a 2× model is trained first, and the 4× model starts
from it (`model.grow_from`)."""
