#!/usr/bin/env bash
# test_container.sh - superpage cdi and containers: the spec's devices set what superpage
# run sets; under podman (runc), a heap-heavy C program and a Python program in an image
# built here from the host's own glibc get their heap on huge pages with the device
# (auto, 2m) and not without it, with the same output; status and stat run inside and
# say what they cannot see; stat --all --cgroup names the container on the host;
# promote works by the host PID. Usage: tests/cli/test_container.sh BUILD_DIR. Prints
# "PASS name", "FAIL name: why" or "SKIP name: why"; the pool and THP mode it changes
# are put back, the CDI spec it writes (/var/run/cdi) is removed.
set -u
B=${1:?usage: tests/cli/test_container.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
SP=$(cd "$B" && pwd)/superpage
HEAP=$(cd "$B" && pwd)/tests/cli/heap_heavy
tmp=$(mktemp -d)
# shellcheck source=tests/cli/lib.sh
. "$here/lib.sh"
# podman reads its spec dirs only (/etc/cdi, /var/run/cdi; podman 4.3 has no
# cdi_spec_dirs): this one, of higher priority, for the test's runs.
SPEC=/var/run/cdi/superpage-test-container.yaml
podman_ok='' holders=()
declare -A fd_of # container -> the fd of its stdin's fifo
cleanup() {
	if [ -n "$podman_ok" ]; then
		for c in "${holders[@]}"; do pod rm -f -t 0 "$c" >/dev/null 2>&1; done
		pod rmi -a -f >/dev/null 2>&1
	fi
	rm -f "$SPEC"
	put_pool_back

}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

if ! command -v python3 >/dev/null 2>&1; then
	skip container "no python3 to parse JSON"
	exit 0
fi

# ---------- the spec, without podman ----------

test_cdi_errors() {
	expect_usage_error cdi_bad_option cdi --bogus
	expect_usage_error cdi_extra cdi extra
	expect_usage_error cdi_print_and_output cdi --print --output "$tmp/x.yaml"
	expect_usage_error cdi_output_missing cdi --output
}

# Each device sets what superpage run --backing X sets (run --dry-run prints it), and
# mounts the runtime run preloads; --output writes what --print prints.
test_cdi_spec() {
	local name=cdi_spec b
	sp cdi --print
	if [ "$rc" != 0 ]; then
		fail $name "cdi --print exited $rc: $(cat "$tmp/err")"
		return
	fi
	cp "$tmp/out" "$tmp/spec.yaml"
	if ! grep -q 'needs glibc [0-9.]* or later' "$tmp/err" || [ "$(grep -c 'glibc' "$tmp/err")" != 1 ]; then
		fail $name "it does not say once which glibc the image needs: $(cat "$tmp/err")"
		return
	fi
	# (run --dry-run shows every SUPERPAGE_ variable the program would get, those
	# this shell has too: they are left out, as a container does not inherit them.)
	for b in auto thp 2m 1g 4k; do
		(
			for v in $(compgen -e | grep '^SUPERPAGE_'); do unset "$v"; done
			"$SP" run --backing $b --dry-run true >"$tmp/dry.$b" 2>/dev/null
		)
	done
	local why
	why=$(python3 - "$tmp/spec.yaml" "$tmp" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
if not re.search(r'^cdiVersion: "0\.5\.0"$', text, re.M): print("no cdiVersion 0.5.0"); sys.exit()
if not re.search(r'^kind: "superpage\.io/run"$', text, re.M): print("no kind superpage.io/run"); sys.exit()
devs = re.split(r'^  - name: ', text.split("\ndevices:\n", 1)[1], flags=re.M)[1:]
names = [d.split("\n", 1)[0].strip('"') for d in devs]
if names != ["auto", "thp", "2m", "1g", "4k"]: print("devices %r" % names); sys.exit()
for b, d in zip(names, devs):
    env = dict(e.split("=", 1) for e in re.findall(r'^        - "([A-Z_]+=[^"]*)"$', d, re.M))
    dry = dict(re.findall(r"^export ([A-Z_]+)='([^']*)'$", open("%s/dry.%s" % (sys.argv[2], b)).read(), re.M))
    host_rt = dry.pop("LD_PRELOAD")
    ct_rt = env.pop("LD_PRELOAD", None)
    if env != dry: print("device %s sets %r, run --backing %s sets %r" % (b, env, b, dry)); sys.exit()
    m = re.findall(r'hostPath: "([^"]*)"\n *containerPath: "([^"]*)"\n *options: \[([^]]*)\]', d)
    if (host_rt, ct_rt) not in [(h, c) for h, c, o in m]:
        print("device %s does not mount %s at %s: %r" % (b, host_rt, ct_rt, m)); sys.exit()
    if not all('"ro"' in o for h, c, o in m): print("device %s mounts read-write" % b); sys.exit()
EOF
)
	if [ -n "$why" ]; then
		fail $name "$why"
		return
	fi
	sp cdi --output "$tmp/cdi/out.yaml"
	if [ "$rc" != 0 ] || ! cmp -s "$tmp/cdi/out.yaml" "$tmp/spec.yaml" || ! grep -q "^wrote $tmp/cdi/out.yaml" "$tmp/out"; then
		fail $name "--output wrote something else than --print (exit $rc): $(cat "$tmp/err")"
		return
	fi
	pass $name
}

test_cdi_errors
test_cdi_spec

# ---------- podman ----------

pod() { timeout -k 5 120 podman --root "$tmp/storage" --runroot "$tmp/run" --runtime runc "$@"; }

podman_blocker() {
	is_root || { echo "needs root to run podman with the host's pools"; return; }
	command -v podman >/dev/null 2>&1 || { echo "no podman (apt-get install podman runc)"; return; }
	command -v runc >/dev/null 2>&1 || { echo "no runc (apt-get install runc)"; return; }
	[ -n "$(preload_blocker "$B" "$B/libsuperpage-run.so")" ] && { preload_blocker "$B" "$B/libsuperpage-run.so"; return; }
	[ -x "$HEAP" ] || { echo "$HEAP is missing"; return; }
	local lib
	mkdir -p "$tmp/img/bin" "$tmp/run"
	cp "$HEAP" "$tmp/img/bin/" || { echo "cannot copy $HEAP"; return; }
	for lib in $(ldd "$HEAP" | grep -o '/[^ ]*'); do
		mkdir -p "$tmp/img$(dirname "$lib")" && cp -L "$lib" "$tmp/img$lib"
	done
	tar -C "$tmp/img" -cf "$tmp/img.tar" . || { echo "cannot make the image's tarball"; return; }
	# crun refuses a hybrid cgroup hierarchy; the default rlimits cannot be raised in
	# some sandboxes; no systemd is needed for the containers' cgroups.
	printf '[containers]\ndefault_ulimits = []\n[engine]\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n' >"$tmp/containers.conf"
	export CONTAINERS_CONF=$tmp/containers.conf
	pod import -q "$tmp/img.tar" sp-test-heap:1 >"$tmp/import.out" 2>&1 ||
		{ echo "podman import failed: $(oneline "$tmp/import.out")"; return; }
	podman_ok=1
	pod run --rm sp-test-heap:1 /bin/heap_heavy 1 >"$tmp/try.out" 2>&1 ||
		{ echo "podman cannot run a container here: $(oneline "$tmp/try.out")"; return; }
	# (Two specs of one kind in one directory conflict, and podman then resolves neither.)
	local other
	other=$(grep -l 'superpage\.io/run' /var/run/cdi/*.yaml /var/run/cdi/*.json 2>/dev/null | grep -vx "$SPEC" | head -n 1)
	[ -z "$other" ] || { echo "$other holds devices of kind superpage.io/run too"; return; }
	mkdir -p /var/run/cdi 2>/dev/null && "$SP" cdi --output "$SPEC" >/dev/null 2>"$tmp/cdi.err" ||
		{ echo "cannot write $SPEC: $(oneline "$tmp/cdi.err")"; return; }
}

# Starts heap_heavy MIB in a container that holds until its stdin ends: name and
# device (or ""), more podman options after. Leaves hold_fd open; 0 when it is ready.
start_container() { # name device mib [podman options...]
	local name=$1 dev=$2 mib=$3
	shift 3
	mkfifo "$tmp/$name.in"
	pod run --rm -i --name "$name" ${dev:+--device superpage.io/run=$dev} "$@" sp-test-heap:1 \
		/bin/heap_heavy "$mib" hold <"$tmp/$name.in" >"$tmp/$name.out" 2>"$tmp/$name.err" &
	exec {hold_fd}>"$tmp/$name.in"
	fd_of[$name]=$hold_fd
	holders+=("$name")
	for _ in $(seq 300); do
		grep -q '^ready' "$tmp/$name.err" && return 0
		[ -s "$tmp/$name.out" ] || kill -0 $! 2>/dev/null || break
		sleep 0.1
	done
	return 1
}

stop_container() { # name
	local fd=${fd_of[$1]:-}
	[ -n "$fd" ] && exec {fd}>&-
	fd_of[$1]=
	for _ in $(seq 100); do
		pod container exists "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	pod rm -f -t 0 "$1" >/dev/null 2>&1
}

host_pid() { pod inspect --format '{{.State.Pid}}' "$1" 2>/dev/null; }

# The share of the program's anonymous memory on huge pages, as it read it itself.
own_share() { # file.err
	awk '/^anon /{ if ($2 > 0) printf "%.3f\n", $4 / $2; else print "0" }' "$1"
}

# From the host: superpage stat --json of the container's process: its share of
# anonymous memory (heap + anon regions) on huge pages, and its hugetlb bytes.
host_share() { # pid
	"$SP" stat --json "$1" >"$tmp/stat.json" 2>"$tmp/stat.err" || return 1
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
r = d["regions"]
b = r["heap"]["bytes"] + r["anon"]["bytes"]
h = r["heap"]["huge_bytes"] + r["anon"]["huge_bytes"]
print("%.3f %d" % (h / b if b else 0, d["hugetlb_bytes"]))' "$tmp/stat.json"
}

# One run of the C program: with the device (or none), its output, its own share and
# the share the host reads; the checks that need it running (fn) are called meanwhile.
declare -A out_of share_of host_of htlb_of
run_heap() { # label device [fn [podman options...]]
	local label=$1 dev=$2 fn=${3:-} pid s
	shift 3 2>/dev/null || shift $#
	if ! start_container "sp-test-$label" "$dev" 256 "$@"; then
		fail "container_$label" "the container did not get ready: $(oneline "$tmp/sp-test-$label.err") $(oneline "$tmp/sp-test-$label.out")"
		stop_container "sp-test-$label"
		return 1
	fi
	pid=$(host_pid "sp-test-$label")
	s=$(host_share "$pid") || s="? ?"
	host_of[$label]=${s% *}
	htlb_of[$label]=${s#* }
	[ -n "$fn" ] && "$fn" "sp-test-$label" "$pid"
	stop_container "sp-test-$label"
	out_of[$label]=$(cat "$tmp/sp-test-$label.out")
	share_of[$label]=$(own_share "$tmp/sp-test-$label.err")
	echo "    $label: $(oneline "$tmp/sp-test-$label.out" 1) | own: $(grep '^anon' "$tmp/sp-test-$label.err") = ${share_of[$label]} | host stat: ${host_of[$label]}, hugetlb ${htlb_of[$label]} B"
}

at_least() { python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= float(sys.argv[2]) else 1)' "$1" "$2" 2>/dev/null; }

# Inside the container: status and stat run on read-only sysfs and say what they
# cannot see; the container's memory limit is what they read.
check_inside() { # name pid
	local c=$1
	pod exec "$c" superpage status >"$tmp/in_status" 2>&1
	rc=$?
	if [ "$rc" != 0 ] || ! grep -q '^container: podman' "$tmp/in_status" ||
		! grep -q 'read-only: pools and THP modes cannot be set from here' "$tmp/in_status" ||
		! grep -q 'memory cgroup .*libpod-.*: limit 512.0 MiB' "$tmp/in_status"; then
		fail container_status_inside "exit $rc: $(grep -A6 '^container' "$tmp/in_status" | tr '\n' ' ' | cut -c 1-400)"
	else
		pass container_status_inside
	fi
	pod exec "$c" superpage status --json >"$tmp/in_status.json" 2>&1
	if ! python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
c, m = d["container"], d["limits"]["memory"]
assert c and c["sysfs_read_only"] and c["cannot_see"], c
assert m["limit_bytes"] == 512 << 20, m
' "$tmp/in_status.json" 2>"$tmp/in_status.why"; then
		fail container_status_inside_json "$(oneline "$tmp/in_status.why")"
	else
		pass container_status_inside_json
	fi
	pod exec "$c" superpage stat 1 >"$tmp/in_stat" 2>&1
	rc=$?
	if [ "$rc" != 0 ] || ! grep -q '^pid 1 (heap_heavy)' "$tmp/in_stat" ||
		! grep -q 'memory cgroup .*limit 512.0 MiB' "$tmp/in_stat" ||
		! grep -q '(in a container: ' "$tmp/in_stat"; then
		fail container_stat_inside "exit $rc: $(head -c 400 "$tmp/in_stat")"
	else
		pass container_stat_inside
	fi
}

# From the host: stat --all --cgroup lists the container's cgroup with its name.
check_named() { # name pid
	local c=$1
	"$SP" stat --all --cgroup --json >"$tmp/cg.json" 2>"$tmp/cg.err"
	if ! python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
mine = [g for g in d["cgroups"] if g["container"] and g["container"]["name"] == sys.argv[2]]
assert mine, "no cgroup named %s" % sys.argv[2]
g = mine[0]
assert g["container"]["engine"] == "podman" and ("libpod-" + g["container"]["id"]) in g["cgroup"], g
assert g["huge_bytes"] >= 200 << 20, "its cgroup holds %d huge bytes" % g["huge_bytes"]
' "$tmp/cg.json" "$c" 2>"$tmp/cg.why"; then
		fail container_named_on_host "$(oneline "$tmp/cg.why")"
	else
		"$SP" stat --all --cgroup >"$tmp/cg.txt" 2>&1
		if grep -q "\[podman $c [0-9a-f]\{12\}\]" "$tmp/cg.txt"; then
			pass container_named_on_host
		else
			fail container_named_on_host "the text does not name it: $(grep libpod "$tmp/cg.txt" | head -n 2)"
		fi
	fi
}

# With the device and a memory limit: limits seen inside, named from the host.
check_auto() { check_inside "$@"; check_named "$@"; }

# Without the device, promoted by its host PID.
check_promote() { # name pid
	local before after
	before=$(host_share "$2")
	"$SP" promote "$2" >"$tmp/promote.out" 2>&1
	rc=$?
	after=$(host_share "$2")
	echo "    promote $2 (host PID): ${before% *} -> ${after% *} of its anonymous memory on huge pages"
	if [ "$rc" != 0 ] || ! at_least "${after% *}" 0.9; then
		fail container_promote "exit $rc, share ${before% *} -> ${after% *}: $(oneline "$tmp/promote.out")"
	else
		pass container_promote
	fi
}

why=$(podman_blocker)
if [ -n "$why" ]; then
	skip container "$why"
	exit 0
fi
export CONTAINERS_CONF=$tmp/containers.conf
# Under THP "always" the kernel would put a plain heap on huge pages too.
if ! sysfs_thp_not_always; then
	skip container "THP is always and cannot be set to madvise: a plain heap would be huge too"
	exit 0
fi

run_heap none "" check_promote
run_heap auto auto check_auto --memory 512m
if pool_add 160; then
	run_heap 2m 2m
else
	skip container_2m "$why"
fi

name=container_auto
if [ -z "${out_of[auto]:-}" ] || [ -z "${out_of[none]:-}" ]; then
	fail $name "a run did not finish"
elif [ "${out_of[auto]}" != "${out_of[none]}" ]; then
	fail $name "output '${out_of[auto]}' differs from '${out_of[none]}' without the device"
elif ! at_least "${share_of[auto]}" 0.95 || ! at_least "${host_of[auto]}" 0.95; then
	fail $name "with the device ${share_of[auto]} (own) / ${host_of[auto]} (host) of the heap on huge pages, want >= 0.95"
else
	pass $name
fi
name=container_without_device
if at_least "${share_of[none]:-1}" 0.1 || at_least "${host_of[none]:-1}" 0.1; then
	fail $name "without the device ${share_of[none]:-?} (own) / ${host_of[none]:-?} (host) on huge pages, want < 0.1"
else
	pass $name
fi
if [ -n "${out_of[2m]+x}" ]; then
	name=container_2m
	if [ "${out_of[2m]}" != "${out_of[none]}" ]; then
		fail $name "output '${out_of[2m]}' differs from '${out_of[none]}' without the device"
	elif ! at_least "${share_of[2m]}" 0.95 || [ "${htlb_of[2m]:-0}" -lt $((200 << 20)) ]; then
		fail $name "${share_of[2m]} of the heap on huge pages, ${htlb_of[2m]} B of hugetlb, want >= 0.95 and >= 200 MiB"
	else
		pass $name
	fi
fi
put_pool_back

# A Python program: an image of the host's python3 and its standard library.
python_image() {
	local py lib stdlib
	py=$(readlink -f "${PY:-}" 2>/dev/null)
	[ -x "$py" ] || { echo "no python3 to copy"; return; }
	stdlib=$("$py" -S -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])') || { echo "cannot find python's stdlib"; return; }
	mkdir -p "$tmp/pyimg$(dirname "$py")" "$tmp/pyimg$stdlib"
	cp "$py" "$tmp/pyimg$py" && cp "$here/heap_heavy.py" "$tmp/pyimg/heap_heavy.py" || { echo "cannot copy $py"; return; }
	for lib in $(ldd "$py" | grep -o '/[^ ]*'); do
		mkdir -p "$tmp/pyimg$(dirname "$lib")" && cp -L "$lib" "$tmp/pyimg$lib"
	done
	tar -C "$stdlib" --exclude=./test --exclude=./dist-packages --exclude=./site-packages \
		--exclude=__pycache__ --exclude=./idlelib --exclude=./tkinter --exclude=./lib2to3 \
		--exclude=./ensurepip -cf - . | tar -C "$tmp/pyimg$stdlib" -xf - || { echo "cannot copy $stdlib"; return; }
	tar -C "$tmp/pyimg" -cf "$tmp/pyimg.tar" . && pod import -q "$tmp/pyimg.tar" sp-test-py:1 >"$tmp/pyimport.out" 2>&1 ||
		{ echo "podman import failed: $(oneline "$tmp/pyimport.out")"; return; }
	echo "$py" >"$tmp/py.path"
}

name=container_python
why=$(python_image)
if [ -n "$why" ]; then
	skip $name "$why"
else
	py=$(cat "$tmp/py.path")
	for dev in none auto; do
		args=()
		[ $dev = auto ] && args=(--device superpage.io/run=auto)
		pod run --rm "${args[@]}" sp-test-py:1 "$py" -S /heap_heavy.py \
			>"$tmp/py.$dev.out" 2>"$tmp/py.$dev.err"
		echo "    python $dev: exit $? $(oneline "$tmp/py.$dev.out" 1) | $(grep '^anon' "$tmp/py.$dev.err") = $(own_share "$tmp/py.$dev.err")"
	done
	if ! grep -q '^sum ' "$tmp/py.none.out" || ! cmp -s "$tmp/py.none.out" "$tmp/py.auto.out"; then
		fail $name "outputs differ or are missing: '$(oneline "$tmp/py.none.out")' / '$(oneline "$tmp/py.auto.out")' $(oneline "$tmp/py.auto.err")"
	# (Without the device CPython has some of its memory on huge pages of its own:
	# 14% here with THP madvise.)
	elif ! at_least "$(own_share "$tmp/py.auto.err")" 0.95 || at_least "$(own_share "$tmp/py.none.err")" 0.5; then
		fail $name "on huge pages: $(own_share "$tmp/py.auto.err") with the device (want >= 0.95), $(own_share "$tmp/py.none.err") without (want < 0.5)"
	else
		pass $name
	fi
fi
