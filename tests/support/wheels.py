"""Small wheels made on the spot for the tests of `plugins install`, and a folder's files compared whole."""
from __future__ import annotations

import hashlib
import zipfile
from base64 import urlsafe_b64encode
from pathlib import Path


def wheel(folder: Path, name: str, version: str = "1.0", tag: str = "py3-none-any",
          requires: tuple[str, ...] = (), entry_points: str = "", module_text: str = "VALUE = 1\n") -> Path:
    """A small valid wheel (a module and its dist-info, with a RECORD whose hashes are right)."""
    module, dist_info = name.replace("-", "_"), f"{name.replace('-', '_')}-{version}.dist-info"
    files = {f"{module}.py": module_text.encode(),
             **({f"{dist_info}/entry_points.txt": entry_points.encode()} if entry_points else {}),
             f"{dist_info}/METADATA": ("Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version + "\n"
                                       + "".join(f"Requires-Dist: {r}\n" for r in requires)).encode(),
             f"{dist_info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: {tag}\n".encode()}
    record = "".join(f"{n},sha256={urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b'=').decode()},{len(d)}\n"
                     for n, d in files.items()) + f"{dist_info}/RECORD,,\n"
    path = folder / f"{module}-{version}-{tag}.whl"
    with zipfile.ZipFile(path, "w") as archive:
        for n, d in files.items():
            archive.writestr(n, d)
        archive.writestr(f"{dist_info}/RECORD", record)
    return path


def tree(folder: Path) -> dict[str, str]:
    """Every file under the folder with its sha256: what 'unchanged' is compared by."""
    if not folder.exists():
        return {}
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(folder.rglob("*"))}
