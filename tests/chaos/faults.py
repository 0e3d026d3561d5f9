"""Faults, repeated: `python -m tests.chaos.faults --runs 20`.

Each fault is injected `--runs` times into a real `frontdesk` (subprocesses of the CLI, a real
granian server, a real 127.0.0.1 site from tests/sitesrv.py) and judged against one uninterrupted
reference crawl of the same site:

- ``kill9``: `frontdesk crawl` killed with SIGKILL at a random moment of its progress (once it
  has committed a random number of pages, then part of a page more), then run again. The file
  must pass `PRAGMA integrity_check` and FTS5's check against its content table, hold no half page
  (every page either as the reference has it or absent; vectors, FTS rows and chunks one to one;
  no chunk without a page), and the resumed crawl must finish with the reference's pages and
  chunks, without refetching the pages done before the kill.
- ``backup``: `frontdesk backup` taken while a crawl writes; the copy passes `verify` (what
  `frontdesk restore` checks), holds no half page, and restores into an empty data dir.
- ``disk_full``: the data dir is a tmpfs of a few MB (as root; else SQLite's max_page_count caps
  the file, which fails writes with the same SQLITE_FULL): the crawl must stop with exit 1 and
  a one-line reason, no traceback, leave a sound file, and finish once space returns.
- ``read_only``: the data dir remounted read-only (else chmod): crawl, stats, search, ask and
  backup each succeed or fail with a one-line reason; the file is unchanged.
- ``corrupt_wal``: a crawl killed so the -wal holds frames, the -wal then truncated or garbled;
  the next open must recover (SQLite's checksums drop the bad tail) or refuse clearly, and the
  resumed crawl must end with nothing lost.
- ``deleted``: a tenant's file deleted under a running server (idle or mid-stream): its widget
  key then gets a clear `{code, message}` error, the other tenant keeps answering, and a file put
  back under the same id is served again.

Prints fault × runs × outcomes and writes JSON to tests/chaos/results/.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx

from store.backup import verify
from store.connect import open_connection
from store.migrations import set_meta
from tests.chaos.common import (
    FAKE_MODEL,
    SITE_ORIGIN,
    Frontdesk,
    clean_failure,
    differences,
    half_pages,
    kill9,
    print_table,
    save_results,
    snapshot,
    soundness,
    write_site,
)
from tests.sitesrv import serve_site

ROOT = Path(__file__).resolve().parents[2]
PYPUG = ROOT.parent / "shared" / "fixtures" / "sites" / "pypug"
PYPUG_ORIGIN = "http://127.0.0.1:8766"
FAULTS = ("kill9", "backup", "disk_full", "read_only", "corrupt_wal", "deleted")
#: Documented `{code}` values a widget request for a tenant that is gone may get (store/errors.py).
GONE_CODES = {"tenant_not_found", "unauthorized", "not_found", "store_error", "not_a_database"}


# -- filesystems ----------------------------------------------------------------------------------


def can_mount() -> bool:
    """Whether tmpfs can be mounted here (root, and a kernel that lets us)."""
    if os.geteuid() != 0 or not shutil.which("mount"):
        return False
    with tempfile.TemporaryDirectory() as probe:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", probe], capture_output=True)
        if done.returncode != 0:
            return False
        subprocess.run(["umount", probe], check=True)
    return True


@contextlib.contextmanager
def tmpfs(path: Path, size: int) -> Iterator[Path]:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        if subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(path)], capture_output=True)


def remount(path: Path, options: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{options}", str(path)], check=True)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- the harness ----------------------------------------------------------------------------------


class Run(dict):
    """One run of one fault: check name → True / False, plus notes."""

    def check(self, name: str, passed: bool, why: object = None) -> None:
        self.setdefault("checks", {})[name] = bool(passed)
        if not passed:
            self.setdefault("failures", []).append(f"{name}: {why}" if why is not None else name)

    def note(self, key: str, value: object) -> None:
        self.setdefault("notes", {})[key] = value

    @property
    def passed(self) -> bool:
        return all(self.get("checks", {}).values())


class Harness:
    def __init__(self, workdir: Path, site_root: Path, origin: str, real_model: bool, mount: bool) -> None:
        self.workdir = workdir
        self.site_root = site_root
        self.origin = origin
        self.real_model = real_model
        self.mount = mount
        self.site_url = ""
        self.reference: dict = {}
        self.reference_db = workdir / "reference.db"
        self.reference_seconds = 0.0
        self.reference_pages = 0

    def frontdesk(self, name: str, **env: str) -> Frontdesk:
        return Frontdesk(self.workdir / name, real_model=self.real_model, env=env or None)

    def crawl(self, fd: Frontdesk, timeout: float = 600,
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        return fd.run("crawl", "t", "--rate", "0", "--json", timeout=timeout, env=env)

    def prepare(self) -> None:
        fd = self.frontdesk("reference")
        fd.create("t", self.site_url)
        started = time.monotonic()
        done = self.crawl(fd)
        self.reference_seconds = time.monotonic() - started
        if done.returncode != 0:
            raise RuntimeError(f"the reference crawl failed: {done.stderr[-3000:]}")
        summary = json.loads(done.stdout)
        if summary["failed"]:
            raise RuntimeError(f"the reference crawl had failures: {summary['errors']}")
        self.reference = snapshot(fd.db("t"))
        self.reference_pages = len(self.reference)
        problems = soundness(fd.db("t"), settled=True)
        if problems:
            raise RuntimeError(f"the reference crawl left an unsound file: {problems}")
        shutil.copy(fd.db("t"), self.reference_db)  # closed cleanly: the .db alone is complete

    def resume_and_compare(self, run: Run, fd: Frontdesk, *, pages_before: int | None = None) -> None:
        """The crawl run again to completion: sound, and the reference's pages and chunks."""
        done = self.crawl(fd)
        summary = json.loads(done.stdout) if done.returncode == 0 and done.stdout.strip() else {}
        run.check("resumed", done.returncode == 0 and summary.get("status") == "done" and not summary.get("failed"),
                  clean_failure(done) or summary.get("errors"))
        if pages_before is not None and summary:
            # Resumable: pages indexed before the fault are not fetched again (their sitemap
            # lastmod is unchanged); a page or two in flight at the kill may be.
            run.note("pages_before", pages_before)
            run.note("fetched_on_resume", summary.get("fetched"))
            run.check("work kept", summary.get("fetched", 0) <= self.reference_pages - pages_before + 3,
                      f"fetched {summary.get('fetched')} with {pages_before} of {self.reference_pages} done")
        run.check("sound after resume", not (problems := soundness(fd.db("t"), settled=True)), problems)
        run.check("nothing lost", (diff := differences(snapshot(fd.db("t")), self.reference)) is None, diff)

    def own_filesystem(self, stack: contextlib.ExitStack, name: str) -> Frontdesk:
        """A data dir `name` on a tmpfs of its own (when mounts work here), unmounted by `stack`."""
        if self.mount:
            stack.enter_context(tmpfs(self.workdir / name, 64 * 1024 * 1024))
        return self.frontdesk(name)

    def start_crawl(self, name: str) -> tuple[Frontdesk, subprocess.Popen]:
        """A new tenant `t` in data dir `name`, and its first crawl started in the background."""
        fd = self.frontdesk(name)
        fd.create("t", self.site_url)
        return fd, fd.start("crawl", "t", "--rate", "0", log=self.workdir / f"{name}.log")

    def pages_now(self, db: Path) -> int:
        """Active pages the crawl has committed so far (0 before the file exists)."""
        if not db.exists():
            return 0
        try:
            conn = open_connection(db, readonly=True)
        except Exception:  # noqa: BLE001  (not created yet, or mid-creation: nothing committed)
            return 0
        try:
            return conn.execute("SELECT count(*) FROM pages WHERE status = 'active'").fetchone()[0]
        except Exception:  # noqa: BLE001  (schema not applied yet)
            return 0
        finally:
            conn.close()

    def wait_for_progress(self, run: Run, fd: Frontdesk, process: subprocess.Popen, rng: random.Random,
                          upto: float = 1.0, jitter: float = 0.5, least: int = 0) -> None:
        """Wait until the crawl has committed a random number of pages (`least` … `upto` of the
        reference), then up to `jitter` s more (into the next write): a random moment of the crawl's
        progress, however fast the machine is. A wall-clock moment drawn from the reference crawl's
        duration lands before the first commit whenever the machine is busier than for the reference."""
        target = rng.randint(least, max(least, int(self.reference_pages * upto) - 1))
        deadline = time.monotonic() + 600
        while process.poll() is None and time.monotonic() < deadline and self.pages_now(fd.db("t")) < target:
            time.sleep(0.05)
        time.sleep(rng.uniform(0.0, jitter))
        run.note("target_pages", target)

    def check_sound(self, run: Run, db: Path, label: str = "") -> dict:
        problems = soundness(db)
        run.check(f"integrity{label}", not problems, problems)
        current = snapshot(db) if not problems or not any(p.startswith("cannot open") for p in problems) else {}
        half = half_pages(current, self.reference)
        run.check(f"no half page{label}", not half, half[:3])
        return current


