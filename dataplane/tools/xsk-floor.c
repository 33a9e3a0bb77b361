// SPDX-License-Identifier: Apache-2.0
/* xsk-floor - the raw AF_XDP ping-pong floor: no socket layer, no shadow
 * sockets, no locks. One side reflects frames, the other times round trips.
 *   xsk-floor reflect IFNAME LOCAL_IP PORT
 *   xsk-floor ping IFNAME LOCAL_IP PEER_IP PEER_MAC PORT SIZE SECONDS
 *   xsk-floor sink IFNAME LOCAL_IP PORT
 *   xsk-floor blast IFNAME LOCAL_IP PEER_IP PEER_MAC PORT SIZE SECONDS
 * ping prints half round trips (usec) like sockperf: min, percentiles, max.
 * Copy mode, one kick (sendto MSG_DONTWAIT) per frame, busy polling.
 * XSK_FLOOR_THREAD=1: a second, sleeping thread (a multi-threaded process).
 * XSK_FLOOR_COPY=1 (both ends): each received payload is copied out of its
 * frame whole, and the reflector sends its reply from a fresh frame with
 * the payload copied back in, as a recvfrom and a sendto through any
 * socket API must; without it the reflector swaps the headers in place and
 * the pinger reads 8 bytes of each reply (the bare ring floor).
 * blast/sink: the raw TX throughput floor, what the bypass's bulk TCP
 * carries at best: blast fills the TX ring with SIZE-byte UDP frames (the
 * ring's whole free room, one kick per batch) for SECONDS and the sink
 * counts what arrived through its own XSK. blast prints what it sent
 * ("xsk-floor: blast frames=N kicks=K seconds=S gbps=G", G: IPv4 packets
 * of SIZE + 28 bytes); the sink prints what it received on SIGINT/SIGTERM
 * ("xsk-floor: sink frames=N bytes=B seconds=S gbps=G"), counting from its
 * first frame to its last. On a link whose MTU one frame cannot hold (a
 * jumbo MTU) both bind with XDP_USE_SG (AF_XDP multi-buffer, as the
 * library does): blast sends each datagram as a chain of frames, copied
 * from one template packet, and the sink counts chains as frames. */
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/if_link.h>
#include <math.h>
#include <net/if.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <xdp/libxdp.h>
#include <xdp/xsk.h>

#include "pingpong.h"
#include "pkt.h"
#include "steer_common.h"
#include "steer.skel.h"

#define NFRAMES 4096
#define FSIZE 2048

static struct xsk_ring_prod fq, tx;
static struct xsk_ring_cons cq, rx;
static struct xsk_socket *xsk;
static uint8_t *area;
static uint64_t freel[NFRAMES];
static int nfree;
static struct xdp_program *attached;
static int attached_ifindex;
static int copy_payload;              /* XSK_FLOOR_COPY */
static uint8_t appbuf[FSIZE];         /* the "application's" buffer */
static int sg;                        /* bound with XDP_USE_SG (jumbo MTU) */
#define FLOOR_XDP_USE_SG (1u << 4)    /* linux/if_xdp.h of Linux 6.6 */
#define FLOOR_XDP_PKT_CONTD (1u << 0)

/* The program goes with the process: a second run on the same interface
 * (a retry, the other mode) would otherwise find it attached and fail with
 * EBUSY, since libxdp cannot reach the first run's dispatcher without bpffs. */
static void detach(void)
{
	if (attached)
		xdp_program__detach(attached, attached_ifindex, XDP_MODE_NATIVE, 0);
	attached = NULL;
}

