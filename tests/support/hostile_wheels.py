"""Hostile wheels made on the spot: any members, any compression, a central directory that lies.

Each is a valid zip with a RECORD whose hashes are right for what it holds, so that only the one hostile
trait under test can be what refuses it.
"""
from __future__ import annotations

import hashlib
import struct
import zipfile
from base64 import urlsafe_b64encode
from collections.abc import Mapping
from pathlib import Path


def _record_line(name: str, data: bytes) -> str:
    digest = urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}\n"


def hostile_wheel(folder: Path, name: str, members: Mapping[str, bytes] | None = None, *, version: str = "1.0",
                  metadata_name: str | None = None, metadata_extra: bytes = b"", wheel_version: str = "1.0",
                  compression: Mapping[str, int] | None = None, record_extra: bytes = b"",
                  filename: str | None = None) -> Path:
    """A wheel of `name` holding `members` (default: one module) and its dist-info; `compression` gives a
    member's zip method (default deflate); METADATA may name another distribution; RECORD may carry junk."""
    module = name.replace("-", "_")
    dist_info = f"{module}-{version}.dist-info"
    files = dict(members if members is not None else {f"{module}.py": b"VALUE = 1\n"})
    files[f"{dist_info}/METADATA"] = (f"Metadata-Version: 2.1\nName: {metadata_name or name}\n"
                                      f"Version: {version}\n").encode() + metadata_extra
    files[f"{dist_info}/WHEEL"] = (f"Wheel-Version: {wheel_version}\nGenerator: test\nRoot-Is-Purelib: true\n"
                                   "Tag: py3-none-any\n").encode()
    record = ("".join(_record_line(n, d) for n, d in files.items()) + f"{dist_info}/RECORD,,\n").encode()
    files[f"{dist_info}/RECORD"] = record + record_extra
    path = folder / (filename or f"{module}-{version}-py3-none-any.whl")
    methods = compression or {}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for n, d in files.items():
            archive.writestr(zipfile.ZipInfo(n, (2026, 1, 1, 0, 0, 0)), d,
                             compress_type=methods.get(n, zipfile.ZIP_DEFLATED))
    return path


def declare_size(path: Path, member: str, size: int) -> None:
    """Make the central directory (and the local header) declare `size` bytes unpacked for `member`: what a
    1 GiB member says of itself, without writing 1 GiB anywhere."""
    data = bytearray(path.read_bytes())
    encoded = member.encode()
    at = 0
    while (at := data.find(b"PK\x01\x02", at)) >= 0:
        name_length = struct.unpack_from("<H", data, at + 28)[0]
        if bytes(data[at + 46:at + 46 + name_length]) == encoded:
            struct.pack_into("<L", data, at + 24, size)
            local = struct.unpack_from("<L", data, at + 42)[0]
            struct.pack_into("<L", data, local + 22, size)
            path.write_bytes(bytes(data))
            return
        at += 4
    raise LookupError(member)
