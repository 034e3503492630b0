"""Tests of fftconv-bench's command line that need no GPU: --resume's checks of the file it
continues and its count of the row-passes left, and the usage errors of --resume.

The driver is the one FFTCONV_BENCH names (ctest sets it to the build's fftconv-bench); it runs
with CUDA_VISIBLE_DEVICES empty, so it stops at its device check (exit 2) after the resume
message on every machine, GPU or not.

    FFTCONV_BENCH=build/apps/fftconv-bench python3 -m unittest -v test_bench_driver
"""

import json
import os
import subprocess
import tempfile
import unittest

BENCH = os.environ.get("FFTCONV_BENCH", "")
DESC = "n1c1h96w96k1r45s45p22x22u1x1d1x1g1f32"


def meta(**over):
    m = {"command": "fftconv-bench --desc " + DESC, "device": "NVIDIA H200", "iters": 20,
         "warmup": 5, "graph": False, "interleave": False, "complete": False, "algo": "auto",
         "verify": False, "cudnn": True, "gemm": "", "gaussian": 0.0, "cudnn_search": "auto"}
    m.update(over)
    return m


@unittest.skipUnless(BENCH and os.path.exists(BENCH), "FFTCONV_BENCH does not name the driver")
class Resume(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.tmp.name, "suite.json")

    def tearDown(self):
        self.tmp.cleanup()

    def bench(self, *args):
        env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
        return subprocess.run([BENCH, "--desc", DESC, *args], capture_output=True, text=True,
                              env=env, timeout=120)

    def read(self):
        with open(self.path) as f:
            return f.read()

    def write(self, doc):
        with open(self.path, "w") as f:
            f.write(doc if isinstance(doc, str) else json.dumps(doc))

    def test_absent_file_runs_everything(self):
        p = self.bench("--pass", "fwd,dgrad,wgrad", "--resume", "--json", self.path)
        self.assertIn("resuming %s: 0 row-pass(es) kept, 3 to run" % self.path, p.stdout)
        self.assertEqual(p.returncode, 2)  # no device here
        self.assertFalse(os.path.exists(self.path))

    def test_kept_rows_are_not_run_again(self):
        self.write({"meta": meta(), "rows": [
            {"name": "a", "desc": DESC, "pass": "fwd", "verified": True, "within_tolerance": True},
            {"name": "b", "desc": "n2" + DESC[2:], "pass": "dgrad"}]})
        p = self.bench("--pass", "fwd,dgrad,wgrad", "--resume", "--json", self.path)
        # The second row is another shape: kept in the file, not counted against this one's.
        self.assertIn("2 row-pass(es) kept, 2 to run", p.stdout)
        # Nothing left: done, without a device, and the file as it was.
        before = self.read()
        p = self.bench("--pass", "fwd", "--resume", "--json", self.path)
        self.assertIn("2 row-pass(es) kept, 0 to run", p.stdout)
        self.assertEqual(p.returncode, 0)
        self.assertEqual(self.read(), before)

    def test_unmeasured_rows_run_again(self):
        self.write({"meta": meta(), "rows": [
            {"desc": DESC, "pass": "fwd", "status": "error: out of memory"},
            {"desc": DESC, "pass": "dgrad", "status": "FAIL rel_l2 1e-3"}]})
        p = self.bench("--pass", "fwd,dgrad", "--resume", "--json", self.path)
        self.assertIn("1 row-pass(es) kept, 1 to run (1 unmeasured row(s) dropped)", p.stdout)

    def test_kept_rows_out_of_tolerance_fail_a_verified_run(self):
        self.write({"meta": meta(verify=True), "rows": [
            {"desc": DESC, "pass": "fwd", "verified": True, "within_tolerance": False}]})
        p = self.bench("--pass", "fwd", "--verify", "--resume", "--json", self.path)
        self.assertIn("1 row-pass(es) kept, 0 to run", p.stdout)
        self.assertEqual(p.returncode, 1)

    def test_other_timing_settings_are_refused(self):
        for key, value, flag in (("iters", 10, ()), ("warmup", 5, ("--warmup", "3")),
                                 ("graph", True, ()), ("interleave", True, ()),
                                 ("algo", "fft", ()), ("verify", True, ()),
                                 ("cudnn", False, ()), ("gaussian", 7.0, ())):
            with self.subTest(key=key):
                self.write({"meta": meta(**{key: value}), "rows": []})
                p = self.bench("--resume", "--json", self.path, *flag)
                self.assertEqual(p.returncode, 2)
                self.assertIn("was timed with " + key, p.stderr)
                self.assertNotIn("resuming", p.stdout)

    def test_files_that_are_not_results(self):
        cases = {"{x": "is not JSON", "[]": "is not a results file",
                 json.dumps({"meta": meta(), "rows": [{"name": "a"}]}): "without desc and pass",
                 json.dumps({"meta": meta(), "rows": [{"desc": DESC, "pass": True}]}):
                     "without desc and pass (strings)",
                 json.dumps({"meta": meta(), "rows": [{"desc": DESC, "pass": "fwd",
                                                       "verified": 1}]}):
                     "whose verified is not true or false",
                 json.dumps({"meta": meta(device=3), "rows": []}): "device is not a string"}
        for text, why in cases.items():
            with self.subTest(text=text):
                self.write(text)
                p = self.bench("--resume", "--json", self.path)
                self.assertEqual(p.returncode, 2)
                self.assertIn(why, p.stderr)

    def test_a_stopped_write_is_refused(self):
        with open(self.path + ".tmp", "w") as f:
            f.write("{")
        p = self.bench("--resume", "--json", self.path)
        self.assertEqual(p.returncode, 2)
        self.assertIn("stopped while writing it", p.stderr)

    def test_usage_errors(self):
        p = self.bench("--resume")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--resume needs --json FILE", p.stderr)
        p = self.bench("--resume", "--json", self.path, "--dtypes", "f32,f16", "--interleave")
        self.assertEqual(p.returncode, 2)
        self.assertIn("does not take --interleave", p.stderr)


if __name__ == "__main__":
    unittest.main()
