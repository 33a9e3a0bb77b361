// SPDX-License-Identifier: Apache-2.0
/* fuzz_xdpd - libFuzzer target for tickstack-xdpd's pod protocol: the
 * daemon's own source is compiled in, and each input is a sequence of
 * messages a pod process sends on its connection (text from a grammar or
 * raw bytes, of any length, with 0 to 6 fds of several kinds in one or
 * two SCM_RIGHTS headers). Each goes through a real SEQPACKET socketpair
 * to the daemon's handler, client_request(), as in the daemon's loop, with
 * its steering programs loaded (not attached: their maps are real, no
 * interface is touched) and the fuzzer's own network namespace, a private
 * one made at start, as the pod's. Every reply must be "ok..." or "error
 * ERRNO ..."; when the input's connections close, every steering entry and
 * queue they held must be gone and the process must hold exactly the fds it
 * held before the input: a leak or stale state aborts. Needs root (BPF
 * maps, a network namespace). */
#define main xdpd_main
int xdpd_main(int argc, char **argv);
#include "../tools/tickstack-xdpd.c"
#undef main

#include <assert.h>

#include "fuzz_input.h"

#define FZ_IFS 2 /* attachments of the pod: "fz0", "fz1" */
#define FZ_PORT_UDP 47100
#define FZ_PORT_TCP 47101

static struct pod fz_pod;
static int fz_trace; /* FUZZ_XDPD_TRACE=1: each request and reply on stderr */

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		abort();
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the directory's own fd */
}

static int bound(int type, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);

	if (fd >= 0) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &(int){ 1 }, sizeof(int));
		setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &(int){ 1 }, sizeof(int));
		bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	}
	return fd;
}

/* The fds a message can carry: new ones each time (the daemon must close
 * what it received, the sender closes its own), or a copy of the input's
 * own UDP socket, which both connections can pass (as a forked child
 * holds its parent's socket). */
static int fd_of(unsigned kind, int shared)
{
	int p[2];

	switch (kind % 10) {
	case 0: /* the input's UDP socket, bound to the port the grammar asks for */
		return fcntl(shared, F_DUPFD_CLOEXEC, 0);
	case 1: /* another UDP socket on that port */
		return bound(SOCK_DGRAM, FZ_PORT_UDP);
	case 2: /* a TCP socket on the grammar's TCP port */
		return bound(SOCK_STREAM, FZ_PORT_TCP);
		return socket(AF_INET, SOCK_DGRAM, 0); /* unbound */
	case 3:
	case 4:
		return socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
	case 5:
		if (pipe2(p, O_CLOEXEC))
			return -1;
		close(p[1]);
		return p[0];
	case 6:
		return open("/dev/null", O_RDONLY | O_CLOEXEC);
	case 7:
		return socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	case 8: { /* a UMEM memfd of 32 frames, written ("umem") */
		static char page[4096];
		int m = memfd_create("fz-umem", MFD_CLOEXEC), k;

		for (k = 0; m >= 0 && k < 16; k++)
			if (write(m, page, sizeof(page)) != sizeof(page))
				break;
		return m;
	}
	default: /* an unbound UDP socket */
		return socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	}
}

static const char *const ops[] = { "hello", "busy", "xsk", "umem", "add",
				   "del", "share", "shared", "nope" };
static const char *const ifnames[] = { "fz0", "fz1", "lo", "" };

