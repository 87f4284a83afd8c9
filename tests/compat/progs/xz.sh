# xz: a round trip of 3 MB of generated text (compress -6 on two threads, decompress).
# shellcheck shell=bash disable=SC2154
prep_xz() {
	need xz xz-utils || prep_skip "$skip_reason"
	"$PY" "$W/gen.py" lines 3 >data
}
work_xz() {
	sprun xz xz -6 -T2 -c "$pdir/data" >data.xz
	sprun unxz xz -dc data.xz | sha256sum
	sha256sum <data.xz  # the same input and options make the same stream
}
