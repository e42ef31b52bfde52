"""Where the cluster pulls its images from (`gpu-platform:images`): upstream registries, or one
mirror an air-gapped cluster reaches instead."""

from __future__ import annotations

import re

from pydantic import Field, field_validator

from model.config.base import Settings
from model.config.selftest import PinnedImage

# host[:port][/path]: lower-case, no scheme, no tag. The host needs a dot or a port (or is
# localhost): a first component without either is read as a Docker Hub namespace, so
# `mirror/kueue/kueue` would pull from docker.io/mirror (Docker's reference grammar,
# distribution/reference: "domain").
_MIRROR = re.compile(
    r"^(localhost|[a-z0-9-]+(\.[a-z0-9-]+)+|[a-z0-9-]+:[0-9]+|[a-z0-9-]+(\.[a-z0-9-]+)+:[0-9]+)"
    r"(/[a-z0-9]+([._-][a-z0-9]+)*)*$"
)


# A TCP port is 16 bits, and port 0 is no port one can connect to (RFC 793, RFC 6335).
MAX_PORT = 65535


class ImageSettings(Settings):
    """The registry every image of the stack comes from."""

    registry_mirror: str | None = Field(
        None,
        description="A registry that mirrors every image the stack pulls (an air-gapped "
        "cluster's): `host[:port][/path]`, e.g. `registry.internal.example:5000/mirror`. Each "
        "image reference keeps its path and loses its registry: "
        "`registry.k8s.io/kueue/kueue:v0.19.2` becomes "
        "`registry.internal.example:5000/mirror/kueue/kueue:v0.19.2`, through each chart's "
        "registry values, the operators' custom resources and the program's own pods. "
        "out/<stack>/images.txt lists what to copy there. Default: upstream registries.",
    )

    prepull: tuple[PinnedImage, ...] = Field(
        (),
        description="The images jobs on the stack's GPU pools run, each pinned by digest: a "
        "new GPU node pulls them while its node-join check runs and keeps them "
        "(components/selftest/prepull.py), so a job's first pod there does not wait for its "
        "image. Each image must have `sh` (its pull runs `sh -c 'exit 0'`). The recipes image "
        "(recipes.image) is pulled as well without being listed. Default: none.",
    )

    @field_validator("registry_mirror")
    @classmethod
    def _a_registry(cls, value: str | None) -> str | None:
        if value is not None and not _MIRROR.match(value):
            raise ValueError(
                f"{value!r} is not a registry: give host[:port][/path] without a scheme or "
                "trailing slash, the host with a dot or a port, e.g. "
                "registry.internal.example:5000/mirror"
            )
        host = (value or "").split("/", 1)[0]
        if ":" in host and not 1 <= int(host.rpartition(":")[2]) <= MAX_PORT:
            raise ValueError(
                f"{value!r}: port {host.rpartition(':')[2]} is not a TCP port; a port is 1 to "
                f"{MAX_PORT}, e.g. registry.internal.example:5000/mirror"
            )
        return value
