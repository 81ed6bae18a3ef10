"""The kernel cache's directory on disk: who may have written it, and which files are its own.

An entry is native code (jax's serialization is itself a pickle stream): loading one runs whatever
its writer put there, so an entry is used only when this user's account wrote it, checked, never
assumed. The rules (owner-only directory and files, an HMAC-SHA256 per entry under a per-user key,
only manifest-listed files of its own name pattern removed) and what they do not defend against:
docs/guide/cache.md.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
import stat
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ..text import quote_repr

logger = logging.getLogger("nnx_lab")

#: Entries kept on disk at most (each is 30 KB to a few MB); the least recently used go first.
MAX_FILES = 512
#: An entry bigger than this is not read (a viewer's program for 10,000 Variables is a few MB).
MAX_ENTRY_BYTES = 1 << 30
NAME = re.compile(r"(kernel|program)-[0-9a-f]{32}\.xla")
KEY_FILE = "nnx_lab-cache.key"
MANIFEST = "nnx_lab-cache.manifest"
_MANIFEST_HEADER = "nnx_lab kernel cache manifest v1"
MAGIC = b"NNXLABX\n"
VERSION = 1
_KEY_BYTES = 32
_HEADER = len(MAGIC) + 1 + hashlib.sha256().digest_size
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)

_said: set = set()
_said_lock = threading.Lock()


class Refused(Exception):
    """The directory or its key cannot be trusted: the cache is off for it."""


def open_store(root: Path) -> Store | None:
    """The store in ``root`` (created 0700 where missing), or None when it is refused: said once."""
    try:
        if not hasattr(os, "geteuid"):
            raise Refused("this platform has no POSIX file ownership to check")
        _make_dirs(root)
        _check_dir(root)
        return Store(root, _read_or_make_key(root))
    except (Refused, OSError) as e:
        reason = str(e) if isinstance(e, Refused) else f"it cannot be used ({e.strerror or e})"
        _say_once(root, reason)
        return None


def _say_once(root: Path, reason: str) -> None:
    with _said_lock:
        if (str(root), reason) in _said:
            return
        _said.add((str(root), reason))
    logger.warning(
        "nnx_lab: the compiled-kernel cache in %s is off: %s (fix it, or set NNX_LAB_CACHE_DIR "
        "to a directory of your own, or to 'off')",
        quote_repr(str(root)),
        reason,
    )


def _make_dirs(root: Path) -> None:
    missing = []
    p = root
    while not os.path.lexists(p) and p != p.parent:
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:  # made by another process meanwhile: checked like any other
            pass


def _check_dir(root: Path) -> None:
    st = os.stat(root)
    if not stat.S_ISDIR(st.st_mode):
        raise Refused("it is not a directory")
    if st.st_uid != os.geteuid():
        raise Refused(f"it is owned by another user (uid {st.st_uid})")
    if st.st_mode & 0o022:
        raise Refused(f"it is writable by {_who(st.st_mode & 0o022)} (mode {oct(st.st_mode & 0o777)})")


def _who(bits: int) -> str:
    return " and ".join(w for w, b in (("its group", 0o020 | 0o040), ("others", 0o002 | 0o004)) if bits & b)


def _read_or_make_key(root: Path) -> bytes:
    path = root / KEY_FILE
    for _ in range(2):
        try:
            fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
        except FileNotFoundError:
            _make_key(root, path)
            continue
        except OSError as e:
            raise Refused(f"its key {KEY_FILE} cannot be read ({e.strerror or e})") from None
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
                raise Refused(f"its key {KEY_FILE} is not a file of this user's")
            if st.st_mode & 0o077:
                raise Refused(
                    f"its key {KEY_FILE} is readable or writable by others "
                    f"(mode {oct(st.st_mode & 0o777)}; delete it and a new one is made)"
                )
            key = f.read(_KEY_BYTES + 1)
        if len(key) != _KEY_BYTES:
            raise Refused(f"its key {KEY_FILE} is damaged (delete it and a new one is made)")
        return key
    raise Refused(f"its key {KEY_FILE} could not be made")


def _make_key(root: Path, path: Path) -> None:
    """A new random key, written whole before it appears under its name (two processes starting at
    once: one key wins, both use it)."""
    fd, tmp = tempfile.mkstemp(dir=root, prefix=".nnx_lab-", suffix=".tmp")  # 0600
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(os.urandom(_KEY_BYTES))
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
        except OSError:  # a filesystem without hard links: exclusive create instead
            try:
                out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
            except FileExistsError:
                return
            with os.fdopen(out, "wb") as f:
                f.write(Path(tmp).read_bytes())
    finally:
        os.unlink(tmp)


class Store:
    """Authenticated entries in a checked directory (see the module's docstring)."""

    def __init__(self, root: Path, key: bytes):
        self.root = root
        self._key = key

    def _tag(self, name: str, payload: bytes) -> bytes:
        message = MAGIC + bytes([VERSION]) + name.encode() + b"\0" + payload
        return hmac.new(self._key, message, hashlib.sha256).digest()

    def read(self, name: str) -> bytes | None:
        """The payload of entry ``name`` once its tag checks, else None (a refused entry: debug log)."""
        path = self.root / name
        try:
            fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
        except FileNotFoundError:
            return None
        except OSError as e:
            logger.debug("nnx_lab cache: %s ignored: %s", path, e)
            return None
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_size > MAX_ENTRY_BYTES:
                logger.debug("nnx_lab cache: %s ignored: not a file of this user's, or too big", path)
                return None
            data = f.read(MAX_ENTRY_BYTES + 1)
            if not self._authentic(name, data):
                logger.debug(
                    "nnx_lab cache: %s ignored: it fails authentication (not written by "
                    "this cache with this key, or damaged)",
                    path,
                )
                return None
            try:
                os.utime(f.fileno())  # recently used: kept when the oldest are removed
            except (OSError, NotImplementedError):
                pass
        return data[_HEADER:]

    def _authentic(self, name: str, data: bytes) -> bool:
        if len(data) < _HEADER or not data.startswith(MAGIC) or data[len(MAGIC)] != VERSION:
            return False
        return hmac.compare_digest(data[len(MAGIC) + 1 : _HEADER], self._tag(name, data[_HEADER:]))

    def write(self, name: str, payload: bytes) -> bool:
        """Keep ``payload`` as entry ``name``, then prune beyond :data:`MAX_FILES`. False (debug
        log) where a file the cache did not write already holds that name: it is left alone."""
        if not NAME.fullmatch(name):
            raise ValueError(f"not a cache entry name: {name!r}")
        path = self.root / name
        with self._manifest() as manifest:
            listed = _names(manifest)
            if os.path.lexists(path) and name not in listed:
                logger.debug("nnx_lab cache: %s not replaced: the cache did not write it", path)
                return False
            data = MAGIC + bytes([VERSION]) + self._tag(name, payload) + payload
            fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".nnx_lab-", suffix=".tmp")  # 0600
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                if name not in listed:  # listed before it appears: a crash leaves a stale line, never an unlisted entry
                    manifest.seek(0, os.SEEK_END)
                    manifest.write(f"{name}\n".encode())
                    manifest.flush()
                    listed.add(name)
                os.replace(tmp, path)  # whole or not at all
            except BaseException:  # cleanup, re-raised: no half-written file left behind
                os.unlink(tmp)
                raise
            if len(listed) > MAX_FILES:
                self._prune(manifest, listed)
        return True

    def _prune(self, manifest, listed: set) -> None:
        """Remove the least recently used of the cache's own entries beyond :data:`MAX_FILES`."""
        present = []
        for name in listed:
            try:
                st = os.lstat(self.root / name)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid():
                present.append((st.st_mtime, name))
        present.sort()
        drop = present[: max(0, len(present) - MAX_FILES)]
        for _, name in drop:
            try:
                os.unlink(self.root / name)
            except FileNotFoundError:
                pass
        manifest.seek(0)
        manifest.truncate()
        kept = [_MANIFEST_HEADER] + [name for _, name in present[len(drop) :]]
        manifest.write("".join(f"{line}\n" for line in kept).encode())
        manifest.flush()

    @contextmanager
    def _manifest(self) -> Iterator:
        """The manifest, opened and locked against every other writer (processes and threads)."""
        import fcntl  # POSIX, as open_store requires

        fd = os.open(self.root / MANIFEST, os.O_RDWR | os.O_CREAT | _NOFOLLOW, 0o600)
        with os.fdopen(fd, "r+b") as f:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
                raise Refused(f"{MANIFEST} is not a file of this user's")
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                if os.fstat(fd).st_size == 0:
                    f.write(f"{_MANIFEST_HEADER}\n".encode())
                    f.flush()
                yield f
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)


def _names(manifest) -> set:
    """The entry names the manifest lists (anything else in it is ignored)."""
    manifest.seek(0)
    return {line for line in manifest.read().decode("ascii", "replace").splitlines() if NAME.fullmatch(line)}
