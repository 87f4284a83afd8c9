/* offer.c - what the machine offers now, read cheaply, for a command to say before it acts. */
#include <errno.h>
#include <string.h>

#include "internal.h"

#define THP_DIR "/sys/kernel/mm/transparent_hugepage"

void sp_offer_pool_read(uint64_t page_size, struct sp_offer_pool *o)
{
	struct sp_pool p;
	if (sp_pool_get(page_size, -1, &p) != 0)
		return;
	o->present = true;
	o->total = p.total;
	o->free = p.free;
	o->avail = p.free - (p.reserved > 0 ? p.reserved : 0);
	o->room = p.overcommit > p.surplus ? p.overcommit - p.surplus : 0;
}

int sp_offer_get(unsigned parts, struct sp_offer *out)
{
	if (parts & ~SP_OFFER_ALL)
		return -EINVAL;
	memset(out, 0, sizeof *out);
	if (parts & SP_OFFER_THP) {
		char buf[256];
		if (sp_thp_read_pmd(&out->thp) == 0 &&
		    sp_read_file(THP_DIR "/defrag", buf, sizeof buf) >= 0)
			sp_mode_selected(buf, out->thp.defrag, sizeof out->thp.defrag);
		out->thp_disable = sp_os->prctl(PR_GET_THP_DISABLE, 0);
	}
	if (parts & SP_OFFER_2M)
		sp_offer_pool_read(SP_2M_SIZE, &out->pool_2m);
	if (parts & SP_OFFER_1G)
		sp_offer_pool_read(SP_1G_SIZE, &out->pool_1g);
	return 0;
}
