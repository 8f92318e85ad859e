"""Hostile clients of the HTTP API: a flood of connections that never send a byte (or
that send one byte now and then) must not deny service to anyone else.

The connection table sheds the connection waiting longest without a request in
progress when a newcomer finds it full (src/http.c; the order is unit-tested in
tests/unit/test_http.c), a new connection has --first-request-timeout-ms from accept to
deliver its request, and a request's headers and buffered body must arrive within
--header-timeout-ms.
"""
import json
import resource
import socket
import time

import pytest


def open_idle(port, n):
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        s.connect(("127.0.0.1", port))
        socks.append(s)
    return socks


def metric(d, name):
    status, _, body = d.request("GET", "/metrics")
    assert status == 200
    for line in body.decode().splitlines():
        if line.startswith(name + " "):
            return int(float(line.split()[1]))
    raise AssertionError("no metric %s" % name)


def served_by_a_newcomer(d):
    """GET /v1/health on a fresh connection, as a client who is not part of the flood."""
    c = d.conn(timeout=30)
    status, _, body = d.request("GET", "/v1/health", conn=c)
    c.close()
    return status, json.loads(body)


def test_idle_flood_past_the_cap_does_not_lock_out(make_daemon):
    d = make_daemon("--max-connections", "64")
    flood = open_idle(d.port, 200)            # three times the table, never a byte
    try:
        status, body = served_by_a_newcomer(d)
        assert status == 200 and body["status"] == "ok", body
        # the oldest of the flood were closed to make room, silently
        flood[0].settimeout(20)
        assert flood[0].recv(100) == b""
        assert metric(d, "sandboxd_http_connections_shed_total") >= 200 - 64
    finally:
        for s in flood:
            s.close()


def test_keepalive_flood_past_the_cap_does_not_lock_out(make_daemon):
    d = make_daemon("--max-connections", "32")
    flood = []
    try:
        for _ in range(64):                   # each made one request, then sits idle
            c = d.conn(timeout=30)
            assert d.request("GET", "/v1/health", conn=c)[0] == 200
            flood.append(c)
        status, _ = served_by_a_newcomer(d)
        assert status == 200
    finally:
        for c in flood:
            c.close()


def test_unauthenticated_slow_bodies_do_not_lock_out(make_daemon):
    d = make_daemon("--max-connections", "32", "--token", "s3cret")
    flood = []
    try:
        for _ in range(64):          # no token, headers in, a body that trickles
            s = socket.create_connection(("127.0.0.1", d.port), timeout=30)
            s.sendall(b"POST /v1/sandboxes HTTP/1.1\r\nContent-Length: 100000\r\n"
                      b"Expect: 100-continue\r\n\r\n")
            assert s.recv(100).startswith(b"HTTP/1.1 100 Continue")
            s.sendall(b"{")
            flood.append(s)
        status, body = served_by_a_newcomer(d)   # GET /v1/health needs no token
        assert status == 200 and body["status"] == "ok", body
    finally:
        for s in flood:
            s.close()


def test_default_table_survives_4096_idle_sockets(daemon):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 4096 + 400 + 256
    if soft < want:                           # root may raise its hard limit too
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, max(hard, want)))
    flood = open_idle(daemon.port, 4096 + 400)
    try:
        status, body = served_by_a_newcomer(daemon)
        assert status == 200 and body["status"] == "ok", body
    finally:
        for s in flood:
            s.close()


def slowloris(port, request, every=0.3):
    """Send request one byte at a time; returns (what came back, bytes sent)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    got, sent = b"", 0
    try:
        for i in range(len(request)):
            try:
                s.sendall(request[i:i + 1])
            except OSError:
                break
            sent += 1
            s.settimeout(every)
            try:
                chunk = s.recv(4096)
                got += chunk
                if not chunk or b"\r\n\r\n" in got:
                    break
            except socket.timeout:
                pass
        s.settimeout(30)
        try:
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                got += chunk
        except (socket.timeout, OSError):
            pass
    finally:
        s.close()
    return got, sent


REQUEST = b"GET /v1/health HTTP/1.1\r\nHost: localhost\r\nUser-Agent: " + b"s" * 60 + b"\r\n\r\n"


def test_slowloris_first_request_is_cut_at_the_deadline(make_daemon):
    d = make_daemon("--first-request-timeout-ms", "2000", "--header-timeout-ms", "30000")
    got, sent = slowloris(d.port, REQUEST)
    assert got.startswith(b"HTTP/1.1 408 "), got
    body = json.loads(got.split(b"\r\n\r\n", 1)[1])
    assert body["code"] == "REQUEST_TIMEOUT" and "first request" in body["message"], body
    assert sent < len(REQUEST)                # closed while it was still dribbling


def test_slowloris_on_a_kept_alive_connection_is_cut(make_daemon):
    d = make_daemon("--header-timeout-ms", "2000")
    s = socket.create_connection(("127.0.0.1", d.port), timeout=30)
    s.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
    first = b""
    while b"\r\n\r\n" not in first or not first.rstrip().endswith(b"}"):
        first += s.recv(4096)
    assert first.startswith(b"HTTP/1.1 200 ")
    got, sent = b"", 0
    for i in range(len(REQUEST)):
        s.sendall(REQUEST[i:i + 1])
        sent += 1
        s.settimeout(0.3)
        try:
            got += s.recv(4096)
            if b"\r\n\r\n" in got:
                break
        except socket.timeout:
            pass
    s.close()
    assert got.startswith(b"HTTP/1.1 408 "), got
    assert b"not complete within 2000 ms" in got
    assert sent < len(REQUEST)


def test_a_silent_connection_is_closed_at_the_first_request_deadline(make_daemon):
    d = make_daemon("--first-request-timeout-ms", "500")
    s = socket.create_connection(("127.0.0.1", d.port), timeout=30)
    assert s.recv(100) == b""                 # closed without an answer
    s.close()
