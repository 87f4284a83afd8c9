# go-static: a Go program built with CGO_ENABLED=0, a static binary: superpage run
# cannot preload it and keeps it promoted by its watch; under plain superpage run
# (auto) its heap must reach 90% on huge pages.
# shellcheck shell=bash disable=SC2154
prep_go_static() {
	need go golang-go || prep_skip "$skip_reason"
	CGO_ENABLED=0 GOCACHE=$pdir/gocache GOPATH=$pdir/gopath HOME=$pdir \
		go build -o "$pdir/heap" "$W/heap.go"
	# (a PT_INTERP would make it a dynamic program: not what this row is for)
	if LC_ALL=C readelf -l "$pdir/heap" | grep -q INTERP; then
		prep_skip "go build made a dynamic program, not a static one"
	fi
}
work_go_static() {
	if [ "$1" != auto ]; then
		# (promote: before its passes end, about a second in)
		PROMOTE_AT=0.5 sprun go "$pdir/heap"
		return
	fi
	HEAP_HUGE_WANT=90 sprun go "$pdir/heap"
	local got
	# (the first line: its heap as it was made; the second after it grew)
	got=$(sed -n 's/^heap: \([0-9.]*\)% .*/\1/p' "$rdir/go.err" | head -n 1)
	if [ -z "$got" ]; then
		check_fail "the program said nothing of its huge pages: $(tail -n 1 "$rdir/go.err")"
	fi
	if ! awk -v g="$got" 'BEGIN { exit !(g >= 90) }'; then
		check_fail "its heap reached $got% on huge pages under superpage run, want 90%: $(grep '^heap:' "$rdir/go.err")"
	fi
}
