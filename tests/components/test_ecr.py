"""The platform's private ECR repositories (components/ecr.py): the self-test image's and the
copies of NVIDIA's images. Each setting that keeps an image what it was pushed as is pinned
here by name (ECR User Guide: image-tag-mutability.html, image-scanning-basic.html,
encryption-at-rest.html)."""

from __future__ import annotations

import pytest

from components.ecr import repository_args


def test_a_tag_names_one_image_for_good_and_every_push_is_scanned_and_kms_encrypted():
    args = repository_args("nvcr/nvidia/gpu-operator", protect=False)
    assert args.name == "nvcr/nvidia/gpu-operator"
    assert args.image_tag_mutability == "IMMUTABLE"
    assert args.image_scanning_configuration.scan_on_push is True
    (encryption,) = args.encryption_configurations
    assert encryption.encryption_type == "KMS"


@pytest.mark.parametrize(("protect", "force_delete"), [(True, False), (False, True)])
def test_a_protected_stack_keeps_a_repository_s_images_when_it_is_deleted(protect, force_delete):
    # forceDelete false: DeleteRepository refuses a repository that holds images
    # (RepositoryNotEmptyException, ECR API reference).
    assert repository_args("r", protect=protect).force_delete is force_delete
