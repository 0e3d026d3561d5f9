"""Nothing calls home: a crawl, its embedding and an answer (in one process), and the HTTP server
answering over SSE (in another) resolve no name and connect to no address but the crawl target on
127.0.0.1. onnxruntime's telemetry looked up mobile.events.data.microsoft.com about 8 s after a
session was created; both processes stay up well past that.

Every lookup and connection is recorded twice over: by a Python audit hook (``sitecustomize``:
``socket.getaddrinfo``, ``socket.connect``…) and, where a C compiler is at hand, by a small
LD_PRELOAD library wrapping libc's ``getaddrinfo`` and ``connect`` — native code such as
onnxruntime's uploader never goes through Python's socket module.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import ROOT
from tests.server import run_server
from tests.test_app import answer_of, ask

pytestmark = pytest.mark.slow

SITE = ROOT / "tests" / "sites" / "hostile"
#: Seconds each process lives on after its last model use (telemetry came after ~8 s).
HOLD_S = 15

AUDIT_HOOK = '''
import os
import sys

_LOG = os.environ.get("NETLOG_PY")
_EVENTS = {"socket.getaddrinfo": 0, "socket.gethostbyname": 0, "socket.gethostbyname_ex": 0,
           "socket.gethostbyaddr": 0, "socket.connect": 1, "socket.sendto": 2}


def _record(event, args):
    index = _EVENTS.get(event)
    if index is None or not _LOG:
        return
    with open(_LOG, "a") as log:
        log.write(f"{event} {args[index]!r}\\n")


sys.addaudithook(_record)
'''

LIBC_SHIM = r'''
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static void note(const char *kind, const char *what) {
    const char *path = getenv("NETLOG_C");
    if (!path) return;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd < 0) return;
    char line[600];
    int n = snprintf(line, sizeof line, "%s %s\n", kind, what ? what : "(null)");
    if (n > 0) { ssize_t ignored = write(fd, line, n < (int)sizeof line ? n : (int)sizeof line - 1); (void)ignored; }
    close(fd);
}

int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints, struct addrinfo **res) {
    static int (*real)(const char *, const char *, const struct addrinfo *, struct addrinfo **);
    if (!real) real = dlsym(RTLD_NEXT, "getaddrinfo");
    note("libc.getaddrinfo", node);
    return real(node, service, hints, res);
}

int connect(int fd, const struct sockaddr *addr, socklen_t len) {
    static int (*real)(int, const struct sockaddr *, socklen_t);
    if (!real) real = dlsym(RTLD_NEXT, "connect");
    char text[300] = "?";
    char ip[INET6_ADDRSTRLEN] = "";
    if (addr && addr->sa_family == AF_INET) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)addr)->sin_addr, ip, sizeof ip);
        snprintf(text, sizeof text, "inet:%s", ip);
    } else if (addr && addr->sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)addr)->sin6_addr, ip, sizeof ip);
        snprintf(text, sizeof text, "inet6:%s", ip);
    } else if (addr && addr->sa_family == AF_UNIX) {
        snprintf(text, sizeof text, "unix:%s", ((const struct sockaddr_un *)addr)->sun_path);
    }
    note("libc.connect", text);
    return real(fd, addr, len);
}
'''

CRAWL_EMBED_ANSWER = '''
import asyncio
import sys
import time
from pathlib import Path

from app.context import Context
from app.events import ChatRequest
from app.settings import Settings
from app.stack import answer_stack
from ingest.pipeline import CrawlOptions, crawl
from tests.sitesrv import serve_site

data, site_root, hold = Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3])
ctx = Context(Settings(data_dir=str(data)))
with serve_site(site_root, "http://127.0.0.1:8799") as site:
    tenant, _ = ctx.create_tenant("quiet", site.url + "/", allow_private_network=True)
    summary = asyncio.run(crawl(tenant, ctx.tenant_embedder(tenant), CrawlOptions(rate=0)))
    assert summary.status == "done" and summary.fetched >= 5, summary

    async def answer():
        async with answer_stack(ctx) as stack:
            request = ChatRequest(key=tenant.widget_key, question="How much is the sourdough loaf?")
            return await stack.answerer.answer(tenant, request)

    result = asyncio.run(answer())
    assert "$6" in result.answer, result.answer
    print("site", site.url, flush=True)
time.sleep(hold)
ctx.close()
'''

# What a process may look up or connect to: the crawl target (127.0.0.1, by address) and local
# sockets (a name-service cache would show up as a lookup as well).
LOCAL = ("127.0.0.1", "'127.0.0.1'", "localhost", "'localhost'", "::1", "'::1'", "None")


def _allowed(kind: str, target: str) -> bool:
    if kind.endswith("getaddrinfo") or kind.startswith("socket.gethost"):
        return target in LOCAL
    if kind == "libc.connect":
        return target == "inet:127.0.0.1" or target.startswith("unix:")
    return target.startswith(("('127.0.0.1'", "'/", "b'"))  # socket.connect/sendto: 127.0.0.1 or a unix path


def foreign(lines: list[str]) -> list[str]:
    return [line for line in lines if not _allowed(*line.partition(" ")[::2])]


@pytest.fixture
def recorder(tmp_path, monkeypatch):
    """Environment that makes every child process record its lookups and connections."""
    hook_dir = tmp_path / "hook"
    hook_dir.mkdir()
    (hook_dir / "sitecustomize.py").write_text(textwrap.dedent(AUDIT_HOOK))
    logs = {"py": tmp_path / "net-py.log", "c": tmp_path / "net-c.log"}
    monkeypatch.setenv("NETLOG_PY", str(logs["py"]))
    monkeypatch.setenv("NETLOG_C", str(logs["c"]))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(hook_dir), str(ROOT)]))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # where onnxruntime would keep a device id
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler:
        source = tmp_path / "netlog.c"
        source.write_text(LIBC_SHIM)
        library = tmp_path / "netlog.so"
        subprocess.run([compiler, "-shared", "-fPIC", "-O2", "-o", str(library), str(source), "-ldl"], check=True)
        monkeypatch.setenv("LD_PRELOAD", str(library))
    return logs, bool(compiler)


def read(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_crawl_embed_answer_and_serve_resolve_nothing_but_the_site(recorder, data_dir, tmp_path):
    logs, native = recorder
    started = time.monotonic()
    run = subprocess.run([sys.executable, "-c", CRAWL_EMBED_ANSWER, str(data_dir), str(SITE), str(HOLD_S)],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert time.monotonic() - started > HOLD_S
    site_url = run.stdout.split("site ", 1)[1].split()[0]

    # The server (granian, its own process) embeds each question with the same model.
    with run_server(data_dir, admin_token="quiet-admin") as base:
        tenant = httpx.get(f"{base}/admin/tenants/quiet", headers={"Authorization": "Bearer quiet-admin"}).json()
        response, events = ask(base, tenant["widget_key"], "When are you open?", origin=site_url)
        assert response.status_code == 200 and "Tuesday" in answer_of(events)["text"]
        time.sleep(HOLD_S)

    python_lines, native_lines = read(logs["py"]), read(logs["c"])
    # The recorders work: the crawl's own requests to the fixture site are in the logs.
    assert any(line.startswith("socket.connect ('127.0.0.1'") for line in python_lines), python_lines[:20]
    if native:
        assert "libc.connect inet:127.0.0.1" in native_lines
    assert foreign(python_lines) == []
    assert foreign(native_lines) == []
    # onnxruntime keeps no device id or event cache either (~/.cache/Microsoft/DeveloperTools).
    assert not (tmp_path / "home" / ".cache" / "Microsoft").exists()
