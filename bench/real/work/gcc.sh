# gcc: a C build: this checkout's src/core, src/cli, src/bench and src/common (~60
# files, copied once by prepare: the tree is fixed for the whole run) compiled with
# gcc -O2 by make -j2, twice over (every object removed between the passes); its
# figure is files compiled per second, its check the hash of the objects (the same
# in every run: gcc's output does not depend on the heap it ran in). The process
# bench samples is the shell that drives make: its huge share is not cc1's.
# shellcheck shell=bash disable=SC2034,SC2154,SC2016
title='gcc -O2 build of src/ (make -j2), files/s'
set=full
needs='gcc:gcc make:make sha256sum:coreutils'
metric='^gcc: ([0-9.]+) files/s'
gcc_passes=${RB_GCC_PASSES:-2}

prepare() { # dir
	local d=$1 top f o objs=()
	top=$(cd "$real/../.." && pwd)
	rm -rf "$d/tree"
	mkdir -p "$d/tree/src" "$d/tree/bench"
	if ! cp -a "$top/include" "$d/tree/" || ! cp -a "$top/src/core" "$top/src/cli" "$top/src/bench" \
		"$top/src/common" "$d/tree/src/" || ! cp -a "$top"/bench/*.h "$d/tree/bench/"; then
		echo "could not copy $top/src"
		return 1
	fi
	{
		echo 'CFLAGS := -std=gnu11 -O2 -fPIC -D_GNU_SOURCE -Iinclude -Isrc/core -Isrc/common -Isrc/bench -Isrc'
		for f in $(cd "$d/tree" && ls src/*/*.c); do
			o=obj/${f%.c}.o
			objs+=("$o")
			printf '%s: %s\n\t@mkdir -p $(@D)\n\t@gcc $(CFLAGS) -c $< -o $@\n' "$o" "$f"
		done
		printf 'all: %s\n.DEFAULT_GOAL := all\n' "${objs[*]}"
	} >"$d/tree/build.mk"
	echo "${#objs[@]}" >"$d/tree/count"
	# once, plain: every file compiles with these flags
	make -s -C "$d/tree" -f build.mk -j2 >&2 || { echo "src/ does not compile with build.mk's flags"; return 1; }
	rm -rf "$d/tree/obj"
}

run() { # dir
	local t=$1/tree n i t0 t1
	cd "$t" || exit 1
	n=$(cat count)
	t0=$(date +%s.%N)
	for i in $(seq "$gcc_passes"); do
		rm -rf obj
		make -s -f build.mk -j2 || exit 1
	done
	t1=$(date +%s.%N)
	echo "check: $n files, objects $(find obj -name '*.o' | sort | xargs cat | sha256sum | cut -c1-16)"
	python3 -c 'import sys
n, t0, t1 = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
print("gcc: %.3f files/s" % (n / (t1 - t0)))' "$((n * gcc_passes))" "$t0" "$t1"
}
