#!/usr/bin/env bash
# test_deb.sh - the Debian packages: make deb builds them, lintian finds no error in them,
# and (as root, with SUPERPAGE_TEST_DEB_INSTALL=1, as CI runs it) they install, work from
# /usr (status, run, bench, pkg-config, a program built against them) and purge leaving
# nothing of theirs behind.
# Usage: tests/cli/test_deb.sh BUILD_DIR. Prints "PASS name", "FAIL name: why" or
# "SKIP name: why" per test. Builds into a directory of its own (a few minutes); installs
# only where no superpage package and none of the packages' files is there already, and
# purges what it installed, also when a test fails or it is interrupted.
set -u
B=${1:?usage: tests/cli/test_deb.sh BUILD_DIR}
B=${B%/}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
SP=/usr/bin/superpage
PKGS=(superpage libsuperpage0 libsuperpage-dev)
tmp=$(mktemp -d)
# shellcheck source=tests/cli/lib.sh
. "$here/lib.sh"

# Whether this test installed the packages (and so must purge them).
installed=0
purge() {
	[ "$installed" = 1 ] || return 0
	DEBIAN_FRONTEND=noninteractive timeout 600 apt-get purge -y "${PKGS[@]}" >"$tmp/purge.out" 2>&1
	rc=$?
	installed=0
}
trap 'purge; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM HUP

# The one that allows the install is read before the command's variables go.
want_install=${SUPERPAGE_TEST_DEB_INSTALL:-0}
unset LD_PRELOAD GLIBC_TUNABLES "${!SUPERPAGE_@}"

case "/$B" in
*/san) san=1 ;;
*) san=${SANITIZE:-0} ;;
esac
if [ "$san" = 1 ]; then
	skip deb "the package is built without sanitizers; the plain run tests it"
	exit 0
fi
if ! is_root; then
	skip deb "not root: the package test builds, installs and purges as root, as CI does (make deb, then lintian build/deb/*.changes by hand)"
	exit 0
fi
for c in dpkg-buildpackage:dpkg-dev dh:debhelper lintian:lintian; do
	if ! command -v "${c%%:*}" >/dev/null 2>&1; then
		skip deb "needs ${c%%:*} (apt-get install ${c#*:})"
		exit 0
	fi
done

V=$(sed -n 's/^#define SP_VERSION_STRING "\(.*\)"/\1/p' "$top/include/superpage.h")
ARCH=$(dpkg --print-architecture)
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null)
out=$tmp/build
D=$out/deb
deb() { echo "$D/${1}_${V}_$ARCH.deb"; }

# ---------- make deb ----------

