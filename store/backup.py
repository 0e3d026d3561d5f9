"""Online backup, verification and restore of tenant files (SQLite's backup API through apsw).

Every file lands atomically: it is written beside its destination, fsynced, then renamed over it,
so a reader (or a crash) only ever sees the old file or the complete new one.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import apsw
import msgspec

from store import migrations
from store.connect import (
    BUSY_TIMEOUT_MS,
    check_is_sqlite,
    load_sqlite_vec,
    one_row,
    storage_error,
)
from store.errors import (
    BackupFailed,
    InvalidInput,
    ModelMismatch,
    NotADatabase,
    NotFound,
    SchemaTooNew,
    TenantInUse,
    TenantMismatch,
)
from store.tenants import TenantFile, TenantRegistry, validate_tenant_id

#: Pages copied per backup step (4 KiB pages: 1 MiB); the source is read-locked only per step.
PAGES_PER_STEP = 256
#: Pause between steps, so a busy writer gets the file between them.
STEP_PAUSE_S = 0.002
#: A write by another connection restarts an online backup from page one. After this many
#: restarts the rest is copied in one step: in WAL mode that holds only a read snapshot, which
#: writers never wait for, so a constantly written tenant still gets a backup.
MAX_RESTARTS = 5
#: How long restore waits for other connections to let go of the tenant file.
CLAIM_TIMEOUT_MS = 2000

_SIDE_FILES = ("-journal", "-wal", "-shm")


class BackupInfo(msgspec.Struct, kw_only=True):
    tenant_id: str
    source: str
    path: str
    bytes: int
    pages: int
    restarts: int
    seconds: float


class VerifyInfo(msgspec.Struct, kw_only=True):
    path: str
    tenant_id: str
    schema_version: int
    embedder_id: str
    embedder_dim: int
    pages: int
    chunks: int
    vectors: int
    bytes: int


class RestoreInfo(msgspec.Struct, kw_only=True):
    tenant_id: str
    path: str
    source: str
    replaced: bool
    """True when a previous file of the tenant was replaced (False: restored into an empty slot)."""
    verified: VerifyInfo


# -- helpers ------------------------------------------------------------------------------------


def _partial_beside(dest: Path, purpose: str) -> Path:
    """A hidden, unique temp name in dest's directory, so the final rename stays on one filesystem."""
    return dest.with_name(f".{dest.name}.{os.getpid()}.{secrets.token_hex(4)}.{purpose}")


def _remove_with_side_files(path: Path) -> None:
    for suffix in ("", *_SIDE_FILES):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    """Make a rename in `path` durable (a no-op where directories cannot be opened)."""
    with contextlib.suppress(OSError):
        _fsync_file(path)


def _open_existing(path: Path) -> apsw.Connection:
    """A connection that only ever reads. Opened read-write nevertheless: opening a WAL file makes
    -wal/-shm beside it, and only a writable last connection removes them again on close."""
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READWRITE)
    conn.set_busy_timeout(BUSY_TIMEOUT_MS)
    return conn


def _source_path(source: TenantFile | Path | str) -> Path:
    path = source.path if isinstance(source, TenantFile) else Path(source)
    if not path.is_file():
        raise NotFound(f"{path} does not exist or is not a file")
    check_is_sqlite(path)
    return path


# -- backup -------------------------------------------------------------------------------------


def _copy_pages(source: apsw.Connection, target: apsw.Connection, pages_per_step: int,
                pause: float) -> tuple[int, int]:
    """Run the online backup to completion; returns (pages copied, restarts)."""
    restarts = 0
    last_remaining: int | None = None
    with target.backup("main", source, "main") as job:
        while not job.done:
            step = pages_per_step if restarts < MAX_RESTARTS else -1
            try:
                job.step(step)
            except (apsw.BusyError, apsw.LockedError):
                time.sleep(pause * 10)  # a writer holds the source for a moment; try the step again
                continue
            if last_remaining is not None and job.remaining >= last_remaining:
                restarts += 1  # another connection wrote: SQLite began again from page one
            last_remaining = job.remaining
            if not job.done:
                time.sleep(pause)
        copied = job.page_count
    return copied, restarts


