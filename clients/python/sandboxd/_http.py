"""HTTP transport to sandboxd: JSON requests, raw bodies and Server-Sent Events.

Uses only `http.client`, one connection per request (no shared state, so a `Transport` may be
used from several threads). `request` returns the decoded JSON (or raw bytes) of a 2xx answer
and raises the typed error from `errors` otherwise. `stream` yields `(event, data)` pairs of an
SSE response as they arrive, so callers can fire callbacks while the code runs; it assumes
the daemon's framing (`event:`, `id:`, one `data:` line of JSON per event) but accepts the
general SSE grammar (comments, several `data:` lines, CRLF). Lines are capped at
`MAX_LINE` bytes so a broken peer cannot make the client buffer without end.
"""
import http.client
import json
import socket
import urllib.parse

from .errors import ConnectionFailedError, ProtocolError, error_from_response

MAX_LINE = 64 * 1024 * 1024  # one SSE line (an image result is one base64 line)


class Transport:
    """Talks to one daemon at `url` (http or https, optional path prefix) with an optional token."""

    def __init__(self, url, token=None, timeout=60.0):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("sandboxd url must be http://host[:port] or https://..., got %r" % url)
        self.url = url
        self.scheme = parts.scheme
        self.host = parts.hostname
        self.port = parts.port
        self.prefix = parts.path.rstrip("/")
        self.token = token
        self.timeout = timeout

    def _connect(self, timeout):
        cls = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
        return cls(self.host, self.port, timeout=timeout)

    def _send(self, method, path, body, headers, timeout):
        hdrs = {"Accept": "application/json"}
        hdrs.update(headers or {})
        if self.token:
            hdrs["Authorization"] = "Bearer " + self.token
        if body is not None and not isinstance(body, (bytes, bytearray)):
            body = json.dumps(body).encode("utf-8")
            hdrs.setdefault("Content-Type", "application/json")
        conn = self._connect(self.timeout if timeout is None else timeout)
        try:
            conn.request(method, self.prefix + path, body=body, headers=hdrs)
            resp = conn.getresponse()
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            raise ConnectionFailedError("cannot reach sandboxd at %s: %s" % (self.url, e)) from e
        return conn, resp

    def request(self, method, path, body=None, headers=None, raw=False, timeout=None):
        """One request; returns parsed JSON (or bytes when `raw`); raises SandboxdError."""
        conn, resp = self._send(method, path, body, headers, timeout)
        try:
            data = resp.read()
        except (OSError, http.client.HTTPException) as e:
            raise ConnectionFailedError("connection to sandboxd broke: %s" % e) from e
        finally:
            conn.close()
        if resp.status >= 400:
            raise error_from_response(resp.status, data)
        if raw:
            return data
        if not data:
            return None
        try:
            return json.loads(data.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            raise ProtocolError("sandboxd sent non-JSON for %s %s" % (method, path)) from e

    def stream(self, method, path, body=None, timeout=None, headers=None, response_headers=None):
        """Yield `(event, data)` for each SSE event of the response; data is parsed JSON.

        `headers` are sent too; `response_headers`, a dict, gets the response's headers
        (lower-case names) before the first event."""
        hdrs = {"Accept": "text/event-stream"}
        hdrs.update(headers or {})
        conn, resp = self._send(method, path, body, hdrs, timeout)
        try:
            if response_headers is not None:
                response_headers.update({k.lower(): v for k, v in resp.getheaders()})
            if resp.status >= 400:
                raise error_from_response(resp.status, resp.read())
            ctype = resp.getheader("Content-Type", "")
            if not ctype.startswith("text/event-stream"):
                data = resp.read()
                raise ProtocolError("expected an event stream for %s %s, got %r: %s"
                                    % (method, path, ctype, data[:200]))
            for event, data in parse_sse(resp):
                try:
                    yield event, json.loads(data) if data else None
                except ValueError as e:
                    raise ProtocolError("bad JSON in SSE event %r: %.200s" % (event, data)) from e
        except (socket.timeout, OSError, http.client.HTTPException) as e:
            raise ConnectionFailedError("event stream from sandboxd broke: %s" % e) from e
        finally:
            conn.close()


def parse_sse(fp):
    """Yield `(event, data)` string pairs from a binary file-like object of SSE text."""
    event, data = "message", []
    while True:
        line = fp.readline(MAX_LINE + 1)
        if not line:
            break
        if len(line) > MAX_LINE:
            raise ProtocolError("SSE line longer than %d bytes" % MAX_LINE)
        text = line.decode("utf-8", "replace").rstrip("\r\n")
        if text == "":
            if data:
                yield event, "\n".join(data)
            event, data = "message", []
            continue
        if text.startswith(":"):
            continue
        name, _, value = text.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
    if data:
        yield event, "\n".join(data)


def quote(segment):
    """Percent-encode one path segment (ids) for a URL."""
    return urllib.parse.quote(segment, safe="")
