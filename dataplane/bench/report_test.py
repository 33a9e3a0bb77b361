#!/usr/bin/env python3
"""bench/report_test.py - report.py's stall detection, counters, few-samples
flag and regression check on crafted data (make -C dataplane test runs it;
internal/bench's TestReportPyFindsTheSameStalls checks that report.py and the
Go runner find the same stalls in the same full log)."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402

US, MS = 1000, 1000000


def write(path, text):
    """path holds text (a tool's output, a manifest) and nothing else"""
    with open(path, "w") as f:
        f.write(text)


def ping_pong(n, think, lat):
    """n messages, each sent think ns after the previous reply, with half round
    trip lat(i): (tx, rx, latency) in ns, the first send at 7 s."""
    rows, t = [], 7000 * MS
    for i in range(n):
        rows.append((t, t + 2 * lat(i), lat(i)))
        t += 2 * lat(i) + think
    return rows


class Stalls(unittest.TestCase):
    def test_quiet_run(self):
        rep = report.detect_stalls(ping_pong(10000, US, lambda i: 2 * US))
        self.assertEqual((rep["count"], rep["latency_threshold_ns"], rep["gap_threshold_ns"]), (0, MS, MS))

    def test_slow_reply_is_one_stall(self):
        rows = ping_pong(20000, US, lambda i: 40 * MS if i == 12000 else 2 * US)
        rep = report.detect_stalls(rows)
        self.assertEqual(rep["count"], 1)
        self.assertEqual(rep["stalls"], [{"offset_ns": 12000 * 5 * US, "duration_ns": 80 * MS + US, "latency_ns": 40 * MS}])

    def test_sender_pause(self):
        rows = ping_pong(5000, US, lambda i: 2 * US)
        rows = rows[:3000] + [(tx + 30 * MS, rx + 30 * MS, lat) for tx, rx, lat in rows[3000:]]
        rep = report.detect_stalls(rows)
        self.assertEqual(rep["stalls"], [{"offset_ns": 2999 * 5 * US, "duration_ns": 30 * MS + 5 * US, "latency_ns": 2 * US}])

    def test_list_is_capped_count_is_not(self):
        slow = {100: 5 * MS, 101: 7 * MS}
        slow.update({1000 + 1000 * k: (2 + k) * MS for k in range(14)})
        rep = report.detect_stalls(ping_pong(20000, US, lambda i: slow.get(i, 2 * US)))
        self.assertEqual(rep["count"], 15)
        self.assertEqual(len(rep["stalls"]), report.MAX_LISTED_STALLS)
        self.assertEqual(rep["total_ns"], sum(2 * v + US for v in slow.values()))
        self.assertEqual(rep["stalls"][0]["duration_ns"], 24 * MS + 2 * US)
        offsets = [s["offset_ns"] for s in rep["stalls"]]
        self.assertEqual(offsets, sorted(offsets))

    def test_full_log_is_read_to_the_nanosecond(self):
        with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
            f.write("sockperf: summary lines\npacket, txTime(sec), rxTime(sec), latency(usec)\n"
                    "0, 2.436765509, 2.436794561, 14.526\n1, 2.436794622, 2.436813660, 9.5195\n"
                    "2, 2.436813790, 0, -\n")
        try:
            self.assertEqual(report.read_full_log(f.name),
                             [(2436765509, 2436794561, 14526), (2436794622, 2436813660, 9520)])
        finally:
            os.unlink(f.name)


class Counters(unittest.TestCase):
    def test_dumps_are_summed_and_filtered(self):
        with tempfile.TemporaryDirectory() as d:
            self.check_dir(d)

    def check_dir(self, d):
        dump = ("tickstack stats pid=1 profile=latency sockets_accelerated=1 sockets_kernel=0 fallback_events=0\n"
                "xsk if=v ifindex=2 queue=0 mode=native rx_packets=9 tx_ring_full=0 fill_ring_empty=3\n"
                "sock fd=4 local=0.0.0.0:1 remote=0.0.0.0:0 accelerated=1 closed=1 rx_accel=9 tx_kernel_neigh=1\n"
                "tcp tx_ring_full=2\nnh refreshes=1 misses=3 wait_timeouts=0\n")
        for pid in (11, 12):
            write(os.path.join(d, f"stats-cli5-{pid}.txt"), dump)
        c = report.read_counters(os.path.join(d, "stats-cli5"))
        self.assertEqual(c["xsk.fill_ring_empty"], 6)
        self.assertNotIn("xsk.queue", c)
        self.assertEqual(report.stall_counters(c), [["xsk.fill_ring_empty", 6], ["nh.refreshes", 2],
                                                    ["sock.tx_kernel_neigh", 2], ["tcp.tx_ring_full", 4]])
        self.assertIsNone(report.read_counters(os.path.join(d, "stats-cli6")))


class Checks(unittest.TestCase):
    def runs(self):
        runs = [{"kind": "pp", "mode": "bypass", "param": sz, "observations": n, "max": m}
                for sz, n, m in ((14, 800000, 4100.0), (256, 786517, 1700.0), (1024, 23403, 235000.0),
                                 (1472, 700000, 4000.0))]
        runs += [{"kind": "floor", "mode": "floor", "param": sz, "max": m}
                 for sz, m in ((14, 4584.0), (64, 4121.5), (256, 4012.0))]
        return runs

    def test_few_samples(self):
        runs = self.runs()
        report.mark_few_samples(runs)
        self.assertEqual([r.get("few_samples") for r in runs[:4]], [False, False, True, False])
        self.assertEqual(runs[2]["neighbour_samples"], 786517)

    def test_max_against_the_floor(self):
        ref, checks = report.max_checks(self.runs())
        self.assertEqual(ref, 4121.5)
        self.assertEqual([(c["size"], c["ok"]) for c in checks], [(14, True), (256, True), (1024, False), (1472, True)])
        self.assertEqual(checks[0]["bound"], 4 * 4121.5)
        self.assertEqual(report.max_checks([r for r in self.runs() if r["kind"] != "floor"]), (None, []))


class Compare(unittest.TestCase):
    @staticmethod
    def run_of(bypass, floor, kspin):
        return [{"kind": "pp", "mode": "bypass", "param": 14, "median": bypass},
                {"kind": "floor", "mode": "floor", "param": 14, "median": floor},
                {"kind": "pp", "mode": "kspin", "param": 14, "median": kspin},
                {"kind": "pp", "mode": "kernel", "param": 14, "median": 9.0},
                {"kind": "tcp_pp", "mode": "bypass", "param": 14, "median": 99.0}]

    def test_ratios_per_run_and_build(self):
        # the VM twice as slow in the third run: its microseconds double, its ratios do not
        md = report.compare([("old", self.run_of(2.0, 2.0, 4.0)), ("new", self.run_of(1.8, 2.0, 4.0)),
                             ("old", self.run_of(4.4, 4.0, 8.0)), ("new", self.run_of(3.6, 4.0, 8.0))])
        rows = [line for line in md.splitlines() if line.startswith("| 14 ")]
        self.assertEqual(rows, ["| 14 | old | 2 | 1.05 | 1.00 1.10 | 0.53 | 0.50 0.55 |",
                                "| 14 | new | 2 | 0.90 (0.86x old) | 0.90 0.90 | 0.45 (0.86x old) | 0.45 0.45 |"])

    def test_missing_mode(self):
        runs = [r for r in self.run_of(2.0, 2.0, 4.0) if r["mode"] != "floor"]
        md = report.compare([("old", runs), ("new", runs)])
        self.assertIn("| 14 | new | 1 | - | - | 0.50 (1.00x old) | 0.50 |", md)


class Alternated(unittest.TestCase):
    COLS = ["floor", "floorcopy", "min", "minkernel", "kspin", "bypass"]

    def test_per_round_ratios_and_verdicts(self):
        # the VM twice as slow in round 2: its microseconds double, its ratios do not;
        # a round without a bypass figure is left out of the bypass's ratios only
        text = ("round 1: 2.0 2.1 2.3 4.0 4.0 2.4\nround 2: 4.0 4.2 4.6 8.0 8.0 4.4\n"
                "round 3: 2.0 2.1 2.3 4.0 4.0 none\nab: noise\n")
        a = report.parse_alt(1472, text, self.COLS)
        self.assertEqual(a["rounds"], 3)
        self.assertAlmostEqual(a["medians"]["bypass"], 3.4)
        bf = a["ratios"]["bypass_over_floor"]
        self.assertEqual((bf["n"], round(bf["median"], 3), bf["min"], bf["max"]), (2, 1.15, 1.1, 1.2))
        self.assertEqual(a["ratios"]["floor_over_kspin"]["median"], 0.5)
        self.assertEqual(report.alt_verdicts(a), ("MISSED", "MISSED"))

    def test_kernel_target_missed_by_the_link(self):
        a = report.parse_alt(64, "round 1: 3.0 3.1 3.2 4.5 4.5 3.2\n", self.COLS)
        self.assertEqual(report.alt_verdicts(a), ("met", "MISSED, veth copy path: floor / kernel 0.67"))
        md = "\n".join(report.alt_markdown([a]))
        self.assertIn("| 64 | 1 | 3.000 | 3.100 | 3.200 | 4.500 | 3.200 | 1.067 (1.07-1.07) met | "
                      "1.032 (1.03-1.03) | 0.667 (0.67-0.67) | 0.711 (0.71-0.71) MISSED, veth copy path: "
                      "floor / kernel 0.67 |", md)
        a = report.parse_alt(64, "round 1: 1.0 1.0 1.0 2.5 2.5 1.05\n", self.COLS)
        self.assertEqual(report.alt_verdicts(a), ("met", "met"))

    def test_manifest_line(self):
        with tempfile.TemporaryDirectory() as d:
            out, man = os.path.join(d, "alt-64.out"), os.path.join(d, "manifest")
            write(out, "round 1: 2.0 2.1 2.3 4.0 4.0 2.4\n")
            write(man, f"alt 64 {out} {','.join(self.COLS)}\n")
            runs, summary = report.load(man)
        self.assertEqual(runs, [])
        self.assertEqual(summary["alternated"][0]["medians"]["min"], 2.3)


class Throughput(unittest.TestCase):
    @staticmethod
    def iperf3(bps):
        return json.dumps({"end": {"sum_received": {"bits_per_second": bps}, "sum_sent": {"retransmits": 7},
                                   "cpu_utilization_percent": {"host_total": 50.0, "remote_total": 40.0}}})

    def test_report_is_parsed(self):
        with tempfile.TemporaryDirectory() as d:
            cli = os.path.join(d, "cli.out")
            write(cli, self.iperf3(9.5e9))
            r = report.parse_run("tput", "kernel", "2", cli, os.path.join(d, "none"))
            self.assertEqual((r["bps"], r["retransmits"], r["ok"]), (9.5e9, 7, True))
            write(cli, '{"error": "unable to connect to server"}')
            r = report.parse_run("tput", "bypass", "2", cli, os.path.join(d, "none"))
            self.assertEqual((r.get("error"), r["ok"]), ("unable to connect to server", False))

    @staticmethod
    def runs(pairs):
        runs = []
        for i, (k, b) in enumerate(pairs, 1):
            runs.append({"kind": "tput", "mode": "kernel", "param": i, "bps": k})
            runs.append({"kind": "tput", "mode": "bypass", "param": i} | ({"bps": b} if b else {"error": "x"}))
        return runs

    def test_median_of_the_pairs_ratios(self):
        # the VM slower in the second pair: the ratio, not the Mbit/s, is judged
        tp = report.tput_summary(self.runs([(10e9, 6e9), (4e9, 2.2e9), (10e9, 4e9)]))
        self.assertAlmostEqual(tp["ratio_median"], 0.55)
        self.assertTrue(tp["met"])
        self.assertEqual(tp["kernel_median_mbps"], 10000)

    def test_a_failed_run_counts_as_missed(self):
        tp = report.tput_summary(self.runs([(10e9, 6e9), (10e9, None), (10e9, None)]))
        self.assertEqual((tp["ratio_median"], tp["met"]), (0.0, False))
        self.assertIsNone(report.tput_summary([]))

    def test_the_raw_floor_beside_each_pair(self):
        with tempfile.TemporaryDirectory() as d:
            cli, srv = os.path.join(d, "cli.out"), os.path.join(d, "srv.out")
            write(cli, "xsk-floor: blast frames=1000000 kicks=31250 seconds=4.000 gbps=2.943\n")
            write(srv, "xsk-floor: ready\nxsk-floor: sink frames=800000 bytes=1200000000 seconds=4.000 gbps=2.400\n")
            r = report.parse_run("tfloor", "floor", "1", cli, srv)
            self.assertTrue(r["ok"])
            self.assertAlmostEqual(r["fps"], 250000)  # what TX moved, not what the sink kept
            self.assertAlmostEqual(r["delivered_fps"], 200000)
            self.assertAlmostEqual(r["ip_mbps"], 3000)
            self.assertAlmostEqual(r["bps"], 250000 * 1448 * 8)
            write(cli, "xsk-floor: attach XDP: Device or resource busy\n")
            r = report.parse_run("tfloor", "floor", "2", cli, srv)
            self.assertFalse(r["ok"])
        runs = self.runs([(10e9, 2e9), (10e9, 3e9)])
        runs.append({"kind": "tfloor", "mode": "floor", "param": 1, "bps": 4e9, "fps": 4e9 / 1448 / 8})
        runs.append({"kind": "tfloor", "mode": "floor", "param": 2, "error": "x"})
        tp = report.tput_summary(runs)
        self.assertAlmostEqual(tp["ratio_median"], 0.25)  # the floor does not count as a pair's ratio
        self.assertAlmostEqual(tp["pairs"][0]["floor_ratio"], 0.5)
        self.assertIsNone(tp["pairs"][1]["floor_ratio"])
        self.assertAlmostEqual(tp["bypass_over_floor_median"], 0.5)
        self.assertAlmostEqual(tp["floor_over_kernel_median"], 0.4)
        md = report.markdown({}, runs, {"maxrate": {}, "maxburst": {}}, "x.svg")[0]
        self.assertIn("| 1,500 | 0.25 MISSED | 0.50 | 0.40 |", md)

    def test_rows_per_mtu(self):
        # the headline is the smallest MTU's (the link as it comes); each other MTU has its row
        runs = [r | {"mtu": 1500} for r in self.runs([(10e9, 3e9), (10e9, 3e9)])]
        runs += [r | {"mtu": 9000} for r in self.runs([(10e9, 6e9), (8e9, 4.8e9)])]
        tp = report.tput_summary(runs)
        self.assertEqual((tp["mtu"], tp["ratio_median"], tp["met"]), (1500, 0.3, False))
        t9 = tp["by_mtu"]["9000"]
        self.assertEqual((t9["mtu"], t9["met"]), (9000, True))
        self.assertAlmostEqual(t9["ratio_median"], 0.6)
        self.assertEqual(len(t9["pairs"]), 2)
        md = report.markdown({}, runs, {"maxrate": {}, "maxburst": {}}, "x.svg")[0]
        self.assertIn("| 1,500 | 0.30 MISSED |", md)
        self.assertIn("| 9,000 | 0.60 met |", md)
        with tempfile.TemporaryDirectory() as d:
            cli, srv = os.path.join(d, "cli.out"), os.path.join(d, "srv.out")
            write(cli, "xsk-floor: blast frames=400000 kicks=31250 seconds=4.000 gbps=7.0\n")
            write(srv, "")
            r = report.parse_run("tfloor", "floor", "1", cli, srv, "-", "-", "-", "9000")
            self.assertEqual(r["mtu"], 9000)
            self.assertAlmostEqual(r["bps"], 100000 * 8948 * 8)  # MSS 8,960 less the timestamps

    def test_compare_lists_the_throughput(self):
        md = report.compare([("old", self.runs([(10e9, 1e9)])), ("new", self.runs([(10e9, 6e9)]))])
        self.assertIn("| old | 1 | 0.10 | 0.10 |", md)
        self.assertIn("| new | 1 | 0.60 | 0.60 |", md)


class TargetsMissed(unittest.TestCase):
    def test_counts_every_missed_target(self):
        md = "| 0.91 met | 1.20 MISSED |\n| 0.40 met |\n| up to 1 MISSED |\n"
        self.assertEqual(report.targets_missed(md), 2)
        self.assertEqual(report.targets_missed("| 0.91 met |\n"), 0)

    def test_the_recorded_report_renders_its_verdict(self):
        # the committed report, rendered again from its JSON: the exit status
        # follows the MISSED marks it prints
        top = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "bench-dataplane.md")
            sys.argv = ["report.py", "--from-json", os.path.join(top, "docs", "bench-dataplane.json"), "--out", out]
            rc = report.main()
            with open(out) as f:
                md = f.read()
        self.assertEqual(rc != 0, report.targets_missed(md) > 0, "exit %d" % rc)


if __name__ == "__main__":
    unittest.main()
