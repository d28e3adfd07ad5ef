"""Fixtures: a live ``dpal serve`` on a fresh store, and clients of each role.

The binary is ``$DPAL_BIN``, or built once per session with
``go build -o … ./cmd/dpal`` from the repository this directory sits in. The
server listens on ``127.0.0.1:0`` (the kernel picks a free port; the address is
read back from the server's "listening" log line, so no port can be taken
between choosing and binding it). A fresh store prints its first admin token on
stdout; the other roles' tokens are made with the admin API
(``POST /v1/tokens``), the live equivalent of ``dpal serve token create``.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Iterator, List, Optional

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from dpal_client import Client  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[3]


@dataclass
class Server:
    """A running ``dpal serve``: its base URL, first admin token and process."""

    url: str
    admin_token: str
    proc: "subprocess.Popen[bytes]"
    dir: pathlib.Path


@pytest.fixture(scope="session")
def dpal_bin(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The dpal binary: $DPAL_BIN, or one built from this checkout."""
    env = os.environ.get("DPAL_BIN")
    if env:
        if not os.access(env, os.X_OK):
            pytest.fail(f"DPAL_BIN={env} is not an executable file")
        return env
    go = shutil.which("go") or ("/usr/local/go/bin/go" if os.access("/usr/local/go/bin/go", os.X_OK) else None)
    if go is None:
        pytest.fail("no go on PATH to build dpal: set DPAL_BIN to a dpal binary")
    out = tmp_path_factory.mktemp("bin") / "dpal"
    subprocess.run([go, "build", "-o", str(out), "./cmd/dpal"], cwd=REPO, check=True)
    return str(out)


def start_server(binary: str, workdir: pathlib.Path, config: Optional[dict] = None) -> Server:
    """Starts ``dpal serve`` on a fresh store in workdir and waits until it listens."""
    args: List[str] = [binary, "serve", "--store", str(workdir / "store.db"), "--listen", "127.0.0.1:0"]
    if config is not None:
        path = workdir / "config.json"
        path.write_text(json.dumps(config))
        args += ["--config", str(path)]
    out, err = workdir / "stdout", workdir / "stderr"
    with open(out, "wb") as o, open(err, "wb") as e:
        proc = subprocess.Popen(args, stdout=o, stderr=e, cwd=workdir)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"dpal serve exited with {proc.returncode}: {err.read_text()}")
        for line in err.read_text().splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if rec.get("msg") == "dpal serve listening":
                tokens = [t for t in out.read_text().split() if t.startswith("dpal_")]
                if not tokens:
                    raise RuntimeError(f"no admin token on stdout: {out.read_text()!r}")
                return Server(f"http://{rec['addr']}", tokens[0], proc, workdir)
        time.sleep(0.05)
    proc.kill()
    raise RuntimeError(f"dpal serve did not listen within 30 s: {err.read_text()}")


def stop_server(s: Server) -> None:
    """SIGTERM (a graceful shutdown), then SIGKILL if it hangs."""
    s.proc.terminate()
    try:
        s.proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        s.proc.kill()
        s.proc.wait()


@pytest.fixture(scope="session")
def server(dpal_bin: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server for the session, on a fresh store."""
    s = start_server(dpal_bin, tmp_path_factory.mktemp("serve"))
    yield s
    stop_server(s)


@pytest.fixture(scope="session")
def admin(server: Server) -> Client:
    """A client with the store's first admin token."""
    return Client(server.url, server.admin_token)


def _client_of(admin: Client, server: Server, role: str) -> Client:
    return Client(server.url, admin.create_token(role).token)


@pytest.fixture(scope="session")
def ingest(admin: Client, server: Server) -> Client:
    """A client with an ingest token."""
    return _client_of(admin, server, "ingest")


@pytest.fixture(scope="session")
def annotator(admin: Client, server: Server) -> Client:
    """A client with an annotator token."""
    return _client_of(admin, server, "annotator")


@pytest.fixture(scope="session")
def annotator2(admin: Client, server: Server) -> Client:
    """A second annotator, for claims held by another."""
    return _client_of(admin, server, "annotator")


@pytest.fixture(scope="session")
def officer(admin: Client, server: Server) -> Client:
    """A client with an officer (privacy officer) token."""
    return _client_of(admin, server, "officer")
