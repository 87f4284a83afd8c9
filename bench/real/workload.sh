#!/usr/bin/env bash
# workload.sh - the command superpage bench times for one workload: loads its file
# (bench/real/work/NAME.sh) and calls its run function with its data directory.
# usage: bench/real/workload.sh WORKLOAD_FILE DATA_DIR
set -u
[ $# = 2 ] || { echo "usage: workload.sh WORKLOAD_FILE DATA_DIR" >&2; exit 2; }
# the pool lock realbench.sh may hold on fd 9 is not for the servers started here
exec 9<&-
real=$(cd "$(dirname "$0")" && pwd)
export real
# shellcheck source=bench/real/lib.sh
. "$real/lib.sh"
# shellcheck disable=SC1090
. "$1"
run "$2"
