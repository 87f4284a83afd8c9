#!/usr/bin/env bash
# test_export.sh - tests superpage export: the textfile (valid exposition, written whole,
# repeated until SIGTERM), the HTTP server (status codes, garbage, idle clients by the
# dozen, the connection cap, the address errors) and a real Prometheus scraping it; a process holding 64 MiB on THP
# must show the huge bytes superpage stat says.
# Usage: tests/cli/test_export.sh BUILD_DIR. Prints "PASS name", "FAIL name: why" or
# "SKIP name: why" per test. It changes no system setting and takes no pool pages (the
# target runs under superpage run --backing thp).
set -u
B=${1:?usage: tests/cli/test_export.sh BUILD_DIR}
B=${B%/}
here=$(cd "$(dirname "$0")" && pwd)
SP=$(cd "$B" 2>/dev/null && pwd)/superpage
TARGET=$(cd "$B" 2>/dev/null && pwd)/tests/cli/export_target
tmp=$(mktemp -d)
# shellcheck source=tests/cli/lib.sh
. "$here/lib.sh"

# What the target sees must come from superpage run, not from whoever started the test.
unset LD_PRELOAD "${!SUPERPAGE_@}"

# The target's huge bytes as export says them and as stat says them may differ by at
# most one 2 MiB page: the target is idle, but khugepaged may collapse a range of its
# (or its runtime's) memory between the two reads.
TOLERANCE=$((2 << 20))
# Its comm, with the characters a label value must escape (comm cannot hold a newline:
# /proc/PID/comm ends at one).
NAME='sp"ex\port'
NAME_LABEL='sp\"ex\\port'

tpid='' tin='' bg=()
stop_all() {
	local p
	if [ -n "$tin" ]; then
		exec {tin}>&-
		tin=''
	fi
	for p in "${bg[@]}"; do
		kill "$p" 2>/dev/null
	done
	for p in "${bg[@]}"; do
		wait "$p" 2>/dev/null
	done
	bg=()
}
trap 'stop_all; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM HUP

if [ ! -x "$SP" ] || [ ! -x "$TARGET" ]; then
	fail export_built "$SP or $TARGET is missing: build with make B=$B tests"
	exit 1
fi
have_promtool() { command -v promtool >/dev/null 2>&1; }

# ---------- helpers ----------

# Prints the first line that sed expression picks from file once it is there; returns 1
# if pid ends, or 5 s pass, before.
said() { # pid file sed-expression
	local n=0
	until sed -n "$3" "$2" | grep .; do
		kill -0 "$1" 2>/dev/null && [ $((n += 1)) -le 100 ] || return 1
		sleep 0.05
	done
}

# Starts the target holding 64 MiB, under superpage run where this build's runtime can
# be preloaded (else on its own: it advises its memory itself); sets tpid, target_huge
# (its AnonHugePages in bytes) and under_run. Returns 1 if it did not say ready.
start_target() {
	local out=$tmp/target.out
	: >"$out"
	under_run=0
	if [ -z "$(preload_blocker "$B" "$B/libsuperpage-run.so")" ]; then
		under_run=1
		exec {tin}> >(exec "$SP" run --backing thp -- "$TARGET" 64 "$NAME" >"$out" 2>&1)
	else
		exec {tin}> >(exec "$TARGET" 64 "$NAME" >"$out" 2>&1)
	fi
	tpid=$(said $! "$out" 's/^ready \([0-9]*\)$/\1/p') || { echo "target: $(oneline "$out")"; return 1; }
	target_huge=$(($(awk '/^AnonHugePages:/ {print $2}' "/proc/$tpid/smaps_rollup") * 1024))
}

# A value of the sample of family with labels that include match, from a file.
sample() { # file family match
	grep -F "$2{" "$1" | grep -F "$3" | awk '{print $NF}' | head -1
}

# huge_bytes of superpage stat --json PID.
stat_huge() {
	"$SP" stat --json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["huge_bytes"])'
}

