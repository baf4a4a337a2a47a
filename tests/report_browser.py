"""Drive a real headless Chromium over the DevTools protocol, for the HTML report tests.

Stdlib only: a minimal WebSocket client (RFC 6455, client side, text frames) on a
loopback socket, ``http.client`` for the target list, and a PNG decoder for checking
that a screenshot is not blank. Debian's ``chromium`` package is what ``make browser``
installs; tests skip with the reason when it is absent.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-extensions",
    "--disable-default-apps",
    "--mute-audio",
    "--hide-scrollbars",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
    "--window-size=1280,900",
)


def find_chromium() -> str | None:
    """The Chromium binary, or ``None`` (``REWIND_CHROMIUM`` overrides the search)."""
    explicit = os.environ.get("REWIND_CHROMIUM")
    if explicit:
        return explicit if os.path.exists(explicit) else None
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


class BrowserError(RuntimeError):
    pass


class _WebSocket:
    """Just enough of a WebSocket client for the DevTools protocol on loopback."""

    def __init__(self, host: str, port: int, path: str, timeout: float) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode("ascii")
        request = (
            f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        self.sock.sendall(request.encode("ascii"))
        response = b""
        while b"\r\n\r\n" not in response:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise BrowserError("DevTools closed the connection during the WebSocket handshake")
            response += chunk
        head, _, self._buffer = response.partition(b"\r\n\r\n")
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise BrowserError(f"WebSocket handshake refused: {head[:200]!r}")

    def _read(self, count: int) -> bytes:
        while len(self._buffer) < count:
            chunk = self.sock.recv(max(65536, count - len(self._buffer)))
            if not chunk:
                raise BrowserError("DevTools connection closed")
            self._buffer += chunk
        data, self._buffer = self._buffer[:count], self._buffer[count:]
        return data

    def send(self, text: str) -> None:
        payload = text.encode("utf-8")
        header = bytearray([0x81])  # FIN + text
        length = len(payload)
        if length < 126:
            header.append(0x80 | length)
        elif length < 1 << 16:
            header.append(0x80 | 126)
            header += struct.pack(">H", length)
        else:
            header.append(0x80 | 127)
            header += struct.pack(">Q", length)
        mask = os.urandom(4)
        header += mask
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(bytes(header) + masked)

    def receive(self) -> str:
        message = b""
        while True:
            first, second = self._read(2)
            opcode = first & 0x0F
            length = second & 0x7F
            if length == 126:
                (length,) = struct.unpack(">H", self._read(2))
            elif length == 127:
                (length,) = struct.unpack(">Q", self._read(8))
            mask = self._read(4) if second & 0x80 else None
            payload = self._read(length)
            if mask is not None:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            if opcode == 0x8:
                raise BrowserError("DevTools closed the WebSocket")
            if opcode == 0x9:  # ping: answer, keep reading
                continue
            if opcode in (0x0, 0x1, 0x2):
                message += payload
                if first & 0x80:
                    return message.decode("utf-8")

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


class Page:
    """One browser tab: send commands, collect events, evaluate script."""

    def __init__(self, ws: _WebSocket) -> None:
        self.ws = ws
        self.events: list[dict[str, Any]] = []
        self._id = 0

    def send(self, method: str, params: dict[str, Any] | None = None, timeout: float = 30) -> dict[str, Any]:
        self._id += 1
        ident = self._id
        self.ws.send(json.dumps({"id": ident, "method": method, "params": params or {}}))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = json.loads(self.ws.receive())
            if message.get("id") == ident:
                if "error" in message:
                    raise BrowserError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            if "method" in message:
                self.events.append(message)
        raise BrowserError(f"{method}: no answer in {timeout}s")

    def wait_for(self, method: str, timeout: float = 30) -> dict[str, Any]:
        for event in self.events:
            if event["method"] == method:
                self.events.remove(event)
                return event
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = json.loads(self.ws.receive())
            if message.get("method") == method:
                return message
            if "method" in message:
                self.events.append(message)
        raise BrowserError(f"no {method} event in {timeout}s")

    def navigate(self, url: str, timeout: float = 60) -> None:
        self.send("Page.navigate", {"url": url})
        self.wait_for("Page.loadEventFired", timeout)

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            raise BrowserError(f"script failed: {result['exceptionDetails']}")
        return result.get("result", {}).get("value")

    def wait_until(self, expression: str, timeout: float = 20) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(f"timed out waiting for {expression}")
            time.sleep(0.05)

    def screenshot(self, path: Path) -> bytes:
        data = base64.b64decode(self.send("Page.captureScreenshot", {"format": "png"})["data"])
        path.write_bytes(data)
        return data

    def problems(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries seen so far."""
        self.send("Runtime.evaluate", {"expression": "1"})  # flush pending events
        found = []
        for event in self.events:
            method, params = event["method"], event.get("params", {})
            if method == "Runtime.exceptionThrown":
                found.append(f"exception: {params.get('exceptionDetails')}")
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append(f"console.{params.get('type')}: {params.get('args')}")
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                found.append(f"log: {params['entry'].get('text')}")
        return found


