"""Protocol tests of shoal-kernel: jupyter_kernel_test's conformance suite
plus Shoal's own checks (rich results, errors, interrupts, completion ranges).

Run through tests/kernel/run_with_venv.py (ctest does), which points
JUPYTER_PATH at the build tree's kernelspec.
"""
import os
import time
import unittest
from queue import Empty

import jupyter_kernel_test
from jupyter_client.manager import start_new_kernel

TIMEOUT = 60  # seconds for one reply; generous for a loaded CI machine

# A cell that runs for many seconds (without an interrupt).
LONG_CELL = "sum (map (\\i -> loop a = 0 for j < 200000000 do a + j % 7) (iota 64))"


class ShoalKernelTests(jupyter_kernel_test.KernelTests):
    kernel_name = "shoal"
    language_name = "shoal"
    file_extension = ".shoal"

    # There is no print statement in Shoal: command output goes to stdout.
    # `:type` prints a type through the same path, tested in ShoalExtraTests.

    completion_samples = [
        {"text": "zipWith", "matches": {"zipWith", "zipWith3"}},
        {"text": "let total = 3\nscan (+) 0 (io", "matches": {"iota"}},
    ]

    complete_code_samples = ["1 + 2", "let x = 3", "sum (iota 10)", ":help", "let f x =\n  x + 1"]
    incomplete_code_samples = ["sum (iota 10", "let x =", "[1, 2,", "if true then 1 else"]
    invalid_code_samples = ["1 +* 2", ")", "let = 3"]

    code_inspect_sample = "sum"

    # Warnings go to stderr: a nested reduction that runs sequentially in each thread.
    code_stderr = "map (\\i -> sum (take i (iota 10))) (iota 3)"

    code_execute_result = [
        {"code": "1 + 2", "result": "3"},
        {"code": "let y = 20\ny + 22", "result": "42"},
        {"code": "iota 4", "result": "[0, 1, 2, 3]"},
        {"code": "iota 4", "mime": "text/html"},
    ]

    code_display_data = [
        {"code": ":ir map (\\x -> x + 1) (iota 4)", "mime": "text/plain"},
        {"code": ":cuda map (\\x -> x + 1) (iota 4)", "mime": "text/markdown"},
        {"code": ":cuda map (\\x -> x + 1) (iota 4)", "mime": "text/html"},
        {"code": ":plot generate 50 (\\i -> float i * float i)", "mime": "image/svg+xml"},
        {"code": ":profile sum (map float (iota 1000))", "mime": "text/html"},
        {"code": ":time sum (map float (iota 1000))", "mime": "text/plain"},
    ]

    code_generate_error = "1 + true"


class KernelCells(unittest.TestCase):
    """A kernel of its own for the class, and cells run on it (no tests here)."""

    @classmethod
    def setUpClass(cls):
        cls.km, cls.kc = start_new_kernel(kernel_name="shoal", startup_timeout=TIMEOUT)

    @classmethod
    def tearDownClass(cls):
        cls.kc.stop_channels()
        cls.km.shutdown_kernel(now=True)

    def flush(self):
        for get in (self.kc.get_shell_msg, self.kc.get_iopub_msg):
            while True:
                try:
                    get(timeout=0.05)
                except Empty:
                    break

    def wait_reply(self, msg_id, timeout=TIMEOUT):
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.fail(f"no reply to {msg_id} within {timeout}s")
            reply = self.kc.get_shell_msg(timeout=left)
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply

    def outputs(self, msg_id, timeout=TIMEOUT):
        """The iopub messages of one request, until its idle status."""
        msgs = []
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.fail(f"no idle status for {msg_id} within {timeout}s")
            msg = self.kc.get_iopub_msg(timeout=left)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                return msgs
            if msg["msg_type"] not in ("status", "execute_input"):
                msgs.append(msg)

    def run_cell(self, code, timeout=TIMEOUT):
        self.flush()
        msg_id = self.kc.execute(code)
        reply = self.wait_reply(msg_id, timeout)
        return reply["content"], self.outputs(msg_id, timeout)

    def result_text(self, outs):
        res = [m for m in outs if m["msg_type"] == "execute_result"]
        self.assertEqual(len(res), 1, f"expected one execute_result in {outs}")
        return res[0]["content"]["data"]["text/plain"]


    def interrupt_busy_cell(self, setup=""):
        content, _ = self.run_cell("let survivor = 7")
        self.assertEqual(content["status"], "ok")
        self.flush()
        msg_id = self.kc.execute(setup + LONG_CELL)
        # Wait until the kernel is busy with it.
        deadline = time.monotonic() + TIMEOUT
        while True:
            msg = self.kc.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
            if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "execute_input":
                break
        time.sleep(1.0)
        started = time.monotonic()
        self.km.interrupt_kernel()
        reply = self.wait_reply(msg_id, timeout=30)["content"]
        self.assertLess(time.monotonic() - started, 20, "the interrupt took too long to stop the cell")
        self.assertEqual(reply["status"], "error")
        self.assertEqual(reply["ename"], "Interrupted")
        self.outputs(msg_id)
        self.assertTrue(self.km.is_alive())
        content, outs = self.run_cell("survivor + 1")
        self.assertEqual(content["status"], "ok")
        self.assertEqual(self.result_text(outs), "8")


