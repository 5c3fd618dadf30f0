"""py4j's input converters without the import PySpark 4 hides in two of them.

PySpark registers, for the whole process, converters that py4j asks about every argument of
every JVM call that is not a Java object. Since 4.0 its two NumPy converters ask
``pyspark.testing.utils`` whether NumPy is installed, and that module imports pandas and probes
a dozen packages: about 0.27 s of CPU on a context's first call, in every driver, to learn
what the argument's own type tells. Each is wrapped here so it is asked only about NumPy values;
which values they convert, and how, is unchanged.
"""

from __future__ import annotations

import sys
from typing import Any

_NUMPY_CONVERTERS = ("NumpyScalarConverter", "NumpyArrayConverter")


class _NumpyValuesOnly:
    """A NumPy converter of PySpark's, asked only about NumPy scalars and arrays (the only values
    it converts)."""

    def __init__(self, converter: Any) -> None:
        self.converter = converter

    def can_convert(self, value: Any) -> bool:
        numpy = sys.modules.get("numpy")  # a NumPy value exists only once NumPy is imported
        return (
            numpy is not None
            and isinstance(value, numpy.generic | numpy.ndarray)
            and bool(self.converter.can_convert(value))
        )

    def convert(self, value: Any, gateway_client: Any) -> Any:
        return self.converter.convert(value, gateway_client)


def lighten() -> None:
    """Wrap PySpark's NumPy converters in py4j's process-wide list (once; PySpark 3.5's, which
    import nothing, alike)."""
    import py4j.protocol  # type: ignore[import-untyped]
    from pyspark.sql import types

    kinds = tuple(getattr(types, name) for name in _NUMPY_CONVERTERS if hasattr(types, name))
    converters = py4j.protocol.INPUT_CONVERTER
    converters[:] = [_NumpyValuesOnly(c) if isinstance(c, kinds) else c for c in converters]


__all__ = ["lighten"]
