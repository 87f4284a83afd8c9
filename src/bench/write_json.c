/* write_json.c - the results as JSON (DESIGN.md's bench --json shape), for scripts. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "parts.h"
#include "../common/json.h"

/* ---------- JSON ---------- */

static void json_limit(struct json *j, const char *key, long v)
{
	json_key(j, key);
	if (v < 0)
		json_null(j);
	else
		json_int(j, v);
}

static void json_tlb(struct json *j, const char *key, unsigned e4k, unsigned e2m, unsigned e1g)
{
	json_key(j, key);
	json_object_begin(j);
	json_key(j, "4k");
	json_uint(j, e4k);
	json_key(j, "2m");
	json_uint(j, e2m);
	json_key(j, "1g");
	json_uint(j, e1g);
	json_object_end(j);
}

void bench_json_machine(struct json *j, const struct bench_machine *m)
{
	json_key(j, "machine");
	json_object_begin(j);
	json_key(j, "cpu");
	json_string(j, m->cpu);
	json_key(j, "cpus");
	json_uint(j, m->cpus);
	json_key(j, "kernel");
	json_string(j, m->kernel);
	json_key(j, "l1d");
	json_uint(j, m->l1d);
	json_key(j, "l2");
	json_uint(j, m->l2);
	json_key(j, "l3");
	json_uint(j, m->l3);
	/* Entries per page size: dtlb is the first-level data TLB, stlb the second level. */
	json_key(j, "tlb");
	json_object_begin(j);
	json_tlb(j, "dtlb", m->dtlb_4k, m->dtlb_2m, m->dtlb_1g);
	json_tlb(j, "stlb", m->stlb_4k, m->stlb_2m, m->stlb_1g);
	json_object_end(j);
	json_key(j, "thp_enabled");
	json_string(j, m->thp_enabled);
	json_key(j, "thp_defrag");
	json_string(j, m->thp_defrag);
	json_limit(j, "pool_2m_total", m->pool_2m_total);
	json_limit(j, "pool_2m_free", m->pool_2m_free);
	json_limit(j, "pool_1g_total", m->pool_1g_total);
	json_limit(j, "pool_1g_free", m->pool_1g_free);
	json_key(j, "date");
	json_string(j, m->date);
	json_key(j, "quick");
	json_bool(j, m->quick);
	json_key(j, "repeat");
	json_int(j, m->repeat);
	json_object_end(j);
}

void bench_json_row(struct json *j, const struct bench_row *r, const char *base)
{
	uint64_t size;
	int k = bench_rounds(r);

	json_object_begin(j);
	json_key(j, "kernel");
	json_string(j, r->name);
	/* A number, as kernels print it; a string only if some kernel printed another form. */
	json_key(j, "size");
	if (!bench_parse_u64(r->size, strlen(r->size), &size))
		json_uint(j, size);
	else
		json_string(j, r->size);
	json_key(j, "backing");
	json_string(j, r->backing);
	json_key(j, "rounds");
	json_int(j, k);
	json_key(j, "runs_s");
	json_array_begin(j);
	for (int i = 0; i < k; i++)
		json_double(j, r->runs_s[i]);
	json_array_end(j);
	json_key(j, "median_s");
	json_double(j, k ? r->median_s : NAN);
	json_key(j, "best_s");
	json_double(j, k ? r->best_s : NAN);
	json_key(j, "metric");
	json_double(j, k ? r->median_metric : NAN);
	json_key(j, "best_metric");
	json_double(j, k ? r->best_metric : NAN);
	json_key(j, "metrics");
	json_array_begin(j);
	for (int i = 0; i < k; i++)
		json_double(j, r->metric[i]);
	json_array_end(j);
	json_key(j, "unit");
	json_string(j, r->unit);
	json_key(j, "higher_is_better");
	json_bool(j, r->higher_is_better);
	json_key(j, "coverage");
	json_double(j, r->coverage);
	json_key(j, "coverage_wanted");
	json_double(j, r->cov_wanted);
	json_key(j, "minflt");
	json_uint(j, r->minflt);
	{
		char key[40];

		snprintf(key, sizeof key, "speedup_vs_%s", base && base[0] ? base : "4k");
		json_key(j, key);
	}
	if (r->speedup > 0)
		json_double(j, r->speedup);
	else
		json_null(j);
	json_key(j, "spread");
	json_double(j, k ? r->spread : NAN);
	json_key(j, "valid");
	json_bool(j, r->valid);
	json_key(j, "check");
	json_string(j, r->check_failed ? "FAIL" : "ok");
	if (r->why[0]) {
		json_key(j, "why");
		json_string(j, r->why);
	}
	json_object_end(j);
}

void bench_write_json(FILE *f, const struct bench_machine *m, const struct bench_row *rows,
		      int n)
{
	struct json j;

	json_init(&j, f);
	json_object_begin(&j);
	bench_json_machine(&j, bench_machine_or_blank(m));
	json_key(&j, "results");
	json_array_begin(&j);
	for (int i = 0; i < n; i++)
		bench_json_row(&j, &rows[i], "4k");
	json_array_end(&j);
	json_object_end(&j);
	json_end(&j);
}