def backup(source: TenantFile | Path | str, dest: Path | str, *, pages_per_step: int = PAGES_PER_STEP,
           pause: float = STEP_PAUSE_S) -> BackupInfo:
    """Copy a live tenant file (or any tenant file) to `dest` as one self-contained file.

    Writers keep writing while it runs. The copy is checked (`PRAGMA quick_check`) before it is
    renamed into place; on any failure nothing is left at or beside `dest`.
    """
    started = time.perf_counter()
    source_path = _source_path(source)
    dest = Path(dest)
    if dest.exists() and dest.resolve() == source_path.resolve():
        raise InvalidInput("the backup destination is the tenant file itself")
    partial = _partial_beside(dest, "partial")
    try:
        partial.touch(exist_ok=False)  # fail here, with the OS's reason, before any work
    except OSError as exc:
        raise BackupFailed(f"cannot write the backup to {dest}: {exc.strerror or exc}") from None
    try:
        with contextlib.closing(_open_existing(source_path)) as source_conn, \
                contextlib.closing(apsw.Connection(str(partial))) as target:
            pages, restarts = _copy_pages(source_conn, target, pages_per_step, pause)
            load_sqlite_vec(target)  # quick_check also asks the vec0 tables about themselves
            # The copy carries the source's WAL flag; a backup should be one plain file.
            target.pragma("journal_mode", "delete")
            problems = [row[0] for row in target.execute("PRAGMA quick_check")]
            if problems != ["ok"]:
                raise BackupFailed(f"the backup copy failed its check: {'; '.join(problems[:3])}")
            tenant_id = migrations.read_meta(target).get("tenant_id", "")
        _fsync_file(partial)
        os.replace(partial, dest)
    except OSError as exc:
        _remove_with_side_files(partial)
        raise BackupFailed(f"cannot write the backup to {dest}: {exc.strerror or exc}") from None
    except apsw.Error as exc:
        _remove_with_side_files(partial)
        # On a read-only data dir SQLite's own message is "not an error": say what is wrong.
        reason = failure.message if (failure := storage_error(exc, source_path)) is not None else str(exc)
        raise BackupFailed(f"the backup of {source_path.name} failed: {reason}") from None
    except BaseException:
        _remove_with_side_files(partial)
        raise
    _remove_with_side_files(partial)  # the rename took the file itself; this drops stray journals
    _fsync_dir(dest.parent)
    return BackupInfo(tenant_id=tenant_id, source=str(source_path), path=str(dest),
                      bytes=dest.stat().st_size, pages=pages, restarts=restarts,
                      seconds=round(time.perf_counter() - started, 3))


# -- verify -------------------------------------------------------------------------------------


def _check_not_truncated(path: Path) -> None:
    """The header records the page size and count; a shorter file lost its tail in transit."""
    with open(path, "rb") as handle:
        header = handle.read(100)
    if len(header) < 100:
        raise NotADatabase(f"{path.name} is truncated ({len(header)} bytes): not a usable database")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    page_count = int.from_bytes(header[28:32], "big")
    # The count is trustworthy only when its "valid-for" number equals the change counter.
    count_valid = header[92:96] == header[24:28]
    size = path.stat().st_size
    if size % page_size or (count_valid and size < page_count * page_size):
        raise NotADatabase(
            f"{path.name} is truncated: {size} bytes, the header says {page_count} pages of {page_size}"
        )


def verify(path: Path | str, expected_tenant_id: str | None = None, embedder_id: str | None = None,
           dim: int | None = None) -> VerifyInfo:
    """Check that `path` is an intact frontdesk tenant file this build can open.

    Reads only. Refuses a truncated or corrupt file, a foreign SQLite file, a file written by
    a newer frontdesk, another tenant's file and, when a model is given, vectors of another model.
    """
    path = Path(path)
    if not path.is_file():
        raise NotFound(f"{path} does not exist or is not a file")
    check_is_sqlite(path)
    _check_not_truncated(path)
    try:
        conn = _open_existing(path)
    except apsw.Error as exc:
        raise NotADatabase(f"{path.name} cannot be opened: {exc}") from None
    try:
        load_sqlite_vec(conn)
        meta = migrations.read_meta(conn)
        if not {"schema_version", "embedder_id", "tenant_id"} <= meta.keys():
            raise NotADatabase(f"{path.name} is an SQLite file but not a frontdesk tenant database")
        version = int(meta["schema_version"])
        if version > migrations.SCHEMA_VERSION:
            raise SchemaTooNew(
                f"{path.name} was written by a newer frontdesk (schema {version}, this build knows "
                f"{migrations.SCHEMA_VERSION}); upgrade frontdesk to use it"
            )
        stored_dim = int(meta.get("embedder_dim", "0") or 0)
        if expected_tenant_id is not None and meta["tenant_id"] != expected_tenant_id:
            raise TenantMismatch(
                f"{path.name} holds tenant {meta['tenant_id']!r}, not {expected_tenant_id!r}",
                tenant_id=meta["tenant_id"],
            )
        if embedder_id is not None and (meta["embedder_id"] != embedder_id or (dim is not None and stored_dim != dim)):
            wanted = f"{embedder_id} ({dim}-d)" if dim is not None else embedder_id
            raise ModelMismatch(
                f"{path.name} holds vectors of model {meta['embedder_id']} ({stored_dim}-d), not "
                f"{wanted}; restore a backup made with that model, or allow the other model "
                "(`frontdesk restore --allow-other-model`) and then run `frontdesk reindex`",
                stored_model=meta["embedder_id"], model=embedder_id,
            )
        problems = [row[0] for row in conn.execute("PRAGMA integrity_check")]
        if problems != ["ok"]:
            raise NotADatabase(f"{path.name} failed the integrity check: {'; '.join(problems[:3])}")
        count = lambda sql: one_row(conn.execute(sql))[0]  # noqa: E731
        return VerifyInfo(
            path=str(path), tenant_id=meta["tenant_id"], schema_version=version,
            embedder_id=meta["embedder_id"], embedder_dim=stored_dim,
            pages=count("SELECT count(*) FROM pages WHERE status = 'active'"),
            chunks=count("SELECT count(*) FROM chunks"), vectors=count("SELECT count(*) FROM chunk_vec"),
            bytes=path.stat().st_size,
        )
    except (apsw.CorruptError, apsw.NotADBError, apsw.SQLError) as exc:
        raise NotADatabase(f"{path.name} is damaged or not a tenant database: {exc}") from None
    finally:
        conn.close()


