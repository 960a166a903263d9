"""How the client finds the service, and what it says when there is none: at once, in the
constructor, naming what to install (never a download, never a failure at the first call)."""
from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

import trace_alloc
from trace_alloc import _client


@pytest.fixture
def nowhere(tmp_path, monkeypatch):
    """No TRACE_ALLOC_BIN, an empty PATH, a working folder with no checkout above it, no bundled runtime."""
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.delenv("TRACE_ALLOC_BIN", raising=False)
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(_client, "_RUNTIME", tmp_path / "no-runtime")
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
    for hint in ("wheel", "Node.js >= 20", "npm install -g trace-alloc", "TRACE_ALLOC_BIN"):
        assert hint in err.message, (hint, err.message)


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
    monkeypatch.setenv("TRACE_ALLOC_BIN", str(nowhere / "other.js"))
    assert trace_alloc.find_command() == [str(node), str(nowhere / "other.js")]


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
