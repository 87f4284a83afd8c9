# python-tests: a slice of CPython's own regression tests (Debian's
# libpython3.11-testsuite); the pass/fail counts are compared with plain's.
# shellcheck shell=bash disable=SC2154
PY_TESTS=(test_list test_dict test_json test_re test_bytes test_unicode test_heapq
	test_bisect test_collections test_struct test_sort test_string test_zlib test_hashlib
	test_mmap)
prep_python_tests() {
	local lib
	lib=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])') ||
		prep_skip "cannot ask $PY for its library"
	need "$lib/test/test_list.py" "libpython$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')-testsuite" ||
		prep_skip "$skip_reason"
}
work_python_tests() {
	local rc=0
	sprun tests "$PY" -m test "${PY_TESTS[@]}" >"$rdir/tests.log" || rc=$?
	# What is compared: the summary (how many passed, which failed), not timings.
	grep -E '^(== Tests result|All [0-9]+ tests OK|[0-9]+ tests? (OK|failed|skipped|altered)|    test_)' "$rdir/tests.log" |
		sed 's/ in [0-9.]* sec.*//' || true
	return "$rc"
}
