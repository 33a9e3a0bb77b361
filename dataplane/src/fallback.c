// SPDX-License-Identifier: Apache-2.0
/* fallback.c - the one place where a socket, or one call on it, leaves the
 * accelerated path for the kernel's, and so the one place that
 * TICKSTACK_REQUIRE=1 refuses it. Every site that hands a socket or a call
 * to the kernel (options, a taken queue, sizes, shapes, destinations,
 * io_uring, memory; UDP and TCP) asks ts_fallback() first: without REQUIRE
 * the fallback is counted (fallback_events and the reason's own counter)
 * and said with TICKSTACK_DEBUG; with REQUIRE a refusable reason fails the
 * call that asked, with EOPNOTSUPP and one line naming the socket, the
 * reason and its fix. The reasons REQUIRE lets through are in the table
 * with why (docs/dataplane.md, "TICKSTACK_REQUIRE"). */
#include "ts_internal.h"

#include <arpa/inet.h>

static const struct {
	const char *name; /* as the message and docs/dataplane.md say it */
	const char *fix;
	int refused;      /* 1: an error under TICKSTACK_REQUIRE=1 */
} reasons[] = {
	[TS_FB_NOXSK] = { "no XSK", "use an address of an interface the stack "
		"accelerates (XDP-capable, in TICKSTACK_IFACES)", 1 },
	[TS_FB_QUEUE] = { "queue taken", "run one accelerated process per "
		"interface (it serves every queue), or give each process one "
		"queue (TICKSTACK_QUEUE=N or any) where the NIC's flow steering "
		"puts its flows there", 1 },
	[TS_FB_OPTION] = { "option", "leave the option off", 1 },
	[TS_FB_SIZE] = { "size", "keep datagrams within the MTU and an XSK "
		"frame", 1 },
	[TS_FB_SHAPE] = { "shape", "use what the stack accelerates "
		"(docs/dataplane.md, compatibility table)", 1 },
	[TS_FB_LOCAL] = { "local destination", "talk to local and loopback "
		"peers from a process without TICKSTACK_REQUIRE", 1 },
	[TS_FB_NOROUTE] = { "no route", "route the destination through an "
		"accelerated interface", 1 },
	[TS_FB_MCLOOP] = { "multicast loopback", "set IP_MULTICAST_LOOP to 0 "
		"(only the kernel gives the host's own members a copy)", 1 },
	[TS_FB_URING] = { "io_uring", "keep io_uring away from accelerated "
		"sockets", 1 },
	[TS_FB_MEMORY] = { "out of memory", "give the process more memory", 1 },
	/* let through: the kernel must serve these, and nothing the program
	 * asked for is lost (docs/dataplane.md says why for each) */
	[TS_FB_NEIGH] = { "neighbour unresolved", "", 0 },
	[TS_FB_SHARED] = { "port shared", "", 0 },
	[TS_FB_FORK] = { "inherited over fork", "", 0 },
	[TS_FB_ASKED] = { "asked for", "", 0 },
};

const char *ts_fallback__name(enum ts_fb_why why)
{
	return reasons[why].name;
}

int ts_fallback(const struct ts_fb *f)
{
	char a[INET_ADDRSTRLEN];
	const char *kind = f->stream ? "stream socket" : "socket";

	inet_ntop(AF_INET, &f->laddr, a, sizeof(a));
	if (ts_cfg.require && reasons[f->why].refused) {
		ts_log("TICKSTACK_REQUIRE=1: %s fd %d (%s:%u) cannot be "
		       "accelerated: %s: %s; %s, or unset TICKSTACK_REQUIRE to "
		       "let it use the kernel stack",
		       kind, f->fd, a, ntohs(f->lport), reasons[f->why].name,
		       f->detail, reasons[f->why].fix);
		return -EOPNOTSUPP;
	}
	TS_INC(ts_stats->fallback_events);
	if (f->counter)
		TS_INC(*f->counter);
	ts_dbg("%s fd %d (%s:%u) uses the kernel: %s: %s", kind, f->fd, a,
	       ntohs(f->lport), reasons[f->why].name, f->detail);
	return 0;
}