# What a textfile directory holds besides superpage.prom (a temporary file left).
others() { # dir
	find "$1" -mindepth 1 ! -name superpage.prom -printf '%f '
}

# Within TOLERANCE of each other.
close_to() { # a b
	local d=$(($1 - $2))
	[ ${d#-} -le $TOLERANCE ]
}

# Every line is a comment (# HELP, # TYPE) or a sample, each family's HELP and TYPE
# once; promtool, where there is one, says the same. Prints why not.
exposition_bad() { # file
	local f=$1
	if grep -nvE '^(# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* .*|[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})? [-+0-9.eEInfNa]+)$' "$f" | head -3 | grep .; then
		return 0
	fi
	if awk '$1 == "#" {print $2, $3}' "$f" | sort | uniq -d | grep .; then
		return 0
	fi
	if have_promtool && ! promtool check metrics <"$f" >"$tmp/promtool.out" 2>&1; then
		echo "promtool: $(oneline "$tmp/promtool.out")"
		return 0
	fi
	return 1
}

# Starts superpage export --listen ADDR in the background; sets hpid and addr (what
# it bound). Returns 1 if it did not say where.
start_server() { # addr [args...]
	"$SP" export --listen "$@" 2>"$tmp/server.err" &
	hpid=$!
	bg+=("$hpid")
	addr=$(said "$hpid" "$tmp/server.err" 's|^superpage: export: serving http://\(.*\)/metrics$|\1|p') ||
		{ echo "server: $(oneline "$tmp/server.err")"; return 1; }
}

# Stops the server with SIGTERM; leaves its exit status in rc.
stop_server() {
	kill -TERM "$hpid"
	wait "$hpid"
	rc=$?
	bg=("${bg[@]/$hpid/}")
}

# One raw request (bytes as printf has them); prints the status line of the answer.
raw_request() { # printf-format
	python3 - "$addr" "$1" <<'PY'
import socket, sys
host, port = sys.argv[1].rsplit(":", 1)
s = socket.create_connection((host.strip("[]"), int(port)), timeout=10)
s.sendall(sys.argv[2].encode().decode("unicode_escape").encode("latin-1"))
data = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    data += b
print(data.split(b"\r\n")[0].decode())
PY
}

# ---------- arguments ----------

test_help_and_args() {
	sp export --help
	if [ "$rc" != 0 ] || ! grep -q '^usage: superpage export' "$tmp/out" || [ -s "$tmp/err" ]; then
		fail export_help "exit $rc: $(oneline "$tmp/out")"
	else
		sp --help
		if grep -qE '^ +export ' "$tmp/out"; then pass export_help; else fail export_help "superpage --help does not list export"; fi
	fi
	: >"$tmp/afile"
	expect_usage_error export_no_mode export
	expect_usage_error export_two_modes export --textfile "$tmp" --listen 127.0.0.1:0
	expect_usage_error export_interval_with_listen export --listen 127.0.0.1:0 --interval 1
	expect_usage_error export_bad_interval export --textfile "$tmp" --interval 0
	expect_usage_error export_bad_interval_word export --textfile "$tmp" --interval soon
	expect_usage_error export_bad_top export --textfile "$tmp" --top -1
	expect_usage_error export_bad_top_word export --textfile "$tmp" --top many
	expect_usage_error export_missing_dir export --textfile "$tmp/nodir"
	expect_usage_error export_dir_is_file export --textfile "$tmp/afile"
	expect_usage_error export_bad_option export --textfile "$tmp" --bogus
	expect_usage_error export_argument export --textfile "$tmp" extra
	expect_usage_error export_missing_value export --listen
	expect_usage_error export_bad_address export --listen nonsense
	expect_usage_error export_bad_port export --listen 127.0.0.1:65536
	expect_usage_error export_bad_port_word export --listen 127.0.0.1:http
	expect_usage_error export_bad_host export --listen 1.2.3.4.5:9100
	expect_usage_error export_v6_no_brackets export --listen ::1:9100
	# TEST-NET-1: no machine has it
	expect_usage_error export_not_this_machine export --listen 192.0.2.1:9100
}

# ---------- the textfile ----------

test_textfile() { # (the target is running)
	local d=$tmp/tf why='' huge stat_h
	mkdir -p "$d"
	sp export --textfile "$d" --top 1000
	huge=$(sample "$d/superpage.prom" superpage_process_huge_bytes "pid=\"$tpid\"")
	stat_h=$(stat_huge "$tpid")
	if [ "$rc" != 0 ] || [ -s "$tmp/out" ] || [ -s "$tmp/err" ]; then
		why="exit $rc: $(oneline "$tmp/out") $(oneline "$tmp/err")"
	elif [ ! -s "$d/superpage.prom" ]; then
		why="no $d/superpage.prom"
	elif [ -n "$(others "$d")" ]; then
		why="left behind: $(others "$d")"
	elif [ "$(stat -c %a "$d/superpage.prom")" != 644 ]; then
		why="mode $(stat -c %a "$d/superpage.prom"), want 644 (node_exporter reads it as another user)"
	fi
	if [ -z "$why" ] && bad=$(exposition_bad "$d/superpage.prom"); then
		why="not valid exposition: $bad"
	fi
	if [ -n "$why" ]; then fail textfile_once "$why"; else pass textfile_once; fi
	have_promtool || skip textfile_promtool "no promtool (Debian: apt-get install prometheus)"

	for fam in superpage_memory_bytes superpage_thp_bytes superpage_hugetlb_used_bytes \
		superpage_machine_huge_ratio superpage_vmstat_thp_total \
		superpage_khugepaged_full_scans_total superpage_khugepaged_pages_collapsed_total \
		superpage_cgroup_memory_bytes superpage_cgroup_huge_bytes superpage_scrape_processes \
		superpage_scrape_seconds; do
		grep -q "^${fam}[ {]" "$d/superpage.prom" || why="$why $fam"
	done
	if [ -n "$why" ]; then fail textfile_families "missing:$why"; else pass textfile_families; fi

	if [ "$target_huge" -lt $((32 << 20)) ]; then
		skip textfile_target "the target got $target_huge bytes on THP (no free huge pages?)"
	elif [ -z "$huge" ]; then
		fail textfile_target "no superpage_process_huge_bytes for pid $tpid"
	elif ! close_to "$huge" "$stat_h"; then
		fail textfile_target "export says $huge huge bytes, stat --json $stat_h"
	elif ! grep -qF "superpage_process_huge_bytes{pid=\"$tpid\",comm=\"$NAME_LABEL\"} " "$d/superpage.prom"; then
		fail textfile_target "the comm label is not escaped as $NAME_LABEL: $(grep -F "pid=\"$tpid\"" "$d/superpage.prom" | head -1)"
	else
		pass textfile_target "$huge huge bytes, stat $stat_h"
	fi
	if [ "$under_run" = 0 ]; then
		skip textfile_falls "$(preload_blocker "$B" "$B/libsuperpage-run.so")"
	elif [ "$(grep -cF "superpage_process_falls_total{pid=\"$tpid\"," "$d/superpage.prom")" = 0 ]; then
		fail textfile_falls "no superpage_process_falls_total for pid $tpid, under superpage run"
	else
		pass textfile_falls
	fi
}

test_textfile_interval() {
	local d=$tmp/tfi why='' ino1 ino2='' pid
	mkdir -p "$d"
	"$SP" export --textfile "$d" --interval 0.2 2>"$tmp/tfi.err" &
	pid=$!
	bg+=("$pid")
	for _ in $(seq 100); do
		[ -s "$d/superpage.prom" ] && break
		sleep 0.05
	done
	ino1=$(stat -c %i "$d/superpage.prom" 2>/dev/null)
	# each write is a new file renamed over the old one
	for _ in $(seq 100); do
		ino2=$(stat -c %i "$d/superpage.prom" 2>/dev/null)
		[ -n "$ino1" ] && [ "$ino2" != "$ino1" ] && break
		sleep 0.05
	done
	kill -TERM "$pid"
	wait "$pid"
	rc=$?
	bg=("${bg[@]/$pid/}")
	if [ -z "$ino1" ]; then
		why="no file written: $(oneline "$tmp/tfi.err")"
	elif [ "$ino2" = "$ino1" ]; then
		why="not written again within 5 s"
	elif [ "$rc" != 0 ]; then
		why="SIGTERM: exit $rc, want 0: $(oneline "$tmp/tfi.err")"
	elif [ -n "$(others "$d")" ]; then
		why="left behind: $(others "$d")"
	elif bad=$(exposition_bad "$d/superpage.prom"); then
		why="not valid exposition: $bad"
	fi
	if [ -n "$why" ]; then fail textfile_interval "$why"; else pass textfile_interval; fi
}

# ---------- HTTP ----------

test_http() {
	local why='' code
	if ! start_server 127.0.0.1:0; then
		fail http_start "did not say where it listens"
		return
	fi
	code=$(curl -s -o "$tmp/m" -w '%{http_code} %{content_type}' "http://$addr/metrics")
	if [ "$code" != "200 text/plain; version=0.0.4; charset=utf-8" ]; then
		why="GET /metrics: $code"
	elif bad=$(exposition_bad "$tmp/m"); then
		why="not valid exposition: $bad"
	elif ! grep -q "^superpage_process_huge_bytes{pid=\"$tpid\"," "$tmp/m" &&
		[ "$target_huge" -ge $((32 << 20)) ]; then
		why="the target $tpid is missing"
	fi
	if [ -n "$why" ]; then fail http_metrics "$why"; else pass http_metrics; fi

	code=$(curl -s -o /dev/null -w '%{http_code}' "http://$addr/nope")
	if [ "$code" = 404 ]; then pass http_404; else fail http_404 "GET /nope: $code"; fi
	code=$(curl -s -o /dev/null -w '%{http_code}' -X POST --data 'a=b' "http://$addr/metrics")
	if [ "$code" = 405 ]; then pass http_405; else fail http_405 "POST /metrics: $code"; fi
	code=$(curl -s -o /dev/null -w '%{http_code}' --http1.0 "http://$addr/metrics?x=1")
	if [ "$code" = 200 ]; then pass http_10_query; else fail http_10_query "HTTP/1.0 GET /metrics?x=1: $code"; fi

	why=''
	code=$(raw_request 'garbage\r\n\r\n')
	[[ $code == "HTTP/1.1 400 "* ]] || why="garbage: '$code'"
	code=$(raw_request 'GET /metrics HTTP/2.0\r\n\r\n')
	[[ $code == "HTTP/1.1 505 "* ]] || why="$why HTTP/2.0: '$code'"
	code=$(raw_request "GET /$(printf 'a%.0s' $(seq 10000)) HTTP/1.1\r\n\r\n")
	[[ $code == "HTTP/1.1 431 "* ]] || why="$why 10 kB request: '$code'"
	code=$(raw_request 'GET /metrics HTTP/1.1\n\n')
	[[ $code == "HTTP/1.1 200 "* ]] || why="$why bare newlines: '$code'"
	if [ -n "$why" ]; then fail http_garbage "$why"; else pass http_garbage; fi

	# A client that connects and sends nothing does not hold the server: a second
	# client is answered meanwhile (curl gives up at 20 s).
	local idle
	exec {idle}<>"/dev/tcp/${addr%:*}/${addr##*:}"
	code=$(curl -s -o /dev/null --max-time 20 -w '%{http_code}' "http://$addr/metrics")
	exec {idle}>&-
	if [ "$code" = 200 ]; then pass http_idle_client; else fail http_idle_client "second client got '$code' while one was idle"; fi

	# The port is taken: a second server says so and exits 1.
	"$SP" export --listen "$addr" >"$tmp/out" 2>"$tmp/err" &
	local second=$!
	bg+=("$second")
	for _ in $(seq 100); do kill -0 "$second" 2>/dev/null || break; sleep 0.05; done
	kill "$second" 2>/dev/null
	wait "$second"
	rc=$?
	bg=("${bg[@]/$second/}")
	if [ "$rc" = 1 ] && [ "$(nlines "$tmp/err")" = 1 ] && grep -q 'in use' "$tmp/err"; then
		pass http_port_in_use
	else
		fail http_port_in_use "exit $rc, want 1: $(oneline "$tmp/err")"
	fi

	if ! kill -0 "$hpid" 2>/dev/null; then
		fail http_alive "the server died on its clients"
	else
		pass http_alive
	fi
	stop_server
	if [ "$rc" = 0 ]; then pass http_sigterm; else fail http_sigterm "exit $rc, want 0"; fi
}

# Holds N idle connections open (connected, nothing sent), then scrapes /metrics once
# and reads the whole answer; then looks at each idle connection without waiting.
# Prints "status=S length=OK|BAD families=OK|BAD open=N closed=N answered=N": open are
# the idle ones still open with nothing received, closed the ones the server closed
# without a byte, answered the ones that got bytes (none should). With "wait", it then
# waits for the first idle connection to be closed and scrapes again: "then=S".
# Nothing here is timed: the socket timeouts only keep a broken server from hanging it.
idle_and_scrape() { # n [wait]
	timeout 120 python3 - "$addr" "$1" "${2:-}" <<'PY'
import socket, sys
host, port = sys.argv[1].rsplit(":", 1)
host, port, n, wait = host.strip("[]"), int(port), int(sys.argv[2]), sys.argv[3] == "wait"

def scrape():
    s = socket.create_connection((host, port), timeout=100)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    data = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
    s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = lines[0].split(b" ")[1].decode() if len(lines[0].split(b" ")) > 1 else "none"
    length = [l.split(b":", 1)[1].strip() for l in lines if l.lower().startswith(b"content-length:")]
    ok_len = bool(length) and int(length[0]) == len(body)
    ok_fam = b"\nsuperpage_memory_bytes" in body and b"# TYPE superpage_scrape_seconds gauge" in body
    return status, ok_len, ok_fam

idle = [socket.create_connection((host, port), timeout=100) for _ in range(n)]
status, ok_len, ok_fam = scrape()
open_, closed, answered = 0, 0, 0
for s in idle:
    s.setblocking(False)
    try:
        b = s.recv(1)
        if b:
            answered += 1
        else:
            closed += 1
    except BlockingIOError:
        open_ += 1
    except ConnectionError:
        closed += 1
out = "status=%s length=%s families=%s open=%d closed=%d answered=%d" % (
    status, "OK" if ok_len else "BAD", "OK" if ok_fam else "BAD", open_, closed, answered)
if wait:
    s = idle[0]
    s.settimeout(100)
    try:
        got = s.recv(1)
    except ConnectionError:
        got = b""
    except socket.timeout:
        got = b"(not closed)"
    out += " first=%s then=%s" % ("closed" if not got else "answered", scrape()[0])
print(out)
PY
}

# 32 idle connections do not hold up a scrape: its whole answer comes while every one
# of them is still open and unanswered (the old server read them one after another,
# 3 s each). A client that never sends is closed in the end, and the server answers
# others after. Past the cap of 64, the oldest idle connections are closed for new
# ones: of 70 idle and one scrape, 7 are closed, the scrape answered.
test_http_many() {
	local out
	if ! start_server 127.0.0.1:0; then
		fail http_many_idle "did not start"
		return
	fi
	out=$(idle_and_scrape 32 wait)
	case $out in
	"status=200 length=OK families=OK open=32 closed=0 answered=0 "*) pass http_many_idle ;;
	*) fail http_many_idle "with 32 idle connections: ${out:-no answer (hung)}" ;;
	esac
	case $out in
	*" first=closed then=200") pass http_idle_closed ;;
	*) fail http_idle_closed "a client that never sends: ${out:-no answer (hung)}" ;;
	esac
	out=$(idle_and_scrape 70)
	if [ "$out" = "status=200 length=OK families=OK open=63 closed=7 answered=0" ]; then
		pass http_connection_cap
	else
		fail http_connection_cap "70 idle connections and a scrape, want 63 open, 7 closed: ${out:-no answer (hung)}"
	fi
	if kill -0 "$hpid" 2>/dev/null; then
		stop_server
		[ "$rc" = 0 ] || fail http_many_idle "SIGTERM: exit $rc"
	else
		fail http_many_idle "the server died: $(oneline "$tmp/server.err")"
	fi
}

