// SPDX-License-Identifier: Apache-2.0
/* tcpcheck.c - stream checks for the harness (an ordinary program, run
 * through the interposer or on the kernel alike):
 *
 *   tcpcheck recv-server PORT OUT    accept one connection, write all it
 *                                    receives to OUT until EOF
 *   tcpcheck send-server PORT IN     accept one connection, send IN, then
 *                                    shut down writing and wait for EOF
 *   tcpcheck send-client HOST PORT IN
 *   tcpcheck recv-client HOST PORT OUT
 *   tcpcheck halfclose-server PORT   accept; read to EOF, answer "bye",
 *                                    close
 *   tcpcheck halfclose-client HOST PORT
 *                                    send 100000 bytes, shut down writing,
 *                                    write once more, read to EOF
 *   tcpcheck reset-server PORT       accept; read 1 MiB, then close with
 *                                    SO_LINGER 0 (a reset) mid-transfer
 *   tcpcheck reset-client HOST PORT  write until an error, write again,
 *                                    read
 *   tcpcheck refused-client HOST PORT  connect where nobody listens
 *   tcpcheck tcpinfo-server PORT     TCP_INFO of the listener, of the
 *                                    accepted connection, after the
 *                                    peer's FIN and after closing ours
 *   tcpcheck tcpinfo-client HOST PORT
 *                                    TCP_INFO after connect (state, MSS,
 *                                    window scaling), after our FIN and
 *                                    after the peer's
 *   tcpcheck options-server PORT     accept; TCP_INFO's negotiated options
 *                                    (timestamps, window scaling) and
 *                                    send MSS; read "x", answer "y", close
 *   tcpcheck options-client HOST PORT
 *                                    connect; the same TCP_INFO line; send
 *                                    "x", read "y" and EOF
 *   tcpcheck tailwin-server PORT GO  3 times: accept, send w - 500 bytes of
 *                                    a pattern (w: 1 MiB, then 65,535,
 *                                    the receive windows of lwIP as built
 *                                    here and as Debian built it; then
 *                                    100,500), wait until the peer
 *                                    acknowledged them all (TCP_INFO; 3 s
 *                                    at most), send 800 bytes more and
 *                                    close at once: that last segment, the
 *                                    FIN on it, meets a window of ~500
 *                                    bytes, and lwIP's persist timer
 *                                    splits it to fill the window; 300 ms
 *                                    later create GO.N (a reader whose
 *                                    window cannot take the first part
 *                                    gets GO.N after 2 s without progress)
 *   tcpcheck tailwin-client HOST PORT GO
 *                                    3 times: connect, read nothing until
 *                                    the file GO.N exists, then read to
 *                                    EOF: the count and whether every
 *                                    byte is the pattern's. The third
 *                                    time it shuts down writing first and
 *                                    reads 300 ms after GO.2, when the
 *                                    server has exited: its reads must
 *                                    send nothing (window updates after
 *                                    the peer's FIN would meet the
 *                                    server's kernel, which resets)
 *   (these print what they observed, one line each: the harness compares
 *   the kernel's run with the stack's)
 *   tcpcheck cycles-server PORT N    N times: accept, read "ping", answer
 *                                    "pong", close first
 *   tcpcheck cycles-client HOST PORT N
 *   tcpcheck keepalive-client HOST PORT GO
 *                                    connect, keepalive after 1 s idle,
 *                                    probes 1 s apart, 2 of them; print
 *                                    "connected", then read: the harness
 *                                    makes the peer silent, and the read
 *                                    ends with ETIMEDOUT; a write then
 *   tcpcheck usertimeout-client HOST PORT GO
 *                                    connect, TCP_USER_TIMEOUT 1500 ms,
 *                                    print "connected", wait for the file
 *                                    GO (the peer is silent then), write
 *                                    100 bytes, read (ETIMEDOUT), write
 *   tcpcheck syncnt-client HOST PORT connect with TCP_SYNCNT 2 where the
 *                                    peer drops every SYN
 *   tcpcheck backlog-server PORT GO  listen with backlog 1, wait for the
 *                                    file GO, then accept 5 connections
 *                                    and answer each one's greeting
 *   tcpcheck backlog-client HOST PORT GO
 *                                    open 5 connections at once, greet
 *                                    on each, watch 300 ms for errors
 *                                    while the server does not accept
 *                                    (its queue overflows), create GO,
 *                                    read every answer
 *                                    N times: connect, "ping", read "pong"
 *                                    and EOF, close
 *   tcpcheck greet-server PORT N [isn]
 *                                    N times: accept, write "hi", close
 *                                    first (this side keeps TIME_WAIT);
 *                                    with isn (kernel only) print the
 *                                    peer's initial sequence number first
 *                                    (TCP_REPAIR: needs CAP_NET_ADMIN)
 *   tcpcheck port-client HOST PORT LPORT
 *                                    bind LPORT (SO_REUSEADDR), connect,
 *                                    read "hi" and EOF; prints the connect
 *                                    time in ms on stderr
 *
 * After the cycles each side checks for leaks: its open fds are back to
 * the count after a first warm-up cycle (which creates the library's XSK
 * and maps), and, when it runs through the library, its statistics region
 * (include/tickstack.h) shows no accelerated connection still held
 * (conns_live, ports_held: lwIP's TIME_WAIT ends within seconds here) and
 * no UMEM frame out of the free list (umem_frames_out). Polled, bounded.
 *
 * Receivers read with read(), recv() and readv() in turn, senders write
 * with write(), send() and writev() in turn, so all three families carry
 * the stream. Exit status 0 on success, 1 with a message otherwise. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include <sys/mman.h>
#include <poll.h>
#include <time.h>

#include "tickstack.h"

static int die(const char *what)
{
	fprintf(stderr, "tcpcheck: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int listener(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (fd < 0)
		die("socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("bind");
	if (listen(fd, 128) < 0)
		die("listen");
	return fd;
}

/* The peer's initial sequence number on an accepted connection the peer
 * has sent nothing on yet: the kernel's rcv_nxt, read in repair mode. */
