# git: a repository made by git fast-import from a generated stream (600 commits),
# then gc --aggressive and fsck; compared: the commits and the object listing.
# shellcheck shell=bash disable=SC2154
prep_git() {
	need git git || prep_skip "$skip_reason"
	"$PY" "$W/gen.py" fastimport 600 >stream
}
work_git() {
	local g=(git -C "$rdir/repo" -c gc.auto=0 -c pack.threads=2)
	git init -q -b main "$rdir/repo"
	sprun import "${g[@]}" fast-import --quiet <"$pdir/stream"
	sprun gc "${g[@]}" gc -q --aggressive
	sprun fsck "${g[@]}" fsck --strict --no-dangling
	"${g[@]}" rev-parse main
	"${g[@]}" log --format='%H %T %s' main | sha256sum
	"${g[@]}" cat-file --batch-all-objects --batch-check='%(objectname) %(objecttype) %(objectsize)' | sha256sum
	sprun verify "${g[@]}" verify-pack "$rdir"/repo/.git/objects/pack/*.idx >/dev/null
}
