/* atforklib.c - a library whose fork handlers touch its malloc'd state, as jemalloc's
 * do: preloaded before the runtime, its handlers were registered first, so its child
 * handler runs before the runtime's. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static unsigned char *state;

static void prepare(void) { state[0]++; }
static void parent(void) { state[1]++; }
static void child(void) { memset(state, 0x33, 4 << 20); }

__attribute__((constructor)) static void init(void)
{
	state = malloc(4 << 20);
	if (state) {
		memset(state, 0, 4 << 20);
		pthread_atfork(prepare, parent, child);
	}
}
