"""The nodes' environment in one archive (``kinesis-batch package``): kinesis-batch, its runtime
dependencies and its table libraries, unpacked from wheels for one Python and one architecture,
which Spark (or EMR Serverless) unpacks on every node and puts on its Python's path. No Spark
here: the archive is made where no Spark runs, and read by the job-run checks.

Several of those dependencies hold native code (pyarrow, msgspec, fastavro, protobuf), which
Spark's ``--py-files`` cannot carry; ``spark.archives=URI#environment`` can (Spark's Python
packaging guide). The archive holds no interpreter: the nodes bring their own Python of that
version (EMR's, Glue's, a cluster's image) and the archive only adds packages to its path, so
the same archive serves YARN, Kubernetes, standalone clusters and EMR Serverless.

Contract:
- :func:`build` resolves wheels only (nothing is compiled for another machine), each
  dependency at the version this environment runs, for ``python`` on ``arch`` under the
  manylinux tags of ``glibc``; a dependency with no such wheel is one IllegalArgumentError
  naming it, before anything is written.
- The archive is written whole to a folder or an S3 prefix; :attr:`Package.settings` are the
  Spark settings that give it to the executors (and to a driver that runs on the cluster).
- Where it goes is checked before anything is resolved: a folder, not an archive's name; its
  bucket there; no archive of that name there unless ``replace`` (job runs may be reading it).
"""

from __future__ import annotations

import importlib.metadata
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kinesis_batch.errors import DependencyError, IllegalArgumentError, InvalidStateError
from kinesis_batch.output.formats import ROWS
from kinesis_batch.output.table_checks import check_bucket
from kinesis_batch.storage.place import Place

ARCHITECTURES = ("x86_64", "aarch64")
#: The kinesis_batch package's own folder (this module's): what the archive holds of kinesis-batch.
PACKAGE = Path(__file__).resolve().parent
#: The read step's entry point on the nodes (a spark-submit's application, a job run's entryPoint).
READ_STEP = PACKAGE / "cli" / "read_step.py"
#: Where Spark unpacks the archive, in each container's working folder.
ALIAS = "environment"
#: The newest glibc the nodes are assumed to have: RHEL 8's, older than Amazon Linux 2023's 2.34,
#: Ubuntu 22.04's 2.35 and Debian 12's 2.36.
GLIBC = (2, 28)
#: Where each side of a cluster reads its environment (Spark's settings for each deploy mode).
PATH_SETTINGS = (
    "spark.executorEnv.PYTHONPATH",
    "spark.yarn.appMasterEnv.PYTHONPATH",  # YARN cluster mode's driver
    "spark.kubernetes.driverEnv.PYTHONPATH",
    "spark.emr-serverless.driverEnv.PYTHONPATH",
)
_PYTHON = re.compile(r"3\.\d{1,2}")
_ARCHIVE = re.compile(r"kinesis-batch-(?P<version>[^/]+?)-py(?P<python>3\.\d{1,2})-(?P<arch>x86_64|aarch64)\.tar\.gz")
_MISSING = re.compile(r"No matching distribution found for ([A-Za-z0-9_.\-]+(?:[=<>!~]=?[^\s;]+)?)")


@dataclass(frozen=True)
class ArchiveName:
    """What an archive's name says: the kinesis-batch it holds, for which Python and machine."""

    version: str
    python: str
    arch: str

    @property
    def name(self) -> str:
        return f"kinesis-batch-{self.version}-py{self.python}-{self.arch}.tar.gz"

    @classmethod
    def of(cls, uri: str) -> ArchiveName | None:
        """From an archive's path or URI, as :func:`build` names it (None: another name)."""
        match = _ARCHIVE.fullmatch(uri.rsplit("/", 1)[-1])
        return cls(match["version"], match["python"], match["arch"]) if match else None


@dataclass(frozen=True)
class Package:
    """An archive written, and what makes executors use it."""

    archive: str  # a path or s3:// URI
    python: str
    arch: str

    @property
    def settings(self) -> tuple[tuple[str, str], ...]:
        return (("spark.archives", f"{self.archive}#{ALIAS}"), *((key, f"./{ALIAS}") for key in PATH_SETTINGS))


def manylinux_tags(arch: str, glibc: tuple[int, int] = GLIBC) -> list[str]:
    """The wheel platform tags pip takes on a Linux of ``arch`` with ``glibc``. pip's
    ``--platform`` matches tags exactly, so each must be named: with manylinux2014 alone pip
    settles on older wheels (pyarrow 20), and arro3-core (deltalake's) publishes its aarch64
    wheels as manylinux_2_24."""
    major, newest = glibc
    return [f"manylinux_{major}_{minor}_{arch}" for minor in range(newest, 16, -1)] + [f"manylinux2014_{arch}"]


