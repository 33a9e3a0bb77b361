// SPDX-License-Identifier: Apache-2.0
/* tickstack-dump -p PID|all [-r ROOT] [-w FILE|-] [-s SNAPLEN] [-c COUNT]
 *                [-G SECONDS] [-B KIB] [FILTER...]
 *
 * Captures the frames a process under libtickstack receives from and puts on
 * its XSKs (traffic the kernel never sees, so tcpdump on the interface does
 * not either) into pcapng, which tcpdump -r, tshark and Wireshark read. The
 * filter is a pcap expression compiled by libpcap and applied here; the
 * process copies every frame (snaplen bytes) into a ring in shared memory
 * and drops, counting, what does not fit: it never waits for this tool.
 * docs/dataplane.md, "Seeing inside the bypass". */
#include <getopt.h>
#include <pcap/pcap.h>

#include "inspect.h"

#define TOOL "tickstack-dump"
#define MAX_TARGETS 64
#define MAX_IFS 64

struct cap_target {
	struct ts_target t;
	struct tickstack_cap_hdr *h;
	size_t len;
	uint32_t size;
	char path[340];
	int live;
	uint64_t captured, dropped; /* at detach */
};

static struct cap_target tg[MAX_TARGETS];
static int ntg;
static volatile sig_atomic_t stop;
static FILE *out;
static struct {
	int pid;
	uint32_t ifindex;
} ifs[MAX_IFS];
static int nifs;
static uint64_t written, filtered, bad;

static int usage(void)
{
	fprintf(stderr,
		"usage: " TOOL " -p PID|all [-r ROOT] [-w FILE|-] [-s SNAPLEN] "
		"[-c COUNT] [-G SECONDS] [-B KIB] [FILTER...]\n"
		"  captures a tickstack process's accelerated traffic (RX and "
		"TX) as pcapng\n"
		"  -p, -i PID|all  the process (pid here, or the host pid from "
		"the node), or every one\n"
		"  -r, --root DIR  look in DIR/dev/shm (e.g. /proc/PID/root: "
		"a pod's processes from the node)\n"
		"  -w FILE         write pcapng there; - is stdout (default "
		"when stdout is not a terminal)\n"
		"  -s SNAPLEN      bytes kept of each frame (default 65535)\n"
		"  -c COUNT        stop after COUNT frames written\n"
		"  -G, --duration SECONDS  stop after that long\n"
		"  -B KIB          ring per process in KiB (default 4096; a "
		"power of two)\n"
		"  FILTER          a pcap filter expression (man pcap-filter)\n");
	return 2;
}

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void put(const void *p, size_t n)
{
	fwrite(p, 1, n, out);
}

static void put32(uint32_t v)
{
	put(&v, 4);
}

static void put_opt(uint16_t code, const void *v, uint16_t len)
{
	static const uint8_t zero[4];

	put(&code, 2);
	put(&len, 2);
	put(v, len);
	put(zero, (4 - (len & 3)) & 3);
}

static uint32_t opt_len(uint16_t len)
{
	return 4 + ((len + 3u) & ~3u);
}

/* pcapng section header block */
static void write_shb(void)
{
	static const char app[] = "tickstack-dump";
	uint32_t len = 28 + opt_len(sizeof(app) - 1) + 4;
	int64_t seclen = -1;
	uint16_t major = 1, minor = 0;

	put32(0x0A0D0D0A);
	put32(len);
	put32(0x1A2B3C4D);
	put(&major, 2);
	put(&minor, 2);
	put(&seclen, 8);
	put_opt(4, app, sizeof(app) - 1); /* shb_userappl */
	put32(0);                          /* opt_endofopt */
	put32(len);
}

/* The interface id of (pid, ifindex), an interface description block
 * written the first time (pcapng allows them anywhere before their use). */
