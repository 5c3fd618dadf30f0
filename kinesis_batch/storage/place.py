"""A folder on a local file system or on S3, as the driver and the Spark tasks both see it.

A :class:`Place` is a value (JSON-able, so it travels in a task spec) and opens its pyarrow file
system on use. Writes are whole-object: on S3 an object appears only once its upload completes;
on a local file system :meth:`Place.write_text` and :meth:`Place.open_part` write a hidden
temporary and rename it, so a reader never sees half a file either way. Bytes are stored as
given: pyarrow's streams would gzip a name ending in ``.gz`` on the way in (and inflate it on
the way out) unless told not to, and an archive ``package`` uploads is already compressed.
"""

from __future__ import annotations

import builtins
import contextlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyarrow import fs

from kinesis_batch.aws import S3Settings
from kinesis_batch.errors import from_storage


def is_s3(uri: str) -> bool:
    return uri.startswith(("s3://", "s3a://"))


#: A folder no place holds: listing under it is one request within the place's own prefix.
_NOWHERE = ".kinesis-batch-bucket-check"


@dataclass(frozen=True)
class Place:
    """``uri``: an absolute local path (or ``file://`` URI) or ``s3://bucket/prefix``."""

    uri: str
    s3: S3Settings = field(default_factory=S3Settings)

    def __post_init__(self) -> None:
        uri = self.uri.removeprefix("file://") if self.uri.startswith("file://") else self.uri
        uri = "s3://" + uri.split("://", 1)[1].strip("/") if is_s3(uri) else str(Path(uri).absolute())
        object.__setattr__(self, "uri", uri)

    # -- values ---------------------------------------------------------------------------------

    @property
    def on_s3(self) -> bool:
        return is_s3(self.uri)

    @property
    def path(self) -> str:
        """The path as the pyarrow file system spells it (``bucket/key`` on S3)."""
        return self.uri.split("://", 1)[1] if self.on_s3 else self.uri

    def child(self, *names: str) -> Place:
        return Place("/".join([self.uri, *names]), self.s3)

    def to_json(self) -> dict[str, Any]:
        return {"uri": self.uri, "s3": self.s3.to_json()}

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> Place:
        return cls(body["uri"], S3Settings.from_json(body.get("s3") or {}))

    # -- I/O ------------------------------------------------------------------------------------

    def filesystem(self) -> fs.FileSystem:
        return self.s3.filesystem() if self.on_s3 else fs.LocalFileSystem()

    def exists(self) -> bool:
        with _io(self):
            return bool(self.filesystem().get_file_info(self.path).type != fs.FileType.NotFound)

    def bucket_exists(self) -> bool:
        """Whether this S3 place's bucket exists, asked by one listing inside this place's own
        prefix (ListObjectsV2, which a policy held to that prefix allows; HeadBucket would need
        ListBucket on the whole bucket)."""
        with _io(self):
            try:
                self.filesystem().get_file_info(fs.FileSelector(self.child(_NOWHERE).path))
            except FileNotFoundError:  # the bucket answered: nothing there, as expected
                return True
            except OSError as exc:
                if any(word in str(exc) for word in ("NO_SUCH_BUCKET", "NoSuchBucket")):
                    return False
                raise
        return True

    def make_dirs(self) -> None:
        """Create this folder (and its parents) on a local file system; S3 has no folders."""
        if not self.on_s3:
            with _io(self):
                self.filesystem().create_dir(self.path, recursive=True)

    def make_dir(self, name: str) -> None:
        """Create the folder ``name`` in this one, which must exist (a Spark task must not bring
        back a staging another worker discarded: FileNotFoundError then)."""
        if not self.on_s3:
            with _io(self):
                self.filesystem().create_dir(self.child(name).path, recursive=False)

    def write_text(self, name: str, text: str) -> None:
        """Write ``name`` whole: readers see the old content or the new, never a part. Creates
        the folder if needed."""
        self.make_dirs()
        with self.open_part(name) as stream:
            stream.write(text.encode())

    def read_text(self, name: str) -> str | None:
        """The content of ``name``, or None if there is no such file."""
        target = self.child(name)
        with _io(self):
            try:
                with self.filesystem().open_input_stream(target.path, compression=None) as stream:
                    return bytes(stream.read()).decode()
            except FileNotFoundError:
                return None

    @contextlib.contextmanager
    def open_part(self, name: str) -> Iterator[Any]:
        """An output stream for ``name`` that becomes visible only when the block ends without error.
        The folder must exist: a Spark task must not bring back a staging another worker discarded."""
        target = self.child(name)
        filesystem = self.filesystem()
        with _io(self):
            if self.on_s3:  # an S3 upload is only visible once it completes; a failed one is removed
                stream = filesystem.open_output_stream(target.path, compression=None)
                try:
                    yield stream
                except BaseException:
                    with contextlib.suppress(OSError):
                        stream.close()
                        filesystem.delete_file(target.path)
                    raise
                stream.close()
                return
            folder, _, base = name.rpartition("/")
            hidden = f"{folder}/.{base}" if folder else f".{base}"
            temporary = self.child(f"{hidden}.{uuid.uuid4().hex[:8]}.partial")
            try:
                with filesystem.open_output_stream(temporary.path, compression=None) as stream:
                    yield stream
                filesystem.move(temporary.path, target.path)
            finally:
                with contextlib.suppress(FileNotFoundError):
                    filesystem.delete_file(temporary.path)

    def list(self, prefix: str = "") -> list[str]:
        """Names of the files directly in this folder that start with ``prefix`` (hidden ones too)."""
        return sorted(name for name in self.sizes() if name.startswith(prefix))

    def sizes(self, *, recursive: bool = False) -> dict[str, int]:
        """Name -> size of the files directly in this folder (``recursive``: in it and its
        folders, by path relative to it): one listing, not a request per file."""
        return {name: size for name, (size, _) in self.files(recursive=recursive).items()}

    def files(self, *, recursive: bool = False) -> dict[str, tuple[int, int]]:
        """Name -> (size, last modified as epoch ms) of the files in this folder, as :meth:`sizes`."""
        with _io(self):
            selector = fs.FileSelector(self.path, allow_not_found=True, recursive=recursive)
            infos = self.filesystem().get_file_info(selector)
        root = self.path.rstrip("/") + "/"
        return {
            info.path.removeprefix(root): (int(info.size), int((info.mtime_ns or 0) // 1_000_000))
            for info in infos
            if info.type == fs.FileType.File
        }

    def folders(self) -> builtins.list[str]:
        """Names of the folders directly in this one (S3: the common prefixes)."""
        with _io(self):
            infos = self.filesystem().get_file_info(fs.FileSelector(self.path, allow_not_found=True))
        return sorted(info.base_name for info in infos if info.type == fs.FileType.Directory)

    def top(self) -> tuple[builtins.list[str], builtins.list[str]]:
        """(files, folders) directly in this folder, by name, in one listing (nothing: both empty)."""
        with _io(self):
            infos = self.filesystem().get_file_info(fs.FileSelector(self.path, allow_not_found=True))
        files = sorted(info.base_name for info in infos if info.type == fs.FileType.File)
        return files, sorted(info.base_name for info in infos if info.type == fs.FileType.Directory)

    def walk(self) -> builtins.list[str]:
        """Paths (relative to this folder) of every file in it and its folders."""
        return sorted(self.sizes(recursive=True))

    def move(self, name: str, to: Place) -> None:
        """Move file ``name`` to the same name in ``to``: a rename on one local file system, a
        copy then a delete otherwise (S3 copies inside the bucket, no bytes pass through here)."""
        source, target = self.child(name), to.child(name)
        with _io(self):
            if not to.on_s3:
                to.filesystem().create_dir(target.path.rpartition("/")[0], recursive=True)
            if self.on_s3 == to.on_s3 and self.s3 == to.s3:
                self.filesystem().move(source.path, target.path)
                return
            fs.copy_files(
                source.path, target.path, source_filesystem=self.filesystem(), destination_filesystem=to.filesystem()
            )
            self.filesystem().delete_file(source.path)

    def delete(self, name: str) -> None:
        with _io(self), contextlib.suppress(FileNotFoundError):
            self.filesystem().delete_file(self.child(name).path)

    def delete_all(self) -> bool:
        """Delete this folder and all in it. True if there was anything to delete."""
        if not self.exists():
            return False
        try:
            with _io(self):
                self.filesystem().delete_dir(self.path)
        except FileNotFoundError:  # deleted meanwhile by someone else
            return False
        return True


@contextlib.contextmanager
def _io(place: Place) -> Iterator[None]:
    """pyarrow's errors, as this package's tree (the S3 ones arrive as OSError with a message);
    a missing file passes through: the callers decide on it."""
    try:
        yield
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise from_storage(exc, place.uri, remote=place.on_s3) from exc


__all__ = ["Place", "is_s3"]