class ShoalExtraTests(KernelCells):
    def test_kernel_info_banner(self):
        self.flush()
        msg_id = self.kc.kernel_info()
        content = self.wait_reply(msg_id)["content"]
        self.assertEqual(content["implementation"], "shoal-kernel")
        info = content["language_info"]
        self.assertEqual(info["name"], "shoal")
        self.assertEqual(info["mimetype"], "text/x-shoal")
        self.assertEqual(info["pygments_lexer"], "haskell")
        # The banner says what runs the arrays, from the executor's own description.
        self.assertIn("running: compiled kernels on the CPU executor", content["banner"])

    def test_array_result_has_html_table(self):
        content, outs = self.run_cell("generate (3, 2) (\\i j -> i * 2 + j)")
        self.assertEqual(content["status"], "ok")
        res = [m for m in outs if m["msg_type"] == "execute_result"]
        self.assertEqual(len(res), 1)
        data = res[0]["content"]["data"]
        self.assertEqual(data["text/plain"], "[[0, 1], [2, 3], [4, 5]]")
        self.assertIn("<table", data["text/html"])

    def test_scalar_result_is_plain_only(self):
        content, outs = self.run_cell("sum (iota 10)")
        self.assertEqual(content["status"], "ok")
        res = [m for m in outs if m["msg_type"] == "execute_result"]
        self.assertEqual(res[0]["content"]["data"], {"text/plain": "45"})

    def test_cuda_display(self):
        content, outs = self.run_cell(":cuda map (\\x -> x * 2.0) (generate 8 (\\i -> float i))")
        self.assertEqual(content["status"], "ok")
        shown = [m for m in outs if m["msg_type"] == "display_data"]
        self.assertEqual(len(shown), 1, outs)
        data = shown[0]["content"]["data"]
        self.assertIn("```cuda", data["text/markdown"])
        self.assertIn("__global__", data["text/plain"])
        self.assertIn("<span style=", data["text/html"])

    def test_empty_and_comment_cells(self):
        for code in ("", "\n\n", "-- only a comment"):
            content, outs = self.run_cell(code)
            self.assertEqual(content["status"], "ok", code)
            self.assertEqual(outs, [], code)

    def test_let_gives_no_result(self):
        content, outs = self.run_cell("let unused_binding = iota 3")
        self.assertEqual(content["status"], "ok")
        self.assertEqual(outs, [])

    def test_every_value_shown_last_is_result(self):
        content, outs = self.run_cell("1 + 1\nlet q = 5\nq * 2")
        self.assertEqual(content["status"], "ok")
        kinds = [m["msg_type"] for m in outs]
        self.assertEqual(kinds, ["display_data", "execute_result"])
        self.assertEqual(outs[0]["content"]["data"]["text/plain"], "2")
        self.assertEqual(outs[1]["content"]["data"]["text/plain"], "10")
        self.assertEqual(outs[1]["content"]["execution_count"], content["execution_count"])

    def test_command_output_is_stdout_stream(self):
        content, outs = self.run_cell(":type iota")
        self.assertEqual(content["status"], "ok")
        streams = [m for m in outs if m["msg_type"] == "stream"]
        self.assertEqual(len(streams), 1)
        self.assertEqual(streams[0]["content"]["name"], "stdout")
        self.assertIn("int", streams[0]["content"]["text"])

    def test_error_reply_and_message(self):
        content, outs = self.run_cell("let fine = 1\nfine + true")
        self.assertEqual(content["status"], "error")
        self.assertEqual(content["ename"], "TypeError")
        self.assertNotIn("error:", content["evalue"])  # the bare message
        self.assertTrue(content["evalue"])
        tb = content["traceback"]
        self.assertIsInstance(tb, list)
        self.assertTrue(all(isinstance(line, str) for line in tb))
        self.assertTrue(tb[0].startswith(f"cell[{content['execution_count']}]:2:"), tb)
        self.assertIn("fine + true", "\n".join(tb))
        self.assertIn("^", "\n".join(tb))
        errors = [m for m in outs if m["msg_type"] == "error"]
        self.assertEqual(len(errors), 1)
        self.assertEqual(errors[0]["content"]["ename"], "TypeError")
        self.assertEqual(errors[0]["content"]["evalue"], content["evalue"])

    def test_syntax_and_runtime_error_names(self):
        content, _ = self.run_cell("1 +* 2")
        self.assertEqual(content["ename"], "SyntaxError")
        content, _ = self.run_cell("(iota 3)[7]")
        self.assertEqual(content["ename"], "RuntimeError")

    def test_bindings_survive_errors(self):
        content, _ = self.run_cell("let keep = 41")
        self.assertEqual(content["status"], "ok")
        content, _ = self.run_cell("let keep = keep + true")
        self.assertEqual(content["status"], "error")
        content, outs = self.run_cell("keep + 1")
        self.assertEqual(content["status"], "ok")
        self.assertEqual(self.result_text(outs), "42")

    def test_completion_cursor_range_unicode(self):
        # Jupyter counts the cursor in code points: "é" is one, two bytes.
        code = "-- é ü\nlet zz = 1\nsum (io"
        self.flush()
        msg_id = self.kc.complete(code, len(code))
        content = self.wait_reply(msg_id)["content"]
        self.assertIn("iota", content["matches"])
        self.assertEqual(content["cursor_end"], len(code))
        self.assertEqual(content["cursor_start"], len(code) - 2)
        # In the middle of a cell, a name bound earlier.
        code = "let löwe = 1\nlet lambda_x = 2\nlam + 1"
        pos = code.index("lam + 1") + 3
        msg_id = self.kc.complete(code, pos)
        content = self.wait_reply(msg_id)["content"]
        self.assertEqual((content["cursor_start"], content["cursor_end"]), (pos - 3, pos))

    def test_completion_commands_and_bindings(self):
        self.run_cell("let velocity = iota 3")
        self.flush()
        msg_id = self.kc.complete("velo", 4)
        self.assertIn("velocity", self.wait_reply(msg_id)["content"]["matches"])
        msg_id = self.kc.complete(":ty", 3)
        content = self.wait_reply(msg_id)["content"]
        self.assertIn(":type", content["matches"])
        self.assertEqual(content["cursor_start"], 0)

    def test_inspect(self):
        self.flush()
        msg_id = self.kc.inspect("map (\\x -> x) (iota 3)", 1)
        content = self.wait_reply(msg_id)["content"]
        self.assertTrue(content["found"])
        self.assertIn("map", content["data"]["text/plain"])
        msg_id = self.kc.inspect("no_such_name_here", 3)
        self.assertFalse(self.wait_reply(msg_id)["content"]["found"])
        self.run_cell("let sq x = x * x")
        msg_id = self.kc.inspect("sq", 2, detail_level=1)
        content = self.wait_reply(msg_id)["content"]
        self.assertTrue(content["found"])
        self.assertIn("x * x", content["data"]["text/plain"])

    def test_interrupt_busy_cell(self):
        self.interrupt_busy_cell()

    def test_interrupt_busy_cell_reference_backend(self):
        try:
            self.interrupt_busy_cell(":set backend reference\n")
        finally:
            self.run_cell(":set backend compiled")

    def test_silent_execution_publishes_nothing(self):
        self.flush()
        msg_id = self.kc.execute("let silent_value = 5\nsilent_value + 1\n:type iota", silent=True)
        reply = self.wait_reply(msg_id)["content"]
        self.assertEqual(reply["status"], "ok")
        self.assertEqual(self.outputs(msg_id), [])
        content, outs = self.run_cell("silent_value")
        self.assertEqual(self.result_text(outs), "5")

    def test_output_order(self):
        content, outs = self.run_cell("1\n:type sum\n2\n3 + true\n4")
        self.assertEqual(content["status"], "error")
        kinds = [(m["msg_type"], m["content"].get("name")) for m in outs]
        self.assertEqual(kinds, [("display_data", None), ("stream", "stdout"), ("display_data", None),
                                 ("error", None), ("execute_result", None)])

    def test_z_quit_starts_a_fresh_session(self):
        # Named to run last: it forgets the bindings of the other tests.
        self.run_cell("let before_quit = 1")
        content, outs = self.run_cell(":quit")
        self.assertEqual(content["status"], "ok")
        self.assertEqual(content["payload"][0]["source"], "ask_exit")
        self.assertTrue(self.km.is_alive())
        content, outs = self.run_cell("let a = 2\nlet b = 3\na * b")
        self.assertEqual(content["status"], "ok")
        self.assertEqual(self.result_text(outs), "6")
        content, _ = self.run_cell("before_quit")
        self.assertEqual(content["status"], "error")

    def test_interrupt_idle(self):
        self.run_cell("let idle_value = 3")
        for _ in range(3):
            self.km.interrupt_kernel()
            time.sleep(0.2)
        time.sleep(0.5)
        self.assertTrue(self.km.is_alive())
        # The pending interrupt does not cancel the next cell.
        content, outs = self.run_cell("idle_value * 2")
        self.assertEqual(content["status"], "ok")
        self.assertEqual(self.result_text(outs), "6")