static unsigned peer_isn(int fd)
{
	int on = 1, off = 0, q = TCP_RECV_QUEUE;
	unsigned seq = 0;
	socklen_t len = sizeof(seq);

	if (setsockopt(fd, IPPROTO_TCP, TCP_REPAIR, &on, sizeof(on)) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_REPAIR_QUEUE, &q, sizeof(q)) ||
	    getsockopt(fd, IPPROTO_TCP, TCP_QUEUE_SEQ, &seq, &len) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_REPAIR, &off, sizeof(off)))
		die("TCP_REPAIR (CAP_NET_ADMIN, kernel sockets only)");
	return seq - 1; /* the SYN took one */
}

static void greet_server(int port, int n, int isn)
{
	int fd = listener(port), c, i;

	for (i = 0; i < n; i++) {
		struct sockaddr_in pa;
		socklen_t pl = sizeof(pa);

		c = accept(fd, (struct sockaddr *)&pa, &pl);
		if (c < 0)
			die("accept");
		if (isn)
			printf("isn %u %u\n", ntohs(pa.sin_port), peer_isn(c));
		fflush(stdout);
		if (write(c, "hi", 2) != 2)
			die("write");
		close(c);
	}
	close(fd);
}

static void port_client(const char *host, int port, int lport)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port) },
			   la = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)lport) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	struct timespec t0, t1;
	char buf[8];
	ssize_t n, got = 0;

	if (fd < 0 || inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		die("socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&la, sizeof(la)) < 0)
		die("bind");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("connect");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	fprintf(stderr, "connect ms %lld\n",
		(long long)(t1.tv_sec - t0.tv_sec) * 1000 +
			(t1.tv_nsec - t0.tv_nsec) / 1000000);
	while ((n = read(fd, buf + got, sizeof(buf) - (size_t)got)) > 0)
		got += n;
	if (n < 0)
		die("read");
	printf("client: read %.*s then EOF\n", (int)got, buf);
	close(fd);
}

static int connect_to(const char *host, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	if (fd < 0)
		die("socket");
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		fprintf(stderr, "tcpcheck: bad address %s\n", host);
		exit(1);
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("connect");
	return fd;
}

static ssize_t rd(int fd, char *buf, size_t len, unsigned k)
{
	struct iovec iov[2] = { { buf, len / 2 }, { buf + len / 2, len - len / 2 } };

	switch (k % 3) {
	case 0:
		return read(fd, buf, len);
	case 1:
		return recv(fd, buf, len, 0);
	default:
		return readv(fd, iov, 2);
	}
}

static ssize_t wr(int fd, const char *buf, size_t len, unsigned k)
{
	struct iovec iov[2] = { { (char *)buf, len / 3 },
				{ (char *)buf + len / 3, len - len / 3 } };

	switch (k % 3) {
	case 0:
		return write(fd, buf, len);
	case 1:
		return send(fd, buf, len, MSG_NOSIGNAL);
	default:
		return writev(fd, iov, 2);
	}
}

static void sink(int fd, const char *out)
{
	static char buf[1 << 16];
	int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	unsigned k = 0;
	ssize_t n;

	if (o < 0)
		die(out);
	while ((n = rd(fd, buf, sizeof(buf) - (k % 7) * 1000, k)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("read");
		}
		if (write(o, buf, (size_t)n) != n)
			die("write file");
		k++;
	}
	close(o);
}

static void source(int fd, const char *in)
{
	static char buf[1 << 16];
	int i = open(in, O_RDONLY);
	unsigned k = 0;
	ssize_t n;

	if (i < 0)
		die(in);
	/* varying chunk sizes, so segment boundaries move */
	while ((n = read(i, buf, sizeof(buf) - (k % 5) * 3001)) > 0) {
		ssize_t off = 0;

		while (off < n) {
			ssize_t w = wr(fd, buf + off, (size_t)(n - off), k++);

			if (w < 0) {
				if (errno == EINTR)
					continue;
				die("write");
			}
			off += w;
		}
	}
	if (n < 0)
		die("read file");
	close(i);
	if (shutdown(fd, SHUT_WR) < 0)
		die("shutdown");
	/* the peer closes after it has read everything */
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		;
	if (n < 0)
		die("read EOF");
}

/* what each open fd is ("3 socket:[123]" lines), for a leak's report */
static char fds_seen[4096];

/* "socket:[N]" is a netlink socket of this process */
static int netlink_inode(const char *link)
{
	char line[512], ino[32];
	FILE *f;
	int found = 0;

	if (sscanf(link, "socket:[%31[0-9]]", ino) != 1)
		return 0;
	f = fopen("/proc/self/net/netlink", "re");
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		char f9[10][32];

		found = sscanf(line, "%31s %31s %31s %31s %31s %31s %31s %31s %31s %31s",
			       f9[0], f9[1], f9[2], f9[3], f9[4], f9[5], f9[6], f9[7],
			       f9[8], f9[9]) == 10 && !strcmp(f9[9], ino);
	}
	fclose(f);
	return found;
}