static int if_id(const struct cap_target *c, uint32_t ifindex,
		 uint32_t snaplen)
{
	char name[40], desc[64];
	uint16_t lt = 1 /* LINKTYPE_ETHERNET */, res = 0;
	uint8_t tsres = 9; /* nanoseconds */
	uint32_t i, len;

	for (i = 0; i < (uint32_t)nifs; i++)
		if (ifs[i].pid == c->t.pid && ifs[i].ifindex == ifindex)
			return (int)i;
	if (nifs == MAX_IFS)
		return -1;
	snprintf(name, sizeof(name), "if%u", ifindex);
	for (i = 0; i < c->t.st->nxsk && i < TICKSTACK_STATS_MAX_XSK; i++)
		if (c->t.st->xsk[i].in_use && c->t.st->xsk[i].ifindex == ifindex)
			snprintf(name, sizeof(name), "%.15s",
				 c->t.st->xsk[i].ifname);
	snprintf(desc, sizeof(desc), "tickstack pid %d XSK", c->t.pid);
	len = 20 + opt_len((uint16_t)strlen(name)) +
	      opt_len((uint16_t)strlen(desc)) + opt_len(1) + 4;
	put32(1);
	put32(len);
	put(&lt, 2);
	put(&res, 2);
	put32(snaplen);
	put_opt(2, name, (uint16_t)strlen(name)); /* if_name */
	put_opt(3, desc, (uint16_t)strlen(desc)); /* if_description */
	put_opt(9, &tsres, 1);                     /* if_tsresol */
	put32(0);
	put32(len);
	ifs[nifs].pid = c->t.pid;
	ifs[nifs].ifindex = ifindex;
	return nifs++;
}

/* pcapng enhanced packet block, epb_flags giving the direction */
static void write_epb(int ifid, const struct tickstack_cap_rec *r,
		      const uint8_t *data)
{
	uint32_t pad = (4 - (r->caplen & 3)) & 3;
	uint32_t len = 32 + r->caplen + pad + opt_len(4) + 4;
	uint32_t flags = (r->flags & TICKSTACK_CAP_IN) ? 1 : 2;
	static const uint8_t zero[4];

	put32(6);
	put32(len);
	put32((uint32_t)ifid);
	put32((uint32_t)(r->ts_ns >> 32));
	put32((uint32_t)r->ts_ns);
	put32(r->caplen);
	put32(r->origlen);
	put(data, r->caplen);
	put(zero, pad);
	put_opt(2, &flags, 4); /* epb_flags: 1 inbound, 2 outbound */
	put32(0);
	put32(len);
}

static int attach(struct cap_target *c, uint32_t size, uint32_t snaplen)
{
	uint32_t gen = ts_insp__gen();
	uint64_t until;

	c->len = sizeof(*c->h) + size;
	c->size = size;
	c->h = ts_insp__make_file(TOOL, &c->t, "cap", c->len, c->path,
				  sizeof(c->path));
	if (!c->h)
		return -1;
	c->h->size = size;
	c->h->snaplen = snaplen;
	c->h->version = TICKSTACK_CAP_VERSION;
	c->h->reader_ns = ts_insp__mono_ns();
	__atomic_store_n(&c->h->magic, TICKSTACK_CAP_MAGIC, __ATOMIC_RELEASE);
	__atomic_store_n(&c->t.st->cap_req, gen, __ATOMIC_RELEASE);
	/* the control thread looks every 100 ms */
	until = ts_insp__mono_ns() + 3000000000ull;
	while (__atomic_load_n(&c->t.st->cap_att, __ATOMIC_ACQUIRE) != gen) {
		if (ts_insp__mono_ns() > until || stop) {
			fprintf(stderr, TOOL ": pid %d does not answer (no "
					"accelerated socket yet, or stopped)\n",
				c->t.pid);
			goto out_fail;
		}
		c->h->reader_ns = ts_insp__mono_ns();
		ts_insp__sleep_ms(5);
	}
	if (__atomic_load_n(&c->h->attached, __ATOMIC_ACQUIRE) != 1) {
		fprintf(stderr, TOOL ": pid %d refused %s (its stderr says why)\n",
			c->t.pid, c->path);
		goto out_fail;
	}
	c->live = 1;
	return 0;
out_fail:
	__atomic_store_n(&c->t.st->cap_req, 0, __ATOMIC_RELEASE);
	munmap(c->h, c->len);
	c->h = NULL;
	unlink(c->path);
	return -1;
}

