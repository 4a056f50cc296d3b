"""Shared code of the wirespeed tool plugin for pScheduler's `throughput` test.

pScheduler runs each of the plugin's executables with one JSON document on stdin and reads one
JSON document from stdout; a non-zero exit with a message on stderr is a failure of the plugin
itself (bad input), never of the measurement (that is `succeeded: false` in the result).

The spec is checked here, whatever pScheduler checked before (`spec_problems`): a destination
or local address is a host name or an IP address (never an option: nothing starting with `-`),
every number an integer in its range, every duration bounded. A bad spec is a pScheduler-shaped
answer — `can-run` false with the reasons, `run` a failed result, `duration` one line on
stderr and exit 1 — and so is anything unexpected (`main`): never a Python traceback.

Standard library only. The tool's configuration is a small JSON file (default
/etc/pscheduler/tool/wirespeed.conf, or the file named by $WIRESPEED_PSCHEDULER_CONF):
    {"wirespeed": "/usr/bin/wirespeed", "server_port": 5201}
"""

import ipaddress
import json
import os
import re
import subprocess
import sys
import time

CONF_FILE = "/etc/pscheduler/tool/wirespeed.conf"
DEFAULTS = {"wirespeed": "/usr/bin/wirespeed", "server_port": 5201}

# Test length when the spec names none, and the time around it: connection setup, the time
# the client waits for the server to listen, and the server's exit.
DEFAULT_DURATION = 10
SETUP = 2
SERVER_WAIT = 3
SHUTDOWN = 2

# Spec members this tool understands (the rest make can-run say no).
SUPPORTED = {
    "schema", "source", "source-node", "dest", "dest-node", "duration", "interval",
    "parallel", "udp", "bandwidth", "window-size", "mss", "buffer-length", "omit",
    "reverse", "local-address", "ip-version", "congestion", "zero-copy", "no-delay",
    "fq-rate", "link-rtt", "loopback", "single-ended", "single-ended-port",
}

# Exit code of `wirespeed client` when the peer cannot be reached (README's table).
EXIT_CONNECT = 3

# Bounds of the spec's durations, in seconds: a test of a day at most (as iperf3's -t), an
# omit of 10 minutes, a report interval of 0.1 to 60 s (iperf3's range), a link RTT of 10 s;
# the schedule's duration (the whole run) at most the longest run those allow.
MAX_DURATION = 86400
MAX_OMIT = 600
MIN_INTERVAL, MAX_INTERVAL = 0.1, 60
MAX_LINK_RTT = 10
MAX_SCHEDULE = MAX_DURATION + MAX_OMIT + 2 * MAX_LINK_RTT + 60

# Integer members and their ranges (iperf3's, where it has one).
INTEGERS = {
    "parallel": (1, 128),
    "mss": (88, 9216),
    "window-size": (1, 1 << 30),
    "buffer-length": (1, 1 << 30),
    "bandwidth": (0, 1 << 50),
    "fq-rate": (0, 1 << 50),
}

_LABEL = re.compile(r"^[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$")
_CONGESTION = re.compile(r"^[A-Za-z0-9_]{1,16}$")


class SpecError(Exception):
    """A spec (or schedule) the plugin will not run; the message says which member and why."""


def fail(message):
    """The plugin cannot work with its input: one line on stderr, exit 1."""
    sys.stderr.write(message.rstrip("\n") + "\n")
    sys.exit(1)


def load_input():
    try:
        doc = json.load(sys.stdin)
    except ValueError as ex:
        fail("input is not JSON: %s" % ex)
    if not isinstance(doc, dict):
        fail("input is not a JSON object")
    return doc


