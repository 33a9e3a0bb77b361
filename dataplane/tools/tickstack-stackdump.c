// SPDX-License-Identifier: Apache-2.0
/* tickstack-stackdump -p PID|all [-r ROOT] [-o table|json]
 *
 * A snapshot of a process under libtickstack: every accelerated socket (fd,
 * protocol, addresses, state, queues, counters; for TCP the congestion
 * window, smoothed RTT, RTO, retransmissions and windows lwIP keeps), each
 * XSK's rings and the UMEM, and the process's counters. The process's
 * control thread writes it on request (docs/dataplane.md, "Seeing inside
 * the bypass"). */
#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>

#include "inspect.h"

#define TOOL "tickstack-stackdump"
#define MAX_TARGETS 64

static int usage(void)
{
	fprintf(stderr,
		"usage: " TOOL " -p PID|all [-r ROOT] [-o table|json]\n"
		"  every accelerated socket, XSK ring and counter of a tickstack "
		"process\n"
		"  -p PID|all      the process (pid here, or the host pid from "
		"the node), or every one\n"
		"  -r, --root DIR  look in DIR/dev/shm (e.g. /proc/PID/root)\n"
		"  -o FORMAT       table (default) or json\n");
	return 2;
}

static const char *tcp_state(uint32_t s)
{
	static const char *const n[] = {
		"?", "ESTABLISHED", "SYN_SENT", "SYN_RECV", "FIN_WAIT1",
		"FIN_WAIT2", "TIME_WAIT", "CLOSE", "CLOSE_WAIT", "LAST_ACK",
		"LISTEN", "CLOSING" };

	return s < sizeof(n) / sizeof(n[0]) ? n[s] : "?";
}

static const char *state_name(const struct tickstack_dump_sock *s)
{
	if (s->proto == IPPROTO_TCP)
		return tcp_state(s->state);
	return s->state == 1 ? "ACCELERATED" : s->state == 2 ? "KERNEL" : "NEW";
}

static void addr(char *b, size_t n, uint32_t a, uint16_t p)
{
	char ip[INET_ADDRSTRLEN];

	inet_ntop(AF_INET, &a, ip, sizeof(ip));
	snprintf(b, n, "%s:%u", ip, ntohs(p));
}

/* Ask t for a snapshot: into *d (a private copy). 0 or -1 (said). */
static int snapshot(struct ts_target *t, struct tickstack_dump *d)
{
	struct tickstack_dump *m;
	char path[340];
	uint32_t req;
	uint64_t until;
	int r = -1;

	m = ts_insp__make_file(TOOL, t, "dump", sizeof(*m), path, sizeof(path));
	if (!m)
		return -1;
	req = __atomic_load_n(&t->st->dump_done, __ATOMIC_ACQUIRE) + 1;
	if (!req)
		req = 1;
	__atomic_store_n(&t->st->dump_req, req, __ATOMIC_RELEASE);
	until = ts_insp__mono_ns() + 3000000000ull;
	while (__atomic_load_n(&t->st->dump_done, __ATOMIC_ACQUIRE) != req) {
		if (ts_insp__mono_ns() > until) {
			fprintf(stderr, TOOL ": pid %d does not answer (no "
					"accelerated socket yet, or stopped)\n",
				t->pid);
			goto out;
		}
		ts_insp__sleep_ms(5);
	}
	if (__atomic_load_n(&m->magic, __ATOMIC_ACQUIRE) != TICKSTACK_DUMP_MAGIC ||
	    m->version != TICKSTACK_DUMP_VERSION || m->seq != req) {
		fprintf(stderr, TOOL ": pid %d refused %s (its stderr says why)\n",
			t->pid, path);
		goto out;
	}
	memcpy(d, m, sizeof(*d));
	if (d->nsock > TICKSTACK_DUMP_MAX_SOCK)
		d->nsock = TICKSTACK_DUMP_MAX_SOCK;
	if (d->nxsk > TICKSTACK_DUMP_MAX_XSK)
		d->nxsk = TICKSTACK_DUMP_MAX_XSK;
	r = 0;
out:
	munmap(m, sizeof(*m));
	unlink(path);
	return r;
}

