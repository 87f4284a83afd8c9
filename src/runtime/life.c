/* life.c - the runtime's life cycle: its start (one constructor, the init steps in
 * order), its one set of fork handlers (the locks in one stated order), and the
 * account at exit. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "life.h"
#include "malloc/central.h"
#include "malloc/malloc.h"
#include "pageheap/pageheap.h"
#include "runtime.h"

/* ---------- start ---------- */

static struct {
	pthread_once_t once;
	_Atomic int ready;           /* 1: serving, -1: could not start */
} life = { .once = PTHREAD_ONCE_INIT };

static void warn_option(const char *msg, void *arg)
{
	(void)arg;
	rt_say("%s", msg);
}

/* The heap's start, once, from the constructor or the first call that needs it
 * (a malloc made before the constructor ran, by ld.so or another library's): the
 * options from SUPERPAGE_*, the size classes, the fitted blocks' arenas, the threads'
 * caches, the page heap's range, then the live account's page. */
static void start(void)
{
	rt_options_read(warn_option);
	classes_init();
	fit_init();
	if (!malloc_init() || pages_init(rt_options()) < 0) {
		atomic_store(&life.ready, -1);
		rt_say("cannot set up the heap (no address space or memory left: ulimit -v?): "
		       "every malloc of this program fails");
		return;
	}
	atomic_store(&life.ready, 1);
	rt_live_init();
}

bool rt_init(void)
{
	if (atomic_load_explicit(&life.ready, memory_order_acquire) == 1)
		return true;
	pthread_once(&life.once, start);
	return atomic_load(&life.ready) == 1;
}

bool rt_ready(void)
{
	return atomic_load(&life.ready) == 1;
}

/* ---------- fork ----------
 * One registration, so that the order is this file's and not the link's. prepare
 * takes the locks in the order the runtime nests them (a thread that holds one of
 * them may take one further down the list, never one further up):
 *   1. the stacks' slots (stacks.c; a leaf: nothing is taken under it);
 *   2. the SysV table (shm.c);
 *   3. the packed chunks (pack.c), whose parts are marked MADV_DONTFORK;
 *   4. the central lists (central.c): the slots' lock, each slot's, each class's;
 *   5. the fitted blocks (fit.c): its arenas, then its meta lock (fit_lock);
 *   6. the page heap (units.c), which gives back its empty hugetlb units;
 *   7. the break (brk.c): it calls the page heap under its own lock, but only calls
 *      of the page heap that take no lock;
 *   8. the program's segments on hugetlb pages (segments.c);
 *   9. then, if private hugetlb memory is shared with the child, fork.c keeps the
 *      child's share and arms its guard.
 * parent and child undo it in the reverse order; the child first copies its hugetlb
 * memory in (if the guard has not), makes the other threads' slots orphans while it
 * still holds every lock, and starts its own live account.
 *
 * These handlers are registered before any other library's or the program's
 * (life_register_fork, from interpose.c's __register_atfork too), so that glibc runs
 * this prepare last, just before the fork itself (after the core's handler, which
 * takes the registry's lock), and this parent and child handler first: the child's
 * copy is made before other handlers write its memory. prepare leaves errno 0, so the
 * parent handler can tell a failed fork (glibc's fork sets errno only then). A fork
 * before the heap has started (a library's constructor, before this one) finds
 * nothing to do. */

static __thread bool fork_idle; /* this thread's fork came before the heap's start */
static __thread int fork_errno; /* the program's errno before the fork */

void rt_fork_prepare(void)
{
	fork_errno = errno;
	fork_idle = !rt_ready();
	if (fork_idle)
		return;
	stacks_fork_prepare();
	shm_fork_prepare();
	pack_fork_prepare();
	central_fork_lock();
	fit_lock();
	pages_lock();
	pages_fork_prepare();
	brk_fork_prepare();
	segs_fork_prepare();
	fork_share_prepare();
	errno = 0;
}

void rt_fork_parent(void)
{
	int e = errno;
	if (fork_idle)
		return;
	fork_share_parent(e != 0);
	segs_fork_parent();
	brk_fork_parent();
	pages_unlock();
	fit_unlock();
	central_fork_unlock();
	pack_fork_parent();
	shm_fork_after();
	stacks_fork_parent();
	errno = e ? e : fork_errno;
}

