"""Where a training pod finds the storage plane's volumes (components/storage/volumes.py mounts
them there), and so where the self-test and the recipes look by default."""

from __future__ import annotations

SHARED_DATA_MOUNT_PATH = "/mnt/shared-data"
NVME_CACHE_MOUNT_PATH = "/mnt/nvme-cache"
