/* gendata.c - makes test input fast and the same everywhere: text lines for sort, CSV
 * rows for sqlite3.
 *
 * usage: gendata lines BYTES [SEED]   lines of 1-12 random words, about BYTES in all
 *        gendata csv ROWS [SEED]      id,name,city,age,score rows (no header) */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const words[] = {
	"amber", "basalt", "cobalt", "dune", "ember", "fjord", "granite", "harbor",
	"indigo", "jasper", "kelp", "lagoon", "meadow", "nectar", "onyx", "prairie",
	"quartz", "ridge", "summit", "tundra", "umber", "valley", "willow", "xenon",
	"yarrow", "zephyr", "Alder", "Birch", "Cedar", "Dogwood", "Elm", "Fir",
};
static const char *const cities[] = {
	"Lisbon", "Oslo", "Quito", "Accra", "Hanoi", "Perth", "Lima", "Riga",
	"Tunis", "Osaka", "Cusco", "Dakar", "Bergen", "Cork", "Graz", "Split",
};

static uint64_t state;

static uint64_t next(void)
{
	uint64_t x = (state += 0x9e3779b97f4a7c15ull);
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static int usage(void)
{
	fprintf(stderr, "usage: gendata lines BYTES [SEED] | gendata csv ROWS [SEED]\n");
	return 2;
}

int main(int argc, char **argv)
{
	static char buf[1 << 16];
	char *end;
	if (argc < 3 || argc > 4)
		return usage();
	unsigned long long n = strtoull(argv[2], &end, 10);
	if (*end || !*argv[2])
		return usage();
	state = argc == 4 ? strtoull(argv[3], &end, 0) : 1;
	if (argc == 4 && (*end || !*argv[3]))
		return usage();
	setvbuf(stdout, buf, _IOFBF, sizeof buf);
	const size_t nwords = sizeof words / sizeof *words, ncities = sizeof cities / sizeof *cities;

	if (strcmp(argv[1], "lines") == 0) {
		for (unsigned long long written = 0; written < n;) {
			uint64_t r = next();
			int count = 1 + (int)(r % 12);
			r /= 12;
			for (int i = 0; i < count; i++) {
				const char *w = words[r % nwords];
				r /= nwords;
				if (i)
					putchar(' ');
				fputs(w, stdout);
				written += strlen(w) + 1;
				if (r < nwords)
					r = next();
			}
			/* a number in some lines, so sort meets digits too */
			if (count & 1)
				written += (unsigned long long)printf(" %" PRIu64, next() % 100000);
			putchar('\n');
		}
	} else if (strcmp(argv[1], "csv") == 0) {
		for (unsigned long long id = 1; id <= n; id++) {
			uint64_t r = next();
			printf("%llu,%s %s,%s,%u,%u.%02u\n", id, words[r % nwords],
			       words[(r >> 8) % nwords], cities[(r >> 16) % ncities],
			       (unsigned)(18 + (r >> 24) % 70), (unsigned)((r >> 32) % 1000),
			       (unsigned)((r >> 44) % 100));
		}
	} else {
		return usage();
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		perror("gendata");
		return 1;
	}
	return 0;
}
