"""What the FSx CSI driver is allowed to do, per provisioning mode, and its chart values.

The platform mounts the file system it declares through a static PersistentVolume: the kubelet
asks the node plugin to mount `dnsname@tcp:/mountname`, and no FSx API is called by anyone
(the driver's only FSx calls are in its controller's CreateVolume, DeleteVolume,
ControllerExpandVolume and ValidateVolumeCapabilities, which serve volumes a StorageClass
provisions). So `static` gives the driver no AWS role at all; `dynamic` lets the
controller create file systems that carry this cluster's tag, and change or delete only those.
"""

from __future__ import annotations

import json
from typing import Any

CSI_CONTROLLER_SA = "fsx-csi-controller-sa"
CSI_NODE_SA = "fsx-csi-node-sa"
# The controller adds its `extraTags` to every file system it creates (chart value
# `controller.extraTags`, passed as `--extra-tags`); the IAM conditions below key on this one.
# Modelled on the EFS CSI driver's `efs.csi.aws.com/cluster` tag.
OWNER_TAG = "fsx.csi.aws.com/cluster"


def fsx_csi_values(region: str, cluster_name: str, dynamic: bool) -> dict:
    """aws-fsx-csi-driver chart values: the region given (no metadata lookup from pods), the
    service account names a Pod Identity association refers to, and, for dynamic
    provisioning, the owner tag on every file system the controller creates."""
    controller: dict[str, Any] = {"region": region, "serviceAccount": {"name": CSI_CONTROLLER_SA}}
    if dynamic:
        controller["extraTags"] = {OWNER_TAG: cluster_name}
    return {"controller": controller, "node": {"serviceAccount": {"name": CSI_NODE_SA}}}


def dynamic_provisioning_policy(cluster_name: str, platform_file_system_arn: str) -> str:
    """The controller's permissions for a StorageClass: create file systems tagged for this
    cluster, resize and delete only those, and never touch the platform's own file system,
    even if someone gives it the owner tag."""
    request_tag = {"StringEquals": {f"aws:RequestTag/{OWNER_TAG}": cluster_name}}
    resource_tag = {"StringEquals": {f"aws:ResourceTag/{OWNER_TAG}": cluster_name}}
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    # Tags given on create are authorised as fsx:TagResource too (FSx user
                    # guide, "Grant permission to tag resources during creation").
                    "Sid": "CreateOwnedFileSystems",
                    "Effect": "Allow",
                    "Action": ["fsx:CreateFileSystem", "fsx:TagResource"],
                    "Resource": "*",
                    "Condition": request_tag,
                },
                {
                    "Sid": "ResizeAndDeleteOwnedFileSystems",
                    "Effect": "Allow",
                    "Action": ["fsx:UpdateFileSystem", "fsx:DeleteFileSystem"],
                    "Resource": "*",
                    "Condition": resource_tag,
                },
                {
                    # DescribeFileSystems lists without a resource: it takes only "*".
                    "Sid": "FindFileSystems",
                    "Effect": "Allow",
                    "Action": "fsx:DescribeFileSystems",
                    "Resource": "*",
                },
                {
                    "Sid": "NeverThePlatformFileSystem",
                    "Effect": "Deny",
                    "Action": ["fsx:TagResource", "fsx:UpdateFileSystem", "fsx:DeleteFileSystem"],
                    "Resource": platform_file_system_arn,
                },
                {
                    # FSx creates its service-linked role on the first file system of an account.
                    "Sid": "FsxServiceLinkedRole",
                    "Effect": "Allow",
                    "Action": "iam:CreateServiceLinkedRole",
                    "Resource": "*",
                    "Condition": {"StringLike": {"iam:AWSServiceName": ["fsx.amazonaws.com"]}},
                },
            ],
        }
    )
