# zstd: a round trip of 24 MB of generated text (-12 --long=27, two threads).
# shellcheck shell=bash disable=SC2154
prep_zstd() {
	need zstd zstd || prep_skip "$skip_reason"
	"$PY" "$W/gen.py" lines 24 >data
}
work_zstd() {
	sprun zstd zstd -q -12 --long=27 -T2 -c "$pdir/data" >data.zst
	sprun unzstd zstd -q -d --long=27 -c data.zst | sha256sum
	sha256sum <data.zst
}
