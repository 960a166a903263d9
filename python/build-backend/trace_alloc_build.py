"""The PEP 517 build backend of the trace-alloc Python package: standard library only.

Why not setuptools: `pip install ./python` must work offline on a fresh machine, and a
setuptools build needs either build isolation (setuptools and, before setuptools 70.1, `wheel`
downloaded from an index) or a setuptools/wheel pair already installed by hand (the image's
setuptools 65.5 without `wheel` answers `invalid command 'bdist_wheel'`). This backend needs
nothing (`requires = []` on Python >= 3.11, where `tomllib` reads pyproject.toml), so pip's
isolated build installs nothing and works with or without an index. It also writes the platform
wheel that carries the Node runtime, whose tag setuptools can only be coaxed into.

Hooks: `build_wheel`, `build_sdist`, `build_editable` (PEP 660, a `.pth` file), and their
`get_requires_*`. Config setting `runtime=DIR` (pip `--config-settings runtime=DIR`, or
`python/build-wheel.ts` which stages DIR): a staged Node runtime (`node`, `app/`,
`MANIFEST.json`) packed as `trace_alloc/_runtime/`, making a platform wheel.

Where the service comes from: a platform wheel carries it; a pure wheel built inside a
trace-alloc checkout (`pip install ./python`) records that checkout in
`trace_alloc/_checkout.json`, and the installed client runs the checkout's built
`dist/cli/main.js` from anywhere (`find_command`). Config setting `record-checkout=false` leaves
the record out (a client-only wheel for another machine); a wheel built from an sdist has no
checkout to record.
"""
from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import stat
import sys
import tarfile
import time
import zipfile
from pathlib import Path
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent  # python/, the folder holding pyproject.toml
RUNTIME_DIR = "_runtime"  # inside the package: trace_alloc/_runtime/
CHECKOUT_RECORD = "_checkout.json"  # inside the package: the checkout a pure wheel was built in

# Node's process.platform/process.arch -> the wheel platform tag of a binary built for it. The
# official Node builds target glibc 2.28 on Linux, macOS 11 (arm64) / 10.15 (x64).
PLATFORM_TAGS = {
    ("linux", "x64"): "linux_x86_64",
    ("linux", "arm64"): "linux_aarch64",
    ("darwin", "arm64"): "macosx_11_0_arm64",
    ("darwin", "x64"): "macosx_10_15_x86_64",
    ("win32", "x64"): "win_amd64",
    ("win32", "arm64"): "win_arm64",
}


def _read_pyproject() -> Dict[str, Any]:
    try:
        import tomllib  # Python >= 3.11
    except ImportError:  # pragma: no cover - older Pythons get tomli through build-system.requires
        import tomli as tomllib  # type: ignore[no-redef]
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)


class _Project:
    """The `[project]` table, as far as this package uses it."""

    def __init__(self) -> None:
        data = _read_pyproject()
        project = data["project"]
        self.name: str = project["name"]
        self.version: str = project["version"]
        self.summary: str = project.get("description", "")
        self.readme: Optional[str] = project.get("readme")
        self.license: Optional[str] = (project.get("license") or {}).get("text")
        self.requires_python: Optional[str] = project.get("requires-python")
        self.dependencies: List[str] = list(project.get("dependencies", []))
        self.extras: Dict[str, List[str]] = dict(project.get("optional-dependencies", {}))
        self.package: str = data.get("tool", {}).get("trace-alloc-build", {}).get("package", self.dist_name)

    @property
    def dist_name(self) -> str:
        """The name as it appears in file names (PEP 427/625): runs of -_. become one _."""
        return re.sub(r"[-_.]+", "_", self.name).lower()

    def metadata(self) -> str:
        lines = ["Metadata-Version: 2.1", "Name: %s" % self.name, "Version: %s" % self.version]
        if self.summary:
            lines.append("Summary: %s" % self.summary)
        if self.license:
            lines.append("License: %s" % self.license)
        if self.requires_python:
            lines.append("Requires-Python: %s" % self.requires_python)
        lines += ["Requires-Dist: %s" % d for d in self.dependencies]
        for extra, deps in sorted(self.extras.items()):
            lines.append("Provides-Extra: %s" % extra)
            for dep in deps:
                joiner = " and " if ";" in dep else "; "
                lines.append("Requires-Dist: %s%sextra == %s" % (dep, joiner, json.dumps(extra)))
        body = ""
        if self.readme:
            lines.append("Description-Content-Type: text/markdown")
            body = (ROOT / self.readme).read_text(encoding="utf-8")
        return "\n".join(lines) + "\n\n" + body


