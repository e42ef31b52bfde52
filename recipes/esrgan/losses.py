"""ESRGAN's generator loss without the adversarial term: a weighted pixel loss plus an L1
perceptual loss on VGG19 features taken before the activation (Wang et al. 2018, section 3.3:
features before activation keep the brightness and edge information that the sparse
post-ReLU features lose).

The VGG19 feature stack is written out here rather than taken from torchvision: torchvision's
wheels do not import beside the pinned torch in the recipes image. It is laid out exactly as
torchvision's `vgg19().features` (torchvision/models/vgg.py, `cfgs["E"]` through `make_layers`:
Conv2d(3×3, padding 1) + ReLU per number, MaxPool2d(2, 2) per "M"), so torchvision's VGG19
state dict (`features.<i>.weight|bias`) loads into it strictly, index for index.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

# torchvision/models/vgg.py, cfgs["E"] (VGG19): output channels per conv, "M" a 2×2 max-pool.
VGG19_CFG: tuple[int | str, ...] = (
    64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M",
    512, 512, 512, 512, "M", 512, 512, 512, 512, "M",
)  # fmt: skip
# conv5_4 is the 16th conv, at index 34 of torchvision's `features`; the stack stops there,
# before its ReLU (index 35), the layer ESRGAN's perceptual loss reads.
CONV5_4 = 34
VGG19_FILE = "vgg19.pth"
# torchvision's ImageNet weights expect inputs normalised with these (torchvision.models docs,
# "all pre-trained models expect input images normalized ... mean = [0.485, 0.456, 0.406] and
# std = [0.229, 0.224, 0.225]").
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def conv_widths() -> list[int]:
    return [v for v in VGG19_CFG if isinstance(v, int)]


class VGG19Features(nn.Module):
    """Normalises [0, 1] RGB with ImageNet statistics and runs torchvision's VGG19 `features`
    up to conv5_4, before its ReLU. `widths` (the 16 conv widths) default to VGG19's; a
    narrower stack with the same layout is what tests and the CPU smoke run stage."""

    def __init__(self, widths: list[int] | None = None):
        super().__init__()
        widths = widths or conv_widths()
        if len(widths) != len(conv_widths()):
            raise ValueError(f"VGG19 has 16 convolutions; got {len(widths)} widths")
        layers: list[nn.Module] = []
        channels, remaining = 3, iter(widths)
        for v in VGG19_CFG:
            if v == "M":
                layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
            else:
                width = next(remaining)
                layers += [nn.Conv2d(channels, width, 3, padding=1), nn.ReLU(inplace=True)]
                channels = width
        self.features = nn.Sequential(*layers[: CONV5_4 + 1])
        # Not persistent: the state dict is exactly torchvision's `features.<i>.*` keys.
        mean, std = torch.tensor(IMAGENET_MEAN), torch.tensor(IMAGENET_STD)
        self.register_buffer("mean", mean.view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", std.view(1, 3, 1, 1), persistent=False)
        # Frozen: a fixed feature extractor, never trained, never in the optimizer.
        self.requires_grad_(False)
        self.eval()

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return self.features((image - self.mean) / self.std)


def load_vgg19(path: Path) -> VGG19Features:
    """torchvision's VGG19 state dict from `path`: the file, or the staged folder holding
    `vgg19.pth` (what recipes.weights.require returns). The classifier is not used and its
    keys are skipped; every `features.*` key must fit, strictly."""
    path = Path(path)
    if path.is_dir():
        path = path / VGG19_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"vgg19 weights: {path} does not exist; stage torchvision's VGG19 state dict there "
            f"(recipes.weights.vgg19 names the folder)"
        )
    state = torch.load(path, map_location="cpu", weights_only=True)
    unknown = sorted(k for k in state if not k.startswith(("features.", "classifier.")))
    if unknown:
        raise ValueError(
            f"vgg19 weights: {path} has keys {unknown[:3]} that torchvision's VGG19 does not; "
            "need its state dict (features.<i>.weight|bias, classifier.*)"
        )
    features = {k: v for k, v in state.items() if k.startswith("features.")}
    model = VGG19Features(_widths(features, path))
    try:
        model.load_state_dict(features, strict=True)
    except RuntimeError as error:
        raise ValueError(
            f"vgg19 weights: {path} does not fit torchvision's VGG19 layout up to conv5_4: {error}"
        ) from error
    return model


def _widths(features: dict[str, torch.Tensor], path: Path) -> list[int]:
    """The conv widths the file holds, read at torchvision's conv indices."""
    widths = []
    for index in conv_indices():
        weight = features.get(f"features.{index}.weight")
        if weight is None or weight.dim() != 4:
            raise ValueError(
                f"vgg19 weights: {path} has no conv weight features.{index}.weight; "
                "need torchvision's VGG19 state dict (features.<i>.weight|bias)"
            )
        widths.append(weight.shape[0])
    return widths


def conv_indices() -> list[int]:
    """Where each conv sits in torchvision's `features` (conv, ReLU per number; pool per M)."""
    indices, position = [], 0
    for v in VGG19_CFG:
        if v != "M":
            indices.append(position)
        position += 1 if v == "M" else 2
    return indices


PIXEL_LOSSES: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "l1": F.l1_loss,
    "mse": F.mse_loss,
}


def pixel_loss(kind: str) -> Callable[[torch.Tensor, torch.Tensor], torch.Tensor]:
    """The pixel term. The source documents call it L1 but compute MSE; L1 is the default (as
    they describe it and as ESRGAN trains), "mse" reproduces their code."""
    if kind not in PIXEL_LOSSES:
        raise ValueError(f"esrgan.pixel_loss: {kind!r}; use one of {sorted(PIXEL_LOSSES)}")
    return PIXEL_LOSSES[kind]


class GeneratorLoss(NamedTuple):
    total: torch.Tensor
    pixel: torch.Tensor
    perceptual: torch.Tensor


def generator_loss(
    sr: torch.Tensor, hr: torch.Tensor, vgg: VGG19Features, settings: dict[str, Any]
) -> GeneratorLoss:
    """pixel_weight · pixel(sr, hr) + perceptual_weight · L1(VGG(sr), VGG(hr)), in float32 even
    when the forward ran under autocast (bf16 losses lose the small differences late in
    training)."""
    pixel = pixel_loss(settings["pixel_loss"])(sr.float(), hr.float())
    with torch.no_grad():
        target = vgg(hr).float()
    perceptual = F.l1_loss(vgg(sr).float(), target)
    total = settings["pixel_weight"] * pixel + settings["perceptual_weight"] * perceptual
    return GeneratorLoss(total, pixel, perceptual)
