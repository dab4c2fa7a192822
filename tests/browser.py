"""Headless Chromium driven over the DevTools protocol on a pipe (stdlib only).

``--remote-debugging-pipe`` makes Chromium read JSON commands from file
descriptor 3 and write answers and events to descriptor 4, each message ended
by a NUL byte: no port, no websocket library.  Every wait is bounded.

Shared by the browser checks of the documentation site and of the fleet
report; :func:`require_chromium` skips a test without Chromium (and fails it
when the environment sets CI).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

#: Where Debian's ``chromium`` package installs the browser.
CHROMIUM = Path("/usr/bin/chromium")

#: Flags for a quiet, isolated, loopback-only browser (the site is served on 127.0.0.1).
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--mute-audio",
    # Any name but 127.0.0.1 fails to resolve: nothing leaves the machine.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
)


def _above(fd: int, lowest: int) -> int:
    """``fd`` moved to a descriptor number of ``lowest`` or more (the old one closed)."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD, lowest)
    os.close(fd)
    return moved


class BrowserError(RuntimeError):
    """Chromium did not answer in time, answered an error, or exited."""


def chromium_path() -> Path | None:
    """The Chromium executable, or ``None`` when it is not installed."""
    if CHROMIUM.is_file():
        return CHROMIUM
    found = shutil.which("chromium")
    return Path(found) if found else None


def require_chromium(purpose: str) -> Path:
    """The Chromium executable; skips the test without it (fails it when CI is set).

    ``purpose`` says what needs the browser, for the skip reason.
    """
    found = chromium_path()
    if found is None:
        message = (f"Chromium is not installed (Debian package 'chromium'; make test "
                   f"installs it): {purpose} needs it")
        if os.environ.get("CI"):
            pytest.fail(message + " (CI is set, so it must be present)")
        pytest.skip(message)
    return found


class Browser:
    """One headless Chromium with one page (tab), closed by :meth:`close`."""

    def __init__(self, executable: Path, user_data_dir: Path, width: int, height: int,
                 timeout: float = 20.0) -> None:
        self.timeout = timeout
        self._next_id = 0
        self._buffer = b""
        self._events: list[dict[str, Any]] = []
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # Chromium's ends go to descriptors 10 or above first, so that moving them to
        # 3 and 4 cannot overwrite one with the other (a pipe may itself be on 3 or 4).
        to_browser_r, from_browser_w = (_above(to_browser_r, 10), _above(from_browser_w, 10))
        # bash moves the pipe ends to descriptors 3 and 4, where Chromium expects them
        # (dash, Debian's sh, cannot name descriptors above 9).
        self._proc = subprocess.Popen(
            ["bash", "-c", 'exec 3<&"$0" 4>&"$1"; shift; exec "$@"',
             str(to_browser_r), str(from_browser_w), str(executable), *FLAGS,
             "--remote-debugging-pipe", f"--user-data-dir={user_data_dir}",
             f"--window-size={width},{height}", "about:blank"],
            pass_fds=(to_browser_r, from_browser_w),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        try:
            target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
            self._session = self.send("Target.attachToTarget",
                                      {"targetId": target, "flatten": True})["sessionId"]
            self.send("Page.enable", session=True)
            self.send("Emulation.setDeviceMetricsOverride",
                      {"width": width, "height": height, "deviceScaleFactor": 1,
                       "mobile": False}, session=True)
        except BaseException:
            self.close()
            raise

    def send(self, method: str, params: dict[str, Any] | None = None, *,
             session: bool = False) -> dict[str, Any]:
        """Send one command and wait (bounded) for its answer."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method,
                                   "params": params or {}}
        if session:
            message["sessionId"] = self._session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read(deadline, f"an answer to {method}")
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method} failed: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            if "method" in reply:
                self._events.append(reply)

    def wait_event(self, method: str, deadline: float) -> dict[str, Any]:
        """Wait (until ``deadline``, monotonic) for the next event named ``method``."""
        while True:
            for index, event in enumerate(self._events):
                if event["method"] == method:
                    del self._events[index]
                    return event
            event = self._read(deadline, f"the event {method}")
            if "method" in event:
                self._events.append(event)

    def _read(self, deadline: float, waiting_for: str) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError(f"Chromium sent no {waiting_for} within {self.timeout} s")
            ready, _, _ = select.select([self._from_browser], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise BrowserError(f"Chromium exited (code {self._proc.poll()}) while "
                                   f"waiting for {waiting_for}")
            self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\0")
        message: dict[str, Any] = json.loads(raw)
        return message

    def open(self, url: str) -> None:
        """Load ``url`` and wait for its load event."""
        self._events.clear()
        deadline = time.monotonic() + self.timeout
        result = self.send("Page.navigate", {"url": url}, session=True)
        if result.get("errorText"):
            raise BrowserError(f"cannot open {url}: {result['errorText']}")
        self.wait_event("Page.loadEventFired", deadline)

    def evaluate(self, expression: str) -> Any:
        """The JSON value of a JavaScript expression in the page."""
        result = self.send("Runtime.evaluate", {"expression": expression,
                                                "returnByValue": True}, session=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path, *, full_page: bool = False) -> None:
        """Save what the window shows as a PNG (with ``full_page``, the whole page)."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.send("Page.getLayoutMetrics", session=True)["cssContentSize"]
            params["captureBeyondViewport"] = True
            params["clip"] = {"x": 0, "y": 0, "width": size["width"],
                              "height": size["height"], "scale": 1}
        data = self.send("Page.captureScreenshot", params, session=True)["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        """Ask Chromium to quit, then make sure it has (bounded)."""
        try:
            if self._proc.poll() is None:
                self.timeout = min(self.timeout, 5.0)
                with contextlib.suppress(BrowserError, OSError):
                    self.send("Browser.close")
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=10)
        finally:
            for fd in (self._to_browser, self._from_browser):
                with contextlib.suppress(OSError):
                    os.close(fd)