# make deb from the repository, into a build directory of the test's own: the packages,
# the .changes and the .buildinfo there, nothing left beside the repository or in
# debian/. (Outside any make check's MAKEFLAGS: this is a build of its own.)
test_build() {
	local name=deb_build f missing='' left='' made
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL timeout 1800 make -C "$top" deb B="$out" \
		>"$tmp/build.out" 2>&1
	rc=$?
	if [ "$rc" != 0 ]; then
		fail $name "make deb exited $rc: $(oneline "$tmp/build.out" 5)"
		return 1
	fi
	for f in "$(deb superpage)" "$(deb libsuperpage0)" "$(deb libsuperpage-dev)" \
		"$D/superpage_${V}_$ARCH.changes" "$D/superpage_${V}_$ARCH.buildinfo"; do
		[ -f "$f" ] || missing+=" ${f##*/}"
	done
	for f in "$top"/../superpage_"$V"_* "$top"/../libsuperpage*_"$V"_* "$top"/debian/build \
		"$top"/debian/files "$top"/debian/tmp "$top"/debian/superpage "$top"/debian/.debhelper; do
		[ -e "$f" ] && left+=" $f"
	done
	if [ -n "$missing" ]; then
		fail $name "make deb made no$missing: $(oneline "$tmp/build.out")"
		return 1
	elif [ -n "$left" ]; then
		fail $name "make deb left$left"
	else
		made=("$D"/*)
		pass $name "${#made[@]} files"
	fi
}

# lintian on the .changes: the .buildinfo and every package it lists. Warnings are
# counted, errors fail.
test_lintian() {
	local name=deb_lintian errs warns
	timeout 900 lintian "$D/superpage_${V}_$ARCH.changes" >"$tmp/lintian.out" 2>&1
	rc=$?
	errs=$(grep -c '^E: ' "$tmp/lintian.out")
	warns=$(grep -c '^W: ' "$tmp/lintian.out")
	# lintian exits 2 when it found an error, other than 0 and 2 when it failed itself
	if [ "$rc" != 0 ] && [ "$rc" != 2 ]; then
		fail $name "lintian exited $rc: $(oneline "$tmp/lintian.out")"
	elif [ "$errs" != 0 ]; then
		fail $name "$errs errors: $(grep '^E: ' "$tmp/lintian.out" | head -n 5 | tr '\n' ' ' | cut -c 1-400)"
	else
		pass $name "no error, $warns warnings"
	fi
}

# ---------- installed ----------

# Why the packages cannot be installed here (one of them installed already, or a
# file of theirs there already: make install PREFIX=/usr), or nothing. Notes the
# directories that are there already in $tmp/there: a purge leaves those.
why_not_install() {
	local p st f
	for p in "${PKGS[@]}"; do
		st=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null)
		case $st in
		'' | un* | pn*) ;;
		*) echo "$p is installed already (dpkg: $st): the test would replace it"; return ;;
		esac
	done
	: >"$tmp/there"
	for p in "${PKGS[@]}"; do
		dpkg-deb -c "$(deb "$p")" | awk '{ print $6 }'
	done | sed -e 's|^\.||' -e 's|/$||' -e '/^$/d' | sort -u >"$tmp/paths"
	while IFS= read -r f; do
		if [ -d "$f" ]; then # (a directory, or a link to one: /lib on a merged /usr)
			echo "$f" >>"$tmp/there"
		elif [ -e "$f" ] || [ -L "$f" ]; then
			echo "$f is there already (make install PREFIX=/usr?): the test would overwrite it"
			return
		fi
	done <"$tmp/paths"
}

pkg_state() { dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null | tr -d ' '; }
# The packages on the machine (not those dpkg merely knows of), with their versions.
installed_set() {
	dpkg-query -W -f='${db:Status-Abbrev} ${binary:Package} ${Version}\n' | grep -Ev '^(un|pn)' | sort
}

test_install() {
	local name=deb_install why p bad=''
	why=$(why_not_install)
	if [ -n "$why" ]; then
		skip $name "$why"
		return 1
	fi
	installed_set >"$tmp/before"
	# apt reads the files as the user _apt: the build directory must be open to it
	chmod 755 "$tmp" "$out" "$D"
	installed=1
	DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y \
		"$(deb superpage)" "$(deb libsuperpage0)" "$(deb libsuperpage-dev)" >"$tmp/install.out" 2>&1
	rc=$?
	for p in "${PKGS[@]}"; do
		[ "$(pkg_state "$p")" = ii ] || bad+=" $p ($(pkg_state "$p"))"
	done
	if [ "$rc" != 0 ] || [ -n "$bad" ]; then
		fail $name "apt-get install exited $rc, not installed:$bad: $(oneline "$tmp/install.out")"
		return 1
	fi
	pass $name
}

# superpage status from /usr/bin: 0, or 1 when the machine lacks something; not a
# usage error (2) or a crash.
test_status() {
	local name=deb_status
	sp status
	case $rc in
	0 | 1) pass $name "exit $rc" ;;
	*) fail $name "superpage status exited $rc: $(oneline "$tmp/err")" ;;
	esac
}

# The boot unit is installed, and its command is the packaged one's: superpage pool
# --apply, which with no pools.conf has nothing to do (exit 0).
test_unit() {
	local name=deb_unit unit=/lib/systemd/system/superpage-pools.service cmd
	cmd=$(sed -n 's/^ExecStart=//p' "$unit" 2>/dev/null)
	if [ "$cmd" != "/usr/bin/superpage pool --apply" ]; then
		fail $name "$unit: ExecStart '$cmd'"
		return
	fi
	SUPERPAGE_POOLS_CONF=$tmp/none.conf $cmd >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ "$rc" != 0 ] || ! grep -q 'nothing to apply' "$tmp/out" "$tmp/err"; then
		fail $name "'$cmd' with no config exited $rc: $(oneline "$tmp/out") $(oneline "$tmp/err")"
	else
		pass $name
	fi
}

# superpage run finds the runtime the package installs (/usr/lib/superpage).
test_run() {
	local name=deb_run want=/usr/lib/superpage/libsuperpage-run.so
	sp run -- true
	if [ "$rc" != 0 ]; then
		fail $name "superpage run -- true exited $rc: $(oneline "$tmp/err")"
		return
	fi
	# shellcheck disable=SC2016
	sp run -- sh -c 'echo "$LD_PRELOAD"'
	if [ "$rc" != 0 ] || [ "$(cat "$tmp/out")" != "$want" ]; then
		fail $name "exit $rc, LD_PRELOAD '$(cat "$tmp/out")', want '$want': $(oneline "$tmp/err")"
	else
		pass $name
	fi
}

# superpage bench finds the kernels the package installs (/usr/lib/superpage/kernels):
# one tiny kernel on base pages, no pool needed.
test_bench() {
	local name=deb_bench
	sp bench --kernel trans=256 --backing 4k --repeat 1
	if [ "$rc" != 0 ] || ! grep -Eq '^trans +256 ' "$tmp/out"; then
		fail $name "superpage bench exited $rc: $(oneline "$tmp/err")"
	else
		pass $name
	fi
}

# The package's superpage.pc (only the package's: not one of make install in /usr/local).
test_pkgconfig() {
	local name=deb_pkgconfig libs dir ver words
	if ! command -v pkg-config >/dev/null 2>&1; then
		skip $name "no pkg-config (apt-get install pkg-config)"
		return
	fi
	export PKG_CONFIG_LIBDIR=/usr/lib/$MA/pkgconfig PKG_CONFIG_PATH=
	libs=$(pkg-config --cflags --libs superpage 2>"$tmp/err")
	rc=$?
	dir=$(pkg-config --variable=libdir superpage 2>/dev/null)
	ver=$(pkg-config --modversion superpage 2>/dev/null)
	unset PKG_CONFIG_LIBDIR PKG_CONFIG_PATH
	read -r -a words <<<"$libs"
	# (no -I or -L: the package's directories are the compiler's own)
	if [ "$rc" != 0 ] || [ "${words[*]}" != "-lsuperpage" ]; then
		fail $name "pkg-config --cflags --libs superpage exited $rc, printed '$libs': $(oneline "$tmp/err")"
	elif [ "$dir" != "/usr/lib/$MA" ] || [ "$ver" != "$V" ]; then
		fail $name "libdir '$dir', version '$ver'; want /usr/lib/$MA and $V"
	else
		pass $name
	fi
}

# A program built against the -dev package: the shared library (found in the multiarch
# directory at run time) and the static one.
test_link() {
	local name=deb_link flags f
	if ! command -v gcc >/dev/null 2>&1; then
		skip $name "no gcc"
		return
	fi
	for f in /usr/local/include/superpage.h /usr/local/lib/libsuperpage.so /usr/local/lib/libsuperpage.a; do
		if [ -e "$f" ]; then
			skip $name "$f (make install) would be found before the package's"
			return
		fi
	done
	flags=-lsuperpage
	command -v pkg-config >/dev/null 2>&1 &&
		flags=$(PKG_CONFIG_LIBDIR=/usr/lib/$MA/pkgconfig PKG_CONFIG_PATH='' pkg-config --cflags --libs superpage)
	cat >"$tmp/v.c" <<'EOF'
#include <stdio.h>
#include <string.h>
#include <superpage.h>
int main(void) { puts(sp_version()); return strcmp(sp_version(), SP_VERSION_STRING) != 0; }
EOF
	# shellcheck disable=SC2086
	if ! gcc -o "$tmp/v" "$tmp/v.c" $flags >"$tmp/err" 2>&1; then
		fail $name "gcc v.c $flags: $(oneline "$tmp/err")"
		return
	fi
	if ! gcc -o "$tmp/v-static" "$tmp/v.c" -Wl,-Bstatic -lsuperpage -Wl,-Bdynamic -lpthread >"$tmp/err" 2>&1; then
		fail $name "gcc v.c with libsuperpage.a: $(oneline "$tmp/err")"
		return
	fi
	"$tmp/v" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ "$rc" != 0 ] || [ "$(cat "$tmp/out")" != "$V" ]; then
		fail $name "the program exited $rc, printed '$(cat "$tmp/out")', want $V: $(oneline "$tmp/err")"
	elif [ "$(readlink -f "$(ldd "$tmp/v" | awk '/libsuperpage\.so\.0 =>/ { print $3 }')")" != \
		"$(readlink -f "/usr/lib/$MA/libsuperpage.so.0")" ]; then
		# (/lib/$MA is /usr/lib/$MA on a merged /usr, and ldd may say either)
		fail $name "not linked with the package's library: $(ldd "$tmp/v" | grep superpage)"
	elif [ "$("$tmp/v-static")" != "$V" ] || ldd "$tmp/v-static" | grep -q superpage; then
		fail $name "the program linked with libsuperpage.a: $(ldd "$tmp/v-static" | grep superpage)"
	else
		pass $name
	fi
}

# apt-get purge: the packages gone, none of their files left (but directories that
# were there before the install), and no other package installed or removed since.
test_purge() {
	local name=deb_purge p f left='' bad=''
	for p in "${PKGS[@]}"; do
		dpkg -L "$p"
	done | grep -v '^/\.$' | sort -u >"$tmp/files"
	purge
	if [ "$rc" != 0 ]; then
		fail $name "apt-get purge exited $rc: $(oneline "$tmp/purge.out")"
		return
	fi
	for p in "${PKGS[@]}"; do
		case $(pkg_state "$p") in
		'' | un* | pn*) ;;
		*) bad+=" $p ($(pkg_state "$p"))" ;;
		esac
	done
	while IFS= read -r f; do
		{ [ -e "$f" ] || [ -L "$f" ]; } && ! grep -qxF "$f" "$tmp/there" && left+=" $f"
	done <"$tmp/files"
	installed_set >"$tmp/after"
	if [ -n "$bad" ]; then
		fail $name "still known to dpkg:$bad"
	elif [ -n "$left" ]; then
		fail $name "left behind:$(echo "$left" | cut -c 1-400)"
	elif ! diff "$tmp/before" "$tmp/after" >"$tmp/diff"; then
		fail $name "the installed packages changed: $(grep '^[<>]' "$tmp/diff" | head -n 5 | tr '\n' ' ')"
	else
		pass $name "$(wc -l <"$tmp/files") paths checked"
	fi
}

test_build || exit $failed
test_lintian
if [ "$want_install" != 1 ]; then
	skip deb_install "installs into this machine: SUPERPAGE_TEST_DEB_INSTALL=1 enables it (CI sets it)"
	exit $failed
fi
if ! command -v apt-get >/dev/null 2>&1; then
	skip deb_install "no apt-get"
	exit $failed
fi
if test_install; then
	test_status
	test_unit
	test_run
	test_bench
	test_pkgconfig
	test_link
fi
# also after a failed install: what was installed of it goes
[ "$installed" = 1 ] && test_purge
exit $failed