static int die(const char *what, int err)
{
	fprintf(stderr, "xsk-floor: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1); /* atexit: detach */
}

static void setup(const char *ifname, uint32_t local, uint16_t port)
{
	struct xsk_umem_config uc = { .fill_size = 2048, .comp_size = 2048,
				      .frame_size = FSIZE };
	struct xsk_socket_config sc = {
		.rx_size = 2048, .tx_size = 2048,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.bind_flags = XDP_USE_NEED_WAKEUP,
	};
	struct ts_steer_key key = { .daddr = local, .dport = port };
	struct ts_steer_val val = { .owner = (__u32)getpid(), .queue = 0 };
	struct xsk_umem *umem;
	struct steer_bpf *skel;
	struct xdp_program *prog;
	int ifindex = (int)if_nametoindex(ifname), err, i;
	uint32_t idx;

	if (!ifindex)
		die(ifname, errno);
	{ /* a frame of the link's MTU must fit one UMEM frame, else chains */
		struct ifreq ifr;
		int fd = socket(AF_INET, SOCK_DGRAM, 0);

		memset(&ifr, 0, sizeof(ifr));
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
		if (fd < 0 || ioctl(fd, SIOCGIFMTU, &ifr) < 0)
			die(ifname, errno);
		close(fd);
		sg = ifr.ifr_mtu + 14 > FSIZE - 256;
	}
	if (sg) {
		sc.bind_flags |= FLOOR_XDP_USE_SG;
		val.flags |= TS_STEER_F_SG;
	}
	skel = steer_bpf__open();
	if (!skel)
		die("open BPF skeleton", errno);
	prog = xdp_program__from_bpf_obj(skel->obj, "xdp.frags");
	if (libxdp_get_error(prog))
		die("xdp program", (int)libxdp_get_error(prog));
	err = xdp_program__attach(prog, ifindex, XDP_MODE_NATIVE, 0);
	if (err)
		die("attach XDP (detach the old one: ip link set dev IF xdp off)", err);
	attached = prog;
	attached_ifindex = ifindex;
	atexit(detach);
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.ts_steer_map), &key, &val, 0))
		die("steer map", errno);
	area = mmap(NULL, (size_t)NFRAMES * FSIZE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (area == MAP_FAILED)
		die("mmap", errno);
	err = xsk_umem__create(&umem, area, (size_t)NFRAMES * FSIZE, &fq, &cq, &uc);
	if (err)
		die("umem", err);
	err = xsk_socket__create(&xsk, ifname, 0, umem, &rx, &tx, &sc);
	if (err)
		die("xsk", err);
	err = xsk_socket__update_xskmap(xsk, bpf_map__fd(skel->maps.ts_xsks));
	if (err)
		die("xskmap", err);
	for (i = 0; i < NFRAMES; i++)
		freel[nfree++] = (uint64_t)i * FSIZE;
	if (xsk_ring_prod__reserve(&fq, 2048, &idx) != 2048)
		die("fill ring", EIO);
	for (i = 0; i < 2048; i++)
		*xsk_ring_prod__fill_addr(&fq, idx + (uint32_t)i) = freel[--nfree];
	xsk_ring_prod__submit(&fq, 2048);
}

static void recycle(void)
{
	uint32_t idx, n, i;

	n = xsk_ring_cons__peek(&cq, 64, &idx);
	for (i = 0; i < n; i++)
		freel[nfree++] = *xsk_ring_cons__comp_addr(&cq, idx + i) & ~(uint64_t)(FSIZE - 1);
	if (n)
		xsk_ring_cons__release(&cq, n);
}

static void refill(uint64_t addr)
{
	uint32_t idx;

	if (xsk_ring_prod__reserve(&fq, 1, &idx) == 1) {
		*xsk_ring_prod__fill_addr(&fq, idx) = addr & ~(uint64_t)(FSIZE - 1);
		xsk_ring_prod__submit(&fq, 1);
	} else {
		freel[nfree++] = addr & ~(uint64_t)(FSIZE - 1);
	}
}

static void send_frame(uint64_t addr, uint32_t len)
{
	uint32_t idx;

	while (xsk_ring_prod__reserve(&tx, 1, &idx) != 1)
		recycle();
	xsk_ring_prod__tx_desc(&tx, idx)->addr = addr;
	xsk_ring_prod__tx_desc(&tx, idx)->len = len;
	xsk_ring_prod__submit(&tx, 1);
	sendto(xsk_socket__fd(xsk), NULL, 0, MSG_DONTWAIT, NULL, 0);
}

