"""FSx for Lustre settings every shipped stack leaves at their defaults (LZ4, Lustre 2.15, the
`flock` mount option) reach the file system and every shared-data volume from config
(STYLE.md §14): tests/helpers/varied_stacks.py sets other valid values and the plan follows."""

from __future__ import annotations

from tests.helpers.varied_stacks import varied_plan


def test_the_file_system_takes_the_stack_s_compression_and_lustre_version():
    (fs,) = varied_plan().of_type("aws:fsx/lustreFileSystem:LustreFileSystem")
    # pulumi-aws fsx.LustreFileSystem: dataCompressionType, fileSystemTypeVersion.
    assert fs.inputs["dataCompressionType"] == "NONE"
    assert fs.inputs["fileSystemTypeVersion"] == "2.12"


def test_every_shared_data_volume_mounts_with_the_stack_s_options():
    pvs = [o for o in varied_plan().kubernetes_objects() if o["kind"] == "PersistentVolume"]
    assert pvs
    for pv in pvs:
        assert pv["spec"]["mountOptions"] == ["flock", "noatime"], pv["metadata"]["name"]