#: The extras a driver that runs on the cluster needs too (a job run's, YARN's cluster mode):
#: the table libraries the read step opens the output with (each format's row names its own).
DRIVER_EXTRAS = tuple(row.extra for row in ROWS if row.extra)


def runtime_requirements() -> list[str]:
    """What a read step imports, on the executors and on a driver that runs on the cluster:
    kinesis-batch's own dependencies and its table libraries (:data:`DRIVER_EXTRAS`; not
    Spark, which is the cluster's), each at the version installed here, with its own extras."""
    requirements = []
    for text in importlib.metadata.requires("kinesis-batch") or []:
        requirement, _, marker = text.partition(";")
        extra = re.search(r"extra\s*==\s*[\"']([^\"']+)", marker)
        if extra is not None and extra.group(1) not in DRIVER_EXTRAS:
            continue
        name = re.split(r"[\s\[<>=!~;]", requirement.strip(), maxsplit=1)[0]
        extras = re.search(r"\[[^\]]*\]", requirement)
        requirements.append(f"{name}{extras.group(0) if extras else ''}=={importlib.metadata.version(name)}")
    return requirements


def build(
    python: str,
    arch: str,
    output: Place,
    *,
    replace: bool = False,
    glibc: tuple[int, int] = GLIBC,
    progress: Callable[[str], None] = lambda message: None,
) -> Package:
    """Resolve, unpack and archive the environment into ``output``."""
    if not _PYTHON.fullmatch(python):
        raise IllegalArgumentError(f"--python {python!r}: expected a Python version such as 3.11")
    if arch not in ARCHITECTURES:
        raise IllegalArgumentError(f"--arch {arch!r}: expected one of {', '.join(ARCHITECTURES)}")
    name = ArchiveName(importlib.metadata.version("kinesis-batch"), python, arch).name
    _check_output(output, name, replace)
    with tempfile.TemporaryDirectory(prefix="kinesis-batch-package-") as scratch:
        root = Path(scratch) / ALIAS
        requirements = runtime_requirements()
        progress(f"resolving wheels for Python {python} on {arch}: {', '.join(requirements)}")
        _install(requirements, root, python, arch, glibc)
        shutil.copytree(PACKAGE, root / "kinesis_batch", ignore=shutil.ignore_patterns("__pycache__"))
        archive = Path(scratch) / name
        _tar(root, archive)
        output.make_dirs()
        with archive.open("rb") as source, output.open_part(name) as stream:
            shutil.copyfileobj(source, stream, 8 * 2**20)
        size = archive.stat().st_size
    package = Package(output.child(name).uri, python, arch)
    progress(f"wrote {package.archive} ({size / 2**20:.1f} MiB)")
    return package


def _check_output(output: Place, name: str, replace: bool) -> None:
    """Where the archive goes, checked before a minute of resolving (one line, exit 2)."""
    if output.uri.endswith((".tar.gz", ".tgz", ".zip")):
        raise IllegalArgumentError(
            f"--output {output.uri}: name the folder or s3:// prefix the archive goes in; the archive names "
            f"itself ({name})"
        )
    if output.on_s3:
        check_bucket(output)
    if not replace and output.child(name).exists():
        raise InvalidStateError(
            f"{output.child(name).uri} exists (job runs may be reading it): --replace writes it again"
        )


def _install(requirements: list[str], target: Path, python: str, arch: str, glibc: tuple[int, int]) -> None:
    platforms = [f"--platform={tag}" for tag in manylinux_tags(arch, glibc)]
    command = [
        sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile",
        "--target", str(target), "--only-binary=:all:", "--implementation", "cp", "--python-version", python,
        *platforms, *requirements,
    ]  # fmt: skip
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    except OSError as exc:
        raise DependencyError(f"could not run pip ({sys.executable} -m pip): {exc}") from exc
    if done.returncode == 0:
        return
    missing = _MISSING.search(done.stderr)
    if missing:
        raise IllegalArgumentError(f"no wheel of {missing.group(1)} for Python {python} on {arch}")
    if "No module named pip" in done.stderr:  # an install to make, not a failure to retry: exit 2
        raise InvalidStateError(f"pip is not installed in {sys.prefix} (python -m ensurepip installs it)")
    last = [line for line in done.stderr.splitlines() if line.strip() and not line.startswith("WARNING")]
    raise DependencyError(f"pip could not resolve the environment: {last[-1] if last else done.returncode}")


def _tar(root: Path, target: Path) -> None:
    """``root``'s content, gzipped, its paths relative to it (what Spark unpacks into ALIAS)."""
    with tarfile.open(target, mode="w:gz", compresslevel=6) as archive:
        for path in sorted(root.iterdir()):
            archive.add(path, arcname=path.name)


__all__ = [
    "ALIAS",
    "ARCHITECTURES",
    "GLIBC",
    "READ_STEP",
    "ArchiveName",
    "Package",
    "build",
    "manylinux_tags",
    "runtime_requirements",
]
