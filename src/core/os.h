/* os.h - the only door to the kernel: every syscall, sysfs and procfs access of the core. */
#ifndef SP_OS_H
#define SP_OS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/vfs.h>

struct shmid_ds;

/* Every function returns a value >= 0 on success or a negative errno value, and
 * leaves errno as it found it. Tests replace the table with a fake kernel. */
struct sp_os {
	int (*open)(const char *path, int flags, int mode);
	ssize_t (*read)(int fd, void *buf, size_t len);
	ssize_t (*pread)(int fd, void *buf, size_t len, off_t off);
	ssize_t (*write)(int fd, const void *buf, size_t len);
	int (*close)(int fd);
	/* getdents64: fills buf with struct linux_dirent64 records, returns bytes. */
	ssize_t (*getdents)(int fd, void *buf, size_t len);
	int (*mmap)(void *addr, size_t len, int prot, int flags, int fd, off_t off, void **out);
	int (*munmap)(void *addr, size_t len);
	int (*mprotect)(void *addr, size_t len, int prot);
	int (*mremap)(void *old, size_t old_len, size_t new_len, int flags, void *new_addr,
		      void **out);
	int (*madvise)(void *addr, size_t len, int advice);
	int (*memfd_create)(const char *name, unsigned flags);
	int (*prctl)(int option, unsigned long arg2); /* returns prctl's value */
	int (*kill0)(pid_t pid);                      /* kill(pid, 0): does it exist */
	uint64_t (*now_ns)(void);                     /* CLOCK_MONOTONIC */
	long (*page_size)(void);
	/* Another process's memory (promote.c). pidfd_open: an fd that names pid for as
	 * long as it is open (-ESRCH: gone, -ENOSYS: too old a kernel). */
	int (*pidfd_open)(pid_t pid);
	/* process_madvise(pidfd, iov, n, advice, 0): bytes advised, or -errno. */
	ssize_t (*process_madvise)(int pidfd, const struct iovec *iov, size_t n, int advice);
	int (*ioctl)(int fd, unsigned long request, void *arg); /* PAGEMAP_SCAN: its value */
	void (*sleep_ns)(uint64_t ns);                /* a pause (interrupted: it ends early) */
	/* mincore(2): a byte per page of [addr, addr+len), bit 0 set if resident;
	 * 0 or -errno. */
	int (*mincore)(void *addr, size_t len, unsigned char *vec);
	/* For the libhugetlbfs interface (src/htlb): statfs(2) of a path (f_type,
	 * f_bsize); unlink(2); access(2) with mode (R_OK|W_OK|X_OK); fcntl(2) with an
	 * int argument, its value. */
	int (*statfs)(const char *path, struct statfs *out);
	int (*unlink)(const char *path);
	int (*access)(const char *path, int mode);
	int (*fcntl)(int fd, int cmd, int arg);
	/* userfaultfd(2) with flags (O_CLOEXEC, O_NONBLOCK): an fd, or -errno (EPERM:
	 * not allowed to this process, ENOSYS: no such call). The runtime's fork holds
	 * its hugetlb memory still with it (src/runtime/fork.c). */
	int (*userfaultfd)(int flags);
	/* getrlimit(2): the process's limit of resource (RLIMIT_AS, RLIMIT_DATA). */
	int (*getrlimit)(int resource, struct rlimit *out);
	/* For the program's own memory and threads (the runtime's program room, behind
	 * src/runtime/program/kern.c). brk(2): the break after the call (the old one when
	 * the kernel refuses); it never fails. */
	uintptr_t (*brk)(uintptr_t want);
	/* shmget(2), shmctl(2), ftruncate(2): their value, or -errno. */
	int (*shmget)(key_t key, size_t size, int flags);
	int (*shmctl)(int id, int cmd, struct shmid_ds *buf);
	int (*ftruncate)(int fd, off_t len);
	pid_t (*gettid)(void);
	/* tgkill(getpid(), tid, 0): 0 while that thread of this process is there,
	 * -ESRCH once it is gone. */
	int (*tgkill0)(pid_t tid);
	/* prctl(2) with all its arguments (the program's own calls): its value, or -errno. */
	long (*prctl5)(int option, unsigned long a2, unsigned long a3, unsigned long a4,
		       unsigned long a5);
};

extern const struct sp_os sp_os_real;
/* The table in use. Set only before threads start (tests); NULL restores the real one. */
extern const struct sp_os *sp_os;
void sp_os_use(const struct sp_os *os);

/* Maps len bytes (a multiple of the page size) at an address aligned to align (a
 * power of two): maps len + align and gives back what is before and after. */
int sp_map_aligned(size_t len, size_t align, int prot, int flags, void **out);

/* Helpers over the table: whole-file reads into a caller's buffer (no malloc). */
/* Reads up to len-1 bytes of a file and NUL-terminates; returns bytes or -errno. */
ssize_t sp_read_file(const char *path, char *buf, size_t len);
/* The same for a file of one value (sysfs, cgroupfs, /proc/sys: the kernel gives it
 * whole at the first read): a short read that ends its line ends it, one read less. */
ssize_t sp_read_value(const char *path, char *buf, size_t len);
/* Reads a file holding one decimal number. */
int sp_read_long(const char *path, long *out);
/* Writes a string to a file (sysfs style). */
int sp_write_file(const char *path, const char *s);

#endif
