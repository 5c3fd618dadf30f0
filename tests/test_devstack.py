"""The local stack's emulators behave like a service, not like a test fixture: a client that
dies in the middle of a request (the crash tests kill -9 whole runs) does not take them down."""

from __future__ import annotations

import socket
import struct
from typing import Any
from urllib.parse import urlsplit

from devkit.stack import LocalStack


def test_kinesalite_survives_a_client_killed_in_the_middle_of_a_request(stack: LocalStack, kinesis: Any) -> None:
    url = urlsplit(stack.kinesis["kinesalite"].url)
    for _ in range(3):
        client = socket.create_connection((url.hostname, url.port))
        client.sendall(
            b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-amz-json-1.1\r\n"
            b'X-Amz-Target: Kinesis_20131202.ListStreams\r\nContent-Length: 1000\r\n\r\n{"Limit'
        )
        # Reset, not a clean close: what the kernel does for a process killed mid-request.
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.close()
    assert "StreamNames" in kinesis.list_streams()
