# cpython-fork: CPython's own regression tests that fork (Debian's
# libpython3.11-testsuite, run by Debian's python3.11): a module a command, serial,
# resources off (-u none), each module bounded by regrtest's --timeout; what is compared
# with plain is, per module, how many cases passed, failed and were skipped and which
# failed (--junit-xml, tests/compat/junit.py).
# shellcheck shell=bash disable=SC2154
CPY=/usr/bin/python3.11
CPY_MODULES=(test_os test_posix test_subprocess test_multiprocessing_fork test_asyncio
	test_concurrent_futures)

# The cases of a module that run, as regrtest patterns (a glob matched with the whole
# test id or any dotted part of it): -m keeps, -i leaves out. All of these six modules
# took 6 min plain here, too long for every mode, so the slow ones keep the cases that
# fork and leave out (each module alone, plain, 2 cores):
# - test_subprocess (30 s): ProcessTestCaseNoPoll, ProcessTestCase's cases with select()
#   in place of poll() in the parent; Win32ProcessTestCase and CommandsWithSpaces
#   (Windows); cases that wait 1-3 s on purpose (a timeout, a child left to die).
# - test_multiprocessing_fork (73 s): the WithThreads classes (threads, no fork) and the
#   WithManager ones (proxies to one forked manager); cases that sleep or wait for a
#   timeout of 1-5 s (TestWait's, Barrier's and Condition's timeouts, the resource
#   tracker killed by signals, Finalize's thread safety). TestProcess's test_terminate
#   was out a while, after a regrtest timeout "in test_terminate" in one of 3
#   fresh-clone runs under auto (a name TestPool's case has too; on CPython's buildbots
#   test_terminate has timed out and failed: python/cpython#84590, #82657); it is in
#   again, as no run here has hung or failed since: its class 12 times in every mode,
#   and plain, auto, thp and 4k each 150 times alone, its class 100 times and this
#   module's selection 30 times (plain and auto 70).
# - test_asyncio (99 s, 2352 cases): only asyncio's subprocess tests (with the default
#   ThreadedChildWatcher and the PidfdChildWatcher; the SIGCHLD watchers spawn the same
#   way), test_unix_events (the child watchers and signals, mostly mocked: 0.1 s) and
#   the event loops' test_subprocess_* cases; but two cases that sleep 1-1.5 s.
# - test_concurrent_futures (159 s): the ProcessPoolFork classes (spawn and forkserver
#   start fresh interpreters; ThreadPool forks nothing) but ProcessPoolForkWaitTest
#   (wait() on futures whose tasks sleep 1.5-6 s) and cases that wait 2-6 s for a
#   timeout.
# test_os and test_posix (3 s together) run whole.
cpython_select() { # module: sets sel
	case $1 in
	test_subprocess)
		sel=(-m 'test.test_subprocess.POSIXProcessTestCase.*'
			-m 'test.test_subprocess.ProcessTestCase.*'
			-m 'test.test_subprocess.RunFuncTestCase.*'
			-m 'test.test_subprocess.MiscTests.*'
			-m 'test.test_subprocess.ContextManagerTests.*'
			-i '*.test_check_output_timeout' -i '*.test_communicate_timeout'
			-i '*.test_communicate_repeated_call_after_stdout_close'
			-i '*.test_kill_dead' -i '*.test_send_signal_dead' -i '*.test_terminate_dead') ;;
	test_multiprocessing_fork)
		sel=(-i 'test.test_multiprocessing_fork.WithThreads*'
			-i 'test.test_multiprocessing_fork.WithManager*'
			-i '*.TestWait.test_wait_timeout' -i '*.TestWait.test_wait_integer'
			-i '*.WithProcessesTestPoll.test_boundaries'
			-i '*.WithProcessesTestBarrier.test_timeout'
			-i '*.WithProcessesTestBarrier.test_default_timeout'
			-i '*.WithProcessesTestCondition.test_wait_result'
			-i '*.TestTimeouts.test_timeout'
			-i '*.WithProcessesTestListenerClient.test_issue14725'
			-i '*.TestResourceTracker.test_resource_tracker_sig*'
			-i '*.WithProcessesTestFinalize.test_thread_safety') ;;
	test_asyncio)
		sel=(-m 'test.test_asyncio.test_subprocess.*'
			-m 'test.test_asyncio.test_unix_events.*'
			-m 'test.test_asyncio.test_events.*.test_subprocess_*'
			-i 'test.test_asyncio.test_subprocess.SubprocessSafeWatcherTests.*'
			-i 'test.test_asyncio.test_subprocess.SubprocessFastWatcherTests.*'
			-i '*.test_read_stdout_after_process_exit' -i '*.test_kill_issue43884') ;;
	test_concurrent_futures)
		sel=(-m 'test.test_concurrent_futures.ProcessPoolFork[A-Z]*'
			-i 'test.test_concurrent_futures.ProcessPoolForkWaitTest.*'
			-i '*.test_map_timeout' -i '*.test_duplicate_futures' -i '*.test_zero_timeout') ;;
	*) sel=() ;;
	esac
}

