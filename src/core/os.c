/* os.c - the real kernel behind the OS seam, and small file helpers over the seam. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* Raw system calls: errno is saved and restored so the caller's stays as it was, and
 * mmap & co. bypass any interposer (the runtime will interpose the libc symbols). */
static long sys_ret(long r, int saved)
{
	long out = r < 0 ? -errno : r;
	errno = saved;
	return out;
}

static int real_open(const char *path, int flags, int mode)
{
	int e = errno;
	return (int)sys_ret(syscall(SYS_openat, AT_FDCWD, path, flags | O_CLOEXEC, mode), e);
}

static ssize_t real_read(int fd, void *buf, size_t len)
{
	int e = errno;
	long r;
	do
		r = syscall(SYS_read, fd, buf, len);
	while (r < 0 && errno == EINTR);
	return sys_ret(r, e);
}

static ssize_t real_pread(int fd, void *buf, size_t len, off_t off)
{
	int e = errno;
	long r;
	do
		r = syscall(SYS_pread64, fd, buf, len, off);
	while (r < 0 && errno == EINTR);
	return sys_ret(r, e);
}

static ssize_t real_write(int fd, const void *buf, size_t len)
{
	int e = errno;
	long r;
	do
		r = syscall(SYS_write, fd, buf, len);
	while (r < 0 && errno == EINTR);
	return sys_ret(r, e);
}

static int real_close(int fd)
{
	int e = errno;
	return (int)sys_ret(syscall(SYS_close, fd), e);
}

static ssize_t real_getdents(int fd, void *buf, size_t len)
{
	int e = errno;
	return sys_ret(syscall(SYS_getdents64, fd, buf, len), e);
}

/* For the calls that return an address: errors are -4095..-1 as the raw value. */
static int addr_ret(long r, int saved, void **out)
{
	int err = errno;
	errno = saved;
	if ((unsigned long)r >= (unsigned long)-4095)
		return -err;
	*out = (void *)r;
	return 0;
}

static int real_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off, void **out)
{
	int e = errno;
	return addr_ret(syscall(SYS_mmap, addr, len, prot, flags, fd, off), e, out);
}

static int real_munmap(void *addr, size_t len)
{
	int e = errno;
	return (int)sys_ret(syscall(SYS_munmap, addr, len), e);
}

static int real_mprotect(void *addr, size_t len, int prot)
{
	int e = errno;
	return (int)sys_ret(syscall(SYS_mprotect, addr, len, prot), e);
}

static int real_mremap(void *old, size_t old_len, size_t new_len, int flags, void *new_addr,
		       void **out)
{
	int e = errno;
	return addr_ret(syscall(SYS_mremap, old, old_len, new_len, flags, new_addr), e, out);
}

static int real_madvise(void *addr, size_t len, int advice)
{
	int e = errno;
	return (int)sys_ret(syscall(SYS_madvise, addr, len, advice), e);
}

static int real_memfd_create(const char *name, unsigned flags)
{
	int e = errno;
	return (int)sys_ret(syscall(SYS_memfd_create, name, flags), e);
}

static int real_prctl(int option, unsigned long arg2)
{
	int e = errno;
	return (int)sys_ret(syscall(SYS_prctl, option, arg2, 0ul, 0ul, 0ul), e);
}

static int real_kill0(pid_t pid)
{
	int e = errno;
	int r = (int)sys_ret(syscall(SYS_kill, pid, 0), e);
	return r == -EPERM ? 0 : r; /* it exists, it is just not ours */
}

static uint64_t real_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static long real_page_size(void)
{
	return sysconf(_SC_PAGESIZE);
}

static int real_pidfd_open(pid_t pid)
{
	int e = errno;
	return (int)sys_ret(syscall(SYS_pidfd_open, pid, 0u), e);
}

static ssize_t real_process_madvise(int pidfd, const struct iovec *iov, size_t n, int advice)
{
	int e = errno;
	return sys_ret(syscall(SYS_process_madvise, pidfd, iov, n, advice, 0u), e);
}

static int real_ioctl(int fd, unsigned long request, void *arg)
{
	int e = errno;
	return (int)sys_ret(syscall(SYS_ioctl, fd, request, arg), e);
}

static void real_sleep_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
	int e = errno;
	nanosleep(&ts, NULL);
	errno = e;
}

static int real_mincore(void *addr, size_t len, unsigned char *vec)
{
	int e = errno;
	return (int)sys_ret(syscall(SYS_mincore, addr, len, vec), e);
}

static int real_statfs(const char *path, struct statfs *out)
{
	int e = errno;
	return (int)sys_ret(syscall(SYS_statfs, path, out), e);
}

static int real_unlink(const char *path)
{
	int e = errno;
	return (int)sys_ret(syscall(SYS_unlinkat, AT_FDCWD, path, 0), e);
}

static int real_access(const char *path, int mode)
{
	int e = errno;
	return (int)sys_ret(syscall(SYS_faccessat, AT_FDCWD, path, mode), e);
}

static int real_fcntl(int fd, int cmd, int arg)
{
	int e = errno;
	return (int)sys_ret(syscall(SYS_fcntl, fd, cmd, arg), e);
}

static int real_userfaultfd(int flags)
{
	int e = errno;
	return (int)sys_ret(syscall(SYS_userfaultfd, flags), e);
}

static int real_getrlimit(int resource, struct rlimit *out)
{
	int e = errno;
	return (int)sys_ret(syscall(SYS_prlimit64, 0, resource, NULL, out), e);
}