def _zip_time() -> Tuple[int, int, int, int, int, int]:
    """Entry timestamps: SOURCE_DATE_EPOCH when set (reproducible builds), else 1980-01-01."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch:
        return time.gmtime(max(int(epoch), 315532800))[:6]
    return (1980, 1, 1, 0, 0, 0)


def _package_files(project: _Project) -> Iterator[Tuple[str, Path]]:
    """(archive path, file) of the package's sources: every .py and py.typed, no caches."""
    top = ROOT / project.package
    for path in sorted(top.rglob("*")):
        rel = path.relative_to(ROOT).as_posix()
        if path.is_file() and "__pycache__" not in path.parts and RUNTIME_DIR not in path.relative_to(top).parts[:1]:
            if path.suffix == ".py" or path.name == "py.typed":
                yield rel, path


def _checkout() -> Optional[Path]:
    """The trace-alloc checkout holding this python/ folder: a package.json named trace-alloc beside it."""
    repo = ROOT.parent
    try:
        manifest = json.loads((repo / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return repo if isinstance(manifest, dict) and manifest.get("name") == "trace-alloc" else None


def _runtime_files(project: _Project, runtime: Path) -> Iterator[Tuple[str, Path]]:
    for path in sorted(runtime.rglob("*")):
        if path.is_file() and not path.is_symlink():
            yield "%s/%s/%s" % (project.package, RUNTIME_DIR, path.relative_to(runtime).as_posix()), path


def _runtime_tag(runtime: Path) -> str:
    manifest_path = runtime / "MANIFEST.json"
    if not manifest_path.is_file():
        raise ValueError("runtime %s has no MANIFEST.json: stage it with python/build-wheel.ts" % runtime)
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    key = (manifest.get("platform"), manifest.get("arch"))
    if key not in PLATFORM_TAGS:
        raise ValueError("runtime %s is for %s-%s, which has no wheel platform tag here" % (runtime, key[0], key[1]))
    return PLATFORM_TAGS[key]


class _WheelWriter:
    """A wheel being written: entries with their modes, then the RECORD."""

    def __init__(self, path: Path) -> None:
        self.zip = zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED)
        self.records: List[str] = []
        self.when = _zip_time()

    def add(self, arcname: str, data: bytes, executable: bool = False) -> None:
        info = zipfile.ZipInfo(arcname, date_time=self.when)
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = ((0o755 if executable else 0o644) | stat.S_IFREG) << 16
        self.zip.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        self.records.append("%s,sha256=%s,%d" % (arcname, digest, len(data)))

    def add_file(self, arcname: str, path: Path) -> None:
        self.add(arcname, path.read_bytes(), executable=bool(path.stat().st_mode & 0o111))

    def close(self, record_name: str) -> None:
        self.records.append("%s,," % record_name)
        info = zipfile.ZipInfo(record_name, date_time=self.when)
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = (0o644 | stat.S_IFREG) << 16
        self.zip.writestr(info, "\n".join(self.records) + "\n")
        self.zip.close()


def _write_wheel(wheel_directory: str, project: _Project, files: List[Tuple[str, Path]], tag: str,
                 extra: Mapping[str, bytes] = {}) -> str:
    purelib = tag.endswith("-any")
    name = "%s-%s-%s.whl" % (project.dist_name, project.version, tag)
    dist_info = "%s-%s.dist-info" % (project.dist_name, project.version)
    out = Path(wheel_directory) / name
    out.parent.mkdir(parents=True, exist_ok=True)
    wheel = _WheelWriter(out)
    try:
        for arcname, path in files:
            wheel.add_file(arcname, path)
        for arcname, data in extra.items():
            wheel.add(arcname, data)
        wheel.add("%s/METADATA" % dist_info, project.metadata().encode("utf-8"))
        wheel_meta = "Wheel-Version: 1.0\nGenerator: trace_alloc_build\nRoot-Is-Purelib: %s\nTag: %s\n" % (
            "true" if purelib else "false", tag)
        wheel.add("%s/WHEEL" % dist_info, wheel_meta.encode("utf-8"))
        wheel.close("%s/RECORD" % dist_info)
    except BaseException:
        wheel.zip.close()
        out.unlink()
        raise
    return name


# -- PEP 517 hooks ----------------------------------------------------------------------------

def get_requires_for_build_wheel(config_settings: Optional[Mapping[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[Mapping[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings: Optional[Mapping[str, Any]] = None) -> List[str]:
    return []


def build_wheel(wheel_directory: str, config_settings: Optional[Mapping[str, Any]] = None,
                metadata_directory: Optional[str] = None) -> str:
    """A pure wheel (`py3-none-any`), recording the checkout it was built in, or with
    `runtime=DIR` a platform wheel carrying DIR."""
    project = _Project()
    files = list(_package_files(project))
    settings = config_settings or {}
    runtime = settings.get("runtime")
    if not runtime:
        checkout = _checkout() if str(settings.get("record-checkout", "true")).lower() != "false" else None
        record = {} if checkout is None else {
            "%s/%s" % (project.package, CHECKOUT_RECORD): (json.dumps({"checkout": str(checkout)}) + "\n").encode("utf-8")}
        return _write_wheel(wheel_directory, project, files, "py3-none-any", record)
    runtime_path = Path(runtime).resolve()
    tag = "py3-none-%s" % _runtime_tag(runtime_path)
    return _write_wheel(wheel_directory, project, files + list(_runtime_files(project, runtime_path)), tag)


def build_editable(wheel_directory: str, config_settings: Optional[Mapping[str, Any]] = None,
                   metadata_directory: Optional[str] = None) -> str:
    """A wheel holding only a `.pth` file that puts this source folder on `sys.path`."""
    project = _Project()
    pth = ("%s\n" % ROOT).encode("utf-8")
    return _write_wheel(wheel_directory, project, [], "py3-none-any", {"_%s_editable.pth" % project.dist_name: pth})


def build_sdist(sdist_directory: str, config_settings: Optional[Mapping[str, Any]] = None) -> str:
    """`<name>-<version>.tar.gz`: pyproject.toml, README, this backend, the package and its tests."""
    project = _Project()
    base = "%s-%s" % (project.dist_name, project.version)
    out = Path(sdist_directory) / ("%s.tar.gz" % base)
    out.parent.mkdir(parents=True, exist_ok=True)
    members: List[Tuple[str, Path]] = [("pyproject.toml", ROOT / "pyproject.toml")]
    if project.readme:
        members.append((project.readme, ROOT / project.readme))
    members.append(("build-backend/trace_alloc_build.py", Path(__file__).resolve()))
    members += list(_package_files(project))
    members += [(p.relative_to(ROOT).as_posix(), p) for p in sorted((ROOT / "tests").glob("*.py"))]
    mtime = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))

    def add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
        info = tarfile.TarInfo("%s/%s" % (base, name))
        info.size, info.mtime, info.mode = len(data), mtime, 0o644
        tar.addfile(info, io.BytesIO(data))

    with tarfile.open(out, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for name, path in members:
            add(tar, name, path.read_bytes())
        add(tar, "PKG-INFO", project.metadata().encode("utf-8"))
    return out.name


if __name__ == "__main__":  # python build-backend/trace_alloc_build.py [--no-checkout] OUT_DIR [RUNTIME_DIR]
    args = sys.argv[1:]
    settings: Dict[str, str] = {}
    if args[:1] == ["--no-checkout"]:
        settings["record-checkout"] = "false"
        args = args[1:]
    if len(args) not in (1, 2):
        sys.exit("usage: trace_alloc_build.py [--no-checkout] OUT_DIR [RUNTIME_DIR]")
    if len(args) == 2:
        settings["runtime"] = args[1]
    print(Path(args[0]).resolve() / build_wheel(args[0], settings))
