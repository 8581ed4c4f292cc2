"""Fixtures of the HTTP tests of strata-gateway (Gateway/Scripts/test-http runs them).

Everything runs against real processes on loopback: the gateway whose root URL is
$STRATA_HTTP_TEST_URL (started by Scripts/gateway), its PostgreSQL ($STRATA_GATEWAY_POSTGRES),
and the binary $STRATA_GATEWAY_BIN for the admin commands (databases, users) and for the extra
gateway processes some tests start with options of their own.
"""
import os
import re
import socket
import subprocess
import time
import uuid

import pytest
import requests

ROOT = os.environ.get("STRATA_HTTP_TEST_URL", "http://127.0.0.1:5986").rstrip("/")
BIN = os.environ.get("STRATA_GATEWAY_BIN", "")
POSTGRES = os.environ.get("STRATA_GATEWAY_POSTGRES", "")


def admin(*args):
    """Runs `strata-gateway ARGS` against the test PostgreSQL; returns its stdout."""
    env = dict(os.environ, STRATA_GATEWAY_POSTGRES=POSTGRES)
    done = subprocess.run([BIN, *args], env=env, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"strata-gateway {' '.join(args)}: {done.stderr}")
    return done.stdout


class Client:
    """A user of one database: a requests.Session with its Basic credentials."""

    def __init__(self, root, db, name, password):
        self.root, self.db, self.name, self.password = root, db, name, password
        self.http = requests.Session()
        self.http.auth = (name, password)

    def url(self, path=""):
        return f"{self.root}/{self.db}/{path}"

    def get(self, path="", **kw):
        return self.http.get(self.url(path), timeout=30, **kw)

    def put(self, path, body, **kw):
        return self.http.put(self.url(path), json=body, timeout=30, **kw)

    def post(self, path, body=None, **kw):
        if body is not None and not isinstance(body, (bytes, str)):
            kw["json"] = body
        elif body is not None:
            kw["data"] = body
            kw.setdefault("headers", {"Content-Type": "application/json"})
        return self.http.post(self.url(path), timeout=60, **kw)

    def delete(self, path, **kw):
        return self.http.delete(self.url(path), timeout=30, **kw)

    def bulk_replicated(self, docs):
        """_bulk_docs with new_edits: false (as a replicator writes)."""
        return self.post("_bulk_docs", {"new_edits": False, "docs": docs})


class Database:
    """A fresh database of the test gateway, with helpers to add users."""

    def __init__(self, name, root=ROOT):
        self.name, self.root = name, root

    def user(self, name, password="pw", read="*", write="*"):
        admin("user", "add", name, "--database", self.name, "--password", password, "--read", read, "--write", write)
        return Client(self.root, self.name, name, password)

    def client(self, name, password, root=None):
        return Client(root or self.root, self.name, name, password)


@pytest.fixture
def db():
    name = "t" + uuid.uuid4().hex[:12]
    admin("database", "create", name)
    return Database(name)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ExtraGateway:
    """A gateway process of the test's own (other options), on a free loopback port."""

    def __init__(self, *options, env=None, stderr=None):
        env = dict(os.environ, STRATA_GATEWAY_POSTGRES=POSTGRES, **(env or {}))
        self.process = subprocess.Popen([BIN, "serve", "--port", "0", *options], env=env,
                                        stdout=subprocess.PIPE, stderr=stderr or subprocess.DEVNULL, text=True)
        line = self.process.stdout.readline()
        match = re.search(r"listening on (http://\S+)", line)
        if not match:
            self.process.kill()
            raise RuntimeError(f"the extra gateway did not start: {line!r}")
        self.root = match.group(1)

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()


@pytest.fixture
def extra_gateway():
    started = []

    def start(*options, **kw):
        gateway = ExtraGateway(*options, **kw)
        started.append(gateway)
        return gateway

    yield start
    for gateway in started:
        gateway.stop()
