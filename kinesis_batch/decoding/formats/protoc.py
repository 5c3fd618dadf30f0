"""``.proto`` text (the Glue Schema Registry's protobuf schemas) compiled into a descriptor set,
with protoc as grpcio-tools ships it (the extra ``kinesis-batch[glue-protobuf]``), once per
schema version and process."""

from __future__ import annotations

import tempfile
from importlib import resources
from pathlib import Path

from kinesis_batch.errors import IllegalArgumentError


def compile_proto(text: str, where: str) -> bytes:
    """The serialized descriptor set of one ``.proto`` file (imports of the well-known types only)."""
    try:
        from grpc_tools import protoc
    except ImportError as exc:
        raise IllegalArgumentError(
            f"{where} is a protobuf schema: compiling its .proto text needs grpcio-tools "
            "(pip install 'kinesis-batch[glue-protobuf]')"
        ) from exc
    includes = str(resources.files("grpc_tools") / "_proto")
    with tempfile.TemporaryDirectory(prefix="kinesis-batch-proto-") as folder:
        source, out = Path(folder, "schema.proto"), Path(folder, "schema.desc")
        source.write_text(text)
        code = protoc.main(
            ["protoc", f"-I{folder}", f"-I{includes}", f"--descriptor_set_out={out}", "--include_imports", str(source)]
        )
        if code != 0 or not out.exists():
            raise IllegalArgumentError(f"{where}: its .proto text does not compile (protoc exit {code})")
        return out.read_bytes()


__all__ = ["compile_proto"]
