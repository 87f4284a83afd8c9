#!/usr/bin/env bash
# test_pools_persist.sh - tests the pools kept across reboots: superpage pool --persist,
# --remove and --apply, pools.conf, status's persisted pools, and the boot unit.
# Usage: tests/cli/test_pools_persist.sh BUILD_DIR. Prints "PASS name", "FAIL name: why"
# or "SKIP name: why" per test. The config file is in a temporary directory
# (SUPERPAGE_POOLS_CONF), never /etc; every pool it changes is put back, even on failure.
set -u
B=${1:?usage: tests/cli/test_pools_persist.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
SP=$B/superpage
NODE0=/sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages
tmp=$(mktemp -d)
# shellcheck source=tests/cli/lib.sh
. "$here/lib.sh"

trap 'restore; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM HUP

# Not yet there: --persist makes the directory too.
conf=$tmp/etc/superpage/pools.conf
export SUPERPAGE_POOLS_CONF=$conf

if [ ! -x "$SP" ]; then
	fail pools_persist_built "$SP is missing: build with make B=$B tests"
	exit 1
fi

# ---------- helpers ----------

have_python() { command -v python3 >/dev/null 2>&1; }
# How many lines of a file are exactly this.
count_lines() { grep -cxF -- "$2" "$1" 2>/dev/null; }
# The output of the last run on one line, for a failure message.
said() { cat "$tmp/out" "$tmp/err" | tr '\n' ' ' | cut -c 1-300; }
# A config file of these lines.
write_conf() { # file lines...
	local f=$1
	shift
	mkdir -p "$(dirname "$f")"
	printf '%s\n' "$@" >"$f"
}
# Whether the test may change the 2M pool; says SKIP and why when it may not.
can_set_pool() { # name
	if ! is_root; then
		skip "$1" "needs root to set the 2M pool"
	elif [ ! -w "$P2M/nr_hugepages" ]; then
		skip "$1" "no 2M hugetlb pages on this machine"
	else
		return 0
	fi
	return 1
}

# ---------- bad arguments: exit 2, one line, nothing written ----------

test_bad_args() {
	expect_usage_error persist_bad_apply_count pool --apply 4
	expect_usage_error persist_bad_apply_size pool --apply --size 2M
	expect_usage_error persist_bad_apply_node pool --apply --node 0
	expect_usage_error persist_bad_apply_persist pool --persist --apply
	expect_usage_error persist_bad_remove_alone pool --remove
	expect_usage_error persist_bad_remove_size pool --remove --size 2M
	expect_usage_error persist_bad_remove_count pool --persist --remove 4
	expect_usage_error persist_bad_config_alone pool --config "$tmp/x.conf" 4
	expect_usage_error persist_bad_config_empty pool --apply --config ''
	expect_usage_error persist_bad_config_missing pool --apply --config
	expect_usage_error persist_bad_negative pool --persist -3
	expect_usage_error persist_bad_word pool --persist many
	expect_usage_error persist_bad_missing_count pool --persist
	expect_usage_error persist_bad_size pool --persist --size 2X 4
	expect_usage_error persist_bad_size_not_huge pool --persist --size 3M 4
	expect_usage_error persist_bad_remove_size_word pool --persist --remove --size big
	if [ -e "$conf" ] || [ -e "$(dirname "$conf")" ]; then
		fail persist_bad_args_wrote "bad arguments made $(dirname "$conf")"
	else
		pass persist_bad_args_wrote_nothing
	fi
}

# ---------- --apply without a file, with a malformed one ----------

test_apply_no_config() {
	local name=apply_no_config
	sp pool --apply
	if [ "$rc" != 0 ] || ! grep -q "^nothing to apply: $conf does not exist" "$tmp/out" ||
		[ -s "$tmp/err" ]; then
		fail $name "exit $rc: $(said)"
	else
		pass $name
	fi
	# A file named by --config must be there: it cannot be read, exit 2, and why.
	expect_usage_error ${name}_given pool --apply --config "$tmp/none/pools.conf"
	if [ "$rc" = 2 ] && ! grep -qxF "superpage: cannot read $tmp/none/pools.conf: No such file or directory" "$tmp/err"; then
		fail ${name}_given_says_why "$(said)"
	fi
	# One that cannot be opened for another reason: exit 1, and why.
	: >"$tmp/plain"
	sp pool --apply --config "$tmp/plain/pools.conf"
	if [ "$rc" != 1 ] || [ -s "$tmp/out" ] ||
		[ "$(cat "$tmp/err")" != "superpage: cannot read $tmp/plain/pools.conf: Not a directory" ]; then
		fail ${name}_given_unreadable "exit $rc, want 1: $(said)"
	else
		pass ${name}_given_unreadable
	fi
	write_conf "$tmp/empty.conf" '# no pools yet' ''
	sp pool --apply --config "$tmp/empty.conf"
	if [ "$rc" != 0 ] || ! grep -q "^nothing to apply: $tmp/empty.conf lists no pools" "$tmp/out"; then
		fail ${name}_empty "exit $rc: $(said)"
	else
		pass ${name}_empty
	fi
}

# Each malformed file: --apply exits 2 with one line that names FILE:LINE.
test_apply_malformed() {
	local f=$tmp/bad.conf name line what
	local -a cases=(
		"3|bad count|2M 4" "1G 1" "2M lots"
		"2|bad count|# comment" "2M -4"
		"2|bad size|2M 4" "2Q 4"
		"1|no COUNT|2M"
		"1|unexpected 'x'|2M 4 node=0 x"
		"1|node=N|2M 4 nodes=0"
		"1|node=N|2M 4 node=-1"
		"3|on line 1 already|2M 4" "1G 1 node=0" "2M 8"
		"1|longer than|2M 4 $(printf '%0300d' 0)"
	)
	local i=0 n want k=0
	while [ $i -lt ${#cases[@]} ]; do
		IFS='|' read -r line what first <<<"${cases[$i]}"
		n=$((i + 1))
		# The lines of this case: the first in the entry, then entries without a '|'.
		local -a lines=("$first")
		while [ $n -lt ${#cases[@]} ] && [[ ${cases[$n]} != *'|'* ]]; do
			lines+=("${cases[$n]}")
			n=$((n + 1))
		done
		k=$((k + 1))
		name="apply_malformed_$k"
		write_conf "$f" "${lines[@]}"
		want="$f:$line: "
		expect_usage_error "$name" pool --apply --config "$f"
		if [ "$rc" = 2 ] && { ! grep -qF "superpage: $want" "$tmp/err" ||
			! grep -qF "$what" "$tmp/err"; }; then
			fail "${name}_names_line" "want '$want...$what', got: $(cat "$tmp/err")"
		fi
		i=$n
	done
	# Comments, blank lines and spaces are no malformation.
	write_conf "$f" '# pools' '' '   # indented comment' "	3M	0   node=0  # trailing"
	SUPERPAGE_POOLS_CONF=$f "$SP" status >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ "$rc" = 0 ] && grep -qxF '  3M 0 node=0: no 3M pool on node 0 on this machine, differs' "$tmp/out"; then
		pass apply_wellformed
	else
		fail apply_wellformed "status (exit $rc) does not list '3M 0 node=0': $(grep -A2 persisted "$tmp/out" "$tmp/err")"
	fi
}

# ---------- --persist --remove: the file alone ----------

test_remove() {
	local name=persist_remove f=$tmp/remove/pools.conf mode
	write_conf "$f" '# my pools' '2M 4' '1G 2 node=0' '1G 3'
	chmod 640 "$f"
	sp pool --persist --remove --config "$f" --size 1G --node 0
	mode=$(stat -c %a "$f")
	if [ "$rc" != 0 ] || [ -s "$tmp/err" ] || ! grep -q "^removed from $f: the 1G pool on node 0" "$tmp/out"; then
		fail $name "exit $rc: $(said)"
	elif [ "$(cat "$f")" != "$(printf '# my pools\n2M 4\n1G 3')" ]; then
		fail $name "the file is now: $(tr '\n' '|' <"$f")"
	elif [ "$mode" != 640 ]; then
		fail $name "the file's mode went from 640 to $mode"
	elif ls "$(dirname "$f")" | grep -q 'pools.conf.'; then
		fail $name "a temporary file is left: $(ls "$(dirname "$f")" | tr '\n' ' ')"
	else
		pass $name
	fi
	sp pool --persist --remove --config "$f" --size 1G --node 0
	if [ "$rc" != 0 ] || ! grep -q "has no line for the 1G pool on node 0: nothing to remove" "$tmp/out" ||
		[ "$(wc -l <"$f")" != 3 ]; then
		fail ${name}_again "exit $rc: $(said)"
	else
		pass ${name}_again
	fi
	sp pool --persist --remove --config "$tmp/nowhere/pools.conf"
	if [ "$rc" != 0 ] || [ -e "$tmp/nowhere" ]; then
		fail ${name}_no_file "exit $rc (or it made the file): $(said)"
	else
		pass ${name}_no_file
	fi
	write_conf "$f" '2M 4' '2M x'
	expect_usage_error ${name}_malformed pool --persist --remove --config "$f"
	if [ "$(cat "$f")" != "$(printf '2M 4\n2M x')" ]; then
		fail ${name}_malformed_kept "a malformed file was rewritten: $(tr '\n' '|' <"$f")"
	fi
}

# ---------- status: none, matches, differs ----------

# Checks status --json's persisted_pools: python3 code given the object as p.
status_json_check() { # name python-condition
	local name=$1 why
	if ! have_python; then
		skip "$name" "no python3 to parse JSON"
		return
	fi
	sp status --json
	why=$(COND=$2 python3 - "$tmp/out" 2>&1 <<'PY'
import json, os, sys
d = json.load(open(sys.argv[1]))
p = d.get("persisted_pools")
if p is None: print("no persisted_pools key"); sys.exit()
for k in ("pools", "thp", "page_sizes", "nodes", "features"):
    if k not in d: print("lost key " + k); sys.exit()
if not eval(os.environ["COND"]): print("persisted_pools is %s" % json.dumps(p))
PY
)
	if [ "$rc" != 0 ]; then
		fail "$name" "status --json exited $rc: $(said)"
	elif [ -n "$why" ]; then
		fail "$name" "$why"
	else
		pass "$name"
	fi
}

test_status_none() {
	sp status
	if [ "$rc" != 0 ] || ! grep -qxF "persisted pools ($conf): none" "$tmp/out"; then
		fail status_persisted_none "exit $rc: $(grep persisted "$tmp/out" "$tmp/err")"
	else
		pass status_persisted_none
	fi
	status_json_check status_json_persisted_none \
		"p['path'] == '$conf' and p['present'] is False and p['pools'] == [] and p['matches'] is True and p['error'] is None"
}

# ---------- --persist and --apply on the real 2M pool ----------

test_persist_apply() {
	local name=persist_set cur want want2 now
	can_set_pool $name || return
	cur=$(cat "$P2M/nr_hugepages")
	want=$((cur + 4))
	want2=$((cur + 6))
	remember "$P2M/nr_hugepages"
	[ -w "$NODE0" ] && remember "$NODE0"
	# A line of another size and a comment that --persist must keep.
	write_conf "$conf" '# kept comment' '1G 2'
	sp pool --persist "$want"
	now=$(cat "$P2M/nr_hugepages")
	if [ "$now" -lt "$want" ] && [ "$rc" = 1 ]; then
		skip $name "the kernel gave $now of $want 2M pages"
		restore
		return
	fi
	if [ "$rc" != 0 ] || [ "$now" != "$want" ] ||
		! grep -q "^2M pool: $want pages .*(asked $want)" "$tmp/out" ||
		! grep -qxF "recorded in $conf: 2M $want" "$tmp/out"; then
		fail $name "exit $rc, sysfs $now: $(said)"
	elif [ "$(count_lines "$conf" "2M $want")" != 1 ]; then
		fail $name "no line '2M $want' in: $(tr '\n' '|' <"$conf")"
	elif [ "$(count_lines "$conf" '1G 2')" != 1 ] || [ "$(count_lines "$conf" '# kept comment')" != 1 ]; then
		fail ${name}_keeps_others "the other lines went: $(tr '\n' '|' <"$conf")"
	else
		pass $name
		pass ${name}_keeps_others
	fi

	# The same size again: its line is replaced, not added.
	sp pool --persist --size 2M "$want2"
	now=$(cat "$P2M/nr_hugepages")
	if [ "$rc" != 0 ] || [ "$now" != "$want2" ] || ! grep -qxF "replaced in $conf: 2M $want2" "$tmp/out"; then
		fail persist_replace "exit $rc, sysfs $now: $(said)"
	elif [ "$(grep -c '^2M ' "$conf")" != 1 ] || [ "$(count_lines "$conf" "2M $want2")" != 1 ] ||
		[ "$(count_lines "$conf" '1G 2')" != 1 ]; then
		fail persist_replace "the file is: $(tr '\n' '|' <"$conf")"
	else
		pass persist_replace
	fi

	# A file that cannot be read is not overwritten, and the pool is not set.
	cp "$conf" "$tmp/good.conf"
	echo '2M twelve' >>"$conf"
	expect_usage_error persist_malformed_refused pool --persist "$want"
	if [ "$(cat "$P2M/nr_hugepages")" != "$want2" ] || ! grep -qx '2M twelve' "$conf"; then
		fail persist_malformed_untouched "pool $(cat "$P2M/nr_hugepages") (want $want2), file: $(tr '\n' '|' <"$conf")"
	fi
	cp "$tmp/good.conf" "$conf"

	# --apply needs every pool of the file: this machine may have no 1G pages.
	sp pool --persist --remove --size 1G
	if [ "$rc" != 0 ] || [ "$(count_lines "$conf" '1G 2')" != 0 ]; then
		fail persist_remove_1g "exit $rc: $(said)"
	fi

	# The pool back where it was (as after a reboot): --apply sets it from the file.
	set_sysfs "$P2M/nr_hugepages" "$cur"
	sp status
	if ! grep -qxF "  2M $want2: running $cur, differs" "$tmp/out"; then
		fail status_persisted_differs "$(grep -A3 '^persisted' "$tmp/out" | tr '\n' '|')"
	else
		pass status_persisted_differs
	fi
	status_json_check status_json_persisted_differs \
		"p['present'] and p['matches'] is False and len(p['pools']) == 1 and p['pools'][0] == {'page_size': 2097152, 'node': None, 'count': $want2, 'running': $cur, 'matches': False}"

	sp pool --apply
	now=$(cat "$P2M/nr_hugepages")
	if [ "$now" -lt "$want2" ] && [ "$rc" = 1 ]; then
		skip apply_restores "the kernel gave $now of $want2 2M pages"
	elif [ "$rc" != 0 ] || [ "$now" != "$want2" ] ||
		! grep -q "^2M pool: $want2 pages .*(asked $want2)" "$tmp/out" ||
		! grep -qxF "applied $conf: 1 of 1 pool got their count" "$tmp/out"; then
		fail apply_restores "exit $rc, sysfs $now (want $want2): $(said)"
	else
		pass apply_restores
	fi
	sp status
	if ! grep -qxF "  2M $want2: running $now, $([ "$now" = "$want2" ] && echo matches || echo differs)" "$tmp/out"; then
		fail status_persisted_matches "$(grep -A3 '^persisted' "$tmp/out" | tr '\n' '|')"
	else
		pass status_persisted_matches
	fi
	if [ "$now" = "$want2" ]; then
		status_json_check status_json_persisted_matches \
			"p['matches'] is True and p['error'] is None and p['pools'][0]['running'] == $want2 and p['pools'][0]['matches'] is True"
	fi
	restore
}

# A pool this machine does not have: --apply sets the others, says which, exits 1.
test_apply_unknown_size() {
	local name=apply_unknown_size f=$tmp/unknown.conf cur
	can_set_pool $name || return
	cur=$(cat "$P2M/nr_hugepages")
	remember "$P2M/nr_hugepages"
	write_conf "$f" "2M $cur" '3M 1'
	sp pool --apply --config "$f"
	if [ "$rc" != 1 ] || ! grep -qF "superpage: $f:2: 3M is not a huge page size" "$tmp/err" ||
		! grep -q "^2M pool: $cur pages" "$tmp/out" ||
		! grep -qxF "applied $f: 1 of 2 pools got their count" "$tmp/out"; then
		fail $name "exit $rc: $(said)"
	else
		pass $name
	fi
	restore
}

# The second key of the same size: a node's pool gets its own line (set to what the
# node has, so nothing changes on a machine of many nodes).
test_persist_node() {
	local name=persist_node f=$tmp/node.conf node_cur
	can_set_pool $name || return
	if [ ! -w "$NODE0" ]; then
		skip $name "no per-node 2M pool"
		return
	fi
	remember "$P2M/nr_hugepages"
	remember "$NODE0"
	node_cur=$(cat "$NODE0")
	write_conf "$f" '2M 7'
	sp pool --persist --config "$f" --node 0 "$node_cur"
	if [ "$rc" != 0 ] || ! grep -qxF "recorded in $f: 2M $node_cur node=0" "$tmp/out"; then
		fail $name "exit $rc: $(said)"
	elif [ "$(cat "$f")" != "$(printf '2M 7\n2M %s node=0' "$node_cur")" ]; then
		fail $name "the file is: $(tr '\n' '|' <"$f")"
	else
		pass $name
	fi
	restore
}

# ---------- counts no machine of this memory could hold ----------

# Runs the command where a missing check could not reach the kernel: as user 65534
# when root (a pool of 1.8 EiB asked for real would take every free page), else as
# the user. Leaves rc, $tmp/out and $tmp/err.
sp_safe() { # args...
	if is_root; then
		"${as_nobody[@]}" "$SP" "$@" >"$tmp/out" 2>"$tmp/err"
	else
		"$SP" "$@" >"$tmp/out" 2>"$tmp/err"
	fi
	rc=$?
}

# A count beyond MemTotal (or one whose bytes overflow) is refused with one line that
# says so, exit 2, before the root check; --persist records nothing.
test_beyond_memory() {
	local name f why count
	if [ ! -d "$P2M" ]; then
		skip pool_beyond_memory "no 2M hugetlb pages on this machine"
		return
	fi
	if is_root && [ -n "$(nobody_blocker)" ]; then
		skip pool_beyond_memory "$(nobody_blocker)"
		return
	fi
	chmod 711 "$tmp"
	mkdir -p "$tmp/big"
	chmod 777 "$tmp/big"
	f=$tmp/big/pools.conf
	for count in 999999999999 9223372036854775807; do
		for mode in set persist; do
			name=pool_beyond_memory_${mode}_$count
			if [ $mode = set ]; then
				sp_safe pool "$count"
			else
				sp_safe pool --persist --config "$f" "$count"
			fi
			why=''
			if [ "$rc" != 2 ] || [ "$(nlines "$tmp/err")" != 1 ] || [ -s "$tmp/out" ]; then
				why="exit $rc, want 2 and one line: $(said)"
			elif ! grep -qE "^superpage: pool: $count pages of 2M \(.*\) are more than this machine's memory \(.*: at most [0-9]+ such pages\)$" "$tmp/err"; then
				why="the line does not say the memory is short: $(said)"
			elif [ -e "$f" ]; then
				why="recorded: $(tr '\n' '|' <"$f")"
			fi
			if [ -n "$why" ]; then fail $name "$why"; else pass $name; fi
		done
	done
}

# --apply: a line asking more than the memory fails that line, named FILE:LINE, and
# the kernel is not asked (the pool stays as it was). Root, under the pool lock.
test_apply_beyond_memory() {
	local name=apply_beyond_memory f=$tmp/huge.conf before lock
	can_set_pool $name || return
	exec {lock}>/tmp/sp-pool.lock
	# (tests/run.sh holds it for the whole run already: SP_POOL_LOCKED)
	if [ "${SP_POOL_LOCKED:-}" != 1 ] && ! flock -w 600 "$lock"; then
		skip $name "another test held /tmp/sp-pool.lock for 10 minutes"
		exec {lock}>&-
		return
	fi
	remember "$P2M/nr_hugepages"
	before=$(cat "$P2M/nr_hugepages")
	write_conf "$f" '2M 999999999999'
	sp pool --apply --config "$f"
	if [ "$rc" != 1 ] || [ "$(cat "$P2M/nr_hugepages")" != "$before" ] ||
		! grep -qE "^superpage: $f:1: 999999999999 pages of 2M \(.*\) are more than this machine's memory" "$tmp/err" ||
		! grep -qxF "applied $f: 0 of 1 pool got their count" "$tmp/out"; then
		fail $name "exit $rc, pool $(cat "$P2M/nr_hugepages") (was $before): $(said)"
	else
		pass $name
	fi
	restore
	exec {lock}>&-
}

# ---------- root ----------

test_not_root() {
	local name=persist_not_root why
	if ! is_root; then
		write_conf "$tmp/user.conf" '2M 4'
		expect_usage_error apply_not_root pool --apply --config "$tmp/user.conf"
		expect_usage_error $name pool --persist 4
		return
	fi
	why=$(nobody_blocker)
	if [ -n "$why" ]; then
		skip $name "$why"
		return
	fi
	# (mktemp -d made $tmp for root alone)
	chmod 711 "$tmp"
	mkdir -p "$tmp/user"
	chmod 777 "$tmp/user"
	"${as_nobody[@]}" env SUPERPAGE_POOLS_CONF="$tmp/user/pools.conf" "$SP" pool --persist 4 \
		>"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ "$rc" != 2 ] || [ "$(nlines "$tmp/err")" != 1 ] || ! grep -q 'needs root' "$tmp/err" ||
		[ -e "$tmp/user/pools.conf" ]; then
		fail $name "exit $rc: $(said)"
	else
		pass $name
	fi
	printf '2M 4\n' >"$tmp/user/pools.conf"
	chmod 644 "$tmp/user/pools.conf"
	"${as_nobody[@]}" "$SP" pool --apply --config "$tmp/user/pools.conf" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ "$rc" != 2 ] || [ "$(nlines "$tmp/err")" != 1 ] || ! grep -q 'needs root' "$tmp/err"; then
		fail apply_not_root "exit $rc: $(said)"
	else
		pass apply_not_root
	fi
}

# ---------- the boot unit ----------

test_unit() {
	local name=unit_verify unit bindir
	bindir=$(cd "$B" && pwd)
	mkdir -p "$tmp/unit"
	unit=$tmp/unit/superpage-pools.service
	sed -e "s|@BINDIR@|$bindir|g" "$here/../../dist/superpage-pools.service.in" >"$unit"
	if ! grep -qxF "ExecStart=$bindir/superpage pool --apply" "$unit" ||
		! grep -qx 'Type=oneshot' "$unit" || ! grep -qx 'RemainAfterExit=yes' "$unit" ||
		! grep -qx 'ConditionPathExists=/etc/superpage/pools.conf' "$unit" ||
		! grep -qx 'WantedBy=sysinit.target' "$unit" || grep -q '@' "$unit"; then
		fail unit_contents "$(grep -v '^#' "$unit" | tr '\n' '|')"
	else
		pass unit_contents
	fi
	if ! command -v systemd-analyze >/dev/null 2>&1; then
		skip $name "no systemd-analyze on this machine"
		return
	fi
	# --man=no: superpage(1) need not be installed where the test runs.
	if systemd-analyze verify --man=no "$unit" >"$tmp/out" 2>&1; then
		pass $name
	else
		fail $name "$(tr '\n' ' ' <"$tmp/out" | cut -c 1-300)"
	fi
}

test_bad_args
test_apply_no_config
test_apply_malformed
test_remove
test_status_none
test_persist_apply
test_apply_unknown_size
test_persist_node
test_beyond_memory
test_apply_beyond_memory
test_not_root
test_unit
exit $failed
