/* sizeclass.c - the small size classes: 16-byte steps to 512, sixteen classes from 512
 * to 1 KiB, then 32 per doubling to 64 KiB (at most 3% rounding, 1% on average: dense
 * enough to use no more memory than glibc's chunks with their headers); spans sized so
 * that little is left over. */
#include "heap.h"

static size_t sizes[NCLASS];
static unsigned char pages[NCLASS];
static unsigned char batch[NCLASS];
/* class by (size + 15) >> 4 up to 1 KiB, by (size + 31) >> 5 above (every class
 * above 1 KiB is a multiple of 32). */
#define FINE_MAX 1024
static unsigned char by_32[(SMALL_MAX >> 5) + 1];
static unsigned char by_16[(FINE_MAX >> 4) + 1];

void classes_init(void)
{
	unsigned n = 0;
	for (size_t s = 16; s <= 512; s += 16)
		sizes[n++] = s;
	for (size_t s = 512 + 32; s <= 1024; s += 32)
		sizes[n++] = s;
	for (size_t base = 1024; base < SMALL_MAX; base *= 2)
		for (unsigned q = 1; q <= 32; q++)
			sizes[n++] = base + base / 32 * q;
	/* n == NCLASS */
	for (unsigned c = 0; c < NCLASS; c++) {
		size_t s = sizes[c];
		/* At least 8 objects (or 16 KiB); then the first span size that leaves
		 * at most 1/128 over at its end, else the one that leaves least. */
		size_t want = s * 8 > 16384 ? s * 8 : 16384;
		size_t np = (want + PAGE_SIZE - 1) / PAGE_SIZE, best = np;
		for (size_t k = np; k <= 128; k++) {
			size_t bytes = k * PAGE_SIZE;
			if (bytes % s * 128 <= bytes) {
				best = k;
				break;
			}
			if ((bytes % s) * (best * PAGE_SIZE) < (best * PAGE_SIZE % s) * bytes)
				best = k;
		}
		pages[c] = (unsigned char)best;
		/* A thread holds at most two batches of a class: 16 KiB of slack. */
		size_t b = 8192 / s;
		batch[c] = (unsigned char)(b < 2 ? 2 : b > 32 ? 32 : b);
	}
	unsigned c = 0;
	for (size_t i = 0; i <= FINE_MAX >> 4; i++) {
		size_t s = i << 4;
		while (sizes[c] < s)
			c++;
		by_16[i] = (unsigned char)c;
	}
	c = 0;
	for (size_t i = 0; i <= SMALL_MAX >> 5; i++) {
		size_t s = i << 5;
		while (sizes[c] < s)
			c++;
		by_32[i] = (unsigned char)c;
	}
}

unsigned class_of(size_t size)
{
	if (size <= FINE_MAX)
		return by_16[(size + 15) >> 4];
	return by_32[(size + 31) >> 5];
}

size_t class_size(unsigned c)
{
	return sizes[c];
}

unsigned class_pages(unsigned c)
{
	return pages[c];
}

unsigned class_batch(unsigned c)
{
	return batch[c];
}