# -- the faults -----------------------------------------------------------------------------------


def fault_kill9(h: Harness, index: int, rng: random.Random) -> Run:
    run = Run()
    fd, process = h.start_crawl(f"kill9-{index}")
    started = time.monotonic()
    h.wait_for_progress(run, fd, process, rng)
    if process.poll() is not None:
        run.note("killed", "after it finished")
    else:
        kill9(process)
        run.note("killed", f"at {time.monotonic() - started:.1f} s")
    current = h.check_sound(run, fd.db("t"))
    h.resume_and_compare(run, fd, pages_before=len(current))
    shutil.rmtree(fd.data_dir, ignore_errors=True)
    return run


def fault_backup(h: Harness, index: int, rng: random.Random) -> Run:
    run = Run()
    fd, process = h.start_crawl(f"backup-{index}")
    # Early (a page committed, most still to come): the backup must overlap the crawl's writes.
    h.wait_for_progress(run, fd, process, rng, upto=0.25, jitter=0.0, least=1)
    dest = h.workdir / f"backup-{index}.copy.db"
    done = fd.run("backup", "t", str(dest), "--json", timeout=300)
    run.note("overlapped", process.poll() is None)  # the crawl was still writing when it finished
    process.wait(timeout=600)
    run.check("backup exit 0", done.returncode == 0, clean_failure(done))
    if done.returncode == 0:
        try:
            info = verify(dest, "t")
            run.check("copy verifies", True)
            run.note("copy_pages", info.pages)
        except Exception as exc:  # noqa: BLE001  (the verdict of this run)
            run.check("copy verifies", False, f"{type(exc).__name__}: {exc}")
        h.check_sound(run, dest, " of copy")
        target = h.frontdesk(f"restore-{index}")
        restored = target.run("restore", "t", str(dest), "--json", timeout=300)
        run.check("restores", restored.returncode == 0
                  and snapshot(target.db("t")) == snapshot(dest), clean_failure(restored))
        shutil.rmtree(target.data_dir, ignore_errors=True)
    run.check("crawl unharmed", process.returncode == 0
              and (diff := differences(snapshot(fd.db("t")), h.reference)) is None,
              f"exit {process.returncode}" if process.returncode else diff)
    dest.unlink(missing_ok=True)
    shutil.rmtree(fd.data_dir, ignore_errors=True)
    return run