static int reflect(void)
{
	printf("xsk-floor: ready\n");
	fflush(stdout);
	while (!stop) {
		uint32_t idx;
		uint8_t *p, t[6];
		uint32_t a;
		uint16_t port;

		recycle();
		while (nfree && xsk_prod_nb_free(&fq, 1)) {
			refill(freel[--nfree]);
		}
		if (!xsk_ring_cons__peek(&rx, 1, &idx))
			continue;
		{
			const struct xdp_desc *d = xsk_ring_cons__rx_desc(&rx, idx);
			uint64_t addr = d->addr;
			uint32_t len = d->len;

			xsk_ring_cons__release(&rx, 1);
			if (copy_payload && len > TS_HDRS_LEN && nfree) {
				/* recvfrom's copy out, then sendto's copy into a
				 * frame of its own; the received frame goes back */
				uint64_t out = freel[--nfree];

				memcpy(appbuf, area + addr + TS_HDRS_LEN, len - TS_HDRS_LEN);
				memcpy(area + out, area + addr, TS_HDRS_LEN);
				memcpy(area + out + TS_HDRS_LEN, appbuf, len - TS_HDRS_LEN);
				refill(addr);
				addr = out;
			}
			p = area + addr;
			memcpy(t, p, 6);
			memcpy(p, p + 6, 6);
			memcpy(p + 6, t, 6);
			memcpy(&a, p + 26, 4);
			memcpy(p + 26, p + 30, 4);
			memcpy(p + 30, &a, 4);
			memcpy(&port, p + 34, 2);
			memcpy(p + 34, p + 36, 2);
			memcpy(p + 36, &port, 2);
			p[40] = p[41] = 0; /* UDP checksum: none (legal on IPv4) */
			send_frame(addr, len);
		}
	}
	return 0;
}

/* sink: count frames until stopped; the time from the first to the last */
static int sink(void)
{
	uint64_t frames = 0, bytes = 0, first = 0, last = 0;

	printf("xsk-floor: ready\n");
	fflush(stdout);
	while (!stop) {
		uint32_t idx, n, i;

		n = xsk_ring_cons__peek(&rx, 256, &idx);
		if (!n) {
			if (xsk_ring_prod__needs_wakeup(&fq))
				recvfrom(xsk_socket__fd(xsk), NULL, 0, MSG_DONTWAIT, NULL, NULL);
			continue;
		}
		last = now_ns();
		if (!first)
			first = last;
		for (i = 0; i < n; i++) {
			const struct xdp_desc *d = xsk_ring_cons__rx_desc(&rx, idx + i);

			bytes += d->len; /* less the Ethernet header: below */
			freel[nfree++] = d->addr & ~(uint64_t)(FSIZE - 1);
			if (!(d->options & FLOOR_XDP_PKT_CONTD)) { /* a chain's end */
				frames++;
				bytes -= 14; /* the IPv4 packet */
			}
		}
		xsk_ring_cons__release(&rx, n);
		while (nfree)
			if (xsk_ring_prod__reserve(&fq, 1, &idx) == 1) {
				*xsk_ring_prod__fill_addr(&fq, idx) = freel[--nfree];
				xsk_ring_prod__submit(&fq, 1);
			} else {
				break;
			}
	}
	{
		double secs = last > first ? (double)(last - first) / 1e9 : 0;

		printf("xsk-floor: sink frames=%llu bytes=%llu seconds=%.3f gbps=%.3f\n",
		       (unsigned long long)frames, (unsigned long long)bytes, secs,
		       secs > 0 ? (double)bytes * 8 / secs / 1e9 : 0.0);
	}
	return 0;
}

/* one batch of n datagrams at TX descriptor idx: each built in its own
 * frame with its own IP ID (k == 1), or, longer than a frame (XDP_USE_SG),
 * a chain of k frames copied from the template packet tpl (its IP ID left
 * as built); the datagram's length */
static int blast_fill(struct ts_udp_hdr_spec *h, size_t size, const uint8_t *tpl,
		      int len, uint32_t k, uint32_t idx, uint32_t n, uint64_t sent)
{
	uint32_t i, j;

	for (i = 0; i < n; i++) {
		if (!tpl) {
			uint64_t addr = freel[--nfree];

			h->ip_id = (uint16_t)(sent + i);
			len = ts_pkt__build_udp(area + addr, FSIZE, size, h);
			xsk_ring_prod__tx_desc(&tx, idx + i)->addr = addr;
			xsk_ring_prod__tx_desc(&tx, idx + i)->len = (uint32_t)len;
			continue;
		}
		for (j = 0; j < k; j++) {
			struct xdp_desc *d = xsk_ring_prod__tx_desc(&tx, idx + i * k + j);
			uint64_t addr = freel[--nfree];
			uint32_t off = j * FSIZE;
			uint32_t c = (uint32_t)len - off > FSIZE ? FSIZE : (uint32_t)len - off;

			memcpy(area + addr, tpl + off, c);
			d->addr = addr;
			d->len = c;
			d->options = j + 1 < k ? FLOOR_XDP_PKT_CONTD : 0;
		}
	}
	return len;
}

