"""PySpark's NumPy converters, wrapped by kinesis_batch.spark.converters: the same answers for
every value, and no import of pyspark.testing (nor pandas) for the values a run passes."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kinesis_batch.spark.converters import _NUMPY_CONVERTERS, _NumpyValuesOnly

pytestmark = pytest.mark.contract("spark", why="the converters wrapped are this PySpark's, and differ from 3.5 to 4.x")

PLAIN = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=5),
    st.binary(max_size=5),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
    st.datetimes(timezones=st.just(UTC)),
    st.dates(),
    st.timedeltas(),
)
try:
    import numpy as np
    from hypothesis.extra import numpy as hnp
except ImportError:  # a Spark user's environment may have no NumPy (the spark-3.5.0 one has none)
    np = None
    VALUES = PLAIN
else:
    VALUES = st.one_of(
        PLAIN,
        hnp.arrays(hnp.scalar_dtypes(), hnp.array_shapes(min_dims=0, max_dims=2, max_side=3)),
        hnp.from_dtype(np.dtype("int64")).map(np.int64),
        hnp.from_dtype(np.dtype("float32")).map(np.float32),
        st.builds(np.bool_, st.booleans()),
    )


def originals() -> list[Any]:
    from pyspark.sql import types

    return [getattr(types, name)() for name in _NUMPY_CONVERTERS if hasattr(types, name)]


@given(value=VALUES)
def test_a_wrapped_converter_takes_exactly_the_values_its_original_takes(value: Any) -> None:
    for original in originals():
        assert _NumpyValuesOnly(original).can_convert(value) == original.can_convert(value)


@pytest.mark.skipif(np is None, reason="NumPy is not installed here")
def test_a_numpy_value_is_still_converted_as_pyspark_converts_it() -> None:
    scalar, array = originals()[0], originals()[-1]
    assert _NumpyValuesOnly(scalar).convert(np.int64(7), None) == scalar.convert(np.int64(7), None) == 7
    assert _NumpyValuesOnly(array).can_convert(np.arange(3))


@pytest.mark.isolated("a fresh interpreter: what a process imports")
def test_the_arguments_of_a_run_s_jvm_calls_import_neither_pyspark_testing_nor_pandas() -> None:
    # Every converter py4j holds asked about the kinds of argument the driver passes.
    script = """
import sys
from kinesis_batch.spark import converters
import py4j.protocol
converters.lighten()
converters.lighten()  # twice: wrapped once
for value in ("spark.app.name", 1, 2.5, True, None, b"x", [1], {"a": 1}):
    for converter in py4j.protocol.INPUT_CONVERTER:
        converter.can_convert(value)
wrapped = [c for c in py4j.protocol.INPUT_CONVERTER if type(c).__name__ == "_NumpyValuesOnly"]
assert all(type(c.converter).__name__ != "_NumpyValuesOnly" for c in wrapped)
print(len(wrapped), "pyspark.testing.utils" in sys.modules, "pandas" in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split()[1:] == ["False", "False"], done.stdout
    assert done.stdout.split()[0] in {"1", "2"}
