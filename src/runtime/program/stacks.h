/* stacks.h - thread stacks on huge pages under --stacks: the attributes copied for a
 * thread (stackattr.c, for stacks.c; the counts the report prints: program.h). */
#ifndef SP_STACKS_H
#define SP_STACKS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "superpage.h"

/* The stack a thread is to have (stackattr.c). */
struct stack_want {
	size_t size, guard;  /* rounded: 2 MiB multiple; 4 KiB multiple, at least a page */
	bool detached;
};
/* The caller's attributes (glibc's defaults for NULL) into mine, but for the stack.
 * -1 when mine holds them, -2 when the caller gave a stack of its own (left alone),
 * else the reason to leave the thread to glibc (enum sp_fall). */
int stack_attr_copy(const pthread_attr_t *attr, pthread_attr_t *mine, struct stack_want *w)
	__attribute__((visibility("hidden")));

#endif