static void list_fds(char *out, size_t len)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	size_t off = 0;

	out[0] = 0;
	if (!d)
		return;
	while ((e = readdir(d)) && off + 300 < len) {
		char path[300], to[256];
		ssize_t n;

		if (e->d_name[0] == '.' || atoi(e->d_name) == dirfd(d))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		n = readlink(path, to, sizeof(to) - 1);
		to[n > 0 ? n : 0] = 0;
		off += (size_t)snprintf(out + off, len - off, " %s=%s%s", e->d_name, to,
					netlink_inode(to) ? "(netlink)" : "");
	}
	closedir(d);
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the directory's own fd */
}

static void expect(int fd, const char *want)
{
	char buf[16];
	size_t got = 0, len = strlen(want);

	while (got < len) {
		ssize_t n = read(fd, buf + got, len - got);

		if (n <= 0)
			die(n == 0 ? "early EOF" : "read");
		got += (size_t)n;
	}
	if (memcmp(buf, want, len)) {
		fprintf(stderr, "tcpcheck: got %.*s, want %s\n", (int)len, buf,
			want);
		exit(1);
	}
}

static int accept_one(int lfd)
{
	int c = accept(lfd, NULL, NULL);

	if (c < 0)
		die("accept");
	return c;
}

/* a server's half of one exchange: read want, send say */
static void answer(int fd, const char *want, const char *say)
{
	size_t len = strlen(say);

	expect(fd, want);
	if (write(fd, say, len) != (ssize_t)len)
		die("write");
}

/* a client's half: send say, read want, then the server's EOF */
static void request(int fd, const char *say, const char *want)
{
	size_t len = strlen(say);
	char b;

	if (write(fd, say, len) != (ssize_t)len)
		die("write");
	expect(fd, want);
	if (read(fd, &b, 1) != 0)
		die("no EOF after the answer");
}

/* tailwin: the byte at offset i of a connection's stream */
static uint8_t tail_byte(size_t i)
{
	return (uint8_t)(i * 2654435761u >> 13);
}

static const size_t tail_first[] = { 1024 * 1024 - 500, 65535 - 500, 100000 };
#define TAIL_LAST 800

static void go_file(const char *go, size_t k)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s.%zu", go, k);
	fd = open(path, O_CREAT | O_WRONLY, 0600);
	if (fd < 0)
		die(path);
	close(fd);
}

