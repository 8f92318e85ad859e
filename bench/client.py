"""A small keep-alive HTTP/1.1 client on a raw socket, for the benchmarks.

urllib opens a connection per request and costs more than the daemon's whole round trip; this
client keeps one socket, writes a request with one send() and parses the reply itself
(Content-Length or chunked, the two framings sandboxd uses). `stream()` hands each chunk of an
SSE response to a callback as it arrives, so a benchmark can time the first event.
Loopback only. Not a general HTTP client: no redirects, no TLS, no pipelining.
"""
import json
import socket
import time


class Http:
    def __init__(self, port, host="127.0.0.1", timeout=120):
        self.addr = (host, port)
        self.timeout = timeout
        self.sock = None
        self.buf = b""

    def _connect(self):
        self.sock = socket.create_connection(self.addr, timeout=self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def close(self):
        if self.sock:
            self.sock.close()
        self.sock = None

    def _fill(self):
        d = self.sock.recv(1 << 16)
        if not d:
            raise ConnectionError("connection closed by the daemon")
        self.buf += d

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n:
            self._fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    @staticmethod
    def encode(method, path, body=None, accept=None):
        data = b"" if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        head = "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n" % (method, path)
        if accept:
            head += "Accept: %s\r\n" % accept
        if body is not None:
            head += "Content-Type: application/json\r\n"
        head += "Content-Length: %d\r\n\r\n" % len(data)
        return head.encode() + data

    def send_raw(self, raw):
        if self.sock is None:
            self._connect()
        self.sock.sendall(raw)

    def read_response(self, on_chunk=None):
        """Read one response; returns (status, body bytes). on_chunk(bytes) sees chunks live."""
        status = int(self._line().split()[1])
        length, chunked = None, False
        while True:
            line = self._line()
            if not line:
                break
            k, _, v = line.partition(b":")
            k = k.strip().lower()
            if k == b"content-length":
                length = int(v)
            elif k == b"transfer-encoding" and b"chunked" in v.lower():
                chunked = True
        if not chunked:
            return status, self._exact(length or 0)
        parts = []
        while True:
            n = int(self._line().split(b";")[0], 16)
            if n == 0:
                self._line()
                return status, b"".join(parts)
            c = self._exact(n)
            self._exact(2)
            parts.append(c)
            if on_chunk:
                on_chunk(c)

    def request(self, method, path, body=None, accept=None, on_chunk=None):
        self.send_raw(self.encode(method, path, body, accept))
        return self.read_response(on_chunk)

    def json(self, method, path, body=None, expect=(200, 201)):
        status, data = self.request(method, path, body)
        if status not in expect:
            raise RuntimeError("%s %s -> %d %s" % (method, path, status, data[:300]))
        return json.loads(data) if data else None


def timed(fn, *a, **kw):
    t = time.perf_counter()
    r = fn(*a, **kw)
    return time.perf_counter() - t, r
