/* checks.h - what the programs in tests/runtime that check the kernel's promises
 * share (header-only, as smaps_kb.h: each program stays one file): a count of the
 * checks passed, the first failure ending the program with status 1 and a line on
 * stdout naming CHECKS_PROG, and whether reading a byte faults. */
#ifndef CHECKS_H
#define CHECKS_H

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned checks;
static sigjmp_buf fault_jmp;

static void die(const char *what)
{
	printf("%s: FAILED: %s (errno %d)\n", CHECKS_PROG, what, errno);
	exit(1);
}

static void check(bool ok, const char *what)
{
	if (!ok)
		die(what);
	checks++;
}

static void on_fault(int sig)
{
	siglongjmp(fault_jmp, sig);
}

/* Catches SIGSEGV and SIGBUS for read_faults. */
static void catch_faults(void)
{
	struct sigaction sa = { 0 };
	sa.sa_handler = on_fault;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
}

/* Whether reading the byte at p faults (SIGSEGV or SIGBUS; catch_faults first). */
static bool read_faults(const volatile unsigned char *p)
{
	if (sigsetjmp(fault_jmp, 1))
		return true;
	(void)*p;
	return false;
}

#endif