/* blast: SIZE-byte UDP datagrams as fast as copy-mode TX moves them, the
 * ring's whole free room a batch, one kick a batch */
static int blast(uint32_t local, uint32_t peer, const uint8_t *pmac,
		 const uint8_t *mymac, uint16_t port, size_t size, double secs)
{
	struct ts_udp_hdr_spec h = { .saddr = local, .daddr = peer,
				     .sport = port, .dport = port, .ttl = 64 };
	uint64_t start = now_ns(), end, sent = 0, kicks = 0;
	uint8_t *tpl = NULL;
	int len = 0;
	uint32_t k = 1;

	memcpy(h.dmac, pmac, 6);
	memcpy(h.smac, mymac, 6);
	end = start + (uint64_t)(secs * 1e9);
	if (size + TS_HDRS_LEN > FSIZE) {
		if (!sg)
			die("SIZE: larger than a frame on a link whose MTU one frame holds", EINVAL);
		tpl = malloc(size + TS_HDRS_LEN);
		if (!tpl)
			die("malloc", ENOMEM);
		len = ts_pkt__build_udp(tpl, size + TS_HDRS_LEN, size, &h);
		if (len < 0)
			die("build", -len);
		k = (uint32_t)((len + FSIZE - 1) / FSIZE);
	}
	while (!stop && now_ns() < end) {
		uint32_t idx, n;

		recycle();
		n = xsk_prod_nb_free(&tx, (uint32_t)nfree) / k;
		if (n > (uint32_t)nfree / k)
			n = (uint32_t)nfree / k;
		if (n && xsk_ring_prod__reserve(&tx, n * k, &idx) == n * k) {
			len = blast_fill(&h, size, tpl, len, k, idx, n, sent);
			xsk_ring_prod__submit(&tx, n * k);
			sent += n;
		}
		sendto(xsk_socket__fd(xsk), NULL, 0, MSG_DONTWAIT, NULL, 0);
		kicks++;
	}
	printf("xsk-floor: blast frames=%llu kicks=%llu seconds=%.3f gbps=%.3f\n",
	       (unsigned long long)sent, (unsigned long long)kicks,
	       (double)(now_ns() - start) / 1e9,
	       (double)sent * (double)(len - 14) * 8 / ((double)(now_ns() - start)));
	free(tpl);
	return 0;
}

/* XSK_FLOOR_THREAD=1: a second thread that only sleeps, so that the
 * process is multi-threaded as one with the library's control thread is
 * (the kernel then takes a file reference in every system call's fdget):
 * what being a multi-threaded process costs the floor */