prep_cpython_fork() {
	need "$CPY" python3.11 || prep_skip "$skip_reason"
	need /usr/lib/python3.11/test/test_os.py libpython3.11-testsuite || prep_skip "$skip_reason"
}

# Where the tracebacks in a module's stderr (faulthandler's, at regrtest's timeout or a
# fatal signal) were, a thread each that was in a test: the test's method with its file
# and line (two classes may have a method of one name) and the innermost frame, where
# the thread waited: "test_x (_test_m.py:502; at popen_fork.py:27 poll)".
cpython_where() { # err
	awk '/^(Current thread|Thread) 0x/ { n++; next }
		match($0, /^  File ".*", line [0-9]+ in /) {
			f = $0; sub(/^  File "/, "", f); sub(/", line .*/, "", f); sub(/.*\//, "", f)
			l = $0; sub(/.*", line /, "", l); fn = l; sub(/ in .*/, "", l); sub(/^[0-9]+ in /, "", fn)
			if (!(n in at)) at[n] = f ":" l " " fn
			if (fn ~ /^test_/ && !(n in t)) t[n] = fn " (" f ":" l
		}
		END { for (i = 0; i <= n; i++) if (i in t) printf "%s; at %s) ", t[i], at[i] }' "$1" 2>/dev/null
}

# A module's failed cases (or where it hung), one line at the end of its stderr for
# the verdict to show.
cpython_why() { # module status
	local why in
	in=$(cpython_where "$rdir/$1.err")
	if grep -q '^Timeout (' "$rdir/$1.err" 2>/dev/null; then
		why="$1: regrtest's --timeout, in: $in"
	elif [ "$2" -gt 128 ]; then
		why="$1: regrtest itself ended by a signal, in: $in"
	else
		why="$1: status $2: $(grep -E "^$1: (failed|error) " "$rdir/$1.sum" 2>/dev/null |
			sed "s/^$1: //; s/test\.$1\.//" | tr '\n' ' ' || true)"
	fi
	echo "$why" >>"$rdir/$1.err"
}

work_cpython_fork() {
	local m st rc=0 sel
	# (regrtest's own directory and the tests' files below the run's: what a test that
	# hung or crashed leaves goes with it)
	mkdir -p "$rdir/tmp"
	for m in "${CPY_MODULES[@]}"; do
		cpython_select "$m"
		st=0
		TMPDIR=$rdir/tmp sprun "$m" "$CPY" -m test -u none --timeout $((LIMIT / 2)) \
			--junit-xml "$rdir/$m.xml" "${sel[@]}" "$m" >"$rdir/$m.log" || st=$?
		"$PY" "$here/junit.py" "$m" "$rdir/$m.xml" >"$rdir/$m.sum" ||
			echo "$m: no result (regrtest's status $st)" >"$rdir/$m.sum"
		cat "$rdir/$m.sum"
		# (patterns that match no case any more must not pass for a test)
		if grep -q "^$m: 0 cases" "$rdir/$m.sum"; then
			check_fail "$m: no case ran (do its patterns still match?)"
		fi
		if [ "$st" != 0 ]; then
			cpython_why "$m" "$st"
			[ "$rc" != 0 ] || rc=$st
		fi
	done
	return "$rc"
}