static void go_wait(const char *go, size_t k)
{
	char path[4096];
	int i;

	snprintf(path, sizeof(path), "%s.%zu", go, k);
	for (i = 0; i < 3000 && access(path, F_OK); i++)
		usleep(10 * 1000);
}

/* until the peer acknowledged everything sent, at most 3 s (a kernel
 * reader that does not read has a smaller window: its run does not meet
 * the case's window edge, and is the reference all the same) */
static void acked_wait(int fd)
{
	struct tcp_info ti;
	socklen_t len;
	int i;

	for (i = 0; i < 300; i++) {
		len = sizeof(ti);
		if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0)
			die("TCP_INFO");
		if (!ti.tcpi_unacked)
			return;
		usleep(10 * 1000);
	}
}

static void tailwin_server(int lfd, const char *go)
{
	size_t k, i, n = tail_first[0] + TAIL_LAST;
	uint8_t *buf = malloc(n);

	if (!buf)
		die("malloc");
	for (i = 0; i < n; i++)
		buf[i] = tail_byte(i);
	for (k = 0; k < sizeof(tail_first) / sizeof(tail_first[0]); k++) {
		size_t off = 0, end = tail_first[k] + TAIL_LAST;
		int c = accept_one(lfd), go_done = 0;

		/* non-blocking: a reader whose window cannot take the first
		 * part (the kernel's, unread) is let read after 2 s without
		 * progress; its run does not meet the window edge and is the
		 * reference all the same */
		fcntl(c, F_SETFL, fcntl(c, F_GETFL) | O_NONBLOCK);
		while (off < end) {
			size_t want = off < tail_first[k] ? tail_first[k] - off : end - off;
			ssize_t w = write(c, buf + off, want);
			struct pollfd pf = { .fd = c, .events = POLLOUT };

			if (w < 0 && errno == EAGAIN) {
				if (!poll(&pf, 1, 2000) && !go_done) {
					go_file(go, k);
					go_done = 1;
				}
				continue;
			}
			if (w <= 0)
				die("write");
			off += (size_t)w;
			if (off == tail_first[k] && !go_done)
				acked_wait(c);
		}
		close(c); /* the FIN rides on the last data segment */
		if (!go_done) {
			usleep(300 * 1000); /* lwIP's persist timer: 60 ms */
			go_file(go, k);
		}
	}
	free(buf);
}

static void tailwin_client(const char *host, int port, const char *go)
{
	size_t k;

	for (k = 0; k < sizeof(tail_first) / sizeof(tail_first[0]); k++) {
		size_t got = 0, bad = 0;
		uint8_t buf[65536];
		int fd = connect_to(host, port);
		ssize_t r;

		/* the last: this end's FIN first, as a client that sends its
		 * request and half-closes; the server's FIN then ends it, the
		 * server exits, and only then is the data read */
		if (k == 2 && shutdown(fd, SHUT_WR) < 0)
			die("shutdown");
		go_wait(go, k);
		if (k == 2)
			usleep(300 * 1000);
		while ((r = read(fd, buf, sizeof(buf))) > 0) {
			ssize_t i;

			for (i = 0; i < r; i++)
				bad += buf[i] != tail_byte(got + (size_t)i);
			got += (size_t)r;
		}
		if (r < 0)
			die("read");
		printf("client: connection %zu: sent %zu, received %zu, %s\n", k,
		       tail_first[k] + TAIL_LAST, got, bad ? "DIFFERS" : "intact");
		close(fd);
	}
}

/* Leaks left by n cycles: 0 when the fds and the library's counters are
 * back (polled up to 30 s: lwIP's TIME_WAIT lasts ~5 s here). */
static int settle(int base, int n, const char *who)
{
	char path[64];
	struct tickstack_stats *st = NULL;
	uint64_t live = 0, held = 0, frames = 0;
	int fd, i, now = -1;

	snprintf(path, sizeof(path), TICKSTACK_STATS_PATH_FMT, (int)getpid());
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		st = mmap(NULL, sizeof(*st), PROT_READ, MAP_SHARED, fd, 0);
		close(fd);
		if (st == MAP_FAILED)
			st = NULL;
	}
	for (i = 0; i < 3000; i++) {
		uint32_t k;

		now = count_fds();
		if (st) {
			live = st->tcp.conns_live;
			held = st->tcp.ports_held;
			frames = 0;
			for (k = 0; k < st->nxsk && k < TICKSTACK_STATS_MAX_XSK; k++)
				frames += st->xsk[k].umem_frames_out;
		}
		if (now == base && !live && !held && !frames)
			break;
		usleep(10000);
	}
	printf("tcpcheck: %s: %d cycles; fds %d after, %d before; library: %s "
	       "conns_live=%llu ports_held=%llu umem_frames_out=%llu\n",
	       who, n, now, base, st ? "yes" : "no", (unsigned long long)live,
	       (unsigned long long)held, (unsigned long long)frames);
	if (now != base) {
		char after[4096];

		list_fds(after, sizeof(after));
		fprintf(stderr, "tcpcheck: %s: fds before:%s\ntcpcheck: %s: fds after:%s\n",
			who, fds_seen, who, after);
	}
	if (st)
		munmap(st, sizeof(*st));
	return now == base && !live && !held && !frames ? 0 : 1;
}

