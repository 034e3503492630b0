"""Tests of scripts/bench_compare, scripts/bench_report and bench/torch_baseline.py's helpers.

Standard library only; the chart is tested only where matplotlib imports, and nothing here
needs PyTorch (test_torch_baseline.py covers the torch parts where torch is installed).

    python3 -m unittest discover -s tests/scripts -v
"""

import importlib.machinery
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, os.pardir, os.pardir))
FIXTURES = os.path.join(HERE, "fixtures")
COMPARE = os.path.join(ROOT, "scripts", "bench_compare")
REPORT = os.path.join(ROOT, "scripts", "bench_report")
TORCH_BASELINE = os.path.join(ROOT, "bench", "torch_baseline.py")
PARITY = os.path.join(ROOT, "bench", "parity.py")

try:
    import matplotlib  # noqa: F401
    HAVE_MATPLOTLIB = True
except ImportError:
    HAVE_MATPLOTLIB = False


def fixture(name):
    return os.path.join(FIXTURES, name)


def load_script(name, path):
    """Imports a script (also one without .py) as a module, without writing __pycache__."""
    loader = importlib.machinery.SourceFileLoader(name, path)
    spec = importlib.util.spec_from_loader(name, loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    dont_write = sys.dont_write_bytecode
    sys.dont_write_bytecode = True
    try:
        loader.exec_module(module)
    finally:
        sys.dont_write_bytecode = dont_write
    return module


def run(script, *args):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, script, *args], capture_output=True, text=True,
                          env=env, timeout=120)


