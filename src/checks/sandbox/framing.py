"""Length-prefixed frames over a unix socket: the one wire format between the grader and its
sandbox workers (requests one way, replies the other). Shared by both sides, so it imports nothing
of either."""

from __future__ import annotations

import json
import socket
import struct
import time

FRAME_HEADER = struct.Struct("!Q")
RETURNED_QUIETLY_HEADER = {"status": "returned", "output": ""}  # most replies: fixed bytes, no JSON work
RETURNED_QUIETLY = json.dumps(RETURNED_QUIETLY_HEADER).encode()


def send_frame(sock: socket.socket, *payloads: bytes) -> None:
    """One length-prefixed frame per payload, in one write: the reader wakes once."""
    sock.sendall(b"".join(FRAME_HEADER.pack(len(payload)) + payload for payload in payloads))


class FrameReader:
    """Reads length-prefixed frames from a socket, taking whatever has arrived in one recv: a
    reply's frames come in one write, so they usually cost one system call instead of four."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = bytearray()

    def frame(self, limit: int, deadline: float | None = None) -> bytes:
        """The next frame; EOFError when the peer is gone, ValueError when it is too big,
        socket.timeout when it has not come by `deadline` (time.monotonic) if one is given."""
        self._fill(FRAME_HEADER.size, deadline)
        (length,) = FRAME_HEADER.unpack_from(self.buffer)
        if length > limit:
            raise ValueError(f"a value of {length / 2**20:.1f} MiB (the limit is {limit / 2**20:.0f} MiB)")
        end = FRAME_HEADER.size + length
        self._fill(end, deadline)
        data = bytes(self.buffer[FRAME_HEADER.size:end])
        del self.buffer[:end]
        return data

    def _fill(self, size: int, deadline: float | None) -> None:
        while len(self.buffer) < size:
            if deadline is not None:
                self.sock.settimeout(max(0.01, deadline - time.monotonic()))
            chunk = self.sock.recv(min(max(size - len(self.buffer), 1 << 16), 1 << 20))
            if not chunk:
                raise EOFError("the sandbox closed the connection")
            self.buffer += chunk


def recv_exact(sock: socket.socket, size: int) -> bytes:
    chunks, remaining = [], size
    while remaining:
        chunk = sock.recv(min(remaining, 1 << 20))
        if not chunk:
            raise EOFError("the sandbox closed the connection")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)
