"""Where file content lives: the small ``FileStore`` interface and its default, the
local-directory store (Conductor's ``conductor`` storage type, ``ConductorFileStorage``).

A store knows keys (``<workflowId>/<fileId>``), never rows: ``services`` decides what may
be written or read. Content always moves as a stream in ``CHUNK_BYTES`` pieces, never as
one bytes object: a write copies from a file-like ``read(n)`` source into a temporary file
beside its target and moves it into place (a reader never sees half a file); a read hands
back an open binary file.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from django.conf import settings
from django.utils.module_loading import import_string

from apps.core.errors import InvalidInput, PayloadTooLarge

CHUNK_BYTES = 1024 * 1024
_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


@dataclass(frozen=True)
class Written:
    """What a write stored: ``size`` in bytes and the SHA-256 of the content (hex)."""

    size: int
    sha256: str


def too_large(limit: int) -> PayloadTooLarge:
    """Conductor's message for content above ``limit`` bytes (413)."""
    return PayloadTooLarge(f"Upload exceeds the configured maximum size of {limit} bytes")


def copy_limited(source, target: BinaryIO, limit: int, digest=None) -> Written:
    """Copy ``source`` (anything with ``read(n)``) into ``target`` in chunks, hashing as it
    goes; PayloadTooLarge (413) as soon as more than ``limit`` bytes arrived."""
    digest = digest or hashlib.sha256()
    size = 0
    while True:
        chunk = source.read(CHUNK_BYTES)
        if not chunk:
            return Written(size, digest.hexdigest())
        size += len(chunk)
        if size > limit:
            raise too_large(limit)
        digest.update(chunk)
        target.write(chunk)


class FileStore:
    """The interface of a content store. Keys are ``<workflowId>/<fileId>``; upload ids
    and part numbers come from ``services`` (validated there). Every method may raise
    OSError for a storage failure (answered 500)."""

    def write(self, key: str, source, limit: int) -> Written:
        """Store ``source`` (``read(n)``) under ``key``, replacing what was there, at most
        ``limit`` bytes (PayloadTooLarge otherwise, nothing stored)."""
        raise NotImplementedError

    def open(self, key: str) -> BinaryIO:
        """The content of ``key`` as an open binary file (the caller closes it);
        FileNotFoundError when nothing is stored."""
        raise NotImplementedError

    def delete(self, key: str) -> None:
        """Remove ``key``'s content (nothing when absent), with any unfinished write of it."""
        raise NotImplementedError

    def move(self, source_key: str, key: str) -> None:
        """Make ``source_key``'s content that of ``key`` at once (replacing it); a quick
        step, run while the file's row is locked."""
        raise NotImplementedError

    def write_part(self, upload_id: str, part_number: int, source, limit: int) -> Written:
        """Store one part of a multipart upload (replacing an earlier try of it)."""
        raise NotImplementedError

    def assemble(self, upload_id: str, parts: list[tuple[int, str]], key: str, limit: int) -> Written:
        """Concatenate the parts ``[(partNumber, sha256 hex), ...]`` in that order into
        ``key``; InvalidInput naming ``partETags[i]`` for a part missing or whose hash
        differs, PayloadTooLarge above ``limit`` bytes in all. The parts stay (see
        ``discard_parts``)."""
        raise NotImplementedError

    def discard_parts(self, upload_id: str) -> None:
        """Remove every part of ``upload_id`` (nothing when none)."""
        raise NotImplementedError


class LocalDirectoryStore(FileStore):
    """Content under one directory (``CONDUCTOR_FILES["DIR"]``, ``var/files`` by default):
    ``<dir>/<workflowId>/<fileId>``, parts in ``<dir>/.multipart/<uploadId>/<n>``. Every
    server and cluster process must see the same directory (one machine, or a shared
    volume)."""

    def __init__(self, root: str | os.PathLike | None = None):
        self.root = Path(root or settings.CONDUCTOR_FILES["DIR"]).resolve()

    def _path(self, *segments: str) -> Path:
        for segment in segments:
            if not _SEGMENT.match(segment):  # ids we made; never a path of the caller's
                raise InvalidInput(f"Not a storage key segment: {segment!r}")
        return self.root.joinpath(*segments)

    def _key_path(self, key: str) -> Path:
        return self._path(*key.split("/"))

    def _parts_dir(self, upload_id: str) -> Path:
        return self.root / ".multipart" / self._path(upload_id).name

    @staticmethod
    def _write_into(target: Path, fill) -> Written:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as out:
                written = fill(out)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, target)
            return written
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def write(self, key: str, source, limit: int) -> Written:
        return self._write_into(self._key_path(key), lambda out: copy_limited(source, out, limit))

    def open(self, key: str) -> BinaryIO:
        return open(self._key_path(key), "rb")

    def delete(self, key: str) -> None:
        path = self._key_path(key)
        path.unlink(missing_ok=True)
        # and what a write of it left behind (staged content, a temporary file of a killed
        # process): nothing else will ever remove those
        for leftover in (*path.parent.glob(f"{path.name}.staged-*"), *path.parent.glob(f".{path.name}.*")):
            leftover.unlink(missing_ok=True)
        try:
            path.parent.rmdir()  # the workflow's directory, once its last file went
        except OSError:
            pass

    def move(self, source_key: str, key: str) -> None:
        os.replace(self._key_path(source_key), self._key_path(key))

    def write_part(self, upload_id: str, part_number: int, source, limit: int) -> Written:
        return self._write_into(self._parts_dir(upload_id) / str(part_number),
                                lambda out: copy_limited(source, out, limit))

    def assemble(self, upload_id: str, parts: list[tuple[int, str]], key: str, limit: int) -> Written:
        folder = self._parts_dir(upload_id)

        def fill(out) -> Written:
            whole, size = hashlib.sha256(), 0
            for index, (number, expected) in enumerate(parts):
                try:
                    part = open(folder / str(number), "rb")
                except FileNotFoundError:
                    raise InvalidInput(f"partETags[{index}]: part {number} was not uploaded") from None
                with part:
                    written = copy_limited(_Tee(part, whole), out, limit - size)
                if written.sha256 != expected:
                    raise InvalidInput(f"partETags[{index}]: {expected!r} is not the ETag of part {number}")
                size += written.size
            return Written(size, whole.hexdigest())

        try:
            return self._write_into(self._key_path(key), fill)
        except PayloadTooLarge:
            raise too_large(limit) from None

    def discard_parts(self, upload_id: str) -> None:
        shutil.rmtree(self._parts_dir(upload_id), ignore_errors=True)


class _Tee:
    """A ``read(n)`` source that also feeds what it reads to a second digest."""

    def __init__(self, source, digest):
        self.source, self.digest = source, digest

    def read(self, n: int) -> bytes:
        chunk = self.source.read(n)
        self.digest.update(chunk)
        return chunk


_stores: dict[str, FileStore] = {}


def get_store() -> FileStore:
    """The configured store (``CONDUCTOR_FILES["STORE"]``, a FileStore class), one per
    process and directory."""
    dotted = settings.CONDUCTOR_FILES["STORE"]
    cache_key = f"{dotted}:{settings.CONDUCTOR_FILES['DIR']}"
    if cache_key not in _stores:
        _stores[cache_key] = import_string(dotted)()
    return _stores[cache_key]
