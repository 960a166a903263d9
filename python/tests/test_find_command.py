"""How the client finds the service, and what it says when there is none: at once, in the
constructor, naming only remedies that exist (never a download, never a failure at the first
call, never a package that is not published)."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

import trace_alloc
from trace_alloc import _client


BACKEND = Path(__file__).resolve().parent.parent / "build-backend" / "trace_alloc_build.py"


@pytest.fixture
def nowhere(tmp_path, monkeypatch):
    """No TRACE_ALLOC_BIN, an empty PATH, a working folder with no checkout above it, no bundled
    runtime, no recorded checkout."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.delenv("TRACE_ALLOC_BIN", raising=False)
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(_client, "_RUNTIME", tmp_path / "no-runtime")
    monkeypatch.setattr(_client, "_CHECKOUT_RECORD", tmp_path / "no-record.json")
    package = Path(_client.__file__).resolve().parent
    if any((folder / "dist" / "cli" / "main.js").is_file() for folder in (package, *package.parents)):
        pytest.skip("this package lies inside a built checkout, which find_command finds by design")
    return tmp_path


def test_service_without_a_service_fails_in_the_constructor_naming_what_to_install(nowhere):
    start = time.monotonic()
    with pytest.raises(trace_alloc.TraceAllocError) as caught:
        trace_alloc.Service(backend="cpu")
    assert time.monotonic() - start < 5
    err = caught.value
    assert err.code == "service_error"
    for hint in ("wheel built for this platform", "npm run build:wheel", "Node.js >= 20", "npm ci",
                 "pip install ./python", "TRACE_ALLOC_BIN"):
        assert hint in err.message, (hint, err.message)
    # trace-alloc is not on the npm registry: no remedy may send the user there.
    assert "npm install -g" not in err.message and "npx" not in err.message, err.message


def fake_node(folder: Path) -> Path:
    """A `node` on PATH (never run: find_command only names it)."""
    node = folder / "node"
    node.write_text("#!/bin/sh\n")
    node.chmod(node.stat().st_mode | stat.S_IXUSR)
    return node


@pytest.mark.parametrize("value, said", [
    ("missing/dist/cli/main.js", "no such file"),
    ("/no/such/trace-alloc", "no such file"),
    ("no-such-trace-alloc-command", "no such command on PATH"),
])
def test_a_wrong_trace_alloc_bin_is_refused_in_the_constructor_naming_it(nowhere, monkeypatch, value, said):
    fake_node(nowhere / "empty-bin")
    monkeypatch.setenv("TRACE_ALLOC_BIN", value)
    start = time.monotonic()
    with pytest.raises(trace_alloc.TraceAllocError) as caught:
        trace_alloc.Service(backend="cpu")
    assert time.monotonic() - start < 5
    assert caught.value.code == "service_error"
    assert caught.value.message.startswith("TRACE_ALLOC_BIN=%s" % value), caught.value.message
    assert said in caught.value.message
    assert "dist/cli/main.js" in caught.value.message  # what it should name instead


def test_trace_alloc_bin_naming_a_checkout_folder_points_at_its_main_js(nowhere, monkeypatch):
    main = nowhere / "checkout" / "dist" / "cli" / "main.js"
    main.parent.mkdir(parents=True)
    main.write_text("")
    monkeypatch.setenv("TRACE_ALLOC_BIN", str(nowhere / "checkout"))
    with pytest.raises(trace_alloc.TraceAllocError, match="is a folder.*did you mean TRACE_ALLOC_BIN=%s" % main):
        trace_alloc.find_command()


@pytest.mark.skipif(os.name == "nt", reason="POSIX mode bits")
def test_trace_alloc_bin_naming_a_file_that_cannot_run_is_refused(nowhere, monkeypatch):
    plain = nowhere / "trace-alloc"
    plain.write_text("")
    plain.chmod(0o644)
    monkeypatch.setenv("TRACE_ALLOC_BIN", str(plain))
    with pytest.raises(trace_alloc.TraceAllocError, match="TRACE_ALLOC_BIN=%s is not executable" % plain):
        trace_alloc.find_command()


def test_a_relative_trace_alloc_bin_is_made_absolute(nowhere, monkeypatch):
    """Service(cwd=...) starts the service elsewhere: a path relative to here must still name it."""
    node = fake_node(nowhere / "empty-bin")
    main = nowhere / "dist" / "cli" / "main.js"
    main.parent.mkdir(parents=True)
    main.write_text("")
    monkeypatch.setenv("TRACE_ALLOC_BIN", os.path.join("dist", "cli", "main.js"))
    assert trace_alloc.find_command() == [str(node), str(main.resolve())]


def record(nowhere, monkeypatch, checkout: Path) -> None:
    path = nowhere / "record.json"
    path.write_text(json.dumps({"checkout": str(checkout)}))
    monkeypatch.setattr(_client, "_CHECKOUT_RECORD", path)


def test_the_checkout_recorded_at_install_is_found_from_anywhere(nowhere, monkeypatch):
    node = fake_node(nowhere / "empty-bin")
    main = nowhere / "checkout" / "dist" / "cli" / "main.js"
    main.parent.mkdir(parents=True)
    main.write_text("")
    record(nowhere, monkeypatch, nowhere / "checkout")
    elsewhere = nowhere / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert trace_alloc.find_command() == [str(node), str(main)]


