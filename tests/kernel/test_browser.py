"""The Shoal kernel in a real browser: starts Jupyter Notebook on loopback with
the kernelspec of the build tree, opens a copy of examples/notebooks/tour.ipynb
in headless Chromium (Debian's chromium + chromium-driver, via selenium), runs
all cells and checks that the outputs rendered: an HTML array table, a
highlighted CUDA block, (when the notebook has plots) an SVG plot, and exactly
the errors the notebook expects. Saves a screenshot to
<build>/test-artifacts/browser-<notebook>.png.

usage: test_browser.py NOTEBOOK.ipynb [--expect-svg]

Skipped (exit 77) without chromium, chromedriver or selenium. Run through
tests/kernel/run_with_venv.py (ctest does).
"""
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

SKIP = 77
START_TIMEOUT = 60   # seconds for the server and the page
RUN_TIMEOUT = 120    # seconds for all cells to run


def find_browser():
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    driver = shutil.which("chromedriver") or ("/usr/bin/chromedriver" if os.path.exists("/usr/bin/chromedriver") else None)
    return chromium, driver


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, predicate, timeout, interval=0.25):
    deadline = time.monotonic() + timeout
    last_error = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except Exception as e:  # the page may be mid-load
            last_error = e
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout}s waiting for {what}"
                       + (f" (last error: {last_error})" if last_error else ""))


# JavaScript run in the page. window.jupyterapp exists with --expose-app-in-browser.
JS_NOTEBOOK_READY = """
const app = window.jupyterapp;
if (!app || !app.shell) return null;
const w = app.shell.currentWidget;
if (!w || !w.content || !w.sessionContext) return null;
const k = w.sessionContext.session && w.sessionContext.session.kernel;
if (!k) return null;
return {status: k.status, name: k.name, cells: w.content.widgets.length};
"""

JS_RUN_ALL = """
window.jupyterapp.commands.execute('notebook:run-all-cells');
return true;
"""

JS_PROGRESS = """
const w = window.jupyterapp.shell.currentWidget;
const k = w.sessionContext.session.kernel;
let pending = 0, done = 0;
for (const c of w.content.widgets) {
  if (c.model.type !== 'code') continue;
  if (c.model.executionCount === null || c.model.executionCount === undefined ||
      c.promptNode && c.promptNode.textContent.includes('*')) pending++; else done++;
}
return {status: k.status, pending: pending, done: done};
"""