test_http_v6() {
	if ! grep -q ' 01 80 .* lo$' /proc/net/if_inet6 2>/dev/null; then
		skip http_ipv6 "no IPv6 loopback address"
		return
	fi
	if ! start_server '[::1]:0'; then
		fail http_ipv6 "did not start on [::1]:0"
		return
	fi
	local code
	code=$(curl -sg -o /dev/null -w '%{http_code}' "http://$addr/metrics")
	kill -INT "$hpid"
	wait "$hpid"
	rc=$?
	bg=("${bg[@]/$hpid/}")
	if [ "$code" = 200 ] && [ "$rc" = 0 ]; then
		pass http_ipv6 "$addr"
	else
		fail http_ipv6 "GET http://$addr/metrics: $code; SIGINT: exit $rc"
	fi
}

# ---------- a real Prometheus ----------

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

test_prometheus() {
	local prom=/usr/bin/prometheus port2 q='' value='' stat_h ppid
	if [ ! -x $prom ]; then
		skip prometheus "no $prom (Debian: apt-get install prometheus)"
		return
	fi
	if [ "$target_huge" -lt $((32 << 20)) ]; then
		skip prometheus "the target got $target_huge bytes on THP (no free huge pages?)"
		return
	fi
	if ! start_server 127.0.0.1:0; then
		fail prometheus "superpage export did not start"
		return
	fi
	port2=$(free_port)
	mkdir -p "$tmp/prom"
	cat >"$tmp/prom/prom.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: superpage
    static_configs:
      - targets: ['$addr']
EOF
	$prom --config.file="$tmp/prom/prom.yml" --storage.tsdb.path="$tmp/prom/data" \
		--web.listen-address="127.0.0.1:$port2" >"$tmp/prom/log" 2>&1 &
	ppid=$!
	bg+=("$ppid")
	# Up to 30 s for Prometheus to start, scrape and answer.
	for _ in $(seq 60); do
		q=$(curl -sG --max-time 2 --data-urlencode "query=superpage_process_huge_bytes{pid=\"$tpid\"}" \
			"http://127.0.0.1:$port2/api/v1/query")
		value=$(python3 -c 'import json,sys
try:
    r = json.loads(sys.argv[1])["data"]["result"]
    print(r[0]["value"][1] if r else "")
except Exception:
    print("")' "$q")
		[ -n "$value" ] && break
		kill -0 "$ppid" 2>/dev/null || break
		sleep 0.5
	done
	stat_h=$(stat_huge "$tpid")
	kill "$ppid"
	wait "$ppid" 2>/dev/null
	bg=("${bg[@]/$ppid/}")
	stop_server
	if [ -z "$value" ]; then
		fail prometheus "no value within 30 s: $(echo "$q" | cut -c 1-200) $(oneline "$tmp/prom/log")"
	elif ! close_to "${value%.*}" "$stat_h"; then
		fail prometheus "Prometheus has $value huge bytes for $tpid, stat --json $stat_h"
	else
		pass prometheus "$value huge bytes, stat $stat_h"
	fi
}

test_help_and_args
if ! start_target; then
	fail export_target "the target did not start"
	exit 1
fi
test_textfile
test_textfile_interval
test_http
test_http_many
test_http_v6
test_prometheus
stop_all
exit $failed
