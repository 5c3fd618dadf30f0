"""The project's dev tools, never shipped in the wheel: the local stack of AWS endpoints as
processes on loopback (``stack``), moto's server with DynamoDB's atomicity (``moto_serial``), a
proxy that enforces Kinesis' read limits in front of an emulator (``limits_proxy``), and the
README's first command (``demo``). The tests, the benchmarks and ``make demo`` import it with
``tools/`` on the path (pytest's ``pythonpath``, ``benchmarks/__init__.py``, the Makefile).
"""
