#!/usr/bin/env bash
# test_misuse.sh - heap misuse under superpage run: a write after free into a freed
# block's first words never makes malloc return the address written (the threads'
# caches hold no links in freed blocks; the spans' links are mangled and checked);
# free and realloc of a stack, a global, an mmap'd page and a wild pointer end the
# program with one line, as glibc's do; blocks of glibc's own malloc still free; the
# checking mode (--check) finds a write past a block's end and a write after free,
# and a clean program runs under it as it does plain; posix_memalign out of memory
# sets errno. What plain glibc does with the same
# misuse is said beside each, as a note.
# Usage: tests/runtime/misuse/test_misuse.sh BUILD_DIR [TEST[:ARG]...]. Prints "PASS name",
# "FAIL name: why" or "SKIP name: why" per test; other lines are measurements, not
# results.
set -u
B=${1:?usage: tests/runtime/misuse/test_misuse.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/runtime/lib.sh
. "$here/../lib.sh"
both_start misuse misuse/misuse common/torture

ABRT=134 # (128 + SIGABRT, as timeout and a shell report it)

# What plain glibc did with the same run, for the notes.
glibc_did() {
	if [ "$prc" = $ABRT ]; then
		echo "glibc aborts too ($(grep -m1 -v '^$' "$tmp/plain.err" | cut -c 1-60))"
	elif [ "$prc" -gt 128 ]; then
		echo "glibc dies of signal $((prc - 128))"
	else
		echo "glibc exits $prc"
	fi
}

# ---------- writes after free into the lists' links ----------

# misuse uaf* forks a child per size; each child frees two blocks, writes into the
# last one freed, then mallocs that size 600 times. None may get the address written.
# (The block written waits in the thread's cache, which holds the blocks' addresses,
# not links in them: the write changes nothing malloc reads, and the child runs on. A
# child that aborts, at a check of a span's link, is right too: glibc's children
# abort.)
test_uaf() { # mode
	local mode=$1 name=uaf_${1//-/_} line
	need_run "$name" || return
	plain "$P/misuse" "$mode"
	sprun -- "$P/misuse" "$mode"
	line=$(grep -m1 '^uaf:' "$tmp/sp.out")
	if [ "$src" != 0 ] || ! grep -q ' 0 given it, 0 other$' <<<"$line"; then
		fail "$name" "exit $src: ${line:-no result line}: $(oneline "$tmp/sp.err")"
	else
		pass "$name" "${line#uaf: }; glibc: $(grep -m1 '^uaf:' "$tmp/plain.out" | sed 's/^uaf: //')"
	fi
}

# ---------- free and realloc of pointers no malloc gave out ----------

test_invalid() { # call kind
	local call=$1 kind=$2 name=invalid_${1}_$2 msg
	need_run "$name" || return
	plain "$P/misuse" "$call-$kind"
	sprun -- "$P/misuse" "$call-$kind"
	msg=$(grep -m1 "^superpage: pid [0-9]*: $call(): invalid pointer 0x[0-9a-f]* (" "$tmp/sp.err")
	if [ "$src" != $ABRT ]; then
		fail "$name" "exit $src, want $ABRT (SIGABRT): $(oneline "$tmp/sp.out") $(oneline "$tmp/sp.err")"
	elif [ -z "$msg" ]; then
		fail "$name" "aborted without the line: $(oneline "$tmp/sp.err")"
	elif [ "$(grep -c . "$tmp/sp.err")" != 1 ]; then
		fail "$name" "more than one line on stderr: $(oneline "$tmp/sp.err")"
	else
		pass "$name" "${msg#*: pid * }; $(glibc_did)"
	fi
}

# Blocks of glibc's own malloc (reached in libc.so.6 by dlsym, as code that binds to
# it directly would) still go to glibc's free, and realloc moves one into the heap.
test_glibc_block() {
	local name=glibc_block
	need_run $name || return
	plain "$P/misuse" glibc-block
	sprun -- "$P/misuse" glibc-block
	judge $name "freed and reallocated, as plain"
}

# ---------- the checking mode ----------

test_check() { # what size
	local what=$1 size=$2 name=check_${1//-/_}_$2 want msg
	need_run "$name" || return
	case $what in
	overflow) want="free\(\): the $size-byte block 0x[0-9a-f]* was written past its end: byte \+$size changed" ;;
	after-free) want="(free|malloc)\(\): the [0-9]*-byte block 0x[0-9a-f]* was written after its free: byte \+$((size / 2)) changed" ;;
	esac
	plain "$P/misuse" "$what" "$size"
	sprun --check -- "$P/misuse" "$what" "$size"
	msg=$(grep -m1 -E "^superpage: pid [0-9]*: $want" "$tmp/sp.err")
	if [ "$src" != $ABRT ] || [ -z "$msg" ]; then
		fail "$name" "exit $src (want $ABRT) and stderr: $(oneline "$tmp/sp.err")"
	else
		pass "$name" "${msg#*: pid * }; plain: $(glibc_did)"
	fi
}

# A program that misuses nothing (the torture test: threads, forks, every malloc call,
# realloc and memalign of every size) runs under the checking mode as it does plain,
# with nothing said: no false report. SUPERPAGE_CHECK=yes is the same mode.
test_check_clean() {
	local name=check_clean extra
	need_run $name || return
	plain "$C/torture" -e -n 1500 -r 3 $SEED
	sprun --check -- "$C/torture" -n 1500 -r 3 $SEED
	extra=$(foreign_stderr "$tmp/sp.err")
	if differs; then
		fail $name "$why"
	elif [ -s "$tmp/sp.err" ]; then
		fail $name "stderr: $(oneline "$tmp/sp.err")"
	else
		limited "$tmp/sp.out" "$tmp/sp.err" env SUPERPAGE_CHECK=yes LD_PRELOAD="$RT" \
			"$C/torture" -n 1500 -r 3 $SEED
		src=$rc
		if differs; then
			fail $name "under SUPERPAGE_CHECK=yes: $why"
		else
			pass $name "torture under --check and SUPERPAGE_CHECK=yes: as plain"
		fi
	fi
}

# ---------- posix_memalign out of memory ----------

test_memalign_enomem() {
	local name=posix_memalign_enomem
	need_run $name || return
	plain "$P/misuse" memalign-enomem
	sprun -- "$P/misuse" memalign-enomem
	if differs; then
		fail $name "$why"
	else
		pass $name "$(cat "$tmp/sp.out"), as plain"
	fi
}

run_some "$@"
test_uaf uaf
test_uaf uaf-random
test_uaf uaf-aligned
for call in free realloc; do
	for kind in stack global mmap wild; do
		test_invalid $call $kind
	done
done
test_glibc_block
test_check overflow 8
test_check overflow 100
test_check overflow 5000
test_check overflow 300000
test_check after-free 24
test_check after-free 5000
test_check_clean
test_memalign_enomem
exit $failed
