"""A wheel file opened for `plugins install`, its archive checked before any member is inflated.

zipfile inflates bzip2 and LZMA members without a bound on memory, and a
member's declared size is whatever the archive says; so, before anything is
read (docs/plugins.md, "Install bounds"):

- the file must be a regular file (a FIFO would block the read forever);
- the end-of-central-directory record (read by hand, before zipfile builds a
  ZipInfo for every entry) must declare at most MAX_MEMBERS members in a
  central directory of at most MAX_CENTRAL_DIRECTORY bytes;
- every member must be stored or deflated (zipfile inflates a deflate member
  in bounded steps and stops at its declared size), unencrypted, and the
  declared sizes must add up to at most MAX_UNPACKED, METADATA, RECORD,
  entry_points.txt and WHEEL each to its own bound (DIST_INFO_LIMITS);
- every name must be a plain relative path (no `..`, no absolute path, no
  backslash, no `__pycache__`), under the archive root, the wheel's own
  dist-info, or a valid scheme of its own `.data` folder; no second
  dist-info or egg-info and no `.pth` anywhere, no symlink member;
- METADATA's Name and Version must be the file name's (provenance is never
  taken from inside the wheel alone), and WHEEL's Wheel-Version 1.x.

Every refusal is a WheelRefused with one line naming the member; the
dist-info files are read through a bounded read.
"""
from __future__ import annotations

import os
import posixpath
import stat
import struct
import zipfile
from email.message import Message
from email.parser import HeaderParser
from pathlib import Path
from typing import BinaryIO

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

MAX_MEMBERS = 10_000
MAX_CENTRAL_DIRECTORY = 4 << 20
MAX_UNPACKED = 256 << 20
DIST_INFO_LIMITS = {"METADATA": 1 << 20, "RECORD": 4 << 20, "entry_points.txt": 256 << 10, "WHEEL": 64 << 10}
SCHEMES = ("purelib", "platlib", "headers", "scripts", "data")
IMPORTED_SCHEMES = ("purelib", "platlib")  # these land in the plugin folder itself, on sys.path
ALLOWED_COMPRESSION = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflate"}

_EOCD = struct.Struct("<4s4H2LH")
_EOCD64_LOCATOR = struct.Struct("<4sLQL")
_EOCD64 = struct.Struct("<4sQ2H2L4Q")


class WheelRefused(Exception):
    """Why the wheel is refused, in one line (the caller prefixes the wheel's path)."""