def emit(doc):
    json.dump(doc, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")
    sys.exit(0)


def config():
    path = os.environ.get("WIRESPEED_PSCHEDULER_CONF", CONF_FILE)
    conf = dict(DEFAULTS)
    try:
        with open(path) as f:
            conf.update(json.load(f))
    except FileNotFoundError:
        pass
    except ValueError as ex:
        fail("%s: %s" % (path, ex))
    return conf


_ISO = re.compile(
    r"^P(?:(\d+(?:\.\d+)?)W)?(?:(\d+(?:\.\d+)?)D)?"
    r"(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$"
)


def iso_seconds(text, what, most=MAX_SCHEDULE):
    """Seconds of an ISO 8601 duration without years or months (PT10S, P1D, PT1M30S), at most
    `most`; SpecError otherwise."""
    m = _ISO.match(text) if isinstance(text, str) and len(text) <= 64 else None
    if not m or text in ("P", "PT") or text.endswith("T"):
        raise SpecError("%s: %s is not an ISO 8601 duration" % (what, shown(text)))
    w, d, h, mi, s = (float(x) if x else 0.0 for x in m.groups())
    total = w * 604800 + d * 86400 + h * 3600 + mi * 60 + s
    if not total <= most:
        raise SpecError("%s: %s is longer than %d s" % (what, text, most))
    return total


# The most each duration member may be.
DURATION_BOUNDS = {"duration": MAX_DURATION, "omit": MAX_OMIT, "interval": MAX_INTERVAL,
                   "link-rtt": MAX_LINK_RTT}


def spec_seconds(spec, key, default):
    if spec.get(key) is None:
        return default
    return iso_seconds(spec[key], key, DURATION_BOUNDS.get(key, MAX_SCHEDULE))


def shown(value):
    """A value for a message: at most 80 characters of its repr."""
    r = repr(value)
    return r if len(r) <= 80 else r[:77] + "..."


def host_problem(value, what):
    """None when `value` is a host name or an IP address; otherwise why it is not. An option
    (`--loopback`, `-R`) is never a host: nothing starting with `-` is one."""
    if not isinstance(value, str) or not value:
        return "%s must be a host name or an address, not %s" % (what, shown(value))
    if value.startswith("-"):
        return "%s %s starts with '-': a host name or an address never does" % (what, shown(value))
    try:
        ipaddress.ip_address(value)
        return None
    except ValueError:
        pass
    name = value[:-1] if value.endswith(".") else value
    if len(name) > 253 or not all(_LABEL.match(label) for label in name.split(".")):
        return "%s %s is not a host name or an address" % (what, shown(value))
    return None


def spec_problems(spec):
    """Everything wrong with a spec's values (its members are can-run's business): the
    destination and local address, the integers, the durations. Empty when it can run."""
    problems = []
    if "dest" not in spec:
        problems.append("the spec names no dest")
    for key in ("dest", "local-address"):
        if key in spec:
            why = host_problem(spec[key], key)
            if why:
                problems.append(why)
    for key, (low, high) in sorted(INTEGERS.items()):
        v = spec.get(key)
        if v is None:
            continue
        if not isinstance(v, int) or isinstance(v, bool) or not low <= v <= high:
            problems.append("%s must be an integer from %d to %d, not %s" % (key, low, high,
                                                                              shown(v)))
    c = spec.get("congestion")
    if c is not None and not (isinstance(c, str) and _CONGESTION.match(c)):
        problems.append("congestion must be an algorithm's name, not %s" % shown(c))
    if spec.get("ip-version") not in (None, 4, 6):
        problems.append("ip-version must be 4 or 6, not %s" % shown(spec["ip-version"]))
    for key in sorted(DURATION_BOUNDS):
        try:
            spec_seconds(spec, key, 0)
        except SpecError as ex:
            problems.append(str(ex))
    if spec.get("interval") is not None and not problems:
        if spec_seconds(spec, "interval", 1) < MIN_INTERVAL:
            problems.append("interval: shorter than %g s" % MIN_INTERVAL)
    return problems


def main(body, failure=None):
    """Run an executable's `body`; a SpecError, or anything unexpected, becomes a
    pScheduler-shaped answer instead of a traceback: `failure(message)`'s document when given
    (run's failed result), else one line on stderr and exit 1."""
    try:
        body()
    except SystemExit:
        raise
    except Exception as ex:  # the last line: nothing reaches pScheduler as a traceback
        name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "plugin"
        message = str(ex) if isinstance(ex, SpecError) else "%s: %s: %s" % (
            name, type(ex).__name__, ex)
        if failure is not None:
            emit(failure(message))
        fail(message)


def failed_result(message):
    """A run that did not happen, as a throughput result that failed."""
    return {"schema": 1, "succeeded": False, "error": message, "diags": message}


def test_seconds(spec):
    return int(round(spec_seconds(spec, "duration", DEFAULT_DURATION)))


def total_seconds(spec):
    """What `duration` tells pScheduler: the whole run, server wait and shutdown included."""
    setup = SETUP + 2 * spec_seconds(spec, "link-rtt", 0.0)
    omit = spec_seconds(spec, "omit", 0)
    return int(setup + omit + test_seconds(spec) + SERVER_WAIT + SHUTDOWN + 0.999)


def client_args(spec, port):
    """`wirespeed client` arguments for a spec (iperf3's spelling of each option)."""
    a = ["client", str(spec["dest"]), "-p", str(port), "-J", "-t", str(test_seconds(spec))]
    if spec.get("interval") is not None:
        a += ["-i", "%g" % spec_seconds(spec, "interval", 1)]
    if spec.get("omit") is not None:
        a += ["-O", str(int(spec_seconds(spec, "omit", 0)))]
    for key, flag in (("parallel", "-P"), ("window-size", "-w"), ("mss", "-M"),
                      ("buffer-length", "-l"), ("congestion", "-C"),
                      ("local-address", "-B"), ("bandwidth", "-b"), ("fq-rate", "--fq-rate")):
        if spec.get(key) is not None:
            a += [flag, str(spec[key])]
    for key, flag in (("udp", "-u"), ("reverse", "-R"), ("zero-copy", "-Z"), ("no-delay", "-N")):
        if spec.get(key):
            a.append(flag)
    if spec.get("ip-version") == 4:
        a.append("-4")
    elif spec.get("ip-version") == 6:
        a.append("-6")
    return a


def run_program(argv, timeout):
    """(exit code, stdout, stderr); a timeout kills the program and is exit code None."""
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout, universal_newlines=True)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as ex:
        out = ex.stdout.decode() if isinstance(ex.stdout, bytes) else (ex.stdout or "")
        return None, out, "timed out after %d s" % timeout
    except OSError as ex:
        return 127, "", str(ex)


