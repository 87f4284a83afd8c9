# zstd: the zstd command compressing 8 MiB of seeded text-like data (bench/real/xz_run.py
# make) at level 3, 40 times over, and at level 19 once, one thread; its figure is the
# geometric mean of the two MB/s, its check both outputs' hashes and their round trips.
# The process bench samples is the shell that drives zstd: its huge share is not
# zstd's.
# shellcheck shell=bash disable=SC2034,SC2154
title='zstd -3 and -19 compressing 8 MiB'
set=full
needs='zstd:zstd python3:python3 sha256sum:coreutils'
metric='^zstd: ([0-9.]+) MB/s'
expect='^check: both round trips ok$'
extras='level 3 MB/s=^zstd: .* level 3 ([0-9.]+)
level 19 MB/s=^zstd: .* level 19 ([0-9.]+)'
zstd_mib=${RB_ZSTD_MIB:-8}
zstd_fast=${RB_ZSTD_FAST:-40}

prepare() { # dir
	local d=$1
	[ "$(stat -c %s "$d/input" 2>/dev/null)" = $((zstd_mib << 20)) ] && return 0
	python3 "$real/xz_run.py" make "$d/input" "$zstd_mib" >&2 || { echo "could not write the input"; return 1; }
}

# Seconds since some fixed point, with nanoseconds.
zstd_now() { date +%s.%N; }

run() { # dir
	local d=$1 i t0 t1 t2 f ok
	t0=$(zstd_now)
	for i in $(seq "$zstd_fast"); do
		zstd -q --single-thread -3 -c "$d/input" >"$d/out3.zst" || exit 1
	done
	t1=$(zstd_now)
	zstd -q --single-thread -19 -c "$d/input" >"$d/out19.zst" || exit 1
	t2=$(zstd_now)
	ok=0
	for f in out3 out19; do
		if zstd -q -d -c "$d/$f.zst" | cmp -s - "$d/input"; then
			echo "check: $f $(stat -c %s "$d/$f.zst") bytes, sha256 $(sha256sum <"$d/$f.zst" | cut -c1-16), round trip ok"
			ok=$((ok + 1))
		else
			echo "check: $f round trip DIFFERS"
		fi
	done
	[ $ok = 2 ] && echo "check: both round trips ok"
	python3 -c 'import sys
b, t0, t1, t2, k = int(sys.argv[1]), *map(float, sys.argv[2:5]), int(sys.argv[5])
a, c = k * b / (t1 - t0) / 1e6, b / (t2 - t1) / 1e6
print("zstd: %.3f MB/s (geometric mean) level 3 %.2f level 19 %.3f" % ((a * c) ** 0.5, a, c))' \
		"$((zstd_mib << 20))" "$t0" "$t1" "$t2" "$zstd_fast"
}