class ShoalRanksTests(KernelCells):
    """`:set ranks N` from a notebook (docs/scale-out.md): the kernel spawns
    workers running build/shoal beside it; Interrupt reaches every rank."""

    def test_ranks_in_a_notebook(self):
        content, outs = self.run_cell(":set ranks 3")
        if content["status"] == "error" and "built without MPI" in content.get("evalue", ""):
            self.skipTest("Shoal was built without MPI")
        self.assertEqual(content["status"], "ok", content)
        text = "".join(m["content"].get("text", "") for m in outs if m["msg_type"] == "stream")
        self.assertIn("3 ranks (workers spawned by this process over MPI)", text)
        content, outs = self.run_cell("let xs = iota 10\nsum xs")
        self.assertEqual(self.result_text(outs), "45")
        content, outs = self.run_cell("xs[10]")
        self.assertEqual(content["status"], "error")
        self.assertEqual(content["ename"], "RuntimeError")
        # Interrupt stops the cell on every rank; the session and its world stay.
        self.interrupt_busy_cell()
        content, outs = self.run_cell("sum xs + 1")
        self.assertEqual(self.result_text(outs), "46")
        content, outs = self.run_cell(":ranks")
        text = "".join(m["content"].get("text", "") for m in outs if m["msg_type"] == "stream")
        self.assertIn("3 ranks", text)