def findings_text(wirespeed):
    """This host's doctor findings, one line each (for the diagnostics)."""
    code, out, _ = run_program([wirespeed, "doctor", "--json"], 30)
    if code not in (0, 1):
        return "wirespeed doctor could not run"
    try:
        findings = json.loads(out).get("findings", [])
    except ValueError:
        return "wirespeed doctor printed no JSON"
    if not findings:
        return "wirespeed doctor: no findings on this host"
    lines = ["wirespeed doctor findings on this host:"]
    for f in findings:
        where = " [%s]" % f["iface"] if f.get("iface") else ""
        lines.append("  %s %s%s: %s" % (f.get("severity", "?"), f.get("id", "?"), where,
                                         f.get("summary", "")))
    return "\n".join(lines)


def run_server(spec, conf, budget):
    """Participant 1: serve one test, then exit."""
    w = conf["wirespeed"]
    argv = [w, "server", "-1", "-p", str(conf["server_port"])]
    code, out, err = run_program(argv, budget)
    diags = "%s\n%s" % (" ".join(argv), findings_text(w))
    if code != 0:
        return {"succeeded": False, "diags": diags,
                "error": "wirespeed server: %s" % (err.strip() or "exit %s" % code)}
    # The sending/receiving end's numbers come from the client's document; the server's part
    # is its diagnostics.
    return {"succeeded": True, "diags": diags}


def not_listening_yet(code, out):
    """The client could not reach the server (it may not be listening yet). With -J the
    client exits 1 on every failure, as iperf3 does, and says why in the document's error."""
    if code == EXIT_CONNECT:
        return True
    if code == 0:
        return False
    try:
        error = json.loads(out).get("error") or ""
    except (ValueError, AttributeError):
        return False
    return "cannot connect" in error or "unable to connect" in error


def run_client(spec, port, conf, budget):
    """Participant 0: run the test; retry while the server is not listening yet."""
    w = conf["wirespeed"]
    argv = [w] + client_args(spec, port)
    now = time.monotonic()
    wait_until, budget_until = now + SERVER_WAIT + SETUP, now + budget
    while True:
        code, out, err = run_program(argv, max(1, int(budget_until - time.monotonic())))
        if not not_listening_yet(code, out) or time.monotonic() >= wait_until:
            break
        time.sleep(0.2)
    diags = "%s\n%s" % (" ".join(argv), findings_text(w))
    try:
        doc = json.loads(out)
    except ValueError:
        doc = None
    if code != 0 or not isinstance(doc, dict) or doc.get("error"):
        why = (doc or {}).get("error") if isinstance(doc, dict) else None
        return {"succeeded": False, "diags": diags,
                "error": "wirespeed client: %s" % (why or err.strip() or "exit %s" % code)}
    result = to_result(doc)
    verdict = ((doc.get("wirespeed") or {}).get("verdict") or {})
    if verdict.get("line"):
        diags += "\nwirespeed verdict: %s (%s)" % (verdict["line"], verdict.get("id", ""))
    result["diags"] = diags + "\n\n" + json.dumps(doc, indent=1)
    return result


