# xz: liblzma (python3's lzma, the library of xz) compressing 16 MiB of text-like data
# at preset 9 (a 64 MiB dictionary, ~670 MiB of match finder).
# shellcheck shell=bash disable=SC2034,SC2154
title='xz -9 (liblzma) compressing 16 MiB'
set=quick
needs='python3:python3'
metric='^xz: ([0-9.]+) MB/s'
mib=${RB_XZ_MIB:-16}

prepare() { # dir
	local d=$1
	[ "$(stat -c %s "$d/input" 2>/dev/null)" = $((mib << 20)) ] && return 0
	python3 "$real/xz_run.py" make "$d/input" "$mib" >&2 || { echo "could not write the input"; return 1; }
}

run() { # dir
	exec python3 "$real/xz_run.py" compress "$1/input" "$mib"
}