static void print_table(const struct ts_target *t, const struct tickstack_dump *d)
{
	const struct tickstack_stats *s = t->st;
	char la[32], ra[32];
	uint32_t i;

	printf("pid %d profile %.16s: sockets accelerated %llu, on the kernel "
	       "%llu, fallback events %llu\n",
	       t->pid, s->profile, (unsigned long long)s->sockets_accelerated,
	       (unsigned long long)s->sockets_kernel,
	       (unsigned long long)s->fallback_events);
	printf("  %-8s %-5s %-6s %-6s %-6s %-6s %-10s %-10s %-10s %-6s\n", "XSK",
	       "QUEUE", "RX", "FILL", "TX", "COMP", "UMEM", "FREE", "IN-USE",
	       "DEPTH");
	for (i = 0; i < d->nxsk; i++) {
		const struct tickstack_dump_xsk *x = &d->xsk[i];

		printf("  %-8.15s %-5u %-6u %-6u %-6u %-6u %-10u %-10u %-10u %-6u\n",
		       x->ifname, x->queue, x->rx, x->fill, x->tx, x->comp,
		       x->umem_frames, x->umem_free, x->umem_out, x->fill_depth);
	}
	printf("  %-4s %-5s %-11s %-21s %-21s %-7s %-7s %-10s %-10s\n", "FD",
	       "PROTO", "STATE", "LOCAL", "REMOTE", "RECV-Q", "SEND-Q", "RX", "TX");
	for (i = 0; i < d->nsock; i++) {
		const struct tickstack_dump_sock *k = &d->sock[i];

		addr(la, sizeof(la), k->laddr, k->lport);
		addr(ra, sizeof(ra), k->raddr, k->rport);
		printf("  %-4d %-5s %-11s %-21s %-21s %-7u %-7u %-10llu %-10llu\n",
		       k->fd, k->proto == IPPROTO_TCP ? "tcp" : "udp",
		       state_name(k), la, ra, k->rxq, k->txq,
		       (unsigned long long)k->rx, (unsigned long long)k->tx);
		if (k->proto == IPPROTO_TCP && k->state != 10 && k->mss)
			printf("       cwnd %u ssthresh %u snd_wnd %u rcv_wnd %u "
			       "mss %u srtt %uus rto %ums retrans %u segs %u\n",
			       k->cwnd, k->ssthresh, k->snd_wnd, k->rcv_wnd,
			       k->mss, k->srtt_us, k->rto_ms, k->nrtx,
			       k->txq_segs);
		if (k->proto == IPPROTO_TCP && k->state == 10)
			printf("       accept queue %u\n", k->backlog);
	}
	if (d->truncated)
		printf("  (%u more sockets not shown)\n", d->truncated);
	printf("  tcp:");
#define PR(n) printf(" " #n "=%llu", (unsigned long long)s->tcp.n);
	TICKSTACK_TCP_COUNTERS(PR)
#undef PR
#define PR(n) printf(" " #n "=%llu", (unsigned long long)s->tcp_ext.n);
	TICKSTACK_TCP_EXT_COUNTERS(PR)
#undef PR
	printf("\n");
	for (i = 0; i < s->nxsk && i < TICKSTACK_STATS_MAX_XSK; i++) {
		const struct tickstack_xsk_stats *x = &s->xsk[i];

		if (!x->in_use)
			continue;
		printf("  xsk %.15s:", x->ifname);
#define PR(n) printf(" " #n "=%llu", (unsigned long long)x->n);
		TICKSTACK_XSK_COUNTERS(PR)
#undef PR
#define PR(n) printf(" " #n "=%llu", (unsigned long long)s->xsk_ext[i].n);
		TICKSTACK_XSK_EXT_COUNTERS(PR)
#undef PR
		printf("\n");
	}
}

