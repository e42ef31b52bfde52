"""The platform's private ECR repositories: tags immutable (a tag names one image for good),
each image scanned on push, encrypted with KMS."""

from __future__ import annotations

import pulumi_aws as aws


def repository_args(name: str, *, protect: bool) -> aws.ecr.RepositoryArgs:
    """A production stack keeps a repository's images when the repository is deleted."""
    return aws.ecr.RepositoryArgs(
        name=name,
        image_scanning_configuration=aws.ecr.RepositoryImageScanningConfigurationArgs(
            scan_on_push=True
        ),
        image_tag_mutability="IMMUTABLE",
        encryption_configurations=[
            aws.ecr.RepositoryEncryptionConfigurationArgs(encryption_type="KMS")
        ],
        force_delete=not protect,
    )