def fault_disk_full(h: Harness, index: int, rng: random.Random) -> Run:
    run = Run()
    with contextlib.ExitStack() as stack:
        fd = h.own_filesystem(stack, f"disk-{index}")
        data = fd.data_dir
        fd.create("t", h.site_url)
        # The space left runs out somewhere in the crawl (the reference file is the full size).
        used = fd.db("t").stat().st_size
        size = used + int(rng.uniform(0.05, 0.6) * max(h.reference_db.stat().st_size - used, 256 * 1024))
        if h.mount:
            remount(data, f"size={size}")
            cap: dict[str, str] = {}
            run.note("filesystem", f"tmpfs of {size // 1024} KiB")
        else:
            cap = {"FRONTDESK_CHAOS_MAX_PAGES": str(size // 4096)}
            run.note("filesystem", f"max_page_count {size // 4096} (no mount)")
        try:
            done = h.crawl(fd, timeout=300, env=cap)
        except subprocess.TimeoutExpired:
            run.check("clear error", False, "the crawl hung on a full disk")
            return run
        if done.returncode == 0:
            run.note("outcome", "the crawl fitted")
        else:
            run.check("clear error", clean_failure(done) is None and done.returncode == 1, clean_failure(done))
            run.note("outcome", "stopped")
            run.note("reason", done.stderr.strip().splitlines()[-1][:200])
            other = fd.run("tenant", "create", "u", "--site", h.site_url, "--model", FAKE_MODEL, env=cap)
            run.check("tenant create: ok or a clear error", other.returncode == 0 or clean_failure(other) is None,
                      clean_failure(other))
        h.check_sound(run, fd.db("t"))
        if h.mount:
            remount(data, "size=512m")  # space returns
        h.resume_and_compare(run, fd)
    return run


def fault_read_only(h: Harness, index: int, rng: random.Random) -> Run:
    run = Run()
    with contextlib.ExitStack() as stack:
        fd = h.own_filesystem(stack, f"ro-{index}")
        data = fd.data_dir
        (data / "tenants").mkdir(parents=True, exist_ok=True)
        db = fd.db("t")
        shutil.copy(h.reference_db, db)
        before = sha256(db)
        if h.mount:
            remount(data, "ro")
        else:
            for path in (db, db.parent, data):
                path.chmod(0o555 if path.is_dir() else 0o444)
        commands = [("crawl", ["crawl", "t", "--rate", "0"]), ("stats", ["stats", "t"]),
                    ("search", ["search", "t", "bread flour"]), ("ask", ["ask", "t", "how do I bake bread?"]),
                    ("backup", ["backup", "t", str(h.workdir / f"ro-{index}.copy.db")])]
        rng.shuffle(commands)
        outcomes = {}
        for label, args in commands:
            done = fd.run(*args, timeout=300)
            problem = None if done.returncode == 0 else clean_failure(done)
            outcomes[label] = "ok" if done.returncode == 0 else f"refused: {done.stderr.strip().splitlines()[-1][:120]}"
            run.check(f"{label}: ok or a clear error", problem is None, problem)
        run.note("commands", outcomes)
        if h.mount:
            remount(data, "rw")
        else:
            for path in (data, db.parent, db):
                path.chmod(0o755 if path.is_dir() else 0o644)
        run.check("file unchanged", sha256(db) == before)
        h.check_sound(run, db)
        (h.workdir / f"ro-{index}.copy.db").unlink(missing_ok=True)
    return run


def _garble_wal(wal: Path, rng: random.Random) -> str:
    size = wal.stat().st_size
    mode = rng.choice(["truncate", "garble frames", "garble header", "zero tail"])
    with open(wal, "r+b") as handle:
        if mode == "truncate":
            handle.truncate(rng.randint(0, size))
        elif mode == "garble frames":
            for _ in range(rng.randint(1, 12)):
                handle.seek(rng.randint(32, max(32, size - 1)))
                handle.write(rng.randbytes(rng.randint(1, 512)))
        elif mode == "garble header":
            handle.seek(rng.randint(0, 24))
            handle.write(rng.randbytes(rng.randint(1, 8)))
        else:
            start = rng.randint(32, max(32, size - 1))
            handle.seek(start)
            handle.write(bytes(size - start))
    return f"{mode} ({size} bytes)"


def fault_corrupt_wal(h: Harness, index: int, rng: random.Random) -> Run:
    run = Run()
    fd, process = h.start_crawl(f"wal-{index}")
    wal = Path(f"{fd.db('t')}-wal")
    h.wait_for_progress(run, fd, process, rng, upto=0.9, jitter=0.0)
    # Then the moment the -wal holds frames (it is empty between checkpoints): a corrupt WAL needs one.
    deadline = time.monotonic() + 20
    while process.poll() is None and time.monotonic() < deadline and not (wal.exists() and wal.stat().st_size > 32):
        time.sleep(0.005)
    kill9(process)
    if not wal.exists() or wal.stat().st_size <= 32:
        run.note("wal", "empty at the kill")
    else:
        run.note("wal", _garble_wal(wal, rng))
    opened = fd.run("stats", "t", "--json", timeout=300)
    refused = opened.returncode != 0
    run.check("opens or refuses clearly", not refused or clean_failure(opened) is None, clean_failure(opened))
    if refused:
        # Refused: the operator restores a backup; nothing is served from a damaged file.
        run.note("outcome", "refused: " + opened.stderr.strip().splitlines()[-1][:160])
        return run
    run.note("outcome", "recovered")
    current = h.check_sound(run, fd.db("t"))
    h.resume_and_compare(run, fd, pages_before=len(current))
    shutil.rmtree(fd.data_dir, ignore_errors=True)
    return run


# -- a tenant file deleted under a running server -------------------------------------------------


def widget_ask(client: httpx.Client, base: str, key: str, question: str) -> tuple[int, dict]:
    """POST /v1/chat; (status, {"events": [...]} for a stream or the JSON error body)."""
    with client.stream("POST", f"{base}/v1/chat", json={"key": key, "question": question}) as response:
        body = response.read()
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            events = [line[7:] for line in body.decode("utf-8", "replace").splitlines() if line.startswith("event: ")]
            return response.status_code, {"events": events}
        try:
            return response.status_code, json.loads(body)
        except ValueError:
            return response.status_code, {"raw": body[:200].decode("utf-8", "replace")}


def _copy_tenant(h: Harness, data: Path, tenant_id: str, key: str) -> None:
    """The reference file as tenant `tenant_id` with its own widget key (a copy, new inode)."""
    target = data / "tenants" / f"{tenant_id}.db"
    partial = target.with_name(f".{tenant_id}.copy")
    shutil.copy(h.reference_db, partial)
    conn = open_connection(partial)
    try:
        with conn:
            set_meta(conn, tenant_id=tenant_id, widget_key=key)
        conn.pragma("journal_mode", "delete")
    finally:
        conn.close()
    os.replace(partial, target)


class ServerFault:
    """One server for every run of the `deleted` fault; tenant `b` answers throughout."""

    def __init__(self, h: Harness) -> None:
        self.h = h
        self.fd = h.frontdesk("server")
        (self.fd.data_dir / "tenants").mkdir(parents=True, exist_ok=True)
        _copy_tenant(h, self.fd.data_dir, "b", "pk_chaos_b")
        self.stack = contextlib.ExitStack()
        self.base, self.process = self.stack.enter_context(self.fd.serve())
        self.client = self.stack.enter_context(httpx.Client(timeout=60))

    def close(self) -> None:
        self.stack.close()

    def answers(self, key: str, question: str = "How do I bake bread?") -> tuple[int, dict]:
        return widget_ask(self.client, self.base, key, question)

    def wait_answering(self, key: str, seconds: float = 20) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            status, body = self.answers(key)
            if status == 200 and "done" in body.get("events", []):
                return True
            time.sleep(0.5)
        return False


def fault_deleted(server: ServerFault, index: int, rng: random.Random) -> Run:
    run = Run()
    h, data = server.h, server.fd.data_dir
    tenant_id, key = f"a{index}", f"pk_chaos_a{index}"
    _copy_tenant(h, data, tenant_id, key)
    run.check("answers before", server.wait_answering(key))
    db = data / "tenants" / f"{tenant_id}.db"
    mode = rng.choice(["idle", "mid-stream"])
    run.note("deleted", mode)
    in_flight: dict = {}
    if mode == "mid-stream":
        def ask() -> None:
            with httpx.Client(timeout=60) as client:
                in_flight["result"] = widget_ask(client, server.base, key, "What does the bakery sell?")
        thread = threading.Thread(target=ask)
        thread.start()
        time.sleep(rng.uniform(0.0, 0.05))
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    if mode == "mid-stream":
        thread.join(60)
        status, body = in_flight.get("result", (0, {}))
        clean = status in (200, 401, 404) and "internal_error" not in json.dumps(body)
        run.check("the stream in flight ends cleanly", clean, (status, body))
    statuses = Counter()
    for _ in range(3):
        status, body = server.answers(key)
        statuses[status] += 1
        clear = status in (401, 404, 410, 503) and body.get("code") in GONE_CODES and body.get("message")
        run.check("deleted tenant: clear error", clear, (status, body))
    run.note("after_delete", dict(statuses))
    for _ in range(3):
        status, body = server.answers("pk_chaos_b")
        run.check("other tenant answers", status == 200 and "done" in body.get("events", []), (status, body))
    _copy_tenant(h, data, tenant_id, key)  # put back (restored): a new file under the same id
    run.check("answers again once put back", server.wait_answering(key))
    run.check("server alive", server.process.poll() is None)
    return run


# -- main -----------------------------------------------------------------------------------------


def summarise(fault: str, runs: list[Run]) -> list[object]:
    checks: Counter[str] = Counter()
    passes: Counter[str] = Counter()
    for run in runs:
        for name, passed in run.get("checks", {}).items():
            checks[name] += 1
            passes[name] += passed
    outcomes = "; ".join(f"{name} {passes[name]}/{checks[name]}" for name in checks)
    notes: Counter[str] = Counter()
    for run in runs:
        for key in ("killed", "outcome", "deleted", "wal"):
            value = run.get("notes", {}).get(key)
            if isinstance(value, str):
                notes[f"{key} {value.split(' (')[0].split(' at ')[0].split(':')[0]}"] += 1
    extra = ", ".join(f"{k}: {v}" for k, v in sorted(notes.items()))
    return [fault, len(runs), sum(r.passed for r in runs), outcomes + (f" ({extra})" if extra else "")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.chaos.faults", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20, help="runs of each fault")
    parser.add_argument("--faults", default=",".join(FAULTS), help=f"comma-separated subset of {', '.join(FAULTS)}")
    parser.add_argument("--site", choices=["pypug", "small"], default="pypug",
                        help="the fixture Python Packaging guide (92 pages) or a generated site")
    parser.add_argument("--pages", type=int, default=30, help="pages of the generated site (--site small)")
    parser.add_argument("--real-model", action="store_true", help="embed with the real model (slow)")
    parser.add_argument("--no-mount", action="store_true", help="emulate disk full / read-only without mounts")
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args(argv)
    faults = [f.strip() for f in args.faults.split(",") if f.strip()]
    unknown = set(faults) - set(FAULTS)
    if unknown:
        parser.error(f"unknown faults: {', '.join(sorted(unknown))}")
    seed = args.seed if args.seed is not None else int(time.time())
    rng = random.Random(seed)
    mount = not args.no_mount and can_mount()
    started = time.monotonic()
    results: dict[str, list[Run]] = {}
    seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="frontdesk-faults-") as tmp:
        workdir = Path(tmp)
        if args.site == "pypug":
            site_root, origin = workdir / "site", PYPUG_ORIGIN
            shutil.copytree(PYPUG, site_root)
        else:
            site_root, origin = write_site(workdir / "site", args.pages), SITE_ORIGIN
        with serve_site(site_root, origin) as site:
            h = Harness(workdir, site_root, origin, args.real_model, mount)
            h.site_url = site.url + "/"
            h.prepare()
            sys.stderr.write(f"reference crawl: {h.reference_pages} pages in {h.reference_seconds:.1f} s; "
                             f"{'tmpfs mounts' if mount else 'no mounts (emulated)'}; seed {seed}\n")
            single: dict[str, Callable[[Harness, int, random.Random], Run]] = {
                "kill9": fault_kill9, "backup": fault_backup, "disk_full": fault_disk_full,
                "read_only": fault_read_only, "corrupt_wal": fault_corrupt_wal,
            }
            for fault in faults:
                fault_started = time.monotonic()
                runs: list[Run] = []
                server = ServerFault(h) if fault == "deleted" else None
                try:
                    for index in range(args.runs):
                        try:
                            run = fault_deleted(server, index, rng) if server else single[fault](h, index, rng)
                        except Exception as exc:  # noqa: BLE001  (a harness error is a failed run, reported)
                            run = Run()
                            run.check("harness", False, f"{type(exc).__name__}: {exc}")
                        runs.append(run)
                        status = "ok" if run.passed else "FAILED " + "; ".join(map(str, run.get("failures", [])))[:400]
                        sys.stderr.write(f"{fault} {index + 1}/{args.runs}: {status} {run.get('notes', {})}\n")
                finally:
                    if server is not None:
                        server.close()
                results[fault] = runs
                seconds[fault] = round(time.monotonic() - fault_started, 1)
    rows = [[*summarise(fault, runs), seconds[fault]] for fault, runs in results.items()]
    print_table(rows, ["fault", "runs", "passed", "outcomes", "seconds"])
    path = save_results("faults", {"seed": seed, "site": args.site, "mounts": mount, "real_model": args.real_model,
                                   "reference_pages": h.reference_pages,
                                   "seconds": round(time.monotonic() - started, 1), "fault_seconds": seconds,
                                   "faults": results})
    print(f"seed {seed}, {time.monotonic() - started:.0f} s; details: {path.relative_to(ROOT)}")
    return 0 if all(run.passed for runs in results.values() for run in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