/* Take what c's ring holds; the frames written. */
static uint64_t drain(struct cap_target *c, struct bpf_program *prog,
		      uint64_t limit)
{
	struct tickstack_cap_hdr *h = c->h;
	uint64_t head = __atomic_load_n(&h->head, __ATOMIC_ACQUIRE);
	uint64_t tail = h->tail, n = 0;

	h->reader_ns = ts_insp__mono_ns();
	while (tail < head && (!limit || written < limit)) {
		uint32_t off = (uint32_t)(tail & (c->size - 1));
		const struct tickstack_cap_rec *r =
			(const void *)(h->data + off);
		struct pcap_pkthdr ph;
		int id;

		if (r->reclen < sizeof(*r) || r->reclen > c->size - off ||
		    r->reclen % TICKSTACK_CAP_ALIGN ||
		    (!(r->flags & TICKSTACK_CAP_PAD) &&
		     sizeof(*r) + r->caplen > r->reclen)) {
			bad++; /* never written so: give the ring up */
			tail = head;
			break;
		}
		tail += r->reclen;
		if (r->flags & TICKSTACK_CAP_PAD)
			continue;
		ph.caplen = r->caplen;
		ph.len = r->origlen;
		ph.ts.tv_sec = (time_t)(r->ts_ns / 1000000000ull);
		ph.ts.tv_usec = (suseconds_t)(r->ts_ns % 1000000000ull / 1000);
		if (prog && !pcap_offline_filter(prog, &ph,
						  (const u_char *)(r + 1))) {
			filtered++;
			continue;
		}
		id = if_id(c, r->ifindex, h->snaplen);
		if (id < 0)
			continue;
		write_epb(id, r, (const uint8_t *)(r + 1));
		written++;
		n++;
	}
	__atomic_store_n(&h->tail, tail, __ATOMIC_RELEASE);
	return n;
}