class ShoalSecurityTests(unittest.TestCase):
    """Messages signed with another key are rejected (and logged); the kernel
    listens only where its connection file says."""

    def test_message_signed_with_another_key_is_rejected(self):
        import tempfile
        from jupyter_client.session import Session
        log = tempfile.TemporaryFile(mode="w+")
        km, kc = start_new_kernel(kernel_name="shoal", startup_timeout=TIMEOUT, stderr=log)
        try:
            # Sent on the kernel's own shell socket, signed with a wrong key.
            forger = Session(key=b"not-the-connection-files-key", username="forger")
            forger.send(kc.shell_channel.socket, "execute_request",
                        {"code": "let forged = 1", "silent": False, "store_history": True,
                         "user_expressions": {}, "allow_stdin": False, "stop_on_error": True})
            with self.assertRaises(Empty):  # no reply to it
                while True:
                    reply = kc.get_shell_msg(timeout=3)
                    self.assertNotEqual(reply["parent_header"].get("username"), "forger")
            self.assertTrue(km.is_alive())
            # It ran nothing: the name it would have bound does not exist.
            msg_id = kc.execute("forged")
            reply = kc.get_shell_msg(timeout=TIMEOUT)
            self.assertEqual(reply["parent_header"]["msg_id"], msg_id)
            self.assertEqual(reply["content"]["status"], "error")
            self.assertIn("unknown name", reply["content"]["evalue"])
            log.seek(0)
            self.assertIn("Signatures don't match", log.read())  # logged
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)
            log.close()

    def test_listens_only_where_the_connection_file_says(self):
        import subprocess
        km, kc = start_new_kernel(kernel_name="shoal", startup_timeout=TIMEOUT)
        try:
            pid = km.provisioner.process.pid if km.provisioner else km.kernel.pid
            ports = {km.shell_port, km.iopub_port, km.stdin_port, km.control_port, km.hb_port}
            out = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True).stdout
            listening = set()
            for line in out.splitlines():
                if "pid=%d," % pid not in line:
                    continue
                local = line.split()[3]
                address, port = local.rsplit(":", 1)
                listening.add((address, int(port)))
            if not listening:
                self.skipTest("ss shows no sockets of the kernel (no iproute2?)")
            self.assertEqual({p for _, p in listening}, ports)
            for address, _ in listening:
                self.assertIn(address, ("127.0.0.1", "[::ffff:127.0.0.1]"), listening)
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)


class ShoalFileNameTests(unittest.TestCase):
    """Completion of file names that are not valid UTF-8 (replaced, not fatal)."""

    def test_invalid_utf8_file_name(self):
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            open(os.path.join(os.fsencode(tmp), b"bad\xff.shoal"), "w").close()
            open(os.path.join(tmp, "good.shoal"), "w").close()
            km, kc = start_new_kernel(kernel_name="shoal", startup_timeout=TIMEOUT, cwd=tmp)
            try:
                msg_id = kc.complete(':load "', 7)
                reply = kc.get_shell_msg(timeout=TIMEOUT)
                self.assertEqual(reply["parent_header"]["msg_id"], msg_id)
                matches = reply["content"]["matches"]
                self.assertIn("good.shoal", matches)
                self.assertEqual(len(matches), 2, matches)
                self.assertTrue(km.is_alive())
            finally:
                kc.stop_channels()
                km.shutdown_kernel(now=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