/* One request from the grammar, fields right or wrong. */
static size_t grammar(struct in *in, char *buf, size_t cap)
{
	unsigned op = take(in) % 9, f = take(in);
	const char *ifn = ifnames[(f & 3) == 3 && take(in) & 1 ? 3 : f % 2];
	static const char *const addrs[] = { "0.0.0.0", "198.18.0.1",
					     "198.18.12.2", "255.255.255.255",
					     "198.18.0", "x" };
	char port[16], q[16];
	int n;

	snprintf(port, sizeof(port), "%d",
		 (f & 4) ? (take(in) & 1 ? FZ_PORT_TCP : FZ_PORT_UDP) :
			   (int)(take(in) << 8 | take(in)) - 1);
	snprintf(q, sizeof(q), "%d", (int)(take(in) % 70) - 2);
	if (op < 3)
		n = snprintf(buf, cap, "%s %s %s", ops[op], ifn, q);
	else if (op == 3)
		n = snprintf(buf, cap, "umem %s %s %d %d", ifn, q,
			     take(in) & 1 ? 2048 : (int)take(in) << 4,
			     take(in) & 1 ? 64 : (int)take(in));
	else
		n = snprintf(buf, cap, "%s %s %s %s %s", ops[op], ifn,
			     take(in) & 1 ? "tcp" : "udp",
			     addrs[take(in) % 6], port);
	if (op == 0 && (f & 8))
		n = snprintf(buf, cap, "hello");
	if (f & 16 && n > 0) /* cut short or a trailing word */
		n = (f & 32) ? n / 2 : n + snprintf(buf + n, cap - (size_t)n, " x");
	return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

static void send_one(int fd, const char *buf, size_t len, const int *fds,
		     int nfds, int split)
{
	char cbuf[2 * CMSG_SPACE(6 * sizeof(int))];
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;
	int first = split && nfds > 1 ? nfds / 2 : nfds;

	if (nfds) {
		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(first * sizeof(int)) +
				    (first < nfds ? CMSG_SPACE((nfds - first) * sizeof(int)) : 0);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(first * sizeof(int));
		memcpy(CMSG_DATA(c), fds, first * sizeof(int));
		if (first < nfds) {
			c = CMSG_NXTHDR(&mh, c);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN((nfds - first) * sizeof(int));
			memcpy(CMSG_DATA(c), fds + first, (nfds - first) * sizeof(int));
		}
	}
	sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* Every reply the daemon queued: "ok", "ok ...", or "error N ...". */
static void check_replies(int fd)
{
	char rep[TS_XDPD_MSG_MAX + 1];
	ssize_t n;

	while ((n = recv(fd, rep, sizeof(rep), MSG_DONTWAIT)) > 0) {
		rep[n] = 0;
		if (fz_trace)
			fprintf(stderr, "fuzz_xdpd:   -> %s\n", rep);
		if (!strcmp(rep, "ok") || !strncmp(rep, "ok ", 3))
			continue;
		if (!strncmp(rep, "error ", 6) && atoi(rep + 6) > 0 &&
		    strchr(rep + 6, ' '))
			continue;
		fprintf(stderr, "fuzz_xdpd: malformed reply '%s'\n", rep);
		abort();
	}
}

static struct client *fz_connect(int *peer)
{
	struct client *c = calloc(1, sizeof(*c));
	int sv[2];

	if (!c || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		abort();
	c->fd = sv[0];
	*peer = sv[1];
	fcntl(c->fd, F_SETFL, O_NONBLOCK);
	c->pod = &fz_pod;
	c->pid = getpid();
	c->uid = getuid();
	c->pidfd = (int)syscall(SYS_pidfd_open, c->pid, 0);
	if (c->pidfd < 0)
		abort();
	c->ev.type = EV_CLIENT;
	c->ev.p = c;
	c->next = fz_pod.clients;
	fz_pod.clients = c;
	fz_pod.nclients++;
	ep_add(c->fd, &c->ev);
	return c;
}

static int fz_has(struct client *c)
{
	struct client *o;

	for (o = fz_pod.clients; o; o = o->next)
		if (o == c)
			return 1;
	return 0;
}

/* libFuzzer's entry point, called by its runtime */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	int i;

	(void)argc;
	(void)argv;
	/* a network namespace of its own: the pod's, and the "node's" */
	if (unshare(CLONE_NEWNET)) {
		fprintf(stderr, "fuzz_xdpd: unshare(CLONE_NEWNET): %s (run as root)\n",
			strerror(errno));
		exit(1);
	}
	libbpf_set_print(libbpf_quiet);
	host_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	epfd = epoll_create1(EPOLL_CLOEXEC);
	snprintf(fz_pod.uid, sizeof(fz_pod.uid), "fuzz");
	fz_pod.nsfd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (host_ns < 0 || epfd < 0 || fz_pod.nsfd < 0 ||
	    fd_ns_id(fz_pod.nsfd, &fz_pod.ns_ino, &fz_pod.ns_dev))
		abort();
	fz_pod.lfd = fz_pod.dfd = -1;
	for (i = 0; i < FZ_IFS; i++) {
		struct att *a = &fz_pod.ifs[i];

		snprintf(a->ifname, sizeof(a->ifname), "fz%d", i);
		a->skel = steer_bpf__open_and_load();
		if (!a->skel) {
			fprintf(stderr, "fuzz_xdpd: loading the steering program: "
				"%s (run as root)\n", strerror(errno));
			exit(1);
		}
	}
	fz_pod.nifs = FZ_IFS;
	fz_trace = getenv("FUZZ_XDPD_TRACE") != NULL;
	return 0;
}

/* libFuzzer's entry point, called by its runtime */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { data, size };
	int peer[2], i, k, base = count_fds(), shared;
	struct client *c[2];

	shared = bound(SOCK_DGRAM, FZ_PORT_UDP);
	c[0] = fz_connect(&peer[0]);
	c[1] = fz_connect(&peer[1]); /* another process of the pod */
	while (in.n) {
		unsigned h = take(&in), who = (h >> 7) & 1;
		char buf[TS_XDPD_MSG_MAX * 3];
		int fds[6], nfds = (int)((h >> 4) & 7) % 7;
		size_t len;

		if (!fz_has(c[who]))
			break; /* closed by a message of length 0 */
		if (h & 8) { /* raw bytes, possibly past the daemon's buffer */
			len = take(&in) * 6 % sizeof(buf);
			if (len > in.n)
				len = in.n;
			memcpy(buf, in.p, len);
			in.p += len;
			in.n -= len;
		} else {
			len = grammar(&in, buf, sizeof(buf));
		}
		for (i = 0; i < nfds; i++)
			fds[i] = fd_of(take(&in), shared);
		for (i = k = 0; i < nfds; i++) /* those that could be made */
			if (fds[i] >= 0)
				fds[k++] = fds[i];
		if (fz_trace)
			fprintf(stderr, "fuzz_xdpd: %u: '%.*s' (%zu bytes, %d fds)\n",
				who, (int)(len < 80 ? len : 80), buf, len, k);
		send_one(peer[who], buf, len, fds, k, h & 4);
		for (i = 0; i < k; i++)
			close(fds[i]);
		client_request(c[who]);
		check_replies(peer[who]);
	}
	for (i = 0; i < 2; i++) {
		if (fz_has(c[i]))
			client_close(c[i]);
		close(peer[i]);
	}
	if (shared >= 0)
		close(shared);
	/* nothing of the closed connections stays */
	for (i = 0; i < FZ_IFS; i++) {
		struct att *a = &fz_pod.ifs[i];
		int q;

		if (a->nents || map_count(bpf_map__fd(a->skel->maps.ts_steer_map))) {
			fprintf(stderr, "fuzz_xdpd: %d entries (map %d) left on %s\n",
				a->nents,
				map_count(bpf_map__fd(a->skel->maps.ts_steer_map)),
				a->ifname);
			abort();
		}
		/* (an XSKMAP cannot be read from user space: its owners) */
		for (q = 0; q < TS_XSKS_MAX; q++)
			if (a->qown[q]) {
				fprintf(stderr, "fuzz_xdpd: queue %d of %s still held\n",
					q, a->ifname);
				abort();
			}
	}
	assert(!fz_pod.clients && !fz_pod.nclients);
	k = count_fds();
	if (k != base) {
		fprintf(stderr, "fuzz_xdpd: %d fds open, %d before the input\n", k,
			base);
		abort();
	}
	return 0;
}
