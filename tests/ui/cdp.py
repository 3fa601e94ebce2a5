# SPDX-License-Identifier: BSD-2-Clause
# Copyright (c) The Sluice authors
"""cdp.py - Debian's chromium, headless, driven through the DevTools
protocol over a pipe (--remote-debugging-pipe: JSON messages ended by NUL
on file descriptors 3 and 4), so the tests need no WebSocket library, no
npm package and no network: only /usr/bin/chromium and python3.

It does what the dashboard's test needs - open a page, evaluate script,
wait for a condition, click an element, take a screenshot - and no more.
The browser runs with a fresh profile in a temporary directory, in a
process group of its own that is killed by its id when closed.
"""
import base64
import json
import os
import select
import signal
import subprocess
import tempfile
import time

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")


class CDPError(Exception):
    pass


class Browser:
    def __init__(self, width=1280, height=1000):
        self.profile = tempfile.TemporaryDirectory(prefix="sluice-chromium-",
                                                   ignore_cleanup_errors=True)
        to_r, self._to_w = os.pipe()  # we write commands, chromium reads fd 3
        self._from_r, from_w = os.pipe()  # chromium writes fd 4, we read
        args = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--disable-extensions", "--mute-audio",
                "--disable-dev-shm-usage", f"--user-data-dir={self.profile.name}",
                f"--window-size={width},{height}", "--remote-debugging-pipe", "about:blank"]

        def fds():  # in the child: the pipe ends become fds 3 and 4 (inheritable)
            a, b = os.dup(to_r), os.dup(from_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.log = open(os.path.join(self.profile.name, "chromium.log"), "wb")
        # close_fds would close 3 and 4 after fds() ran; Python's own
        # descriptors are not inheritable, so nothing else leaks.
        # Its own process group: chromium's helpers go with it on close.
        self.proc = subprocess.Popen(args, preexec_fn=fds, close_fds=False,
                                     start_new_session=True, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        os.close(to_r)
        os.close(from_w)
        self._buf = b""
        self._id = 0
        self.events = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target,
                                 flatten=True)["sessionId"]
        self.page("Page.enable")
        self.page("Runtime.enable")
        self.page("Emulation.setDeviceMetricsOverride", width=width, height=height,
                  deviceScaleFactor=1, mobile=False)

    def _read_message(self, deadline):
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_r], [], [], left)[0]:
                raise CDPError("chromium did not answer in time")
            chunk = os.read(self._from_r, 1 << 20)
            if not chunk:
                raise CDPError("chromium closed its pipe")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, session=None, timeout=30, **params):
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self._to_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            m = self._read_message(deadline)
            if m.get("id") == self._id:
                if "error" in m:
                    raise CDPError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def page(self, method, **params):
        return self.call(method, session=self.session, **params)

    def goto(self, url):
        self.page("Page.navigate", url=url)
        self.wait("document.readyState === 'complete'")

    def eval(self, expr):
        """The value of expr (awaited if a promise), as JSON."""
        r = self.page("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise CDPError(f"{expr}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def wait(self, expr, timeout=20):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                v = self.eval(expr)
            except CDPError:
                v = None
            if v:
                return v
            time.sleep(0.1)
        raise CDPError(f"timed out waiting for: {expr}")

    def click(self, selector):
        """A real mouse click at the middle of the first element matching selector."""
        box = self.eval(f"""(() => {{ const e = document.querySelector({json.dumps(selector)});
            if (!e) return null; e.scrollIntoView({{block: 'center'}});
            const r = e.getBoundingClientRect();
            return {{x: r.x + r.width / 2, y: r.y + r.height / 2}}; }})()""")
        if not box:
            raise CDPError(f"nothing matches {selector}")
        for kind in ("mousePressed", "mouseReleased"):
            self.page("Input.dispatchMouseEvent", type=kind, x=box["x"], y=box["y"],
                      button="left", clickCount=1)

    def type_text(self, selector, text):
        self.eval(f"document.querySelector({json.dumps(selector)}).focus()")
        self.page("Input.insertText", text=text)

    def screenshot(self, path):
        data = self.page("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(data["data"]))
        return path

    def close(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # the group this Browser started
        except ProcessLookupError:
            pass
        self.proc.wait()
        os.close(self._to_w)
        os.close(self._from_r)
        self.log.close()
        self.profile.cleanup()
