"""ESRGAN recipe pieces (recipes/esrgan): the RRDB generator, the degradations, the losses and
the task the training loop drives. Tiny models (1 block, 8 features) and tiny crops."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest
import torch
from PIL import Image

from recipes.esrgan.degrade import add_noise, degrade, downscale, jpeg
from recipes.esrgan.losses import VGG19Features, generator_loss, load_vgg19, pixel_loss
from recipes.esrgan.model import RRDB, ResidualDenseBlock, RRDBNet, grow_from
from recipes.esrgan.task import EsrganTask
from recipes.shards import Batch

# torchvision/models/vgg.py, cfgs["E"] through make_layers: the index of every Conv2d in
# `vgg19().features` (conv1_1 ... conv5_4), and its output channels.
TORCHVISION_CONV_INDICES = [0, 2, 5, 7, 10, 12, 14, 16, 19, 21, 23, 25, 28, 30, 32, 34]
TORCHVISION_CONV_WIDTHS = [64, 64, 128, 128, 256, 256, 256, 256] + [512] * 8
TINY = {"num_blocks": 1, "num_features": 8, "growth_channels": 4}


def generator(*key: int) -> torch.Generator:
    """A CPU generator seeded from an integer key, as the loop seeds one per
    (seed, rank, step, micro); hashes of int tuples are stable across runs."""
    return torch.Generator().manual_seed(hash(key) % 2**63)


def torchvision_shaped_vgg19(widths: list[int]) -> dict[str, torch.Tensor]:
    """A state dict with torchvision's VGG19 keys, written out from the literal layout above
    (not from the module under test). The classifier is present, as in torchvision's file,
    with small stand-in shapes: the loader skips it unread."""
    state, channels = {}, 3
    for index, width in zip(TORCHVISION_CONV_INDICES, widths, strict=True):
        state[f"features.{index}.weight"] = torch.randn(width, channels, 3, 3) * 0.1
        state[f"features.{index}.bias"] = torch.zeros(width)
        channels = width
    for index in (0, 3, 6):
        state[f"classifier.{index}.weight"] = torch.zeros(2, 2)
        state[f"classifier.{index}.bias"] = torch.zeros(2)
    return state


@pytest.fixture(scope="module")
def tiny_vgg_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("vgg19") / "vgg19.pth"
    torch.manual_seed(0)
    torch.save(torchvision_shaped_vgg19([4] * 16), path)
    return path


# --- degradations ------------------------------------------------------------------------


def test_noise_sigma_measured_on_a_flat_image_is_the_configured_one():
    flat = torch.full((1, 3, 512, 512), 0.5)
    noisy = add_noise(flat, 0.05, generator(1))
    # 786,432 samples: the sample std's standard error is σ/√(2n) ≈ 4e-5; 5e-4 is > 10 of them.
    assert noisy.std().item() == pytest.approx(0.05, abs=5e-4)
    assert noisy.mean().item() == pytest.approx(0.5, abs=5e-4)


def test_degrade_order_downscale_then_noise_then_jpeg():
    flat = torch.full((2, 3, 64, 64), 0.5)
    clean = degrade(flat, 2, generator(2), 0.0, (100, 100)).lr
    # A flat image survives bicubic and JPEG exactly: 0.5 rounds to 128/255.
    assert torch.equal(clean, torch.full((2, 3, 32, 32), 128 / 255))
    noisy = degrade(flat, 2, generator(2), 0.05, (100, 100)).lr
    # Quality 100 quantises luma by 1 but Pillow's default 4:2:0 chroma subsampling averages
    # the colour noise over 2×2 pixels: what is left is below σ but well above what noise
    # added before the downscale would leave (the ×2 antialiased bicubic averages over about
    # 4×4 pixels, cutting σ to about a third).
    assert 0.025 < noisy.std().item() < 0.05
    # JPEG is last: every value is a decoded 8-bit pixel.
    assert torch.equal((noisy * 255).round() / 255, noisy)


def test_jpeg_qualities_are_drawn_within_the_range_and_cover_it():
    hr = torch.rand(1000, 3, 8, 8, generator=generator(3))
    qualities = degrade(hr, 2, generator(4), 0.05, (30, 95)).jpeg_qualities
    # Real-ESRGAN's range, the config default: every integer quality 30..95 inclusive.
    assert set(qualities) == set(range(30, 96))
    assert degrade(hr[:50], 2, generator(5), 0.05, (50, 50)).jpeg_qualities == [50] * 50


def test_lower_jpeg_quality_loses_more_of_an_image():
    # A smooth image with some texture; pure noise would not do: 4:2:0 chroma subsampling
    # alone destroys most of it at any quality.
    y, x = torch.meshgrid(torch.linspace(0, 1, 64), torch.linspace(0, 1, 64), indexing="ij")
    image = torch.stack([x, y, 0.5 + 0.4 * torch.sin(12 * x * y)]).unsqueeze(0)
    error = {q: (jpeg(image, [q]) - image).abs().mean().item() for q in (30, 95)}
    assert error[30] > 2 * error[95] > 0


def test_jpeg_is_pillows_round_trip():
    image = torch.rand(1, 3, 16, 16, generator=generator(7))
    pixels = (image[0].permute(1, 2, 0) * 255).round().to(torch.uint8).numpy()
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="JPEG", quality=40)
    buffer.seek(0)
    expected = torch.from_numpy(np.array(Image.open(buffer))).float() / 255
    assert torch.equal(jpeg(image, [40])[0].permute(1, 2, 0), expected)


def test_downscale_blurs_what_the_low_resolution_cannot_hold_instead_of_aliasing_it():
    """Vertical stripes 3 pixels on, 3 off: at ×4 that is finer than the LR can hold (its
    Nyquist limit is a period of 8 HR pixels). Plain bicubic samples them into false
    full-contrast stripes; antialiased bicubic (PIL / MATLAB imresize behaviour) widens its
    kernel by the scale and leaves them close to grey."""
    stripes = torch.tensor([1.0, 1, 1, 0, 0, 0]).repeat(16).expand(1, 3, 96, 96)
    lr = downscale(stripes, 4)
    assert lr.shape == (1, 3, 24, 24)
    inside = lr[..., 2:-2]  # the border columns see the image edge, not the stripes
    assert inside.min().item() > 0.35 and inside.max().item() < 0.65


@pytest.mark.parametrize(("scale", "size"), [(2, (16, 24)), (4, (8, 12))])
def test_lr_is_the_hr_size_divided_by_the_scale(scale, size):
    hr = torch.rand(2, 3, 32, 48, generator=generator(8))
    lr = degrade(hr, scale, generator(9), 0.05, (30, 95)).lr
    assert lr.shape == (2, 3, *size)
    assert lr.dtype == torch.float32
    assert lr.min().item() >= 0 and lr.max().item() <= 1


def test_same_generator_key_same_lr_different_key_different_lr():
    hr = torch.rand(2, 3, 32, 32, generator=generator(10))
    first = degrade(hr, 4, generator(0, 1, 7, 0), 0.05, (30, 95))
    again = degrade(hr, 4, generator(0, 1, 7, 0), 0.05, (30, 95))
    other = degrade(hr, 4, generator(0, 1, 8, 0), 0.05, (30, 95))
    assert torch.equal(first.lr, again.lr) and first.jpeg_qualities == again.jpeg_qualities
    assert not torch.equal(first.lr, other.lr)


@pytest.mark.parametrize(
    ("hr", "scale", "sigma", "quality", "words"),
    [
        (torch.rand(1, 3, 30, 30), 4, 0.05, (30, 95), "30x30 crop does not divide by scale 4"),
        (torch.rand(3, 30, 30), 2, 0.05, (30, 95), "need float (batch, 3, height, width)"),
        (torch.rand(1, 3, 32, 32), 2, -0.1, (30, 95), "esrgan.noise_sigma: -0.1"),
        (torch.rand(1, 3, 32, 32), 2, 0.05, (95, 30), "esrgan.jpeg_quality: [95, 30]"),
        (torch.rand(1, 3, 32, 32), 2, 0.05, (0, 30), "1 <= low <= high <= 100"),
    ],
)
def test_degrade_names_bad_input(hr, scale, sigma, quality, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        degrade(hr, scale, generator(11), sigma, quality)


# --- generator -----------------------------------------------------------------------------


@pytest.mark.parametrize(("scale", "side"), [(2, 16), (4, 32)])
def test_rrdbnet_upscales_by_its_scale(scale, side):
    model = RRDBNet(scale, **TINY)
    assert model(torch.rand(2, 3, 8, 8)).shape == (2, 3, side, side)


def test_rrdbnet_at_the_papers_size_has_esrgans_parameter_count():
    """ESRGAN's 4× generator: 23 RRDBs, 64 features, growth 32. By hand, 3×3 convs with bias:
    dense block 18,464 + 27,680 + 36,896 + 46,112 + 110,656 = 239,808; × 3 × 23 = 16,546,752;
    conv_first 1,792, conv_body 36,928, two upsampling convs 73,856, conv_hr 36,928,
    conv_last 1,731: 16,697,987 (the size of the published RRDB_ESRGAN_x4 weights)."""
    with torch.device("meta"):
        four, two = RRDBNet(4), RRDBNet(2)
    assert sum(p.numel() for p in four.parameters()) == 16_697_987
    assert sum(p.numel() for p in two.parameters()) == 16_697_987 - 36_928


def test_upsampling_is_nearest_neighbour_then_a_convolution_per_factor_of_two():
    """With an empty trunk and every convolution passing its channel through (3 features,
    identity kernels), the LR image comes out nearest-upsampled: each pixel as a 4×4 block.
    LeakyReLU(0.2) follows both upsampling convs and conv_hr (ESRGAN section 3.1), so the
    negative pixel comes out scaled by 0.2³ = 0.008."""
    model = RRDBNet(4, num_blocks=1, num_features=3, growth_channels=2)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            parameter.zero_()
            if name.endswith("weight") and not name.startswith(("body", "conv_body")):
                for channel in range(3):
                    parameter[channel, channel, 1, 1] = 1.0
        lr = torch.tensor([[0.1, 0.2], [0.3, -1.0]]).expand(1, 3, 2, 2)
        sr = model(lr)
    expected = torch.tensor([[0.1] * 4 + [0.2] * 4] * 4 + [[0.3] * 4 + [-0.008] * 4] * 4)
    assert torch.allclose(sr[0, 0], expected) and torch.allclose(sr[0, 2], expected)


def test_dense_block_convolutions_start_at_a_tenth_of_kaiming():
    """ESRGAN section 3.1, "smaller initialization"; Kaiming (He et al. 2015) normal init for
    ReLU: std = sqrt(2 / fan_in). conv1 of a 64-feature block: fan_in 64·9, std 0.0589 × 0.1.
    18,432 weights: the sample std is within 2% of it (standard error 0.5%)."""
    torch.manual_seed(0)
    conv1 = ResidualDenseBlock(64, 32).convs[0]
    assert conv1.weight.std().item() == pytest.approx(0.005893, rel=0.02)
    assert torch.equal(conv1.bias, torch.zeros(32))


def test_every_residual_branch_is_scaled_by_0_2():
    """ESRGAN section 3.1 and figure 4, residual scaling β = 0.2. With every conv zero and each
    dense block's last bias 1, the dense blocks add 0.2 each (x+0.2, x+0.4, x+0.6) and the
    RRDB adds 0.2 × (x + 0.6) to x: 1.2·x + 0.12."""
    block = RRDB(features=4, growth=2)
    with torch.no_grad():
        for parameter in block.parameters():
            parameter.zero_()
        for dense in block.blocks:
            dense.convs[4].bias.fill_(1.0)
    x = torch.rand(1, 4, 5, 5)
    assert torch.allclose(block(x), 1.2 * x + 0.12)


def test_scale_other_than_2_or_4_is_refused():
    with pytest.raises(ValueError, match=r"scale: 3 is not supported; use one of \(2, 4\)"):
        RRDBNet(3, **TINY)


def test_grow_from_copies_every_2x_parameter_and_only_the_extra_upsampling_is_new():
    torch.manual_seed(0)
    two = RRDBNet(2, **TINY).state_dict()
    four = RRDBNet(4, **TINY)
    new = grow_from(two, four)
    assert new == ["upsample.1.bias", "upsample.1.weight"]
    grown = four.state_dict()
    assert all(torch.equal(grown[key], two[key]) for key in two)
    assert len(two) + 2 == len(grown)


def test_the_grown_upsampling_conv_starts_as_the_identity():
    """The issue: the new conv starts as dirac_ with zero bias, so the 4x stage begins as the 2x
    network plus a nearest x2 of its features, not with a random layer in its middle."""
    torch.manual_seed(0)
    four = RRDBNet(4, **TINY)
    grow_from(RRDBNet(2, **TINY).state_dict(), four)
    features = torch.randn(2, TINY["num_features"], 6, 5)
    assert torch.equal(four.upsample[1](features), features)
    assert not four.upsample[1].bias.any()


def test_grow_from_refuses_a_differently_built_or_partial_2x_state():
    four = RRDBNet(4, **TINY)
    wider = RRDBNet(2, num_blocks=1, num_features=16, growth_channels=4).state_dict()
    with pytest.raises(ValueError, match=r"conv_first.weight: shape \(16, 3, 3, 3\) in the 2×"):
        grow_from(wider, four)
    partial = {k: v for k, v in RRDBNet(2, **TINY).state_dict().items() if "conv_hr" not in k}
    with pytest.raises(ValueError, match=r"conv_hr\.bias: missing from the 2× state"):
        grow_from(partial, four)


# --- losses --------------------------------------------------------------------------------


def test_vgg_features_sit_at_torchvisions_indices_and_stop_before_conv5_4s_relu():
    features = VGG19Features([4] * 16).features
    convs = [i for i, layer in enumerate(features) if isinstance(layer, torch.nn.Conv2d)]
    assert convs == TORCHVISION_CONV_INDICES
    pools = [i for i, layer in enumerate(features) if isinstance(layer, torch.nn.MaxPool2d)]
    assert pools == [4, 9, 18, 27]  # cfgs["E"]'s first four "M"; the fifth is past conv5_4
    # ESRGAN section 3.3: features before activation; the last layer is conv5_4 itself.
    assert len(features) == 35 and isinstance(features[34], torch.nn.Conv2d)


def test_a_torchvision_shaped_vgg19_state_dict_loads_strictly(tmp_path):
    state = torchvision_shaped_vgg19(TORCHVISION_CONV_WIDTHS)
    torch.save(state, tmp_path / "vgg19.pth")
    vgg = load_vgg19(tmp_path)  # the staged folder, as recipes.weights.require returns it
    loaded = vgg.state_dict()
    assert sorted(loaded) == sorted(k for k in state if k.startswith("features."))
    assert all(torch.equal(loaded[k], state[k]) for k in loaded)
    assert [layer.out_channels for layer in vgg.features if hasattr(layer, "out_channels")] == (
        TORCHVISION_CONV_WIDTHS
    )
    assert not any(p.requires_grad for p in vgg.parameters())


def test_vgg19_loader_names_the_bad_file_and_key(tmp_path):
    with pytest.raises(FileNotFoundError, match=str(tmp_path / "vgg19.pth")):
        load_vgg19(tmp_path)
    state = torchvision_shaped_vgg19([4] * 16)
    del state["features.16.weight"]
    torch.save(state, tmp_path / "vgg19.pth")
    with pytest.raises(ValueError, match=r"no conv weight features\.16\.weight"):
        load_vgg19(tmp_path / "vgg19.pth")
    state = torchvision_shaped_vgg19([4] * 16)
    state["features.34.bias"] = torch.zeros(5)
    torch.save(state, tmp_path / "vgg19.pth")
    with pytest.raises(ValueError, match=r"features\.34\.bias"):
        load_vgg19(tmp_path / "vgg19.pth")
    torch.save({"conv1.weight": torch.zeros(1)}, tmp_path / "vgg19.pth")
    with pytest.raises(ValueError, match=r"keys \['conv1.weight'\]"):
        load_vgg19(tmp_path / "vgg19.pth")


def test_vgg_input_is_normalised_with_imagenet_mean_and_std():
    """torchvision.models docs: mean [0.485, 0.456, 0.406], std [0.229, 0.224, 0.225]. Cut
    after conv1_1 and with conv1_1 passing each channel through, the stack returns the
    normalised image."""
    vgg = VGG19Features([3] * 16)
    vgg.features = vgg.features[:1]
    with torch.no_grad():
        vgg.features[0].weight.zero_()
        vgg.features[0].bias.zero_()
        for channel in range(3):
            vgg.features[0].weight[channel, channel, 1, 1] = 1.0
        image = torch.tensor([0.485 + 0.229, 0.456, 0.406 - 2 * 0.225]).view(1, 3, 1, 1)
        normalised = vgg(image)
    assert torch.allclose(normalised.flatten(), torch.tensor([1.0, 0.0, -2.0]), atol=1e-6)


def test_pixel_losses_on_a_literal_example():
    sr = torch.tensor([0.0, 0.5, 1.0, 1.0])
    hr = torch.tensor([0.0, 0.0, 0.0, 1.0])
    # |d| = 0, .5, 1, 0 → mean 0.375; d² = 0, .25, 1, 0 → mean 0.3125.
    assert pixel_loss("l1")(sr, hr).item() == pytest.approx(0.375)
    assert pixel_loss("mse")(sr, hr).item() == pytest.approx(0.3125)
    with pytest.raises(ValueError, match=r"esrgan.pixel_loss: 'l2'; use one of \['l1', 'mse'\]"):
        pixel_loss("l2")


SETTINGS = {"pixel_loss": "l1", "pixel_weight": 0.1, "perceptual_weight": 1.0}


def test_perceptual_loss_is_zero_for_identical_images_and_weights_combine(tiny_vgg_file):
    vgg = load_vgg19(tiny_vgg_file)
    image = torch.rand(2, 3, 32, 32, generator=generator(12))
    same = generator_loss(image, image.clone(), vgg, SETTINGS)
    assert same.perceptual.item() == 0.0 and same.total.item() == 0.0
    # A uniform +0.25 shift: L1 pixel loss 0.25 exactly.
    shifted = generator_loss((image + 0.25), image, vgg, SETTINGS)
    assert shifted.pixel.item() == pytest.approx(0.25)
    assert shifted.perceptual.item() > 0
    # ESRGAN's perceptual term is an L1 distance between the features (section 3.3).
    with torch.no_grad():
        l1 = (vgg(image + 0.25) - vgg(image)).abs().mean().item()
    assert shifted.perceptual.item() == pytest.approx(l1)
    assert shifted.total.item() == pytest.approx(0.1 * 0.25 + shifted.perceptual.item())


# --- the task ------------------------------------------------------------------------------


def task_settings(**overrides):
    # model/config/recipe_training.py EsrganSettings defaults, with a tiny RRDB and crop.
    return {
        **TINY, "pixel_loss": "l1", "pixel_weight": 0.1, "perceptual_weight": 1.0,
        "noise_sigma": 0.05, "jpeg_quality": [30, 95], "hr_crop": 16, **overrides,
    }  # fmt: skip


def batch(step: int) -> Batch:
    images = torch.rand(2, 3, 16, 16, generator=generator(13))
    keys = [generator(0, 0, step, sample) for sample in range(2)]
    return Batch(images, ["a", "b"], keys, torch.device("cpu"))


def test_task_loss_is_a_float32_scalar_that_trains_only_the_generator(tiny_vgg_file):
    torch.manual_seed(0)
    task = EsrganTask(task_settings(), 4, tiny_vgg_file, "cpu")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = task.loss(task.trainable(), batch(1))
    assert loss.dtype == torch.float32 and loss.dim() == 0 and torch.isfinite(loss)
    loss.backward()
    assert all(p.grad is not None for p in task.trainable().parameters())
    assert all(p.grad is None for p in task.vgg.parameters())
    assert not set(map(id, task.vgg.parameters())) & set(map(id, task.trainable().parameters()))


def test_task_loss_is_reproduced_by_the_batch_key(tiny_vgg_file):
    torch.manual_seed(0)
    task = EsrganTask(task_settings(pixel_loss="mse"), 2, tiny_vgg_file, "cpu")
    with torch.no_grad():
        first, again, other = (task.loss(task.trainable(), batch(s)) for s in (1, 1, 2))
    assert first.item() == again.item() and first.item() != other.item()


@pytest.mark.parametrize(
    ("settings", "scale", "words"),
    [
        ({"hr_crop": 18}, 4, "esrgan.hr_crop: 18 does not divide by the 4× stage's scale"),
        ({"pixel_loss": "huber"}, 2, "esrgan.pixel_loss: 'huber'"),
        ({}, 8, r"scale: 8 is not supported"),
    ],
)
def test_task_names_bad_settings(tiny_vgg_file, settings, scale, words):
    with pytest.raises(ValueError, match=words):
        EsrganTask(task_settings(**settings), scale, tiny_vgg_file, "cpu")


def test_task_names_missing_settings_and_a_crop_the_loop_did_not_make(tiny_vgg_file):
    settings = task_settings()
    del settings["noise_sigma"]
    with pytest.raises(ValueError, match=r"missing noise_sigma; pass .*recipe_settings"):
        EsrganTask(settings, 2, tiny_vgg_file, "cpu")
    task = EsrganTask(task_settings(hr_crop=32), 2, tiny_vgg_file, "cpu")
    with pytest.raises(ValueError, match=r"images are 16x16, esrgan\.hr_crop is 32"):
        task.loss(task.trainable(), batch(1))


def test_progressive_stages_the_2x_trains_and_the_4x_starts_from_it(tiny_vgg_file):
    """The two stages as the loop runs them, in miniature: a few Adam steps of the 2× task on
    one batch lower its loss; the 4× task's generator then grows from the 2× weights."""
    torch.manual_seed(0)
    two = EsrganTask(task_settings(), 2, tiny_vgg_file, "cpu")
    optimizer = torch.optim.Adam(two.trainable().parameters(), lr=1e-3)
    losses = []
    for _ in range(10):
        optimizer.zero_grad()
        loss = two.loss(two.trainable(), batch(1))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    four = EsrganTask(task_settings(), 4, tiny_vgg_file, "cpu")
    assert grow_from(two.trainable().state_dict(), four.trainable()) == [
        "upsample.1.bias", "upsample.1.weight",
    ]  # fmt: skip
    assert torch.equal(four.trainable().conv_last.weight, two.trainable().conv_last.weight)
    assert torch.isfinite(four.loss(four.trainable(), batch(2)))
