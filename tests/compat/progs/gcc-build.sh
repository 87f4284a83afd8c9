# gcc-build: this project's command (build/superpage: src/core and src/cli, 19
# objects) built by make -j2 with gcc under the mode, always in the same directory:
# compared are every object's bytes and what the built command prints.
# shellcheck shell=bash disable=SC2154
build_prep() { # compiler package
	need "$1" "$2" || prep_skip "$skip_reason"
	need make make || prep_skip "$skip_reason"
	mkdir -p src-copy
	cp -a "$here/../../Makefile" "$here/../../superpage.pc.in" "$here/../../src" \
		"$here/../../include" "$here/../../bench" src-copy/
	rm -rf src-copy/build
}
build_work() { # compiler
	local tree=$pdir/tree
	rm -rf "$tree"
	cp -a "$pdir/src-copy" "$tree"
	sprun make make -s -C "$tree" -j2 CC="$1" build/superpage >/dev/null
	(cd "$tree/build" && find . -name '*.o' | sort | xargs sha256sum)
	"$tree/build/superpage" --version
	"$tree/build/superpage" help | sha256sum
	"$tree/build/superpage" run --help | sha256sum
}
prep_gcc_build() { build_prep gcc gcc; }
work_gcc_build() { build_work gcc; }