static void detach(struct cap_target *c, struct bpf_program *prog,
		   uint64_t limit)
{
	uint64_t until = ts_insp__mono_ns() + 500000000ull;

	if (!c->h)
		return;
	__atomic_store_n(&c->t.st->cap_req, 0, __ATOMIC_RELEASE);
	/* until the stack has let go (or 0.5 s): what it copied meanwhile */
	while (c->live &&
	       __atomic_load_n(&c->h->attached, __ATOMIC_ACQUIRE) == 1 &&
	       ts_insp__mono_ns() < until) {
		drain(c, prog, limit);
		ts_insp__sleep_ms(5);
	}
	if (c->live)
		drain(c, prog, limit);
	c->captured = c->h->captured;
	c->dropped = c->h->dropped;
	munmap(c->h, c->len);
	c->h = NULL;
	unlink(c->path);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "root", required_argument, NULL, 'r' },
		{ "duration", required_argument, NULL, 'G' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 } };
	const char *spec = NULL, *root = NULL, *file = NULL;
	long snaplen = 65535, kib = 4096, secs = 0;
	struct bpf_program prog, *pp = NULL;
	uint64_t count = 0, deadline = 0, captured = 0, dropped = 0;
	char filter[4096] = "", *end;
	struct sigaction sa;
	int o, i, live;

	while ((o = getopt_long(argc, argv, "+p:i:r:w:s:c:G:B:h", lo, NULL)) !=
	       -1) {
		if (ts_insp__target_opt(o, optarg, &spec, &root))
			continue;
		switch (o) {
		case 'w':
			file = optarg;
			break;
		case 's':
			snaplen = strtol(optarg, &end, 10);
			if (*end || snaplen < 64 || snaplen > 262144) {
				fprintf(stderr, TOOL ": -s %s: give a snap "
						"length from 64 to 262144 bytes\n",
					optarg);
				return 2;
			}
			break;
		case 'c':
			count = strtoull(optarg, &end, 10);
			if (*end || !count) {
				fprintf(stderr, TOOL ": -c %s: give a positive "
						"number of frames\n", optarg);
				return 2;
			}
			break;
		case 'G':
			secs = strtol(optarg, &end, 10);
			if (*end || secs <= 0) {
				fprintf(stderr, TOOL ": -G %s: give a positive "
						"number of seconds\n", optarg);
				return 2;
			}
			break;
		case 'B':
			kib = strtol(optarg, &end, 10);
			if (*end || kib < 4 || kib > 1048576 || (kib & (kib - 1))) {
				fprintf(stderr, TOOL ": -B %s: give the ring's "
						"KiB as a power of two from 4 to "
						"1048576\n", optarg);
				return 2;
			}
			break;
		default:
			return usage();
		}
	}
	if (!spec) {
		fprintf(stderr, TOOL ": -p: name the process (a pid, or all)\n");
		return usage();
	}
	for (i = optind; i < argc; i++) {
		if (strlen(filter) + strlen(argv[i]) + 2 > sizeof(filter)) {
			fprintf(stderr, TOOL ": the filter is too long\n");
			return 2;
		}
		if (filter[0])
			strcat(filter, " ");
		strcat(filter, argv[i]);
	}
	if (!file) {
		if (isatty(STDOUT_FILENO)) {
			fprintf(stderr, TOOL ": -w: name a file, or - to write "
					"pcapng to a pipe (| tshark -r -)\n");
			return 2;
		}
		file = "-";
	}
	/* the filter, compiled before anything changes */
	if (filter[0]) {
		pcap_t *dead = pcap_open_dead(DLT_EN10MB, (int)snaplen);

		if (!dead || pcap_compile(dead, &prog, filter, 1,
					  PCAP_NETMASK_UNKNOWN) < 0) {
			fprintf(stderr, TOOL ": filter '%s': %s\n", filter,
				dead ? pcap_geterr(dead) : "libpcap failed");
			return 2;
		}
		pcap_close(dead);
		pp = &prog;
	}
	{
		struct ts_target t[MAX_TARGETS];

		ntg = ts_insp__targets(TOOL, spec, root, t, MAX_TARGETS);
		if (ntg < 0)
			return 1;
		for (i = 0; i < ntg; i++)
			tg[i].t = t[i];
	}
	out = strcmp(file, "-") ? fopen(file, "wbx") : stdout;
	if (!out && errno == EEXIST) {
		/* as tcpdump -w: an existing file is replaced */
		unlink(file);
		out = fopen(file, "wbx");
	}
	if (!out) {
		fprintf(stderr, TOOL ": -w %s: %s\n", file, strerror(errno));
		return 1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	write_shb();
	live = 0;
	for (i = 0; i < ntg; i++)
		live += !attach(&tg[i], (uint32_t)kib * 1024, (uint32_t)snaplen);
	if (!live) {
		if (out != stdout)
			unlink(file);
		return 1;
	}
	fprintf(stderr, TOOL ": capturing from %d process%s%s%s\n", live,
		live == 1 ? "" : "es", filter[0] ? ", filter: " : "", filter);
	if (secs)
		deadline = ts_insp__mono_ns() + (uint64_t)secs * 1000000000ull;
	while (!stop && (!count || written < count) &&
	       (!deadline || ts_insp__mono_ns() < deadline)) {
		uint64_t got = 0;

		live = 0;
		for (i = 0; i < ntg; i++) {
			struct cap_target *c = &tg[i];

			if (!c->live)
				continue;
			got += drain(c, pp, count);
			/* the stack let go: the process exited or forked over
			 * it, or another reader took its place */
			if (__atomic_load_n(&c->h->attached, __ATOMIC_ACQUIRE) !=
				    1 ||
			    (c->t.local && kill(c->t.pid, 0) < 0 &&
			     errno == ESRCH)) {
				detach(c, pp, count);
				c->live = 0;
				continue;
			}
			live++;
		}
		if (!live)
			break;
		if (got)
			fflush(out);
		else
			ts_insp__sleep_ms(1);
		if (ferror(out))
			break; /* the reader of the pipe went away */
	}
	for (i = 0; i < ntg; i++) {
		detach(&tg[i], pp, count);
		captured += tg[i].captured;
		dropped += tg[i].dropped;
	}
	fflush(out);
	if (out != stdout)
		fclose(out);
	fprintf(stderr,
		TOOL ": %llu frames written, %llu captured by the stack, %llu "
		     "dropped by the stack (ring full), %llu filtered out\n",
		(unsigned long long)written, (unsigned long long)captured,
		(unsigned long long)dropped, (unsigned long long)filtered);
	if (bad)
		fprintf(stderr, TOOL ": %llu malformed records: the ring was "
				"abandoned at them\n", (unsigned long long)bad);
	return 0;
}