class Chromium:
    """A headless Chromium process with its own profile, reachable on loopback only."""

    def __init__(self, binary: str) -> None:
        self.binary = binary
        self.profile = tempfile.mkdtemp(prefix="rewind-chromium-")
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0
        self._pages: list[Page] = []

    def __enter__(self) -> Chromium:
        self.process = subprocess.Popen(
            [self.binary, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + 30
        while not port_file.exists() or not port_file.read_text().strip():
            if self.process.poll() is not None:
                raise BrowserError(f"chromium exited with status {self.process.returncode} before DevTools started")
            if time.monotonic() > deadline:
                raise BrowserError("chromium did not start DevTools within 30s")
            time.sleep(0.05)
        self.port = int(port_file.read_text().split()[0])
        return self

    def page(self) -> Page:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        conn.request("PUT", "/json/new?about:blank")
        target = json.loads(conn.getresponse().read())
        conn.close()
        url = target["webSocketDebuggerUrl"]
        path = url.split(str(self.port), 1)[1]
        page = Page(_WebSocket("127.0.0.1", self.port, path, timeout=60))
        for domain in ("Page.enable", "Runtime.enable", "Log.enable"):
            page.send(domain)
        # New targets do not inherit --window-size: give every page the same viewport.
        page.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False},
        )
        self._pages.append(page)
        return page

    def __exit__(self, *exc: object) -> None:
        for page in self._pages:
            page.ws.close()
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)


# -- PNG ------------------------------------------------------------------------------


def png_pixels(data: bytes) -> tuple[int, int, int, bytes]:
    """``(width, height, bytes per pixel, raw pixel rows)`` of an 8-bit RGB/RGBA PNG."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat = 8, b""
    width = height = bpp = 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            if depth != 8 or color not in (2, 6):
                raise ValueError(f"unsupported PNG (depth {depth}, colour type {color})")
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
    raw = zlib.decompress(idat)
    stride = width * bpp
    out = bytearray()
    previous = bytearray(stride)
    for row in range(height):
        start = row * (stride + 1)
        kind = raw[start]
        line = bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up = previous[i]
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + ((left + up) >> 1)) & 0xFF
            elif kind == 4:
                corner = previous[i - bpp] if i >= bpp else 0
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                pred = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + pred) & 0xFF
        out += line
        previous = line
    return width, height, bpp, bytes(out)


def blankness(data: bytes, step: int = 7) -> tuple[int, float]:
    """``(distinct colours, share of non-background pixels)`` over a sample of a PNG's pixels."""
    width, height, bpp, pixels = png_pixels(data)
    colors: dict[bytes, int] = {}
    for y in range(0, height, step):
        base = y * width * bpp
        for x in range(0, width, step):
            pixel = pixels[base + x * bpp : base + x * bpp + 3]
            colors[pixel] = colors.get(pixel, 0) + 1
    total = sum(colors.values())
    background = max(colors.values()) if colors else 0
    return len(colors), (total - background) / total if total else 0.0