def _int(v):
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _data(s, udp, stream_id=None):
    """One throughput-data object from an iperf3 -J stream or sum object."""
    d = {
        "start": float(s.get("start", 0)),
        "end": float(s.get("end", 0)),
        "throughput-bits": float(s.get("bits_per_second", 0)),
        # As pScheduler's iperf3 tool fills it: the interval's byte count.
        "throughput-bytes": float(s.get("bytes", 0)),
    }
    if stream_id is not None:
        d["stream-id"] = stream_id
    if "omitted" in s:
        d["omitted"] = bool(s["omitted"])
    if udp:
        d["sent"] = _int(s.get("packets"))
        d["lost"] = _int(s.get("lost_packets"))
        d["jitter"] = s.get("jitter_ms")
    else:
        if "retransmits" in s:
            d["retransmits"] = _int(s.get("retransmits"))
        if "rtt" in s or "mean_rtt" in s:
            d["rtt"] = s.get("rtt", s.get("mean_rtt"))
        if "snd_cwnd" in s:
            d["tcp-window-size"] = _int(s.get("snd_cwnd"))
    return d


def to_result(doc):
    """A wirespeed (iperf3-shaped) -J document as a throughput test result."""
    start = doc.get("start") or {}
    udp = ((start.get("test_start") or {}).get("protocol") == "UDP")
    intervals = []
    for iv in doc.get("intervals") or []:
        intervals.append({
            "streams": [_data(s, udp, s.get("socket")) for s in iv.get("streams") or []],
            "summary": _data(iv.get("sum") or {}, udp),
        })
    end = doc.get("end") or {}
    streams = []
    for s in end.get("streams") or []:
        part = s.get("udp") if udp else s.get("sender")
        if part:
            streams.append(_data(part, udp, part.get("socket")))
    if udp:
        total = _data(end.get("sum") or end.get("sum_sent") or {}, udp)
        sent = end.get("sum_sent") or {}
        if sent:
            total["throughput-bits"] = float(sent.get("bits_per_second", total["throughput-bits"]))
        rx = end.get("sum_received") or end.get("sum") or {}
    else:
        total = _data(end.get("sum_sent") or {}, udp)
        rx = end.get("sum_received") or {}
    if rx:
        total["receiver-throughput-bits"] = float(rx.get("bits_per_second", 0))
    result = {"schema": 1, "succeeded": True, "intervals": intervals,
              "summary": {"streams": streams, "summary": total}}
    mss = (start.get("tcp_mss_default") or start.get("tcp_mss"))
    if isinstance(mss, int) and mss > 0:
        result["mss"] = mss
    return result


def merge(doc):
    """merged-results: the sending end's measurement (participant 0 ran the client either way;
    with `reverse` its document holds the server's sending), both participants' diagnostics."""
    results = doc.get("results")
    spec = (doc.get("test") or {}).get("spec") or {}
    if not isinstance(results, list) or not results:
        fail("merged-results: no results")
    one_end = spec.get("loopback") or spec.get("single-ended")
    if len(results) != (1 if one_end else 2):
        fail("merged-results: expected %d results, got %d" % (1 if one_end else 2, len(results)))
    client = results[0] if isinstance(results[0], dict) else {"succeeded": False}
    server = results[1] if len(results) > 1 and isinstance(results[1], dict) else None
    merged = dict(client)
    merged.setdefault("intervals", [])
    merged.setdefault("summary", {})
    ok = bool(client.get("succeeded")) and (server is None or bool(server.get("succeeded")))
    merged["succeeded"] = ok
    if not ok and "error" not in merged:
        merged["error"] = (server or {}).get("error", "a participant failed")
    diags = []
    for i, r in enumerate(results):
        if isinstance(r, dict) and r.get("diags"):
            diags.append("Participant %d:\n%s" % (i, r["diags"]))
    merged["diags"] = "\n\n".join(diags)
    return merged