JS_OUTPUTS = """
const root = window.jupyterapp.shell.currentWidget.content.node;
const q = s => Array.from(root.querySelectorAll(s));
const tables = q('.jp-OutputArea-output table');
const cuda = q('.jp-OutputArea-output').filter(o =>
  o.textContent.includes('__global__') && o.querySelector('span[style]'));
// JupyterLab shows image/svg+xml as an <img> of the SVG (or inline <svg>).
const svgs = q('.jp-RenderedSVG').filter(o =>
  o.querySelector('svg') || Array.from(o.querySelectorAll('img')).some(i => i.complete && i.naturalWidth > 0));
const errors = q('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')
  .map(e => e.textContent.slice(0, 300));
const cells = window.jupyterapp.shell.currentWidget.content.widgets;
const height = cells.reduce((h, c) => h + c.node.getBoundingClientRect().height, 0);
return {tables: tables.length, cuda: cuda.length, svgs: svgs.length, errors: errors,
        height: Math.ceil(height)};
"""


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    expect_svg = "--expect-svg" in sys.argv
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    notebook = os.path.abspath(args[0])
    build_dir = os.environ.get("SHOAL_BUILD_DIR", os.getcwd())

    chromium, driver = find_browser()
    if not chromium or not driver:
        print("SKIP: chromium and chromedriver are needed (Debian: apt-get install chromium chromium-driver)")
        return SKIP
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        print("SKIP: selenium is not installed in the test Python")
        return SKIP
    try:
        import notebook as _notebook  # noqa: F401  (the server)
    except ImportError:
        print("SKIP: the notebook package is not installed in the test Python")
        return SKIP

    # Which errors the notebook expects: one per cell tagged raises-exception.
    nb = json.load(open(notebook))
    expected_errors = sum(1 for c in nb["cells"]
                          if c["cell_type"] == "code" and "raises-exception" in c.get("metadata", {}).get("tags", []))

    artifacts = os.path.join(build_dir, "test-artifacts")
    os.makedirs(artifacts, exist_ok=True)
    stem = os.path.splitext(os.path.basename(notebook))[0]
    screenshot = os.path.join(artifacts, f"browser-{stem}.png")

    with tempfile.TemporaryDirectory(prefix="shoal-browser-") as tmp:
        workdir = os.path.join(tmp, "notebooks")
        os.makedirs(workdir)
        shutil.copy(notebook, workdir)
        # Every cell in the DOM (no windowing), so the checks and the screenshot see them all.
        settings = os.path.join(tmp, "lab-settings", "@jupyterlab", "notebook-extension")
        os.makedirs(settings)
        with open(os.path.join(settings, "tracker.jupyterlab-settings"), "w") as f:
            json.dump({"windowingMode": "none"}, f)
        env = dict(os.environ)
        env["JUPYTERLAB_SETTINGS_DIR"] = os.path.join(tmp, "lab-settings")
        env["JUPYTERLAB_WORKSPACES_DIR"] = os.path.join(tmp, "workspaces")

        port = free_port()
        token = secrets.token_hex(16)
        server_log = open(os.path.join(tmp, "server.log"), "w+")
        server = subprocess.Popen(
            [sys.executable, "-m", "notebook", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
             "--port-retries=0", f"--IdentityProvider.token={token}", "--expose-app-in-browser",
             "--ServerApp.root_dir=" + workdir, "--allow-root"],
            cwd=workdir, env=env, stdout=server_log, stderr=subprocess.STDOUT, start_new_session=True)
        browser = None
        try:
            base = f"http://127.0.0.1:{port}"

            def server_up():
                if server.poll() is not None:
                    raise RuntimeError("the notebook server exited")
                with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2) as r:
                    return r.status == 200
            wait_for("the notebook server", server_up, START_TIMEOUT)

            options = webdriver.ChromeOptions()
            options.binary_location = chromium
            for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                      "--window-size=1280,1000", f"--user-data-dir={os.path.join(tmp, 'chrome')}"):
                options.add_argument(a)
            browser = webdriver.Chrome(service=Service(driver), options=options)
            browser.set_script_timeout(30)
            browser.get(f"{base}/notebooks/{os.path.basename(notebook)}?token={token}")

            ready = wait_for("the notebook and its Shoal kernel",
                             lambda: (lambda r: r if r and r["status"] == "idle" else None)(
                                 browser.execute_script(JS_NOTEBOOK_READY)), START_TIMEOUT)
            if ready["name"] != "shoal":
                raise AssertionError(f"the notebook started kernel {ready['name']!r}, not shoal")
            print(f"notebook open: {ready['cells']} cells, kernel {ready['name']}")

            browser.execute_script(JS_RUN_ALL)
            started = time.monotonic()
            time.sleep(1.0)
            progress = wait_for("all cells to run",
                                lambda: (lambda p: p if p["pending"] == 0 and p["status"] == "idle" else None)(
                                    browser.execute_script(JS_PROGRESS)), RUN_TIMEOUT, interval=0.5)
            print(f"ran {progress['done']} code cells in {time.monotonic() - started:.1f}s")
            time.sleep(1.0)  # let the last outputs render

            out = browser.execute_script(JS_OUTPUTS)
            # The whole notebook in one picture: a viewport as tall as the notebook.
            height = min(max(1000, out["height"] + 400), 12000)
            browser.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                    {"width": 1280, "height": height, "deviceScaleFactor": 1, "mobile": False})
            time.sleep(1.0)
            browser.execute_script(
                "const n = window.jupyterapp.shell.currentWidget.content;"
                "n.activeCellIndex = 0; n.widgets[0].node.scrollIntoView();")
            time.sleep(0.5)
            browser.save_screenshot(screenshot)
            print(f"screenshot: {screenshot}")

            problems = []
            if out["tables"] < 1:
                problems.append("no HTML array table rendered")
            if out["cuda"] < 1:
                problems.append("no highlighted CUDA block rendered")
            if expect_svg and out["svgs"] < 1:
                problems.append("no SVG plot rendered")
            if len(out["errors"]) != expected_errors:
                problems.append(f"expected {expected_errors} error output(s), got {len(out['errors'])}: "
                                + "\n---\n".join(out["errors"]))
            print(f"notebook height {out['height']}px; rendered: {out['tables']} tables, {out['cuda']} CUDA blocks, {out['svgs']} SVGs, "
                  f"{len(out['errors'])} errors")
            if problems:
                print("FAIL: " + "; ".join(problems))
                return 1
            print("ok")
            return 0
        except Exception as e:
            print(f"FAIL: {type(e).__name__}: {e}")
            if browser is not None:
                try:
                    browser.save_screenshot(screenshot)
                    print(f"screenshot of the failure: {screenshot}")
                except Exception:
                    pass
            server_log.seek(0)
            print("---- notebook server log (last 60 lines) ----")
            print("".join(server_log.readlines()[-60:]))
            return 1
        finally:
            if browser is not None:
                try:
                    browser.quit()
                except Exception:
                    pass
            try:
                os.killpg(server.pid, signal.SIGTERM)
                server.wait(timeout=15)
            except Exception:
                try:
                    os.killpg(server.pid, signal.SIGKILL)
                except Exception:
                    pass
            server_log.close()


if __name__ == "__main__":
    sys.exit(main())
