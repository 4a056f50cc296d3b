#!/bin/sh
# Re-record the iperf3 fixtures in this directory (see README.md).
# Loopback only; each test runs about one second.
set -eu
cd "$(dirname "$0")"
PORT=${PORT:-5611}
IPERF3=${IPERF3:-iperf3}

serve() { "$IPERF3" -s -1 -p "$PORT" >/dev/null 2>&1 & SERVER=$!; sleep 0.3; }
reap() { wait "$SERVER" 2>/dev/null || true; sleep 0.2; }

# name -- iperf3 client arguments
record() {
    name=$1; shift
    serve; "$IPERF3" -c 127.0.0.1 -p "$PORT" -J --get-server-output "$@" > "$name.json"; reap
    serve; "$IPERF3" -c 127.0.0.1 -p "$PORT" "$@" > "$name.txt"; reap
}

record tcp        -t 1
record tcp_p2     -t 2 -P 2
record tcp_rev    -t 1 -R
record tcp_bidir  -t 1 --bidir
record tcp_omit_p2 -t 1 -O 1 -P 2
record udp        -t 1 -u -b 1M
record udp_p2     -t 1 -u -b 1M -P 2
record udp_rev    -t 1 -u -b 1M -R
record udp_bidir  -t 1 -u -b 1M --bidir

# Nothing listens on PORT now: the error case, -J and text.
"$IPERF3" -c 127.0.0.1 -p "$PORT" -t 1 -J > error_refused.json 2>&1 || true
"$IPERF3" -c 127.0.0.1 -p "$PORT" -t 1 > error_refused.txt 2>&1 || true

"$IPERF3" --version | head -1 > VERSION
