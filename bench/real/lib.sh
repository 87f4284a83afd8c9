# lib.sh - helpers of realbench.sh and its workloads (sourced).
# shellcheck shell=bash disable=SC2034

# Makes sure a command is there: installs its Debian package with apt-get when it is
# missing and we are root (apt-get update once a run), as make compat does; otherwise
# says why in rb_skip and returns 1.
rb_skip='' rb_updated=0
rb_need() { # command package
	local cmd=$1 pkg=$2 log
	command -v "$cmd" >/dev/null 2>&1 && return 0
	if [ "$(id -u)" != 0 ]; then
		rb_skip="$cmd missing (apt-get install $pkg as root)"
		return 1
	fi
	log=${out:-/tmp}/apt.log
	if [ $rb_updated = 0 ]; then
		echo "realbench: apt-get update" >&2
		DEBIAN_FRONTEND=noninteractive timeout 600 apt-get update -q >"$log" 2>&1 || true
		rb_updated=1
	fi
	echo "realbench: apt-get install $pkg" >&2
	if ! DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -q \
		--no-install-recommends "$pkg" >>"$log" 2>&1; then
		rb_skip="apt-get install $pkg failed: $(tail -n 1 "$log")"
		return 1
	fi
	command -v "$cmd" >/dev/null 2>&1 && return 0
	rb_skip="$cmd still missing after apt-get install $pkg"
	return 1
}

# A free TCP port on loopback.
rb_port() {
	python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# Runs a command without superpage's runtime: the clients of a server, which are not
# what is measured.
rb_plain() { env -u LD_PRELOAD "$@"; }
