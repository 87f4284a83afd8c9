#!/usr/bin/env bash
# test_programs.sh - real programs under superpage run (Python, gcc, sort, sh and bash
# forking and execing, sqlite3, make -j2): the same output as without it, and every
# process of theirs accounted for in --stats.
# Usage: tests/runtime/programs/test_programs.sh BUILD_DIR [TEST[:ARG]...]. Prints "PASS name",
# "FAIL name: why" or "SKIP name: why" per test; other lines are measurements, not
# results. Every sysfs value it changes is put back, even on failure or Ctrl-C.
set -u
B=${1:?usage: tests/runtime/programs/test_programs.sh BUILD_DIR}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/runtime/lib.sh
. "$here/../lib.sh"
both_start programs programs/gendata

# ---------- real programs ----------

test_python() {
	local name=python_workload
	need_run $name || return
	if ! have_python; then
		skip $name "python3 is not installed (Debian package python3)"
		return
	fi
	plain "$PY" "$CSRC/workload.py" --size small
	sprun_stats -- "$PY" "$CSRC/workload.py" --size small
	judge_stats $name "" "$(basename "$PY" | cut -c 1-15)"
}

test_gcc() {
	local name=gcc_compile
	need_run $name || return
	if ! command -v gcc >/dev/null 2>&1; then
		skip $name "gcc is not installed"
		return
	fi
	mkdir -p "$tmp/gcc"
	cat >"$tmp/gcc/hello.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void)
{
	size_t n = 0;
	for (int i = 1; i <= 1000; i++) {
		char *s = malloc((size_t)i);
		memset(s, 'a' + i % 26, (size_t)i - 1);
		s[i - 1] = 0;
		n += strlen(s);
		free(s);
	}
	printf("hello %zu\n", n);
	return 0;
}
EOF
	cp "$CSRC/torture.c" "$tmp/gcc/"
	# Both runs compile the same file in the same folder (debug info names both); the
	# objects and the program's output must match.
	cat >"$tmp/gcc/build.sh" <<'EOF'
set -e
cd "$(dirname "$0")"
gcc -std=gnu11 -O2 -g -Wall -Wextra -D_GNU_SOURCE -c -o "torture_$1.o" torture.c
gcc -O2 -o "hello_$1" hello.c
"./hello_$1"
sha256sum <"torture_$1.o"
EOF
	plain sh "$tmp/gcc/build.sh" plain
	sprun_stats -- sh "$tmp/gcc/build.sh" sp
	judge_stats $name "$(head -n 1 "$tmp/sp.out")" gcc cc1 as
}

test_sort() {
	local name=sort_200mb avail
	need_run $name || return
	avail=$(df -Pk "$tmp" | awk 'NR == 2 { print $4 }')
	if [ "${avail:-0}" -lt 800000 ]; then
		skip $name "less than 800 MB free in $tmp"
		return
	fi
	"$P/gendata" lines 200000000 7 >"$tmp/lines" || {
		fail $name "gendata failed"
		return
	}
	# shellcheck disable=SC2016
	plain sh -c 'sort "$0" | sha256sum' "$tmp/lines"
	# shellcheck disable=SC2016
	sprun_stats -- sh -c 'sort "$0" | sha256sum' "$tmp/lines"
	rm -f "$tmp/lines"
	judge_stats $name "" sort
}

test_shell() {
	local sh name
	need_run shell_forkexec || return
	for sh in sh bash; do
		name=shell_forkexec_$sh
		if ! command -v $sh >/dev/null 2>&1; then
			skip $name "no $sh"
			continue
		fi
		plain $sh "$SRC/forkexec.sh" 150
		sprun_stats -- $sh "$SRC/forkexec.sh" 150
		# (dash ends with _exit: no account from the shell itself)
		judge_stats $name "" expr tr awk
	done
}

test_sqlite() {
	local name=sqlite3 d
	need_run $name || return
	if ! command -v sqlite3 >/dev/null 2>&1; then
		skip $name "sqlite3 is not installed (Debian package sqlite3)"
		return
	fi
	for d in plain sp; do
		mkdir -p "$tmp/sql_$d"
		"$P/gendata" csv 100000 3 >"$tmp/sql_$d/people.csv"
	done
	cd "$tmp/sql_plain" && plain sqlite3 test.db <"$SRC/workload.sql"
	cd "$tmp/sql_sp" && sprun_stats -- sqlite3 test.db <"$SRC/workload.sql"
	cd "$here" || return
	if differs || check_stats sqlite3; then
		fail $name "$why"
	elif ! grep -qx ok "$tmp/sp.out"; then
		fail $name "integrity_check did not say ok: $(oneline "$tmp/sp.out")"
	else
		pass $name "$(head -n 2 "$tmp/sp.out" | tail -n 1)"
	fi
	rm -rf "$tmp/sql_plain" "$tmp/sql_sp"
}

test_make() {
	local name=make_j2 d
	need_run $name || return
	if ! command -v make >/dev/null 2>&1 || ! command -v gcc >/dev/null 2>&1; then
		skip $name "make or gcc is not installed"
		return
	fi
	for d in plain sp; do
		mkdir -p "$tmp/make_$d"
		cat >"$tmp/make_$d/Makefile" <<'EOF'
# A tiny project: generated sources, two jobs at a time, a program that is run.
CC = gcc
CFLAGS = -O2 -Wall
PARTS = a b c d e f
prog: main.o $(PARTS:%=%.o)
	$(CC) -o $@ $^
main.c:
	{ echo '#include <stdio.h>'; \
	  for p in $(PARTS); do echo "int part_$$p(int);"; done; \
	  echo 'int main(void) { int s = 0;'; \
	  for p in $(PARTS); do echo "s += part_$$p(s + 1);"; done; \
	  echo 'printf("sum %d%c", s, 10); return 0; }'; } >$@
%.c:
	echo 'int part_$*(int x) { int s = 0; for (int i = 0; i < x + 100; i++) s += i % 7; return s; }' >$@
run: prog
	./prog
	cat *.c | cksum
	sha256sum *.o
.PHONY: run
EOF
	done
	plain make -j2 -s -C "$tmp/make_plain" run
	sprun_stats -- make -j2 -s -C "$tmp/make_sp" run
	judge_stats $name "$(head -n 1 "$tmp/sp.out")" make cc1 as prog
	rm -rf "$tmp/make_plain" "$tmp/make_sp"
}

run_some "$@"
test_python
test_gcc
test_sort
test_shell
test_sqlite
test_make
exit $failed