# -- restore ------------------------------------------------------------------------------------


def _live_model(path: Path) -> tuple[str, int] | None:
    """The model of the tenant file being replaced, when it can still be read."""
    if not path.exists():
        return None
    try:
        conn = _open_existing(path)
        try:
            meta = migrations.read_meta(conn)
        finally:
            conn.close()
    except apsw.Error:
        return None  # a damaged file is often why one restores: no model to compare with
    if "embedder_id" not in meta:
        return None
    return meta["embedder_id"], int(meta.get("embedder_dim", "0") or 0)


def _set_aside(target: Path, previous: Path) -> None:
    """Keep the current file under another name; a hard link costs no space or time."""
    previous.unlink(missing_ok=True)
    try:
        os.link(target, previous)
    except OSError:  # filesystems without hard links
        shutil.copy2(target, previous)


@contextlib.contextmanager
def _claimed(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on the tenant file, so no other process uses it while it is swapped.

    Any committed WAL content is folded in first, so the file set aside is complete.
    """
    if not path.exists():
        yield
        return
    conn = apsw.Connection(str(path))
    try:
        conn.set_busy_timeout(CLAIM_TIMEOUT_MS)
        try:
            conn.pragma("locking_mode", "exclusive")
            conn.execute("BEGIN EXCLUSIVE; COMMIT")  # the lock stays held in exclusive mode
            conn.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_TRUNCATE)
        except apsw.BusyError:
            raise TenantInUse(
                f"{path.name} is open in another process (a running server?); stop it, then restore"
            ) from None
        except (apsw.CorruptError, apsw.NotADBError):
            pass  # a damaged file cannot be claimed or checkpointed; it is only set aside
        yield
    finally:
        conn.close()


def restore(registry: TenantRegistry, tenant_id: str, src: Path | str, *, embedder_id: str | None = None,
            dim: int | None = None, allow_other_model: bool = False) -> RestoreInfo:
    """Replace a tenant's file with the backup `src`, atomically.

    `src` must be this tenant's, intact, of a schema this build knows, and of the live file's model
    (or of `embedder_id`/`dim` when given) unless `allow_other_model`. The previous file is kept as
    `<id>.db.pre-restore` until the restored file has opened, and put back if it does not.
    """
    validate_tenant_id(tenant_id)
    src = Path(src)
    target = registry.path(tenant_id)
    if src.exists() and target.exists() and src.resolve() == target.resolve():
        raise InvalidInput("the restore source is the tenant file itself")
    if allow_other_model:
        embedder_id = dim = None
    elif embedder_id is None:
        live = _live_model(target)
        if live is not None:
            embedder_id, dim = live
    verified = verify(src, expected_tenant_id=tenant_id, embedder_id=embedder_id, dim=dim)

    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.with_name(f".{tenant_id}.{os.getpid()}.restoring")
    _remove_with_side_files(staging)
    try:
        backup(src, staging)  # through SQLite, so WAL content beside src is included
    except BackupFailed:
        _remove_with_side_files(staging)
        raise
    previous = target.with_name(f"{target.name}.pre-restore")
    replaced = target.exists()
    registry.close(tenant_id)
    try:
        with _claimed(target):
            if replaced:
                _set_aside(target, previous)
            os.replace(staging, target)
        for suffix in ("-wal", "-shm"):  # they belonged to the file just replaced
            Path(f"{target}{suffix}").unlink(missing_ok=True)
        _fsync_dir(target.parent)
    finally:
        _remove_with_side_files(staging)
    try:
        registry.get(tenant_id)  # opens it (and migrates an older schema forward)
    except BaseException:
        registry.close(tenant_id)
        if replaced:
            os.replace(previous, target)
            for suffix in ("-wal", "-shm"):
                Path(f"{target}{suffix}").unlink(missing_ok=True)
        raise
    previous.unlink(missing_ok=True)
    return RestoreInfo(tenant_id=tenant_id, path=str(target), source=str(src), replaced=replaced,
                       verified=verified)
