# sort: sort -S 1G of 40 MB of generated lines, on two threads.
# shellcheck shell=bash disable=SC2154
prep_sort() { "$PY" "$W/gen.py" lines 40 >data; }
work_sort() {
	sprun sort sort -S 1G --parallel=2 -T "$rdir" "$pdir/data" | sha256sum
	sprun sortn sort -S 1G --parallel=2 -T "$rdir" -k3,3n -k1,1 "$pdir/data" | sha256sum
}