static void *idle_thread(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

static int ping(uint32_t local, uint32_t peer, const uint8_t *pmac,
		const uint8_t *mymac, uint16_t port, size_t size, double secs)
{
	struct pp_lat l;
	size_t i;
	double sum = 0, sq = 0, mean;
	struct ts_udp_hdr_spec h = { .saddr = local, .daddr = peer,
				     .sport = port, .dport = port, .ttl = 64 };
	uint64_t seq = 0;

	if (pp_lat_init(&l, secs))
		die("calloc", ENOMEM);
	memcpy(h.dmac, pmac, 6);
	memcpy(h.smac, mymac, 6);
	while (!stop && now_ns() < l.end) {
		uint64_t addr, t0, t1;
		uint32_t idx;
		int len;

		recycle();
		if (!nfree)
			continue;
		addr = freel[--nfree];
		memset(area + addr + TS_HDRS_LEN, 0, size);
		memcpy(area + addr + TS_HDRS_LEN, &seq, sizeof(seq));
		h.ip_id = (uint16_t)seq;
		len = ts_pkt__build_udp(area + addr, FSIZE, size, &h);
		t0 = now_ns();
		send_frame(addr, (uint32_t)len);
		for (;;) {
			if (stop || now_ns() > t0 + 1000000000ull)
				break;
			if (xsk_ring_cons__peek(&rx, 1, &idx)) {
				const struct xdp_desc *d = xsk_ring_cons__rx_desc(&rx, idx);
				uint64_t got;

				if (copy_payload && d->len > TS_HDRS_LEN)
					memcpy(appbuf, area + d->addr + TS_HDRS_LEN,
					       d->len - TS_HDRS_LEN);
				memcpy(&got, area + d->addr + TS_HDRS_LEN, sizeof(got));
				refill(d->addr);
				xsk_ring_cons__release(&rx, 1);
				if (got == seq)
					break;
			}
		}
		t1 = now_ns();
		seq++;
		pp_lat_add(&l, t0, t1);
	}
	if (pp_lat_sort(&l, "xsk-floor"))
		return 1;
	for (i = 0; i < l.n; i++) {
		sum += l.lat[i];
		sq += l.lat[i] * l.lat[i];
	}
	mean = sum / (double)l.n;
	printf("xsk-floor: observations=%zu avg-latency=%.3f std-dev=%.3f\n", l.n, mean,
	       sqrt(sq / (double)l.n - mean * mean));
	pp_lat_print(&l, "xsk-floor");
	return 0;
}

static int quiet(enum libbpf_print_level l, const char *f, va_list ap)
{
	(void)l;
	(void)f;
	(void)ap;
	return 0;
}

static int quiet_xdp(enum libxdp_print_level l, const char *f, va_list ap)
{
	(void)l;
	(void)f;
	(void)ap;
	return 0;
}

static int parse_mac(const char *s, uint8_t *m)
{
	return sscanf(s, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &m[0], &m[1], &m[2],
		      &m[3], &m[4], &m[5]) == 6 ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct in_addr local, peer;
	uint8_t pmac[6], mymac[6];
	struct ifreq ifr;
	int fd;

	signal(SIGINT, on_sig);
	signal(SIGTERM, on_sig);
	libbpf_set_print(quiet);
	libxdp_set_print(quiet_xdp);
	copy_payload = getenv("XSK_FLOOR_COPY") && atoi(getenv("XSK_FLOOR_COPY")) > 0;
	if (getenv("XSK_FLOOR_THREAD") && atoi(getenv("XSK_FLOOR_THREAD")) > 0) {
		pthread_t t;
		sigset_t all, old;

		sigfillset(&all); /* the signals stay the main thread's */
		pthread_sigmask(SIG_SETMASK, &all, &old);
		if (pthread_create(&t, NULL, idle_thread, NULL))
			die("pthread_create", errno);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	if (argc == 5 && !strcmp(argv[1], "reflect")) {
		if (!inet_aton(argv[3], &local))
			die("LOCAL_IP", EINVAL);
		setup(argv[2], local.s_addr, htons((uint16_t)atoi(argv[4])));
		return reflect(); /* until SIGINT/SIGTERM; atexit: detach */
	}
	if (argc == 5 && !strcmp(argv[1], "sink")) {
		if (!inet_aton(argv[3], &local))
			die("LOCAL_IP", EINVAL);
		setup(argv[2], local.s_addr, htons((uint16_t)atoi(argv[4])));
		return sink(); /* until SIGINT/SIGTERM */
	}
	if (argc == 9 && (!strcmp(argv[1], "ping") || !strcmp(argv[1], "blast"))) {
		if (!inet_aton(argv[3], &local) || !inet_aton(argv[4], &peer))
			die("LOCAL_IP/PEER_IP", EINVAL);
		if (parse_mac(argv[5], pmac))
			die("PEER_MAC (aa:bb:cc:dd:ee:ff)", EINVAL);
		fd = socket(AF_INET, SOCK_DGRAM, 0);
		memset(&ifr, 0, sizeof(ifr));
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", argv[2]);
		if (fd < 0 || ioctl(fd, SIOCGIFHWADDR, &ifr) < 0)
			die(argv[2], errno);
		memcpy(mymac, ifr.ifr_hwaddr.sa_data, 6);
		close(fd);
		setup(argv[2], local.s_addr, htons((uint16_t)atoi(argv[6])));
		if (!strcmp(argv[1], "blast"))
			return blast(local.s_addr, peer.s_addr, pmac, mymac,
				     htons((uint16_t)atoi(argv[6])), (size_t)atoi(argv[7]),
				     atof(argv[8]));
		return ping(local.s_addr, peer.s_addr, pmac, mymac,
			    htons((uint16_t)atoi(argv[6])), (size_t)atoi(argv[7]),
			    atof(argv[8]));
	}
	fprintf(stderr, "usage: xsk-floor reflect IFNAME LOCAL_IP PORT\n"
			"       xsk-floor ping IFNAME LOCAL_IP PEER_IP PEER_MAC PORT SIZE SECONDS\n"
			"       xsk-floor sink IFNAME LOCAL_IP PORT\n"
			"       xsk-floor blast IFNAME LOCAL_IP PEER_IP PEER_MAC PORT SIZE SECONDS\n");
	return 2;
}