void rt_fork_child(void)
{
	if (fork_idle)
		return;
	fork_share_child();
	segs_fork_child();
	brk_fork_child();
	pages_fork_child();
	central_fork_orphan(malloc_thread_slot());
	pages_unlock();
	fit_unlock();
	central_fork_unlock();
	pack_fork_child();
	rt_live_fork_child();
	limits_fork_child();
	dense_fork_child();
	shm_fork_after();
	stacks_fork_child();
	errno = fork_errno;
}

typedef int (*register_fn)(void (*)(void), void (*)(void), void (*)(void), void *);
extern void *__dso_handle __attribute__((visibility("hidden")));
static register_fn real_register;

static void register_once(void)
{
	register_fn f = (register_fn)dlvsym(RTLD_NEXT, "__register_atfork", "GLIBC_2.3.2");
	if (!f)
		f = (register_fn)dlsym(RTLD_NEXT, "__register_atfork");
	__atomic_store_n(&real_register, f, __ATOMIC_RELEASE);
	if (f)
		f(rt_fork_prepare, rt_fork_parent, rt_fork_child, __dso_handle);
}

void life_register_fork(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, register_once);
}

int life_register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void),
			 void *dso)
{
	life_register_fork();
	register_fn f = __atomic_load_n(&real_register, __ATOMIC_ACQUIRE);
	return f ? f(prepare, parent, child, dso) : ENOSYS;
}

/* ---------- exit ---------- */

/* A copy of the stderr the program started with, for the account at exit: some
 * programs close stderr before they end (GNU coreutils do, in an atexit handler
 * that runs before this one). The copy is kept only when the account goes to stderr
 * (SUPERPAGE_STATS=yes or stderr), is closed on exec, and is used only while it is
 * still that same file. */
static struct {
	int fd;
	dev_t dev;
	ino_t ino;
	_Atomic int reported_pid;    /* the process that wrote its account */
} at_exit = { .fd = -1 };

static void keep_stderr(void)
{
	const struct sp_options *opt = rt_options();
	struct stat st;
	int fd;

	if (!opt->stats || opt->stats_file[0] || fstat(2, &st) < 0)
		return;
	/* High, out of the way of the numbers programs pick for themselves. */
	fd = fcntl(2, F_DUPFD_CLOEXEC, 100);
	if (fd < 0)
		fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return;
	at_exit.dev = st.st_dev;
	at_exit.ino = st.st_ino;
	at_exit.fd = fd;
}

/* Where the text account goes: the copy of stderr while it is still that file. */
static int report_stderr(void)
{
	struct stat st;

	if (at_exit.fd >= 0 && fstat(at_exit.fd, &st) == 0 && st.st_dev == at_exit.dev &&
	    st.st_ino == at_exit.ino)
		return at_exit.fd;
	return 2;
}

/* At exit, once per process: the account on stderr, or appended to the stats file;
 * before it, in the program superpage run started, the line of its tree's falls. */
static void report_at_exit(void)
{
	int e = errno, me, fd;
	const struct sp_options *opt = rt_options();

	/* (Superpage run's line of the falls from 2m and 1g: the program's, at its end.) */
	rt_run_falls_at_exit(report_stderr());
	if (!opt || !opt->stats)
		goto out;
	me = (int)getpid();
	if (atomic_exchange(&at_exit.reported_pid, me) == me)
		goto out;
	if (!opt->stats_file[0]) {
		rt_report(report_stderr(), false);
		goto out;
	}
	fd = open(opt->stats_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		rt_say("pid %d: cannot write the account to %s (errno %d)", me, opt->stats_file, errno);
		goto out;
	}
	rt_report(fd, true);
	close(fd);
out:
	errno = e;
}

/* ---------- the constructor ----------
 * At load time, in this order:
 *   1. the heap (rt_init: options, classes, arenas, caches, range; see start);
 *   2. the fork handlers: here, not inside malloc (registering may itself call
 *      malloc), unless another library's registration came first;
 *   3. the account at exit: the copy of stderr, and atexit, registered here and not
 *      inside malloc (atexit may allocate when its first block of handlers is full,
 *      and this early it never is);
 *   4. --text: the program's text (and large data) moved to huge pages, before
 *      main and before any other thread can run. */
__attribute__((constructor)) static void life_constructor(void)
{
	rt_init();
	life_register_fork();
	keep_stderr();
	atexit(report_at_exit);
	text_init();
}