def write_json(directory, name, doc):
    path = os.path.join(directory, name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    return path


def entry(name, ms, **extra):
    return dict({"name": name, "run_name": name, "run_type": "iteration", "iterations": 20,
                 "real_time": ms, "cpu_time": 0.01, "time_unit": "ms"}, **extra)


def row_of(markdown, case, pass_):
    """The table row of (case, pass) split into stripped cells."""
    for line in markdown.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > 2 and cells[0] == case and pass_ in cells[1:3]:
            return cells
    raise AssertionError(f"no row for {case} {pass_} in:\n{markdown}")


class LoaderTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.bc = load_script("bench_compare", COMPARE)

    def test_suffixes_units_and_median_aggregate(self):
        rs = self.bc.load_results(fixture("compare_old.json"))
        self.assertIn("landmark_batch64/fwd/fftconv_auto", rs.results)  # /manual_time dropped
        self.assertAlmostEqual(rs.results["odd_rect/fwd/fftconv_auto"].time_ms, 0.5)  # 500 us
        mc = rs.results["multichannel_r45/fwd/fftconv_auto"]
        self.assertEqual(mc.source, "median")
        self.assertAlmostEqual(mc.time_ms, 2.2)
        self.assertEqual(rs.results["landmark_batch64/fwd/fftconv_auto"].counter("floor_pct"), 40.0)
        self.assertNotIn("dilated2/fwd/torch_fft", rs.results)
        self.assertEqual(rs.errors["dilated2/fwd/torch_fft"], "out of memory")

    def test_repetitions_without_aggregates_use_their_median(self):
        with tempfile.TemporaryDirectory() as d:
            path = write_json(d, "reps.json", {"benchmarks": [
                entry("a/fwd/p", 1.0, tflops=1.0), entry("a/fwd/p", 9.0, tflops=9.0),
                entry("a/fwd/p", 2.0, tflops=2.0)]})
            res = self.bc.load_results(path).results["a/fwd/p"]
        self.assertEqual(res.time_ms, 2.0)
        self.assertEqual(res.counter("TFLOPS"), 2.0)  # counters: median too, any case

    def test_skipped_entries_and_bad_time_unit(self):
        with tempfile.TemporaryDirectory() as d:
            path = write_json(d, "skip.json", {"benchmarks": [
                dict(entry("a/fwd/p", 0.0), skipped=True, skip_message="no GPU")]})
            rs = self.bc.load_results(path)
            self.assertEqual(rs.results, {})
            self.assertEqual(rs.errors, {"a/fwd/p": "no GPU"})
            bad = write_json(d, "unit.json", {"benchmarks": [dict(entry("a/fwd/p", 1.0),
                                                                  time_unit="fortnights")]})
            with self.assertRaisesRegex(self.bc.InputError, "time_unit"):
                self.bc.load_results(bad)


    def test_cut_off_file_keeps_its_complete_benchmarks(self):
        # As Google Benchmark writes it (2-space indent, entries at 4), stopped by a time limit
        # after the second entry, in the third, or before any.
        doc = {"context": {"executable": "fftconv_gbench"},
               "benchmarks": [entry(f"c{i}/fwd/fftconv_auto", float(i + 1)) for i in range(3)]}
        text = json.dumps(doc, indent=2)
        after_two = text[:text.index('"c2/fwd') - 1].rstrip().rstrip(",")
        cuts = {"after_two.json": (after_two, 2),
                "in_third.json": (text[:text.index('"real_time": 3.0')], 2),
                "before_any.json": (text[:text.index('"benchmarks": [') + 15], None)}
        with tempfile.TemporaryDirectory() as d:
            for name, (cut, kept) in cuts.items():
                path = os.path.join(d, name)
                with open(path, "w", encoding="utf-8") as f:
                    f.write(cut)
                if kept is None:  # nothing complete to keep: bad input
                    with self.assertRaisesRegex(self.bc.InputError, "not valid JSON"):
                        self.bc.load_results(path)
                    continue
                rs = self.bc.load_results(path)
                self.assertEqual(len(rs.results), kept, name)
                self.assertEqual(rs.results["c1/fwd/fftconv_auto"].time_ms, 2.0)
                self.assertEqual(rs.context.get("executable"), "fftconv_gbench")
            # The command-line tools read it too, and say so.
            p = run(REPORT, os.path.join(d, "in_third.json"), "--markdown", "-")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("cut off", p.stderr)
            self.assertIn("c1", p.stdout)
            # Text that is no cut-off benchmark file is still an error.
            bad = os.path.join(d, "bad.json")
            with open(bad, "w", encoding="utf-8") as f:
                f.write('{"rows": [1, 2')
            with self.assertRaisesRegex(self.bc.InputError, "not valid JSON"):
                self.bc.load_results(bad)

    def test_fftconv_bench_json(self):
        # The driver's own schema: meta + rows; rows without a pass (older files) are fwd.
        doc = {"meta": {"command": "fftconv-bench --shapes suite.csv --verify"}, "rows": [
            {"name": "a", "pass": "wgrad", "engine_ms": 1.0, "cudnn_ms": 4.0,
             "cudnn_algo": "FFT/fma", "cudnn_tf32_ms": None, "floor_ms": 0.25, "algo": "fft"},
            {"name": "b", "pass": True, "engine_ms": 2.0, "cudnn_ms": None}]}
        with tempfile.TemporaryDirectory() as d:
            rs = self.bc.load_results(write_json(d, "driver.json", doc))
        self.assertEqual(sorted(rs.results), ["a/wgrad/cudnn_fp32", "a/wgrad/fftconv_auto",
                                              "b/fwd/fftconv_auto"])
        self.assertEqual(rs.results["a/wgrad/fftconv_auto"].counter("floor_pct"), 25.0)
        self.assertEqual(rs.results["a/wgrad/cudnn_fp32"].time_ms, 4.0)


class CompareTest(unittest.TestCase):
    def test_detects_15_percent_not_5_percent(self):
        p = run(COMPARE, fixture("compare_old.json"), fixture("compare_new.json"))
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        lines = {ln.split()[0]: ln for ln in p.stdout.splitlines() if ln.strip()}
        self.assertIn("+15.0%", lines["landmark_batch64/fwd/fftconv_auto"])
        self.assertIn("REGRESSION", lines["landmark_batch64/fwd/fftconv_auto"])
        self.assertIn("+5.0%", lines["landmark_batch64/fwd/cudnn_fp32"])
        self.assertNotIn("REGRESSION", lines["landmark_batch64/fwd/cudnn_fp32"])
        # The median aggregate decides (2.2 -> 2.0), not the iterations or the mean.
        self.assertIn("-9.1%", lines["multichannel_r45/fwd/fftconv_auto"])
        self.assertNotIn("REGRESSION", lines["multichannel_r45/fwd/fftconv_auto"])
        self.assertIn("+4.0%", lines["odd_rect/fwd/fftconv_auto"])  # us vs ms
        self.assertEqual(p.stdout.count("REGRESSION"), 1)

    def test_lists_missing_and_errored_cases(self):
        p = run(COMPARE, fixture("compare_old.json"), fixture("compare_new.json"))
        out = p.stdout
        only_old = out[out.index("Only in OLD"):out.index("Only in NEW")]
        self.assertIn("removed_case/fwd/fftconv_auto", only_old)
        self.assertIn("strided2/fwd/cudnn_fp32  (error in NEW)", only_old)
        only_new = out[out.index("Only in NEW"):out.index("Skipped with an error in OLD")]
        self.assertIn("added_case/fwd/torch_fft", only_new)
        self.assertIn("strided2/fwd/cudnn_fp32: CUDNN_STATUS_NOT_SUPPORTED", out)
        self.assertIn("dilated2/fwd/torch_fft: out of memory", out)
        self.assertIn("Summary: 4 compared, 1 regression(s)", out)

    def test_no_regression_exits_0(self):
        p = run(COMPARE, fixture("compare_old.json"), fixture("compare_new_ok.json"))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertNotIn("REGRESSION", p.stdout)
        self.assertIn("improved", p.stdout)  # removed_case: 1.0 -> 0.2 ms
        self.assertIn("+2.0%", p.stdout)     # odd_rect: 500 us -> 510000 ns

    def test_threshold_and_filter(self):
        p = run(COMPARE, fixture("compare_old.json"), fixture("compare_new_ok.json"),
                "--threshold", "0.04")
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stdout.count("REGRESSION"), 1)  # the +5.0%
        p = run(COMPARE, fixture("compare_old.json"), fixture("compare_new.json"),
                "--filter", "cudnn")
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertNotIn("fftconv_auto", p.stdout)
        self.assertIn("landmark_batch64/fwd/cudnn_fp32", p.stdout)

    def test_identical_files(self):
        p = run(COMPARE, fixture("compare_new.json"), fixture("compare_new.json"))
        self.assertEqual(p.returncode, 0)
        self.assertIn("+0.0%", p.stdout)

    def test_bad_input_exits_2(self):
        cases = [
            (fixture("malformed.json"), "not valid JSON"),
            (fixture("not_benchmark.json"), "not Google Benchmark JSON"),
            (fixture("does_not_exist.json"), "cannot read"),
        ]
        for path, message in cases:
            with self.subTest(path=os.path.basename(path)):
                p = run(COMPARE, fixture("compare_old.json"), path)
                self.assertEqual(p.returncode, 2)
                self.assertIn(message, p.stderr)
                self.assertNotIn("Traceback", p.stderr)
        p = run(COMPARE, fixture("compare_old.json"), fixture("compare_new.json"),
                "--threshold", "-1")
        self.assertEqual(p.returncode, 2)
        p = run(COMPARE, fixture("compare_old.json"), fixture("compare_new.json"),
                "--filter", "(")
        self.assertEqual(p.returncode, 2)

    def test_google_compare_py_is_informational(self):
        with tempfile.TemporaryDirectory() as d:
            fake = os.path.join(d, "compare.py")
            with open(fake, "w") as f:
                f.write("import sys\nprint('FAKE COMPARE', sys.argv[1:])\nsys.exit(5)\n")
            p = run(COMPARE, fixture("compare_old.json"), fixture("compare_new_ok.json"),
                    "--compare-py", fake)
        self.assertEqual(p.returncode, 0)  # our comparison decides
        self.assertIn("FAKE COMPARE ['benchmarks'", p.stdout)
        self.assertIn("exited with 5", p.stderr)

    def test_help(self):
        p = run(COMPARE, "--help")
        self.assertEqual(p.returncode, 0)
        self.assertIn("--threshold", p.stdout)