static const char *ename(int e)
{
	switch (e) {
	case 0: return "0";
	case EPIPE: return "EPIPE";
	case ECONNRESET: return "ECONNRESET";
	case ENOTCONN: return "ENOTCONN";
	case ECONNREFUSED: return "ECONNREFUSED";
	case EAGAIN: return "EAGAIN";
	case ETIMEDOUT: return "ETIMEDOUT";
	default: return strerror(e);
	}
}

/* read to EOF or an error: "N bytes then EOF" / "N bytes then ERR" */
static void drain_report(int fd, const char *who)
{
	static char buf[1 << 16];
	long long got = 0;
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) > 0)
		got += n;
	printf("%s: read %lld bytes then %s\n", who, got,
	       n == 0 ? "EOF" : ename(errno));
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* a rendezvous between the two ends through a file both can see: the
 * harness's namespaces share the file system */
static void file_signal(const char *what, const char *port)
{
	char path[96];
	int f;

	snprintf(path, sizeof(path), "/tmp/tcpcheck-%s-%s", what, port);
	f = open(path, O_WRONLY | O_CREAT, 0644);
	if (f >= 0)
		close(f);
}

static void file_wait(const char *what, const char *port)
{
	long long end = now_ms() + 5000;
	char path[96];

	snprintf(path, sizeof(path), "/tmp/tcpcheck-%s-%s", what, port);
	while (access(path, F_OK) && now_ms() < end)
		poll(NULL, 0, 5);
	unlink(path);
}

static const char *tcp_state_name(int st)
{
	static const char *n[] = { "?", "ESTABLISHED", "SYN_SENT", "SYN_RECV",
				   "FIN_WAIT1", "FIN_WAIT2", "TIME_WAIT",
				   "CLOSE", "CLOSE_WAIT", "LAST_ACK", "LISTEN",
				   "CLOSING" };

	return st > 0 && st < 12 ? n[st] : "?";
}

static struct tcp_info tinfo(int fd, socklen_t *len)
{
	struct tcp_info ti;

	memset(&ti, 0xa5, sizeof(ti));
	*len = sizeof(ti);
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, len))
		die("TCP_INFO");
	return ti;
}

/* the options the handshake negotiated, as TCP_INFO reports them: what
 * each end's kernel or stack offered and accepted */
static void toptions(int fd, const char *who)
{
	socklen_t len;
	struct tcp_info ti = tinfo(fd, &len);

	printf("%s: timestamps %s, window scaling %s, send MSS %u\n", who,
	       ti.tcpi_options & TCPI_OPT_TIMESTAMPS ? "on" : "off",
	       ti.tcpi_options & TCPI_OPT_WSCALE ? "on" : "off", ti.tcpi_snd_mss);
}

/* TCP_INFO's state, polled until it is one of want (bounded) */
static void tstate(int fd, const char *who, const char *when, const int *want)
{
	long long end = now_ms() + 3000;
	socklen_t len;
	struct tcp_info ti;
	int i;

	for (;;) {
		ti = tinfo(fd, &len);
		for (i = 0; want[i]; i++)
			if (ti.tcpi_state == want[i])
				goto out;
		if (now_ms() > end)
			break;
		poll(NULL, 0, 5);
	}
out:
	printf("%s: %s: state %s\n", who, when, tcp_state_name(ti.tcpi_state));
}

#define BACKLOG_CONNS 5