/* a JSON string of at most n bytes of s */
static void jstr(const char *s, size_t n)
{
	size_t i;

	putchar('"');
	for (i = 0; i < n && s[i]; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c > 0x7e)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void print_json(const struct ts_target *t, const struct tickstack_dump *d,
		       int first)
{
	const struct tickstack_stats *s = t->st;
	char la[INET_ADDRSTRLEN], ra[INET_ADDRSTRLEN];
	uint32_t i;

	printf("%s{\"pid\":%d,\"profile\":", first ? "" : ",", t->pid);
	jstr(s->profile, sizeof(s->profile));
	printf(",\"time_ns\":%llu,", (unsigned long long)d->time_ns);
	printf("\"counters\":{\"sockets_accelerated\":%llu,\"sockets_kernel\":"
	       "%llu,\"fallback_events\":%llu",
	       (unsigned long long)s->sockets_accelerated,
	       (unsigned long long)s->sockets_kernel,
	       (unsigned long long)s->fallback_events);
#define PR(n) printf(",\"tcp_" #n "\":%llu", (unsigned long long)s->tcp.n);
	TICKSTACK_TCP_COUNTERS(PR)
#undef PR
#define PR(n) printf(",\"tcp_" #n "\":%llu", (unsigned long long)s->tcp_ext.n);
	TICKSTACK_TCP_EXT_COUNTERS(PR)
#undef PR
	printf("},\"xsks\":[");
	for (i = 0; i < d->nxsk; i++) {
		const struct tickstack_dump_xsk *x = &d->xsk[i];
		uint32_t j;

		printf("%s{\"ifname\":", i ? "," : "");
		jstr(x->ifname, sizeof(x->ifname));
		printf(",\"ifindex\":%u,\"queue\":%u,"
		       "\"ring_size\":%u,\"rx\":%u,\"fill\":%u,\"tx\":%u,"
		       "\"comp\":%u,\"umem_frames\":%u,\"umem_free\":%u,"
		       "\"umem_in_use\":%u,\"fill_depth\":%u,\"counters\":{",
		       x->ifindex, x->queue,
		       x->ring_size, x->rx, x->fill, x->tx, x->comp,
		       x->umem_frames, x->umem_free, x->umem_out, x->fill_depth);
		for (j = 0; j < s->nxsk && j < TICKSTACK_STATS_MAX_XSK; j++) {
			const struct tickstack_xsk_stats *c = &s->xsk[j];
			const char *sep = "";

			if (!c->in_use || c->ifindex != x->ifindex)
				continue;
#define PR(n)                                                                  \
	printf("%s\"" #n "\":%llu", sep, (unsigned long long)c->n);            \
	sep = ",";
			TICKSTACK_XSK_COUNTERS(PR)
#undef PR
#define PR(n)                                                                  \
	printf(",\"" #n "\":%llu", (unsigned long long)s->xsk_ext[j].n);
			TICKSTACK_XSK_EXT_COUNTERS(PR)
#undef PR
			break;
		}
		printf("}}");
	}
	printf("],\"sockets\":[");
	for (i = 0; i < d->nsock; i++) {
		const struct tickstack_dump_sock *k = &d->sock[i];

		inet_ntop(AF_INET, &k->laddr, la, sizeof(la));
		inet_ntop(AF_INET, &k->raddr, ra, sizeof(ra));
		printf("%s{\"fd\":%d,\"proto\":\"%s\",\"state\":\"%s\","
		       "\"local\":\"%s:%u\",\"remote\":\"%s:%u\","
		       "\"recv_q\":%u,\"recv_q_bytes\":%u,\"send_q\":%u,"
		       "\"rx\":%llu,\"tx\":%llu",
		       i ? "," : "", k->fd,
		       k->proto == IPPROTO_TCP ? "tcp" : "udp", state_name(k),
		       la, ntohs(k->lport), ra, ntohs(k->rport), k->rxq,
		       k->rxq_bytes, k->txq, (unsigned long long)k->rx,
		       (unsigned long long)k->tx);
		if (k->proto == IPPROTO_TCP)
			printf(",\"tcp\":{\"cwnd\":%u,\"ssthresh\":%u,"
			       "\"snd_wnd\":%u,\"rcv_wnd\":%u,\"mss\":%u,"
			       "\"srtt_us\":%u,\"rto_ms\":%u,\"retransmits\":%u,"
			       "\"send_segs\":%u,\"accept_queue\":%u}",
			       k->cwnd, k->ssthresh, k->snd_wnd, k->rcv_wnd,
			       k->mss, k->srtt_us, k->rto_ms, k->nrtx,
			       k->txq_segs, k->backlog);
		printf("}");
	}
	printf("],\"sockets_truncated\":%u}", d->truncated);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "root", required_argument, NULL, 'r' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 } };
	static struct tickstack_dump d;
	struct ts_target t[MAX_TARGETS];
	const char *spec = NULL, *root = NULL;
	int o, i, n, json = 0, shown = 0, rc = 0;

	while ((o = getopt_long(argc, argv, "p:i:r:o:h", lo, NULL)) != -1) {
		if (ts_insp__target_opt(o, optarg, &spec, &root))
			continue;
		switch (o) {
		case 'o':
			if (!strcmp(optarg, "json"))
				json = 1;
			else if (strcmp(optarg, "table")) {
				fprintf(stderr, TOOL ": -o %s: give table or "
						"json\n", optarg);
				return 2;
			}
			break;
		default:
			return usage();
		}
	}
	if (!spec && optind < argc)
		spec = argv[optind++]; /* as tickstack-stats: PID|all */
	if (!spec || optind != argc) {
		if (!spec)
			fprintf(stderr, TOOL ": -p: name the process (a pid, or "
					"all)\n");
		return usage();
	}
	n = ts_insp__targets(TOOL, spec, root, t, MAX_TARGETS);
	if (n < 0)
		return 1;
	if (json)
		printf("{\"processes\":[");
	for (i = 0; i < n; i++) {
		if (snapshot(&t[i], &d)) {
			rc = 1;
			continue;
		}
		if (json)
			print_json(&t[i], &d, !shown);
		else
			print_table(&t[i], &d);
		shown++;
	}
	if (json)
		printf("]}\n");
	return shown ? 0 : rc;
}
