/* sizeclass.c - the small size classes: 16-byte steps to 1 KiB, 64 classes per
 * doubling to 4 KiB, 32 to 8 KiB (at most 1.6% rounding to 4 KiB, 3% above: with half
 * as many classes a block just past a class, 513 B or 2 KiB + 1 B, took clearly more
 * than glibc's memory), and 8 per doubling to 64 KiB (at most 12.5%: a class's span
 * holds at least 8 objects, and 32 classes per doubling left most of those spans mostly
 * empty; malloc fits blocks above 4 KiB to 64 bytes instead, fit.c, and these serve
 * memalign); spans sized so that little is left over. */
#include "malloc/malloc.h"
#include "pageheap/pageheap.h"

/* The tables malloc.h's inline lookups read (set once, before the first malloc). */
struct class_info class_info[1 + NCLASS];
unsigned char class_npages[NCLASS];
unsigned char class_first_npages[NCLASS];
unsigned char class_batches[NCLASS];
unsigned char class_by_32[(SMALL_MAX >> 5) + 1];
unsigned char class_by_16[(CLASS_FINE_MAX >> 4) + 1];
uint16_t class_at_by_16[(CLASS_FINE_MAX >> 4) + 1];

void classes_init(void)
{
	size_t class_sizes[NCLASS];
	unsigned n = 0;
	for (size_t s = 16; s <= 1024; s += 16)
		class_sizes[n++] = s;
	for (size_t base = 1024; base < SMALL_MAX; base *= 2) {
		unsigned steps = base < CLASS_FINE_MAX ? 64 : base < COARSE_MIN ? 32 : 8;
		for (unsigned q = 1; q <= steps; q++)
			class_sizes[n++] = base + base / steps * q;
	}
	/* n == NCLASS */
	for (unsigned c = 0; c < NCLASS; c++) {
		size_t s = class_sizes[c];
		/* At least 8 objects (or 16 KiB); then the first span size that leaves
		 * at most 1/128 over at its end, else the one that leaves least. */
		size_t want = s * 8 > 16384 ? s * 8 : 16384;
		size_t np = (want + PAGE_SIZE - 1) / PAGE_SIZE, best = np;
		/* (The remainder kept from one span size to the next: this runs at every
		 * program's start, and a division per step took most of it.) */
		size_t step = PAGE_SIZE % s, rem = np * PAGE_SIZE % s, best_rem = rem;
		for (size_t k = np; k <= 128; k++) {
			size_t bytes = k * PAGE_SIZE;
			if (rem * 128 <= bytes) {
				best = k;
				break;
			}
			if (rem * (best * PAGE_SIZE) < best_rem * bytes) {
				best = k;
				best_rem = rem;
			}
			rem = rem + step >= s ? rem + step - s : rem + step;
		}
		class_npages[c] = (unsigned char)best;
		struct class_info *ci = &class_info[1 + c];
		ci->size = (uint32_t)s;
		ci->divisor = UINT64_MAX / s + 1;
		ci->limit = (uint32_t)(best * PAGE_SIZE / s * s);
		/* A thread's first span of a class is the fewest last pages of a whole
		 * span that hold two objects: most programs use a few objects of many
		 * classes, and whole spans of 16 KiB or more for each of ~100 classes
		 * took 3.2 MiB for 145 KiB of the sweep's mixed heap. */
		size_t k = 1;
		while (k < best &&
		       ci->limit / s - ((best - k) * PAGE_SIZE + s - 1) / s < 2)
			k++;
		class_first_npages[c] = (unsigned char)k;
		/* A batch is 16 KiB of objects, 2 to 255 of them; a thread holds at most
		 * two batches of a class: 32 KiB of slack, or four objects of the classes
		 * above 8 KiB (batches of one object cost a lock taken and let go for one
		 * in every two mallocs and frees of the class). The more objects a batch
		 * has, the fewer times a thread's cache of a class fills or empties: at
		 * random mallocs and frees, a quarter as often at twice the batch. That
		 * counts most with several threads, which share the central lists and
		 * the page heap. */
		size_t b = 16384 / s;
		class_batches[c] = (unsigned char)(b < 2 ? 2 : b > 255 ? 255 : b);
	}
	unsigned c = 0;
	for (size_t i = 0; i <= CLASS_FINE_MAX >> 4; i++) {
		size_t s = i << 4;
		while (class_size(c) < s)
			c++;
		class_by_16[i] = (unsigned char)c;
		class_at_by_16[i] = (uint16_t)((1 + c) * sizeof(struct class_info));
	}
	c = 0;
	for (size_t i = 0; i <= SMALL_MAX >> 5; i++) {
		size_t s = i << 5;
		while (class_size(c) < s)
			c++;
		class_by_32[i] = (unsigned char)c;
	}
}