static void backlog_server(int port, const char *go)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1, i, seen = 0;
	long long end = now_ms() + 30000;
	char buf[16];

	if (fd < 0)
		die("socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 1) < 0)
		die("listen");
	while (access(go, F_OK) && now_ms() < end)
		poll(NULL, 0, 10);
	for (i = 0; i < BACKLOG_CONNS; i++) {
		int c = accept(fd, NULL, NULL);
		ssize_t n;

		if (c < 0)
			die("accept");
		n = read(c, buf, sizeof(buf) - 1);
		if (n != 8 || memcmp(buf, "hello ", 6) || buf[6] < '0' ||
		    buf[6] >= '0' + BACKLOG_CONNS) {
			fprintf(stderr, "tcpcheck: bad greeting (%zd bytes)\n", n);
			exit(1);
		}
		seen |= 1 << (buf[6] - '0');
		buf[0] = 'o';
		buf[1] = 'k';
		if (write(c, buf, 8) != 8)
			die("write");
		close(c);
	}
	printf("server: accepted %d, every greeting %s\n", BACKLOG_CONNS,
	       seen == (1 << BACKLOG_CONNS) - 1 ? "once" : "NOT once");
	close(fd);
}

static void backlog_client(const char *host, int port, const char *go)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port) };
	struct pollfd pf[BACKLOG_CONNS];
	int i, errs = 0, answered = 0, f, gone = 0;
	long long start, end;
	char buf[16];

	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		die("address");
	for (i = 0; i < BACKLOG_CONNS; i++) {
		pf[i].fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		if (pf[i].fd < 0)
			die("socket");
		if (connect(pf[i].fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 &&
		    errno != EINPROGRESS)
			die("connect");
		pf[i].events = POLLOUT;
	}
	/* greet on each connection as it completes, read each answer; any
	 * error, and any answer, while the server does not accept (the first
	 * 300 ms, then GO) is what the kernel never gives */
	start = now_ms();
	end = start + 30000;
	while (answered + errs < BACKLOG_CONNS && now_ms() < end) {
		int queued = now_ms() < start + 300;

		if (!queued && !gone) {
			f = open(go, O_WRONLY | O_CREAT, 0644);
			if (f < 0)
				die("go file");
			close(f);
			gone = 1;
		}
		poll(pf, BACKLOG_CONNS, 10);
		for (i = 0; i < BACKLOG_CONNS; i++) {
			int e = 0;
			socklen_t el = sizeof(e);

			if (!pf[i].revents || !pf[i].events)
				continue;
			getsockopt(pf[i].fd, SOL_SOCKET, SO_ERROR, &e, &el);
			if (e || (pf[i].revents & (POLLERR | POLLHUP))) {
				printf("client: connection %d: %s%s\n", i, ename(e),
				       queued ? " while queued" : "");
				errs++;
				pf[i].events = 0;
			} else if (pf[i].events == POLLOUT) {
				snprintf(buf, sizeof(buf), "hello %d\n", i);
				if (write(pf[i].fd, buf, 8) != 8)
					die("write");
				pf[i].events = POLLIN;
			} else if (queued) {
				printf("client: connection %d: answered before accept\n", i);
				errs++;
				pf[i].events = 0;
			} else {
				if (read(pf[i].fd, buf, 8) == 8 && !memcmp(buf, "ok", 2))
					answered++;
				else {
					printf("client: connection %d: bad answer\n", i);
					errs++;
				}
				pf[i].events = 0;
			}
		}
	}
	printf("client: %d of %d answered, %d errors while queued\n", answered,
	       BACKLOG_CONNS, errs);
	for (i = 0; i < BACKLOG_CONNS; i++)
		close(pf[i].fd);
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";
	int fd, c, i, n;

	signal(SIGPIPE, SIG_IGN);
	if (!strcmp(m, "recv-server") && argc == 4) {
		fd = listener(atoi(argv[2]));
		c = accept_one(fd);
		sink(c, argv[3]);
		close(c);
		close(fd);
	} else if (!strcmp(m, "send-server") && argc == 4) {
		fd = listener(atoi(argv[2]));
		c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			die("accept");
		source(c, argv[3]);
		close(c);
		close(fd);
	} else if (!strcmp(m, "send-client") && argc == 5) {
		fd = connect_to(argv[2], atoi(argv[3]));
		source(fd, argv[4]);
		close(fd);
	} else if (!strcmp(m, "recv-client") && argc == 5) {
		fd = connect_to(argv[2], atoi(argv[3]));
		sink(fd, argv[4]);
		close(fd);
	} else if (!strcmp(m, "tailwin-server") && argc == 4) {
		fd = listener(atoi(argv[2]));
		tailwin_server(fd, argv[3]);
		close(fd);
	} else if (!strcmp(m, "tailwin-client") && argc == 5) {
		tailwin_client(argv[2], atoi(argv[3]), argv[4]);
	} else if (!strcmp(m, "halfclose-server") && argc == 3) {
		fd = listener(atoi(argv[2]));
		c = accept_one(fd);
		drain_report(c, "server");
		printf("server: write after the peer's FIN: %s\n",
		       write(c, "bye", 3) == 3 ? "3" : ename(errno));
		close(c);
		close(fd);
	} else if (!strcmp(m, "halfclose-client") && argc == 4) {
		static char buf[100000];
		size_t off = 0;

		fd = connect_to(argv[2], atoi(argv[3]));
		while (off < sizeof(buf)) {
			ssize_t w = write(fd, buf + off, sizeof(buf) - off);

			if (w < 0)
				die("write");
			off += (size_t)w;
		}
		if (shutdown(fd, SHUT_WR) < 0)
			die("shutdown");
		printf("client: write after shutdown: %s\n",
		       write(fd, "x", 1) < 0 ? ename(errno) : "accepted");
		drain_report(fd, "client");
		close(fd);
	} else if (!strcmp(m, "reset-server") && argc == 3) {
		static char buf[1 << 16];
		struct linger lg = { 1, 0 };
		long long got = 0;
		ssize_t r;

		fd = listener(atoi(argv[2]));
		c = accept_one(fd);
		while (got < (1 << 20) && (r = read(c, buf, sizeof(buf))) > 0)
			got += r;
		if (setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) < 0)
			die("SO_LINGER");
		close(c);
		printf("server: reset after %s1 MiB\n", got >= (1 << 20) ? "" : "less than ");
		close(fd);
	} else if (!strcmp(m, "reset-client") && argc == 4) {
		static char buf[1 << 16];
		long long sent = 0;
		ssize_t w;
		char b;

		fd = connect_to(argv[2], atoi(argv[3]));
		while ((w = write(fd, buf, sizeof(buf))) > 0)
			sent += w;
		printf("client: first write error %s after %s1 MiB\n",
		       ename(errno), sent >= (1 << 20) ? "" : "less than ");
		printf("client: next write %s\n",
		       write(fd, buf, 1) < 0 ? ename(errno) : "accepted");
		w = read(fd, &b, 1);
		printf("client: read %s\n", w == 0 ? "EOF" : w < 0 ? ename(errno) : "data");
		close(fd);
	} else if (!strcmp(m, "refused-client") && argc == 4) {
		struct sockaddr_in sa = { .sin_family = AF_INET,
					  .sin_port = htons((uint16_t)atoi(argv[3])) };

		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0 || inet_pton(AF_INET, argv[2], &sa.sin_addr) != 1)
			die("socket");
		printf("client: connect %s\n",
		       connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ?
			       ename(errno) : "succeeded");
		close(fd);
	} else if ((!strcmp(m, "keepalive-client") ||
		    !strcmp(m, "usertimeout-client")) && argc == 5) {
		int one = 1, idle = 1, intvl = 1, cnt = 2, ut = 1500;
		long long end = now_ms() + 30000;
		ssize_t r;
		char b;

		fd = connect_to(argv[2], atoi(argv[3]));
		if (m[0] == 'k' &&
		    (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) ||
		     setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle)) ||
		     setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl)) ||
		     setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt))))
			die("keepalive options");
		if (m[0] == 'u' &&
		    setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, sizeof(ut)))
			die("TCP_USER_TIMEOUT");
		printf("client: connected\n");
		fflush(stdout);
		while (access(argv[4], F_OK) && now_ms() < end)
			poll(NULL, 0, 10);
		if (m[0] == 'u') {
			static char data[100];

			printf("client: write %s\n",
			       write(fd, data, sizeof(data)) == sizeof(data) ? "100" : ename(errno));
		}
		r = read(fd, &b, 1);
		printf("client: read %s\n", r == 0 ? "EOF" : r < 0 ? ename(errno) : "data");
		printf("client: next write %s\n", write(fd, "x", 1) < 0 ? ename(errno) : "accepted");
		close(fd);
	} else if (!strcmp(m, "tcpinfo-server") && argc == 3) {
		static const int est[] = { 1, 0 }, cw[] = { 8, 0 }, cl[] = { 7, 0 };
		static char buf[4096];
		socklen_t len;
		struct tcp_info ti;

		fd = listener(atoi(argv[2]));
		ti = tinfo(fd, &len);
		printf("server: listener: state %s, %u bytes\n",
		       tcp_state_name(ti.tcpi_state), (unsigned)len);
		c = accept_one(fd);
		tstate(c, "server", "accepted", est);
		file_signal("accepted", argv[2]);
		while (read(c, buf, sizeof(buf)) > 0)
			;
		tstate(c, "server", "after the peer's FIN", cw);
		/* until the client saw its FIN acknowledged */
		file_wait("fin", argv[2]);
		shutdown(c, SHUT_WR);
		tstate(c, "server", "after our FIN is acknowledged", cl);
		close(c);
		close(fd);
	} else if (!strcmp(m, "tcpinfo-client") && argc == 4) {
		static const int fw2[] = { 5, 0 }, tw[] = { 7, 0 };
		static char buf[100];
		socklen_t len;
		struct tcp_info ti;

		fd = connect_to(argv[2], atoi(argv[3]));
		ti = tinfo(fd, &len);
		printf("client: connected: state %s, %u bytes, MSS %s, window scaling %s, rto %s\n",
		       tcp_state_name(ti.tcpi_state), (unsigned)len,
		       ti.tcpi_snd_mss >= 536 && ti.tcpi_snd_mss <= 1460 ? "536..1460" : "OUT OF RANGE",
		       ti.tcpi_options & TCPI_OPT_WSCALE ? "on" : "off",
		       ti.tcpi_rto > 0 && ti.tcpi_rto <= 3000000 ? "set" : "unset");
		file_wait("accepted", argv[3]);
		if (write(fd, buf, sizeof(buf)) != sizeof(buf))
			die("write");
		shutdown(fd, SHUT_WR);
		tstate(fd, "client", "after our FIN is acknowledged", fw2);
		file_signal("fin", argv[3]);
		while (read(fd, buf, sizeof(buf)) > 0)
			;
		tstate(fd, "client", "after the peer's FIN", tw);
		close(fd);
	} else if (!strcmp(m, "options-server") && argc == 3) {
		fd = listener(atoi(argv[2]));
		c = accept_one(fd);
		toptions(c, "server");
		answer(c, "x", "y");
		close(c);
		close(fd);
	} else if (!strcmp(m, "options-client") && argc == 4) {
		fd = connect_to(argv[2], atoi(argv[3]));
		toptions(fd, "client");
		request(fd, "x", "y");
		close(fd);
	} else if (!strcmp(m, "syncnt-client") && argc == 4) {
		struct sockaddr_in sa = { .sin_family = AF_INET,
					  .sin_port = htons((uint16_t)atoi(argv[3])) };
		int cnt = 2;

		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0 || inet_pton(AF_INET, argv[2], &sa.sin_addr) != 1)
			die("socket");
		if (setsockopt(fd, IPPROTO_TCP, TCP_SYNCNT, &cnt, sizeof(cnt)))
			die("TCP_SYNCNT");
		printf("client: connect %s\n",
		       connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ?
			       ename(errno) : "succeeded");
		close(fd);
	} else if (!strcmp(m, "greet-server") && (argc == 4 || argc == 5)) {
		greet_server(atoi(argv[2]), atoi(argv[3]),
			     argc == 5 && !strcmp(argv[4], "isn"));
	} else if (!strcmp(m, "port-client") && argc == 5) {
		port_client(argv[2], atoi(argv[3]), atoi(argv[4]));
	} else if (!strcmp(m, "backlog-server") && argc == 4) {
		backlog_server(atoi(argv[2]), argv[3]);
	} else if (!strcmp(m, "backlog-client") && argc == 5) {
		backlog_client(argv[2], atoi(argv[3]), argv[4]);
	} else if (!strcmp(m, "cycles-server") && argc == 4) {
		int base = -1;

		fd = listener(atoi(argv[2]));
		n = atoi(argv[3]);
		for (i = 0; i <= n; i++) {
			if (i == 1) {
				base = count_fds();
				list_fds(fds_seen, sizeof(fds_seen));
			}
			c = accept_one(fd);
			answer(c, "ping", "pong");
			close(c);
		}
		if (settle(base, n, "server"))
			return 1;
		close(fd);
	} else if (!strcmp(m, "cycles-client") && argc == 5) {
		int base = -1;

		n = atoi(argv[4]);
		for (i = 0; i <= n; i++) {
			if (i == 1) {
				/* the warm-up connection's close settles */
				usleep(200000);
				base = count_fds();
				list_fds(fds_seen, sizeof(fds_seen));
			}
			fd = connect_to(argv[2], atoi(argv[3]));
			request(fd, "ping", "pong");
			close(fd);
		}
		return settle(base, n, "client");
	} else {
		fprintf(stderr, "usage: see the comment at the top of "
				"tests/tcpcheck.c\n");
		return 2;
	}
	return 0;
}