static uintptr_t real_brk(uintptr_t want)
{
	int e = errno;
	uintptr_t r = (uintptr_t)syscall(SYS_brk, want);
	errno = e;
	return r;
}

static int real_shmget(key_t key, size_t size, int flags)
{
	int e = errno;
	return (int)sys_ret(syscall(SYS_shmget, key, size, flags), e);
}

static int real_shmctl(int id, int cmd, struct shmid_ds *buf)
{
	int e = errno;
	return (int)sys_ret(syscall(SYS_shmctl, id, cmd, buf), e);
}

static int real_ftruncate(int fd, off_t len)
{
	int e = errno;
	return (int)sys_ret(syscall(SYS_ftruncate, fd, len), e);
}

static pid_t real_gettid(void)
{
	int e = errno;
	return (pid_t)sys_ret(syscall(SYS_gettid), e);
}

static int real_tgkill0(pid_t tid)
{
	int e = errno;
	return (int)sys_ret(syscall(SYS_tgkill, getpid(), tid, 0), e);
}

static long real_prctl5(int option, unsigned long a2, unsigned long a3, unsigned long a4,
			unsigned long a5)
{
	int e = errno;
	return sys_ret(syscall(SYS_prctl, option, a2, a3, a4, a5), e);
}

const struct sp_os sp_os_real = {
	.open = real_open,
	.read = real_read,
	.pread = real_pread,
	.write = real_write,
	.close = real_close,
	.getdents = real_getdents,
	.mmap = real_mmap,
	.munmap = real_munmap,
	.mprotect = real_mprotect,
	.mremap = real_mremap,
	.madvise = real_madvise,
	.memfd_create = real_memfd_create,
	.prctl = real_prctl,
	.kill0 = real_kill0,
	.now_ns = real_now_ns,
	.page_size = real_page_size,
	.pidfd_open = real_pidfd_open,
	.process_madvise = real_process_madvise,
	.ioctl = real_ioctl,
	.sleep_ns = real_sleep_ns,
	.mincore = real_mincore,
	.statfs = real_statfs,
	.unlink = real_unlink,
	.access = real_access,
	.fcntl = real_fcntl,
	.userfaultfd = real_userfaultfd,
	.getrlimit = real_getrlimit,
	.brk = real_brk,
	.shmget = real_shmget,
	.shmctl = real_shmctl,
	.ftruncate = real_ftruncate,
	.gettid = real_gettid,
	.tgkill0 = real_tgkill0,
	.prctl5 = real_prctl5,
};

const struct sp_os *sp_os = &sp_os_real;

void sp_os_use(const struct sp_os *os)
{
	sp_os = os ? os : &sp_os_real;
	sp_refresh();
}

int sp_map_aligned(size_t len, size_t align, int prot, int flags, void **out)
{
	void *raw;
	int r = sp_os->mmap(NULL, len + align, prot, flags, -1, 0, &raw);
	if (r < 0)
		return r;
	uintptr_t start = (uintptr_t)raw, end = start + len + align;
	uintptr_t a = (start + align - 1) & ~(uintptr_t)(align - 1);
	if (a > start)
		sp_os->munmap(raw, a - start);
	if (end > a + len)
		sp_os->munmap((void *)(a + len), end - (a + len));
	*out = (void *)a;
	return 0;
}

/* A file's text into buf; with one_value, a short read that ends its line ends it. */
static ssize_t read_text(const char *path, char *buf, size_t len, bool one_value)
{
	if (len == 0)
		return -EINVAL;
	int fd = sp_os->open(path, O_RDONLY, 0);
	if (fd < 0)
		return fd;
	size_t got = 0;
	while (got < len - 1) {
		ssize_t n = sp_os->read(fd, buf + got, len - 1 - got);
		if (n < 0) {
			sp_os->close(fd);
			return n;
		}
		if (n == 0)
			break;
		got += (size_t)n;
		if (one_value && got < len - 1 && buf[got - 1] == '\n')
			break;
	}
	buf[got] = 0;
	sp_os->close(fd);
	return (ssize_t)got;
}

ssize_t sp_read_file(const char *path, char *buf, size_t len)
{
	return read_text(path, buf, len, false);
}

ssize_t sp_read_value(const char *path, char *buf, size_t len)
{
	return read_text(path, buf, len, true);
}

int sp_read_long(const char *path, long *out)
{
	char buf[64];
	ssize_t n = sp_read_value(path, buf, sizeof buf);
	if (n < 0)
		return (int)n;
	const char *s = buf;
	while (*s == ' ' || *s == '\t')
		s++;
	bool neg = *s == '-';
	if (neg)
		s++;
	uint64_t v;
	int r = sp_scan_u64(&s, &v);
	if (r < 0)
		return r == -ERANGE ? r : -EPROTO;
	if (*s && *s != '\n' && *s != ' ')
		return -EPROTO;
	if (v > (uint64_t)LONG_MAX)
		return -ERANGE;
	*out = neg ? -(long)v : (long)v;
	return 0;
}

int sp_write_file(const char *path, const char *s)
{
	int fd = sp_os->open(path, O_WRONLY, 0);
	if (fd < 0)
		return fd;
	size_t len = strlen(s);
	ssize_t n = sp_os->write(fd, s, len);
	int c = sp_os->close(fd);
	if (n < 0)
		return (int)n;
	if ((size_t)n != len)
		return -EIO;
	return c < 0 ? c : 0;
}
