/* preload.h - how a program gets superpage's runtime: LD_PRELOAD with the runtime in
 * front, as superpage run (src/cli/run.c) and libhugetlbfs.so.0 (src/htlb/morecore.c)
 * both build it, and the variables of libhugetlbfs.so.0's re-exec. */
#ifndef SP_PRELOAD_H
#define SP_PRELOAD_H

#include <stdbool.h>
#include <stddef.h>

#define SP_RUNTIME_NAME "libsuperpage-run.so"

/* Set by libhugetlbfs.so.0 in the environment of the program it starts again with the
 * runtime: "1" (this process is the re-exec'd one: no second re-exec), and the program's
 * own LD_PRELOAD, absent if it had none, to be put back for its children. */
#define SP_HTLB_EXEC_ENV "SUPERPAGE_HTLB_EXEC"
#define SP_HTLB_PRELOAD_ENV "SUPERPAGE_HTLB_PRELOAD"

/* The n bytes at entry (one entry of LD_PRELOAD) name the runtime rt, or a runtime of
 * that file name elsewhere. */
bool sp_preload_is_runtime(const char *entry, size_t n, const char *rt);

/* The LD_PRELOAD value with the runtime rt first, then the entries of old (NULL: none;
 * separated by ':' or ' ', as ld.so reads them) that are not a runtime, so that it is
 * never loaded twice. Returns a string to free, or NULL with errno ENOMEM. */
char *sp_preload_with_runtime(const char *rt, const char *old);

#endif
