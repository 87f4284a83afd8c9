/* sizeclass.c - the small size classes: 16-byte steps to 128, then four classes per
 * doubling to 32 KiB (at most 25% rounding); spans sized so that little is left over. */
#include "heap.h"

static size_t sizes[NCLASS];
static unsigned char pages[NCLASS];
static unsigned char batch[NCLASS];
/* class by (size + 15) >> 4 up to 1 KiB, by (size + 127) >> 7 above (every class
 * above 1 KiB is a multiple of 128). */
#define FINE_MAX 1024
static unsigned char by_128[(SMALL_MAX >> 7) + 1];
static unsigned char by_16[(FINE_MAX >> 4) + 1];

void classes_init(void)
{
	unsigned n = 0;
	for (size_t s = 16; s <= 128; s += 16)
		sizes[n++] = s;
	for (size_t base = 128; base < SMALL_MAX; base *= 2)
		for (unsigned q = 1; q <= 4; q++)
			sizes[n++] = base + base / 4 * q;
	/* n == NCLASS */
	for (unsigned c = 0; c < NCLASS; c++) {
		size_t s = sizes[c];
		/* At least 8 objects (or 16 KiB), and grow the span while more than 1/16
		 * of it would be left over at the end. */
		size_t want = s * 8 > 16384 ? s * 8 : 16384;
		size_t np = (want + PAGE_SIZE - 1) / PAGE_SIZE;
		while (np < 64 && (np * PAGE_SIZE) % s > np * PAGE_SIZE / 16)
			np++;
		pages[c] = (unsigned char)np;
		size_t b = 32768 / s;
		batch[c] = (unsigned char)(b < 2 ? 2 : b > 64 ? 64 : b);
	}
	unsigned c = 0;
	for (size_t i = 0; i <= FINE_MAX >> 4; i++) {
		size_t s = i << 4;
		while (sizes[c] < s)
			c++;
		by_16[i] = (unsigned char)c;
	}
	c = 0;
	for (size_t i = 0; i <= SMALL_MAX >> 7; i++) {
		size_t s = i << 7;
		while (sizes[c] < s)
			c++;
		by_128[i] = (unsigned char)c;
	}
}

unsigned class_of(size_t size)
{
	if (size <= FINE_MAX)
		return by_16[(size + 15) >> 4];
	return by_128[(size + 127) >> 7];
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