def open_regular(path: Path) -> BinaryIO:
    """The file, opened without blocking; refused at once unless it is a regular file."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise WheelRefused("no such file") from None
    except OSError as err:
        raise WheelRefused(f"cannot be read ({err.strerror})") from None
    kind = stat.S_IFMT(os.fstat(fd).st_mode)
    if kind != stat.S_IFREG:
        os.close(fd)
        raise WheelRefused("not a regular file (a FIFO, a device or a folder)")
    return os.fdopen(fd, "rb")


def central_directory_bounds(f: BinaryIO) -> None:
    """The member count and central directory size the archive declares, refused past the bounds; read from
    the end record itself (zipfile would first build an object for every one of a million entries)."""
    size = f.seek(0, os.SEEK_END)
    tail_start = max(0, size - (_EOCD.size + 0xFFFF))
    f.seek(tail_start)
    tail = f.read()
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < _EOCD.size:
        raise WheelRefused("not a zip archive (no end of central directory)")
    _sig, _disk, _cd_disk, _here, members, cd_size, _cd_offset, _comment = _EOCD.unpack_from(tail, at)
    locator_at = tail_start + at - _EOCD64_LOCATOR.size
    if (members == 0xFFFF or cd_size == 0xFFFFFFFF) and locator_at >= 0:
        f.seek(locator_at)
        sig, _disk64, eocd64_offset, _disks = _EOCD64_LOCATOR.unpack(f.read(_EOCD64_LOCATOR.size))
        if sig == b"PK\x06\x07" and eocd64_offset < size:
            f.seek(eocd64_offset)
            record = f.read(_EOCD64.size)
            if len(record) == _EOCD64.size and record[:4] == b"PK\x06\x06":
                fields = _EOCD64.unpack(record)
                members, cd_size = fields[7], fields[8]
    if members > MAX_MEMBERS:
        raise WheelRefused(f"it declares {members} members, more than the {MAX_MEMBERS} a wheel may hold")
    if cd_size > MAX_CENTRAL_DIRECTORY:
        raise WheelRefused(f"its central directory is {cd_size} bytes, more than {MAX_CENTRAL_DIRECTORY}")
    f.seek(0)


class WheelArchive:
    """An open, checked wheel: its zip (for installer's WheelFile), name, version, METADATA and top-level names."""

    def __init__(self, path: Path, name: str, version: Version) -> None:
        self.path = path
        self.name = name  # as the file name gives it
        self.version = version
        self.file = open_regular(path)
        try:
            central_directory_bounds(self.file)
            try:
                self.zip = zipfile.ZipFile(self.file)
            except (zipfile.BadZipFile, ValueError, EOFError, struct.error) as err:
                raise WheelRefused(f"not a valid zip archive ({err})") from None
            self.zip.filename = path.name  # installer's messages name the wheel, not a file descriptor
            self.dist_info = self._own_dist_info()
            self.data_dir = self.dist_info.removesuffix(".dist-info") + ".data"
            self.top_level: set[str] = set()
            self._check_members()
            self.metadata = self._check_metadata()
            self._check_wheel_file()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        self.file.close()

    def _own_dist_info(self) -> str:
        """The one NAME-VERSION.dist-info at the root whose name and version are the file name's."""
        roots = {n.split("/", 1)[0] for n in self.zip.namelist()}
        found = sorted(r for r in roots if r.endswith(".dist-info"))
        for folder in found:
            said_name, _, said_version = folder.removesuffix(".dist-info").rpartition("-")
            try:
                ours = canonicalize_name(said_name) == canonicalize_name(self.name) and \
                    Version(said_version) == self.version
            except InvalidVersion:
                ours = False
            if ours:
                if len(found) > 1:
                    other = next(f for f in found if f != folder)
                    raise WheelRefused(f"it holds a second dist-info folder, {other!r}")
                return folder
        raise WheelRefused(f"it has no dist-info folder of {self.name} {self.version}"
                           + (f" (it has {found[0]!r})" if found else ""))

    def read_dist_info(self, filename: str) -> str:
        """A dist-info file through a bounded read (its bound in DIST_INFO_LIMITS, else 1 MiB)."""
        limit = DIST_INFO_LIMITS.get(filename, 1 << 20)
        member = f"{self.dist_info}/{filename}"
        try:
            with self.zip.open(member) as stream:
                data = stream.read(limit + 1)
        except KeyError:
            raise WheelRefused(f"it has no {member}") from None
        except (zipfile.BadZipFile, OSError, EOFError) as err:
            raise WheelRefused(f"member {member} cannot be read ({err})") from None
        if len(data) > limit:
            raise WheelRefused(f"member {member} is larger than {limit} bytes")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            raise WheelRefused(f"member {member} is not UTF-8 text") from None

    def _check_members(self) -> None:
        infos = self.zip.infolist()
        if len(infos) > MAX_MEMBERS:
            raise WheelRefused(f"it holds {len(infos)} members, more than the {MAX_MEMBERS} a wheel may hold")
        total = 0
        seen: set[str] = set()
        dist_info_folders: set[str] = set()
        for info in infos:
            name = info.filename
            if name in seen:
                raise WheelRefused(f"member {name!r} appears twice")
            seen.add(name)
            if info.compress_type not in ALLOWED_COMPRESSION:
                raise WheelRefused(f"member {name!r} is compressed with method {info.compress_type}: "
                                   "only stored and deflate members are accepted")
            if info.flag_bits & 0x1:
                raise WheelRefused(f"member {name!r} is encrypted")
            total += info.file_size
            if total > MAX_UNPACKED:
                raise WheelRefused(f"its members declare more than {MAX_UNPACKED} bytes unpacked "
                                   f"(at member {name!r})")
            problem = self._name_problem(name, info)
            if problem is not None:
                raise WheelRefused(f"member {name!r} {problem}")
            first = name.split("/", 1)[0]
            if first.endswith(".dist-info"):
                dist_info_folders.add(first)
            limit = DIST_INFO_LIMITS.get(name[len(self.dist_info) + 1:]) if first == self.dist_info else None
            if limit is not None and info.file_size > limit:
                raise WheelRefused(f"member {name!r} declares {info.file_size} bytes, more than {limit}")
        if dist_info_folders != {self.dist_info}:
            others = sorted(dist_info_folders - {self.dist_info})
            raise WheelRefused(f"it must hold one dist-info folder, {self.dist_info}"
                               + (f"; it also holds {others[0]!r}" if others else ": it has none"))

    def _name_problem(self, name: str, info: zipfile.ZipInfo) -> str | None:
        if not name or "\\" in name or "\0" in name or name.startswith("/") or ":" in name.split("/", 1)[0]:
            return "is not a plain relative path"
        parts = name.rstrip("/").split("/")
        if any(p in ("", ".", "..") for p in parts):
            return "is not a plain relative path (an empty, '.' or '..' part)"
        if "__pycache__" in parts:
            return "is in a __pycache__ folder (compiled code is not installed from a wheel)"
        if stat.S_ISLNK(info.external_attr >> 16):
            return "is a symbolic link"
        if parts[0] == self.dist_info:
            return None
        if parts[0] == self.data_dir:
            if len(parts) < 3 and not name.endswith("/"):
                return "is not inside a scheme of the .data folder"
            if len(parts) >= 2 and parts[1] not in SCHEMES:
                return f"is in an unknown .data scheme {parts[1]!r} (known: {', '.join(SCHEMES)})"
            if len(parts) < 3:
                return None
            if parts[1] in IMPORTED_SCHEMES:
                return self._root_problem(parts[2:])
            return None
        if parts[0].endswith(".data"):
            return "is in the .data folder of another distribution"
        return self._root_problem(parts)

    def _root_problem(self, parts: list[str]) -> str | None:
        """A path that lands in the plugin folder itself."""
        if any(p.endswith((".dist-info", ".egg-info", ".egg-link")) for p in parts):
            return "would plant another distribution's metadata"
        if parts[-1].endswith(".pth"):
            return "is a .pth file"
        self.top_level.add(top_level_name(parts[0]) if len(parts) == 1 else parts[0])
        return None

    def _check_metadata(self) -> Message:
        metadata = HeaderParser().parsestr(self.read_dist_info("METADATA"))
        said_name, said_version = metadata.get("Name") or "", metadata.get("Version") or ""
        if canonicalize_name(str(said_name)) != canonicalize_name(self.name):
            raise WheelRefused(f"its METADATA says Name: {str(said_name)[:100]!r}, not the file name's "
                               f"{self.name!r}")
        try:
            same_version = Version(str(said_version)) == self.version
        except InvalidVersion:
            same_version = False
        if not same_version:
            raise WheelRefused(f"its METADATA says Version: {str(said_version)[:100]!r}, not the file name's "
                               f"{self.version}")
        return metadata

    def _check_wheel_file(self) -> None:
        wheel = HeaderParser().parsestr(self.read_dist_info("WHEEL"))
        version = str(wheel.get("Wheel-Version") or "")
        if not version.startswith("1."):
            raise WheelRefused(f"member '{self.dist_info}/WHEEL' says Wheel-Version: {version[:40]!r}; "
                               "only 1.x wheels are installed")


def top_level_name(filename: str) -> str:
    """The module a file at the root makes importable: `a.py`, `a.cpython-311-x86_64-linux-gnu.so` -> `a`."""
    stem = filename.split(".", 1)[0]
    return stem if posixpath.splitext(filename)[1] in (".py", ".pyc", ".so", ".pyd", ".pyw") else filename