def test_a_recorded_checkout_without_its_build_says_to_build_it(nowhere, monkeypatch):
    (nowhere / "checkout").mkdir()
    record(nowhere, monkeypatch, nowhere / "checkout")
    with pytest.raises(trace_alloc.TraceAllocError) as caught:
        trace_alloc.Service()
    message = caught.value.message
    assert "installed from the trace-alloc checkout %s, which has no built CLI" % (nowhere / "checkout") in message
    assert "run `npm ci` or `npm run build` there" in message
    assert "npm install -g" not in message


def test_a_recorded_checkout_that_is_gone_is_named(nowhere, monkeypatch):
    record(nowhere, monkeypatch, nowhere / "moved-away")
    with pytest.raises(trace_alloc.TraceAllocError, match=r"checkout .*moved-away, which is no longer there"):
        trace_alloc.Service()


def build_pure_wheel(python_dir: Path, out: Path, *flags: str) -> Path:
    """The package's own backend, run as `python trace_alloc_build.py OUT` from a python/ folder."""
    r = subprocess.run([sys.executable, str(python_dir / "build-backend" / "trace_alloc_build.py"), *flags, str(out)],
                       cwd=str(python_dir), capture_output=True, text=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert r.returncode == 0, r.stderr
    return Path(r.stdout.strip())


def copy_python_dir(to: Path) -> Path:
    """pyproject.toml, README, the backend and the package's modules: what the backend builds from."""
    import shutil
    source = BACKEND.parent.parent
    to.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(source / name, to / name)
    shutil.copytree(source / "build-backend", to / "build-backend", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(Path(_client.__file__).resolve().parent, to / "trace_alloc",
                    ignore=shutil.ignore_patterns("__pycache__", "_runtime", "_checkout.json"))
    return to


@pytest.mark.skipif(sys.version_info < (3, 11), reason="the backend reads pyproject.toml with tomllib (tomli before 3.11)")
def test_a_pure_wheel_built_in_a_checkout_records_it_and_only_then(tmp_path):
    import zipfile
    checkout = tmp_path / "checkout"
    python_dir = copy_python_dir(checkout / "python")
    (checkout / "package.json").write_text(json.dumps({"name": "trace-alloc", "version": "0.0.0"}))
    names = zipfile.ZipFile(build_pure_wheel(python_dir, tmp_path / "wheels")).namelist()
    assert "trace_alloc/_checkout.json" in names
    data = json.loads(zipfile.ZipFile(build_pure_wheel(python_dir, tmp_path / "wheels")).read("trace_alloc/_checkout.json"))
    assert data == {"checkout": str(checkout.resolve())}
    # --no-checkout (config setting record-checkout=false): a client-only wheel.
    names = zipfile.ZipFile(build_pure_wheel(python_dir, tmp_path / "client-only", "--no-checkout")).namelist()
    assert "trace_alloc/_checkout.json" not in names
    # Beside some other package.json (not trace-alloc's), or none: nothing recorded.
    (checkout / "package.json").write_text(json.dumps({"name": "my-app"}))
    names = zipfile.ZipFile(build_pure_wheel(python_dir, tmp_path / "other")).namelist()
    assert "trace_alloc/_checkout.json" not in names
    assert "trace_alloc/_client.py" in names


def test_a_main_js_without_node_names_node(nowhere, monkeypatch):
    main = nowhere / "dist" / "cli" / "main.js"
    main.parent.mkdir(parents=True)
    main.write_text("")
    monkeypatch.setenv("TRACE_ALLOC_BIN", str(main))
    with pytest.raises(trace_alloc.TraceAllocError, match=r"no `node` on PATH.*Node.js >= 20"):
        trace_alloc.find_command()


def test_the_bundled_runtime_comes_first_and_runs_the_bundled_node(nowhere, monkeypatch):
    runtime = nowhere / "runtime"
    node = runtime / "node"
    main = runtime / "app" / "dist" / "cli" / "main.js"
    main.parent.mkdir(parents=True)
    main.write_text("")
    node.write_text("#!/bin/sh\n")
    node.chmod(node.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(_client, "_RUNTIME", runtime)
    assert trace_alloc.find_command() == [str(node), str(main)]
    # A main.js named by TRACE_ALLOC_BIN runs on the bundled Node when PATH has none.
    (nowhere / "other.js").write_text("")
    monkeypatch.setenv("TRACE_ALLOC_BIN", str(nowhere / "other.js"))
    assert trace_alloc.find_command() == [str(node), str((nowhere / "other.js").resolve())]


@pytest.mark.skipif(os.name == "nt", reason="POSIX mode bits")
def test_a_bundled_node_without_its_mode_bits_is_named(nowhere, monkeypatch):
    runtime = nowhere / "runtime"
    main = runtime / "app" / "dist" / "cli" / "main.js"
    main.parent.mkdir(parents=True)
    main.write_text("")
    (runtime / "node").write_text("")
    monkeypatch.setattr(_client, "_RUNTIME", runtime)
    with pytest.raises(trace_alloc.TraceAllocError, match="not executable"):
        trace_alloc.find_command()