class ReportTest(unittest.TestCase):
    def report(self, *extra):
        with tempfile.TemporaryDirectory() as d:
            md = os.path.join(d, "report.md")
            p = run(REPORT, fixture("report_fftconv.json"), fixture("report_torch.json"),
                    "--markdown", md, "--title", "Fixture report", *extra)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(md, encoding="utf-8") as f:
                return f.read()

    def test_rows_speedups_and_missing_values(self):
        md = self.report()
        self.assertTrue(md.startswith("# Fixture report"))
        head = row_of(md, "Case", "Pass")
        col = {name: i for i, name in enumerate(head)}
        fwd = row_of(md, "landmark_batch64", "fwd")
        self.assertEqual(fwd[col["dtype"]], "f32")
        self.assertEqual(fwd[col["fftconv ms"]], "0.1000")
        self.assertEqual(fwd[col["cuDNN ms"]], "0.6000")
        self.assertEqual(fwd[col["cuDNN algo"]], "IMPLICIT_PRECOMP_GEMM")
        self.assertEqual(fwd[col["cuDNN TF32 ms"]], "0.5000")
        self.assertEqual(fwd[col["PyTorch ms"]], "0.8000")
        self.assertEqual(fwd[col["torch.fft ms"]], "0.4000")
        self.assertEqual(fwd[col["vs cuDNN"]], "6.00x")
        self.assertEqual(fwd[col["vs PyTorch"]], "8.00x")
        self.assertEqual(fwd[col["% of floor"]], "40.0%")
        dgrad = row_of(md, "landmark_batch64", "dgrad")
        self.assertEqual(dgrad[col["vs cuDNN"]], "1.00x")
        self.assertEqual(dgrad[col["PyTorch ms"]], "–")  # error entry: skipped
        self.assertEqual(dgrad[col["vs PyTorch"]], "–")
        f16 = row_of(md, "landmark_batch64_f16", "fwd")
        self.assertEqual(f16[col["dtype"]], "f16")  # from the name suffix
        self.assertEqual(f16[col["fftconv ms"]], "0.0500")  # median aggregate
        self.assertEqual(f16[col["vs cuDNN"]], "68.0x")
        self.assertEqual(f16[col["cuDNN TF32 ms"]], "–")
        failed = row_of(md, "multichannel_r45", "fwd")
        self.assertEqual(failed[col["fftconv ms"]], "–")
        self.assertEqual(failed[col["cuDNN ms"]], "117.90")
        self.assertEqual(failed[col["vs cuDNN"]], "–")
        legacy = row_of(md, "legacy_case", "fwd")  # "<case>/<provider>" counts as fwd
        self.assertEqual(legacy[col["PyTorch ms"]], "1.0000")
        self.assertNotIn("fftconv_tiled64", md)  # not a reported provider

    def test_geomean(self):
        md = self.report()
        head = row_of(md, "Case", "Pass")
        geo = row_of(md, "**geomean**", "")
        self.assertEqual(len(geo), len(head))
        # cuDNN: (6 * 1 * 68)^(1/3) = 7.42; PyTorch: (8 * 64)^(1/2) = 22.6.
        self.assertEqual(geo[head.index("vs cuDNN")], "7.42x (n=3)")
        self.assertEqual(geo[head.index("vs PyTorch")], "22.6x (n=2)")

    def test_shapes_give_dtype_descriptor_and_order(self):
        md = self.report("--shapes", fixture("report_shapes.csv"))
        head = row_of(md, "Case", "Descriptor")
        self.assertIn("Descriptor", head)
        fwd = row_of(md, "landmark_batch64", "fwd")
        self.assertEqual(fwd[1], "n64c1h96w96k1r45s45p22x22u1x1d1x1g1f32")
        cases = [ln.split("|")[1].strip() for ln in md.splitlines()
                 if ln.startswith("| ") and "Case" not in ln]
        self.assertEqual(cases[:4], ["multichannel_r45", "landmark_batch64_f16",
                                     "landmark_batch64", "landmark_batch64"])
        self.assertEqual(cases[4], "legacy_case")  # not in the CSV: after the CSV rows

    def test_dtype_variants_take_their_rows_shape(self):
        # fftconv_gbench --dtypes names multichannel_r45 in bf16 "multichannel_r45_bf16", and
        # landmark_batch64 (a CSV row in f32 and in f16) in bf16 "landmark_batch64_bf16".
        variants = {"context": {"executable": "fftconv_gbench"}, "benchmarks": [
            {"name": n + "/fwd/fftconv_auto/iterations:1/manual_time", "run_type": "iteration",
             "real_time": 0.5, "time_unit": "ms"}
            for n in ("multichannel_r45_bf16", "landmark_batch64_bf16", "unknown_bf16")]}
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "variants.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(variants, f)
            md_path = os.path.join(d, "report.md")
            p = run(REPORT, fixture("report_fftconv.json"), fixture("report_torch.json"), path,
                    "--markdown", md_path, "--shapes", fixture("report_shapes.csv"))
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(md_path, encoding="utf-8") as f:
                md = f.read()
        row = row_of(md, "multichannel_r45_bf16", "fwd")
        self.assertEqual(row[1], "n16c128h56w56k128r45s45p22x22u1x1d1x1g1bf16")
        self.assertEqual(row[3], "bf16")
        self.assertEqual(row_of(md, "landmark_batch64_bf16", "fwd")[1],
                         "n64c1h96w96k1r45s45p22x22u1x1d1x1g1bf16")
        self.assertEqual(row_of(md, "unknown_bf16", "fwd")[1], "–")
        main_table = md.split("## fp16 and bf16 against fp32")[0]
        cases = [ln.split("|")[1].strip() for ln in main_table.splitlines()
                 if ln.startswith("| ") and "Case" not in ln]
        # A variant follows its CSV row; cases unknown to the CSV come last.
        self.assertEqual(cases.index("multichannel_r45_bf16"), 1)
        self.assertLess(cases.index("landmark_batch64_bf16"), cases.index("legacy_case"))
        self.assertEqual(cases[-2], "unknown_bf16")

    def test_dtypes_keeps_those_cases(self):
        md = self.report("--dtypes", "f16")
        cases = {ln.split("|")[1].strip() for ln in md.splitlines()
                 if ln.startswith("| ") and "Case" not in ln and "geomean" not in ln}
        self.assertEqual(cases, {"landmark_batch64_f16"})
        p = run(REPORT, fixture("report_fftconv.json"), "--dtypes", "f8")
        self.assertEqual(p.returncode, 2)
        self.assertIn("--dtypes", p.stderr)

    def test_half_dtypes_against_fp32(self):
        # The driver's --dtypes naming: a CSV row and its <row>_f16 / <row>_bf16 variants; a
        # row named with its own dtype suffix (x_f32) pairs with x_f16.
        rows = [("a", "f32", 1.0), ("a_f16", "f16", 0.9), ("a_bf16", "bf16", 1.1),
                ("x_f32", "f32", 2.0), ("x_f16", "f16", 2.0), ("lone", "f32", 3.0)]
        doc = {"meta": {"command": "fftconv-bench --dtypes f32,f16,bf16"}, "rows": [
            {"name": n, "pass": "dgrad", "dtype": t, "engine_ms": ms} for n, t, ms in rows]}
        with tempfile.TemporaryDirectory() as d:
            p = run(REPORT, write_json(d, "dtypes.json", doc))
        self.assertEqual(p.returncode, 0, p.stderr)
        section = p.stdout[p.stdout.index("## fp16 and bf16 against fp32"):]
        self.assertEqual(row_of(section, "a", "dgrad")[2:],
                         ["1.0000", "0.9000", "0.9000", "1.1000", "1.1000"])
        self.assertEqual(row_of(section, "x_f32", "dgrad")[2:],
                         ["2.0000", "2.0000", "1.0000", "–", "–"])
        self.assertNotIn("| lone |", section)
        self.assertIn("- f16: at most the fp32 time on 2 of 2 case-passes; largest ratio 1.000.",
                      section)
        self.assertIn("- bf16: at most the fp32 time on 0 of 1 case-passes; largest ratio 1.100.",
                      section)
        # Without pairs there is no such section.
        self.assertNotIn("## fp16 and bf16", self.report("--dtypes", "f32"))

    def test_half_dtypes_round_by_round(self):
        # fftconv-bench --interleave --control: each half case against fp32 round by round, and
        # fp32 against a second copy of itself; an interval wholly above 1 is named.
        def row(name, dtype, ms, **extra):
            return dict({"name": name, "pass": "fwd", "dtype": dtype, "engine_ms": ms}, **extra)
        doc = {"meta": {"command": "fftconv-bench --dtypes f32,f16 --interleave --control"},
               "rows": [
                   row("a", "f32", 1.0, control_ratio=1.001, control_lo=0.998, control_hi=1.003),
                   row("a_f16", "f16", 1.002, paired_ratio=1.002, paired_lo=0.999,
                       paired_hi=1.004, paired_base="f32"),
                   row("b", "f32", 2.0, control_ratio=0.999, control_lo=0.997, control_hi=1.001),
                   row("b_f16", "f16", 2.1, paired_ratio=1.05, paired_lo=1.04, paired_hi=1.06,
                       paired_base="f32"),
                   # Against bf16, not fp32: no round-by-round cell.
                   row("c", "f32", 1.0),
                   row("c_f16", "f16", 1.0, paired_ratio=0.9, paired_lo=0.8, paired_hi=0.95,
                       paired_base="bf16")]}
        with tempfile.TemporaryDirectory() as d:
            p = run(REPORT, write_json(d, "paired.json", doc))
        self.assertEqual(p.returncode, 0, p.stderr)
        section = p.stdout[p.stdout.index("## fp16 and bf16 against fp32"):]
        self.assertEqual(row_of(section, "a", "fwd")[2:7],
                         ["1.0000", "1.0010 [0.9980, 1.0030]", "1.0020", "1.0020",
                          "1.0020 [0.9990, 1.0040]"])
        self.assertEqual(row_of(section, "c", "fwd")[3], "–")
        self.assertEqual(row_of(section, "c", "fwd")[6], "–")
        self.assertIn("- f16, round by round: median ratio at most 1 on 0 of 2; interval wholly "
                      "above 1 on 1 of 2 (b_f16 fwd).", section)
        self.assertIn("- fp32 copy against fp32, round by round: median ratios from 0.9990 to "
                      "1.0010; interval wholly above 1 on 0 of 2.", section)

    def test_sources_without_paths(self):
        md = self.report()
        self.assertIn("`report_torch.json`", md)
        self.assertIn("torch_version: 2.11.0", md)
        self.assertNotIn(FIXTURES, md)

    def test_bad_input_exits_2(self):
        p = run(REPORT, fixture("malformed.json"))
        self.assertEqual(p.returncode, 2)
        self.assertIn("not valid JSON", p.stderr)
        p = run(REPORT, fixture("report_torch.json"), "--shapes", fixture("compare_old.json"))
        self.assertEqual(p.returncode, 2)
        self.assertIn("missing column", p.stderr)

    def test_markdown_to_stdout(self):
        p = run(REPORT, fixture("report_fftconv.json"))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("| landmark_batch64 | fwd | f32 | 0.1000 |", p.stdout)

    @unittest.skipUnless(HAVE_MATPLOTLIB, "matplotlib is not installed")
    def test_chart(self):
        with tempfile.TemporaryDirectory() as d:
            md, png = os.path.join(d, "r.md"), os.path.join(d, "charts", "speedup.png")
            os.mkdir(os.path.dirname(png))
            p = run(REPORT, fixture("report_fftconv.json"), fixture("report_torch.json"),
                    "--markdown", md, "--chart", png)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(png, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            with open(md, encoding="utf-8") as f:
                self.assertIn("](charts/speedup.png)", f.read())

    @unittest.skipIf(HAVE_MATPLOTLIB, "matplotlib is installed")
    def test_chart_without_matplotlib_exits_3(self):
        with tempfile.TemporaryDirectory() as d:
            md, png = os.path.join(d, "r.md"), os.path.join(d, "speedup.png")
            p = run(REPORT, fixture("report_fftconv.json"), "--markdown", md, "--chart", png)
            self.assertEqual(p.returncode, 3)
            self.assertIn("chart skipped", p.stderr)
            self.assertTrue(os.path.exists(md))
            self.assertFalse(os.path.exists(png))


class TorchBaselineHelpersTest(unittest.TestCase):
    """The parts of bench/torch_baseline.py that do not need PyTorch."""

    @classmethod
    def setUpClass(cls):
        cls.tb = load_script("torch_baseline", TORCH_BASELINE)

    def test_next_fast_size(self):
        nfs = self.tb.next_fast_size
        self.assertEqual([nfs(v) for v in (1, 11, 13, 140, 141, 556, 4158)],
                         [1, 12, 14, 140, 144, 560, 4200])

    def test_suite_csvs_parse(self):
        shapes_dir = os.path.join(ROOT, "data", "shapes")
        for name in sorted(os.listdir(shapes_dir)):
            if not name.endswith(".csv"):
                continue
            with self.subTest(csv=name):
                for s in self.tb.read_shapes(os.path.join(shapes_dir, name)):
                    self.assertIsNone(s.problem(), s.name)
                    self.assertIn(s.dtype, ("f32", "f16", "bf16"))

    def test_shape_math_and_entries(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "s.csv")
            with open(path, "w") as f:
                f.write("name,n,c,h,w,k,r,s,pad_h,pad_w,stride_h,stride_w,dil_h,dil_w,groups,"
                        "dtype\nst,2,4,17,16,6,5,3,2,1,2,3,2,1,2,fp16\n"
                        "bad,1,3,8,8,4,3,3,1,1,1,1,1,1,2,f32\n")
            st, bad = self.tb.read_shapes(path)
        self.assertEqual(st.dtype, "f16")
        # Ho = (17 + 4 - 2*4 - 1) // 2 + 1 = 7, Wo = (16 + 2 - 2 - 1) // 3 + 1 = 6.
        self.assertEqual(st.y_shape, (2, 6, 7, 6))
        self.assertEqual(st.w_shape, (6, 2, 5, 3))
        self.assertEqual(st.direct_flops(), 2.0 * 2 * 6 * 7 * 6 * 2 * 5 * 3)
        self.assertEqual(st.io_bytes(), 2 * (2 * 4 * 17 * 16 + 6 * 2 * 5 * 3 + 2 * 6 * 7 * 6))
        self.assertEqual(st.descriptor(), "n2c4h17w16k6r5s3p2x1u2x3d2x1g2f16")
        self.assertIn("groups", bad.problem())
        e = self.tb.benchmark_entry("st/fwd/torch_cudnn", 0, [3.0, 1.0, 2.0], 0.1, st, "lbl",
                                    {"rel_l2": 1e-7, "first_call_ms": float("nan")})
        self.assertEqual((e["run_type"], e["time_unit"], e["real_time"], e["iterations"]),
                         ("iteration", "ms", 2.0, 3))
        self.assertAlmostEqual(e["tflops"], st.direct_flops() / 2e-3 * 1e-12)
        self.assertAlmostEqual(e["gbps"], st.io_bytes() / 2e-3 * 1e-9)
        self.assertEqual(e["rel_l2"], 1e-7)
        self.assertNotIn("first_call_ms", e)  # non-finite values stay out of the JSON
        err = self.tb.error_entry("st/fwd/torch_fft", 1, "out of memory")
        self.assertTrue(err["error_occurred"])
        # Both kinds of entry go through our own loader.
        with tempfile.TemporaryDirectory() as d:
            path = write_json(d, "tb.json", {"context": {}, "benchmarks": [e, err]})
            bc = load_script("bench_compare", COMPARE)
            rs = bc.load_results(path)
        self.assertEqual(rs.results["st/fwd/torch_cudnn"].time_ms, 2.0)
        self.assertEqual(rs.errors, {"st/fwd/torch_fft": "out of memory"})

    def test_write_json_replaces_the_file(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "out.json")
            self.tb.write_json({"context": {"complete": False}, "benchmarks": []}, path)
            self.tb.write_json({"context": {"complete": True}, "benchmarks": []}, path)
            self.assertEqual(os.listdir(d), ["out.json"])  # no .partial left behind
            with open(path) as f:
                self.assertTrue(json.load(f)["context"]["complete"])
            with self.assertRaises(ValueError):  # never writes NaN, which is not JSON
                self.tb.write_json({"x": float("nan")}, path)

    def test_help_without_torch(self):
        p = run(TORCH_BASELINE, "--help")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("--passes", p.stdout)



class ParityTest(unittest.TestCase):
    """bench/parity.py: ratios, the limit, failed entries, later files replacing earlier ones."""

    @staticmethod
    def entry(case, pass_, dtype, provider, ms, cold=None, rel=None, error=None):
        e = {"name": f"{case}/{pass_}/{dtype}/{provider}", "real_time": ms}
        if cold is not None:
            e["cold_ms"] = cold
        if rel is not None:
            e["rel_l2"] = rel
        if error:
            e.update(error_occurred=True, error_message=error)
        return e

    def write(self, d, name, entries, reference=None):
        path = os.path.join(d, name)
        with open(path, "w") as f:
            json.dump({"context": {} if reference is None else {"reference": reference},
                       "benchmarks": entries}, f)
        return path

    def test_ratios_limit_and_replacement(self):
        e = self.entry
        with tempfile.TemporaryDirectory() as d:
            first = self.write(d, "a.json", [
                e("a", "fwd", "f32", "fftconv", 1.0, cold=2.0, rel=1e-7),
                e("a", "fwd", "f32", "torch", 2.0, cold=2.5),
                e("b", "dgrad", "f16", "fftconv", 1.1),
                e("b", "dgrad", "f16", "torch", 1.0),
                e("a", "step", "f32", "fftconv", 1.0), e("a", "step", "f32", "torch", 1.0),
            ])
            second = self.write(d, "b.json", [
                e("b", "dgrad", "f16", "fftconv", 1.02),  # replaces 1.1: within 1.03
                e("c", "wgrad", "bf16", "fftconv", 1.0, error="out of memory"),
                e("c", "wgrad", "bf16", "torch", 1.0),
            ])
            out = os.path.join(d, "parity.json")
            md = os.path.join(d, "parity.md")
            r = run(PARITY, first, "--out", out)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)  # b dgrad f16 at 1.1
            self.assertIn("above: b dgrad f16 1.100", r.stdout)
            r = run(PARITY, first, second, "--out", out, "--markdown", md)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)  # c failed
            with open(out) as f:
                p = json.load(f)
            by = {(x["name"], x["pass"], x["dtype"]): x for x in p["entries"]}
            self.assertEqual(set(by), {("a", "fwd", "f32"), ("b", "dgrad", "f16")})  # no step
            self.assertAlmostEqual(by["a", "fwd", "f32"]["ratio"], 0.5)
            self.assertAlmostEqual(by["a", "fwd", "f32"]["cold_ratio"], 0.8)
            self.assertEqual(by["a", "fwd", "f32"]["rel_err"], 1e-7)
            self.assertTrue(by["b", "dgrad", "f16"]["within"])
            self.assertNotIn("cold_ratio", by["b", "dgrad", "f16"])
            self.assertEqual(p["summary"]["above_limit"], 0)
            self.assertEqual(p["errors"][0]["message"], "out of memory")
            self.assertEqual(p["summary"]["worst"]["name"], "b")
            with open(md) as f:
                self.assertIn("| a | fwd | f32 | 1.0000 | 2.0000 | 0.500 | 0.800 | 1.0e-07 | - |",
                              f.read())

    def test_fp32_accuracy_gates(self):
        e = self.entry
        with tempfile.TemporaryDirectory() as d:
            path = self.write(d, "a.json", [
                e("a", "wgrad", "f32", "fftconv", 1.0, rel=3e-7),
                e("a", "wgrad", "f32", "torch", 1.0, rel=2e-3),  # torch's own error: reported
                e("b", "fwd", "f16", "fftconv", 1.0, rel=2e-4),  # not fp32: not gated
                e("b", "fwd", "f16", "torch", 1.0, rel=2e-4),
            ], reference="f64")
            out = os.path.join(d, "parity.json")
            r = run(PARITY, path, "--out", out)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("F.conv2d's own fp32 rel-L2 above 1e-05: a wgrad 2.00e-03", r.stdout)
            with open(out) as f:
                p = json.load(f)
            self.assertEqual(p["summary"]["fp32_above_tolerance"], [])
            self.assertEqual(p["summary"]["torch_fp32_above_tolerance"], ["a/wgrad"])
            self.assertEqual(p["entries"][0]["torch_rel_err"], 2e-3)
            entries = [e("a", "wgrad", "f32", "fftconv", 1.0, rel=2e-5),
                       e("a", "wgrad", "f32", "torch", 1.0, rel=1e-7)]
            r = run(PARITY, self.write(d, "b.json", entries, reference="f64"), "--out", out)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertIn("fp32 rel-L2 above 1e-05: a wgrad 2.00e-05", r.stdout)
            # Against an fp32 reference (older files) an error is not fftconv's alone: no gate.
            r = run(PARITY, self.write(d, "c.json", entries), "--out", out)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            with open(out) as f:
                self.assertEqual(json.load(f)["entries"][0]["reference"], "f32")


if __name__ == "__main__":
    unittest.main()
