// SPDX-License-Identifier: Apache-2.0
/* stack.c - one UMEM + AF_XDP socket per (interface, queue) per process,
 * the XDP steering program (loaded with libxdp, or found when another
 * process of the namespace attached it first) and the RX/TX ring paths.
 *
 * Finding the attached program needs CAP_SYS_ADMIN (BPF_PROG_GET_FD_BY_ID),
 * which containers lack, and the program stays attached after its last
 * user exits. So every process using an interface's program announces it
 * with an abstract UNIX socket "tickstack-xdp.<ifindex>.<pid>" (abstract
 * names belong to the network namespace and vanish with the process): a
 * process that cannot open the attached program replaces it when nobody
 * announces, and refuses to disturb it when someone does.
 *
 * All of that is the standalone mode (root on a laptop). With
 * TICKSTACK_XDPD_SOCKET set, the node's tickstack-xdpd attached the program
 * when the pod's interface was plumbed; this process maps its UMEM from a
 * memfd, passes it to the daemon, which creates the XSK in the pod's
 * namespace, binds it to a free queue and passes it back, and sends the
 * daemon its steering requests (xdpd.c): no program, no map fd, no
 * announcement, no capability. TICKSTACK_XDPD_MODE=netraw: the process
 * creates its XSK itself (CAP_NET_RAW) and hands it over. */
#include "ts_internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>
#include <xdp/libxdp.h>
#include <xdp/xsk.h>

#include "steer_common.h"
#include "steer.skel.h"
#include "steer_hw.skel.h"
#include "tcp_internal.h"
#include "xdpd_proto.h"

#define TS_TX_RESERVE 256u /* frames kept back from the fill ring for TX */
#define TS_RX_BATCH 64u
/* The fill ring is topped up once this many frames came in, not after
 * every datagram: its consumer index is written by the kernel on the CPU
 * that received, so reading it is a cache miss the ping-pong would pay
 * on every datagram. The kernel takes at most one fill entry per RX
 * descriptor (one it cannot post is reused), so a ring thousands of
 * entries deep misses nothing for the few held back; a low one is
 * topped up more often (TS_FILL_LOW). */
#define TS_FILL_BATCH 32u
/* Below this many entries the fill ring is low: it is then topped up at
 * every poll and whenever a frame comes back, as the kernel takes no
 * datagram while it is empty (and then no poll would come to refill it). */
#define TS_FILL_LOW 256u
#define TS_TX_ONE_LOCK 512u /* up to this payload the copy runs under the lock */
#define TS_MAX_STACKS TICKSTACK_STATS_MAX_XSK

/* Locking: the rings, the free list and the frame reference counts are
 * guarded by the stack's own mutex (lock), held for ring and list work
 * only: the TX kick (a system call) runs after it is released. Creating a
 * stack runs under the control lock (ts_lock). Lock order: ts_lock, then
 * st->lock, then ts_port_lock (read), then a socket's qlock. */
/* AF_XDP TX metadata (Linux 6.8; Debian bookworm's linux/if_xdp.h predates
 * it): TS_TXMD_LEN bytes in front of a TX descriptor's data, which the
 * kernel reads when the descriptor's options say XDP_TX_METADATA. Asked
 * for: the UDP checksum, finished by the interface as for the kernel's
 * CHECKSUM_PARTIAL (the field holds the pseudo-header sum). */
#define TS_XDP_TX_METADATA (1u << 1)
#define TS_TXMD_FLAGS_CHECKSUM (1u << 1)
struct ts_txmd {
	uint64_t flags;
	uint16_t csum_start;  /* from the packet's first byte */
	uint16_t csum_offset; /* of the checksum field, from csum_start */
	uint32_t pad;
	uint64_t launch_time;
};
#define TS_TXMD_LEN ((uint32_t)sizeof(struct ts_txmd))
_Static_assert(sizeof(struct ts_txmd) == TS_XDPD_TXMD_LEN,
	       "the daemon registers a UMEM with this TX metadata room");
/* AF_XDP multi-buffer (Linux 6.6; not in bookworm's linux/if_xdp.h): the
 * bind flag, and the descriptor option saying that the packet goes on in
 * the next descriptor. */
#define TS_XDP_USE_SG (1u << 4)
#define TS_XDP_PKT_CONTD (1u << 0)
_Static_assert(TS_XSK_SG_MAX_FRAME <= 16 * (TS_FRAME_SIZE - TS_TXMD_LEN),
	       "a jumbo frame is sent in at most 16 descriptors (the copy "
	       "mode's skb takes 17 fragments)");

/* One receive queue's AF_XDP socket: its RX ring and the UMEM rings that
 * feed it (fill) and that it would complete sends on (completion). rq[0]
 * of a stack also carries the TX ring; the others only receive. Every
 * queue of an interface is served (docs/dataplane-design.md "Every
 * queue served"): a flow lands on whichever queue the NIC or the sender
 * picks. */
struct ts_rxq {
	struct xsk_ring_cons rx;
	struct xsk_ring_prod fq;
	struct xsk_ring_cons cq;
	int fd;
	int queue;
	struct xsk_socket *xsk; /* libxdp's (standalone, netraw) */
	void *ring_map[4];      /* the daemon made it: fill, completion, RX, TX */
	size_t ring_len[4];
	uint32_t rx_unfilled;   /* RX descriptors taken since the last refill */
	uint32_t fill_level;    /* entries the fill ring held after the last refill */
	int fill_low;           /* the fill ring held < fill_low_mark at the last refill */
};

struct ts_stack {
	pthread_mutex_t lock;
	int ifindex;
	char ifname[IF_NAMESIZE];
	int queue;
	uint8_t mac[6];
	uint32_t mtu;
	uint32_t max_payload; /* largest datagram the XSK carries both ways */
	int sg;               /* bound with XDP_USE_SG: frames above one UMEM
			       * frame come and go as chains (multi-buffer) */
	uint8_t *jbuf;        /* a received chain, joined (under lock) */
	uint32_t addr;        /* the interface's first IPv4 address */
	pid_t owner;
	int usable;
	int err;  /* why creating the XSK failed (-errno), else 0 */
	int mode; /* 1 native, 2 skb */
	struct xsk_umem *umem;
	int xsk_fd;      /* what a sleeper polls: rq[0].fd, or with several
			  * queues an epoll fd holding every rq's */
	int epoll_fd;
	int memfd_mode;  /* the daemon made the XSKs: the rings are ring_map's */
	int zerocopy;    /* the XSKs are bound zero-copy (XDP_OPTIONS) */
	int nrq;
	uint32_t fill_cap;      /* entries a fill ring is topped up to (grows) */
	uint32_t fill_max;      /* the most fill_cap grows to */
	uint32_t fill_low_mark; /* below it a fill ring is low */
	struct xsk_ring_prod tx; /* rq[0]'s */
	struct ts_rxq rq[TS_XSKS_MAX];
	uint8_t *area;
	size_t area_size;
	uint32_t nframes;
	uint64_t *freel;
	uint32_t nfree;
	uint8_t *refcnt;
	int steer_fd;
	int xsks_fd;
	int qown_fd;     /* ts_qown: which process holds each queue (-1: a
			  * program of an older library, without it) */
	char why[320];   /* what refused the XSK, for the message */
	int announce_fd; /* abstract UNIX socket: "this process uses the program" */
	int xdpd;        /* tickstack-xdpd owns the program and the maps */
	struct steer_bpf *skel;
	struct xdp_program *prog;
	uint16_t ip_id;
	uint32_t polls;
	int fill_low;         /* some rq's fill_low */
	int kick_pending;     /* descriptors submitted since the last kick */
	uint32_t tx_off;      /* a sent packet's offset in its frame: TS_TXMD_LEN
			       * when the UMEM carries TX metadata, else 0 */
	int tx_csum;          /* the interface finishes UDP checksums */
	int hwts;             /* the attached program is ts_steer_hw: each
			       * steered frame carries struct ts_xdp_meta */
	struct tickstack_xsk_stats *st;
	struct tickstack_xsk_ext *sb; /* st's version-7 counters */
	struct tickstack_xsk_stats dummy;
	struct tickstack_xsk_ext dummy_bytes;
	struct steer_hw_bpf *hwskel; /* the device-bound program, when loaded */
	uint64_t *hwtime;     /* with hwts: the hardware receive time of the
			       * datagram in each UMEM frame (kept beside the
			       * frames, not with each queued datagram) */
};

static struct ts_stack *stacks[TS_MAX_STACKS];
/* the socket layers' handlers (ts_stack__register_*), set at start */
static struct ts_stack_udp_up udp_up;
static struct ts_stack_tcp_up tcp_up;

static void stack__dump_part(struct tickstack_dump *d)
{
	ts_stack__refresh_stats();
	d->nxsk = (uint32_t)ts_stack__snapshot(d->xsk, TICKSTACK_DUMP_MAX_XSK);
}

void ts_stack__init(void)
{
	ts_stats__refresher(ts_stack__refresh_stats);
	ts_dump__part(stack__dump_part);
}

void ts_stack__register_udp(const struct ts_stack_udp_up *up)
{
	udp_up = *up;
}

void ts_stack__register_tcp(const struct ts_stack_tcp_up *up)
{
	tcp_up = *up;
}
/* set by the sockets once one asks for receive stamps (SO_TIMESTAMP*) */
int ts_tstamp_wanted;
/* around xsk_umem__create: the TX metadata length the registration asks
 * for, and whether the kernel took it (the interposed setsockopt adds it) */
__thread uint32_t ts_umem_txmd_len;
__thread int ts_umem_txmd_ok;
static int nstacks; /* appended under ts_lock, read with atomic loads */

int ts_stack__fd(const struct ts_stack *st) { return st->xsk_fd; }

int ts_stack__poll_fds(const struct ts_stack *st, struct pollfd *pf, int room)
{
	int i, n = 0;

	if (st->epoll_fd >= 0 || st->nrq == 1) {
		if (room < 1)
			return 0;
		pf[0].fd = st->xsk_fd;
		pf[0].events = POLLIN;
		return 1;
	}
	for (i = 0; i < st->nrq && n < room; i++) {
		pf[n].fd = st->rq[i].fd;
		pf[n++].events = POLLIN;
	}
	return n;
}
int ts_stack__ifindex(const struct ts_stack *st) { return st->ifindex; }
int ts_stack__usable(const struct ts_stack *st)
{
	return st && __atomic_load_n(&st->usable, __ATOMIC_ACQUIRE) &&
	       st->owner == ts_getpid();
}
void ts_stack__mac(const struct ts_stack *st, uint8_t mac[6])
{
	memcpy(mac, st->mac, 6);
}
uint32_t ts_stack__mtu(const struct ts_stack *st) { return st->mtu; }
uint32_t ts_stack__max_payload(const struct ts_stack *st)
{
	return st->max_payload;
}
uint32_t ts_stack__addr(const struct ts_stack *st) { return st->addr; }
int ts_stack__tx_csum(const struct ts_stack *st) { return st->tx_csum; }
int ts_stack__count(void) { return __atomic_load_n(&nstacks, __ATOMIC_ACQUIRE); }
struct ts_stack *ts_stack__at(int i) { return stacks[i]; }

static int quiet_print(enum libbpf_print_level level, const char *fmt,
		       va_list ap)
{
	if (!ts_cfg.debug || level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static int quiet_xdp_print(enum libxdp_print_level level, const char *fmt,
			   va_list ap)
{
	if (!ts_cfg.debug || level == LIBXDP_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static int map_fd_by_name(const __u32 *ids, __u32 n, const char *name)
{
	__u32 i;

	for (i = 0; i < n; i++) {
		struct bpf_map_info info;
		__u32 len = sizeof(info);
		int fd = bpf_map_get_fd_by_id(ids[i]);

		if (fd < 0)
			continue;
		memset(&info, 0, sizeof(info));
		if (!bpf_obj_get_info_by_fd(fd, &info, &len) &&
		    !strcmp(info.name, name))
			return fd;
		ts_real_close(fd);
	}
	return -ENOENT;
}

/* Find our program on the interface and open its maps. -ENOENT: nothing
 * attached; -EBUSY: another XDP program owns the interface. */
/* -EPERM when a program is attached that this process may not open. */
static int steer__openable(struct ts_stack *st)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	int fd;

	if (bpf_xdp_query(st->ifindex, 0, &q) || !q.prog_id)
		return 0;
	fd = bpf_prog_get_fd_by_id(q.prog_id);
	if (fd < 0)
		return errno == EPERM || errno == EACCES ? -EPERM : 0;
	ts_real_close(fd);
	return 0;
}

static int steer__find(struct ts_stack *st)
{
	struct xdp_multiprog *mp;
	struct xdp_program *p, *found = NULL;
	struct bpf_prog_info info;
	__u32 ids[16], len = sizeof(info);
	int err = -ENOENT;

	mp = xdp_multiprog__get_from_ifindex(st->ifindex);
	if (libxdp_get_error(mp) || !mp)
		return -ENOENT;
	if (xdp_multiprog__is_legacy(mp)) {
		p = xdp_multiprog__main_prog(mp);
		if (p && (!strcmp(xdp_program__name(p), TS_PROG_NAME) ||
			  !strcmp(xdp_program__name(p), TS_PROG_NAME_HW)))
			found = p;
		else if (p)
			err = -EBUSY;
	} else {
		for (p = xdp_multiprog__next_prog(NULL, mp); p;
		     p = xdp_multiprog__next_prog(p, mp)) {
			if (!strcmp(xdp_program__name(p), TS_PROG_NAME)) {
				found = p;
				break;
			}
		}
		if (!found)
			err = -EBUSY;
	}
	if (!found)
		goto out;
	st->mode = xdp_multiprog__attach_mode(mp) == XDP_MODE_SKB ? 2 : 1;
	st->hwts = !strcmp(xdp_program__name(found), TS_PROG_NAME_HW);
	memset(&info, 0, sizeof(info));
	info.nr_map_ids = 16;
	info.map_ids = (__u64)(unsigned long)ids;
	err = bpf_obj_get_info_by_fd(xdp_program__fd(found), &info, &len);
	if (err) {
		err = -errno;
		goto out;
	}
	st->steer_fd = map_fd_by_name(ids, info.nr_map_ids, TS_MAP_STEER);
	st->xsks_fd = map_fd_by_name(ids, info.nr_map_ids, TS_MAP_XSKS);
	st->qown_fd = map_fd_by_name(ids, info.nr_map_ids, TS_MAP_QOWN);
	if (st->steer_fd < 0 || st->xsks_fd < 0) {
		if (st->steer_fd >= 0)
			ts_real_close(st->steer_fd);
		if (st->xsks_fd >= 0)
			ts_real_close(st->xsks_fd);
		st->steer_fd = st->xsks_fd = -1;
		err = -ENOENT;
		goto out;
	}
	err = 0;
out:
	xdp_multiprog__close(mp);
	return err;
}

/* TICKSTACK_RX_HWTSTAMP: the steering program built to read each frame's
 * hardware receive time (bpf_xdp_metadata_rx_timestamp), which the
 * verifier takes only in a program bound to its device at load
 * (BPF_F_XDP_DEV_BOUND_ONLY, prog_ifindex) and the kernel attaches only
 * in native mode. Attached on its own (bpf_xdp_attach), as tickstack-xdpd
 * attaches: libxdp's dispatcher runs programs as extensions of one that is
 * not device-bound, which the kernel refuses for a device-bound one. */
#ifndef BPF_F_XDP_DEV_BOUND_ONLY
#define BPF_F_XDP_DEV_BOUND_ONLY (1U << 6) /* Linux 6.3; older uapi headers */
#endif

static int steer__attach_hw(struct ts_stack *st)
{
	struct steer_hw_bpf *hw = steer_hw_bpf__open();
	struct bpf_program *p;
	int err;

	if (!hw)
		return errno ? -errno : -ENOMEM;
	p = hw->progs.ts_steer_hw;
	bpf_program__set_ifindex(p, (__u32)st->ifindex);
	bpf_program__set_flags(p, bpf_program__flags(p) |
					  BPF_F_XDP_DEV_BOUND_ONLY);
	err = steer_hw_bpf__load(hw);
	if (!err)
		err = bpf_xdp_attach(st->ifindex, bpf_program__fd(p),
				     XDP_FLAGS_DRV_MODE |
					     XDP_FLAGS_UPDATE_IF_NOEXIST,
				     NULL);
	if (err) {
		err = err < 0 ? err : -errno;
		steer_hw_bpf__destroy(hw);
		return err;
	}
	st->hwskel = hw;
	st->hwts = 1;
	st->mode = 1;
	st->steer_fd = bpf_map__fd(hw->maps.ts_steer_map);
	st->xsks_fd = bpf_map__fd(hw->maps.ts_xsks);
	st->qown_fd = bpf_map__fd(hw->maps.ts_qown);
	return 0;
}

static int steer__attach(struct ts_stack *st)
{
	enum xdp_attach_mode modes[2];
	int nmodes = 0, i, err = -EINVAL;

	if (ts_cfg.rx_hwtstamp &&
	    (ts_cfg.xdp_mode_auto || ts_cfg.xdp_mode != XDP_FLAGS_SKB_MODE)) {
		err = steer__attach_hw(st);
		if (!err || err == -EEXIST || err == -EBUSY)
			return err;
		ts_dbg("device-bound XDP on %s (hardware receive stamps): %s; "
		       "the frames carry none (hw_unbound)",
		       st->ifname, strerror(-err));
	}

	if (ts_cfg.xdp_mode_auto) {
		modes[nmodes++] = XDP_MODE_NATIVE;
		modes[nmodes++] = XDP_MODE_SKB;
	} else {
		modes[nmodes++] = ts_cfg.xdp_mode == XDP_FLAGS_SKB_MODE ?
					  XDP_MODE_SKB :
					  XDP_MODE_NATIVE;
	}
	for (i = 0; i < nmodes; i++) {
		st->skel = steer_bpf__open();
		if (!st->skel)
			return -errno ? -errno : -ENOMEM;
		st->prog = xdp_program__from_bpf_obj(st->skel->obj, "xdp.frags");
		err = (int)libxdp_get_error(st->prog);
		if (err || !st->prog) {
			st->prog = NULL;
			steer_bpf__destroy(st->skel);
			st->skel = NULL;
			return err ? err : -ENOENT;
		}
		err = xdp_program__attach(st->prog, st->ifindex, modes[i], 0);
		if (!err) {
			st->mode = modes[i] == XDP_MODE_SKB ? 2 : 1;
			st->steer_fd = bpf_map__fd(st->skel->maps.ts_steer_map);
			st->xsks_fd = bpf_map__fd(st->skel->maps.ts_xsks);
			st->qown_fd = bpf_map__fd(st->skel->maps.ts_qown);
			return 0;
		}
		ts_dbg("xdp attach on %s mode %d: %s", st->ifname, modes[i],
		       strerror(-err));
		xdp_program__close(st->prog);
		st->prog = NULL;
		steer_bpf__destroy(st->skel);
		st->skel = NULL;
		if (err == -EEXIST || err == -EBUSY)
			break; /* someone attached meanwhile */
	}
	return err;
}

/* Whether another live process of this network namespace announced that
 * it uses ifindex's program (unknown counts as yes). */
static int steer__announced(const struct ts_stack *st)
{
	char line[512], want[48];
	int n, found = 0;
	FILE *f;

	n = snprintf(want, sizeof(want), "@tickstack-xdp.%d.", st->ifindex);
	f = fopen("/proc/net/unix", "re");
	if (!f)
		return 1;
	while (!found && fgets(line, sizeof(line), f)) {
		char *p = strstr(line, want);

		found = p && atoi(p + n) != (int)ts_getpid();
	}
	fclose(f);
	return found;
}

static void steer__announce(struct ts_stack *st)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, n;

	fd = ts_real_socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1,
		     "tickstack-xdp.%d.%d", st->ifindex, (int)ts_getpid());
	if (ts_real_bind(fd, (struct sockaddr *)&sa,
			 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
				     (size_t)n)) < 0) {
		ts_dbg("announcing the use of %s: %s", st->ifname,
		       strerror(errno));
		ts_real_close(fd);
		return;
	}
	st->announce_fd = fd;
}

/* Replace the program attached to ifindex (in its mode) with ours: only
 * when this process cannot open it and nobody announces using it, i.e. it
 * was left by processes that are gone. */
static int steer__replace(struct ts_stack *st)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	__u32 flags;
	int err;

	if (bpf_xdp_query(st->ifindex, 0, &q))
		return -errno;
	switch (q.attach_mode) {
	case XDP_ATTACHED_SKB:
		flags = XDP_FLAGS_SKB_MODE;
		break;
	case XDP_ATTACHED_DRV:
		flags = XDP_FLAGS_DRV_MODE;
		break;
	default: /* offloaded or several: not a program this library left */
		return -EBUSY;
	}
	st->skel = steer_bpf__open_and_load();
	if (!st->skel)
		return errno ? -errno : -ENOMEM;
	err = bpf_xdp_attach(st->ifindex,
			     bpf_program__fd(st->skel->progs.ts_steer), flags,
			     NULL);
	if (err) {
		steer_bpf__destroy(st->skel);
		st->skel = NULL;
		return err;
	}
	ts_log("interface %s: replaced XDP program id %u, which this process "
	       "cannot open (no CAP_SYS_ADMIN) and no live process uses",
	       st->ifname, q.prog_id);
	st->mode = flags == XDP_FLAGS_SKB_MODE ? 2 : 1;
	st->steer_fd = bpf_map__fd(st->skel->maps.ts_steer_map);
	st->xsks_fd = bpf_map__fd(st->skel->maps.ts_xsks);
	st->qown_fd = bpf_map__fd(st->skel->maps.ts_qown);
	return 0;
}

static int steer__setup(struct ts_stack *st)
{
	int err, tries;

	if (st->xdpd) {
		/* nothing to load or attach: the daemon did, for this pod */
		if (!ts_xdpd__serves(st->ifname))
			return -ENODEV;
		return 0;
	}
	if (steer__openable(st) == -EPERM) {
		if (steer__announced(st)) {
			ts_log("interface %s: another process of this network "
			       "namespace uses its XDP program, which this "
			       "process cannot open without CAP_SYS_ADMIN: run "
			       "one accelerated process per interface, or give "
			       "the container CAP_SYS_ADMIN",
			       st->ifname);
			return -EBUSY;
		}
		return steer__replace(st);
	}
	for (tries = 0; tries < 3; tries++) {
		err = steer__find(st);
		if (err != -ENOENT)
			return err;
		err = steer__attach(st);
		if (err != -EEXIST && err != -EBUSY)
			return err;
	}
	return err;
}

static int owner_alive(pid_t pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

/* Drop steering entries whose owner is gone (or is an earlier image of
 * this pid, before exec): they would send datagrams to a socket nobody
 * reads. */
static void steer__purge_stale(struct ts_stack *st)
{
	struct ts_steer_key key, next;
	struct ts_steer_val val;
	void *prev = NULL;
	pid_t me = ts_getpid();

	while (!bpf_map_get_next_key(st->steer_fd, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(st->steer_fd, &key, &val))
			continue;
		if ((pid_t)val.owner == me || !owner_alive((pid_t)val.owner)) {
			bpf_map_delete_elem(st->steer_fd, &key);
			prev = NULL; /* restart: iteration after delete */
		}
	}
}

int ts_stack__steer_add(struct ts_stack *st, uint32_t daddr, uint16_t dport)
{
	return ts_stack__steer_add_proto(st, daddr, dport, TS_STEER_UDP);
}

int ts_stack__steer_add_proto(struct ts_stack *st, uint32_t daddr,
			      uint16_t dport, int proto)
{
	struct ts_steer_key key = { .daddr = daddr, .dport = dport,
				    .proto = (__u8)proto };
	struct ts_steer_val val = { .owner = (__u32)ts_getpid(),
				    .queue = (__u16)st->queue,
				    .flags = st->sg ? TS_STEER_F_SG : 0 };
	struct ts_steer_val old;

	if (st->xdpd)
		return ts_xdpd__steer("add", st->ifname, daddr, dport, proto,
				      NULL, 0);
	if (!bpf_map_update_elem(st->steer_fd, &key, &val, BPF_NOEXIST))
		return 0;
	if (errno != EEXIST)
		return -errno;
	if (bpf_map_lookup_elem(st->steer_fd, &key, &old))
		return -errno;
	if ((pid_t)old.owner != ts_getpid() && owner_alive((pid_t)old.owner)) {
		if (proto == TS_STEER_TCP)
			return -EADDRINUSE; /* a stream has one owner */
		/* Another live process receives here too: let the kernel
		 * deliver to both (no duplicate XSK delivery). */
		old.flags |= TS_STEER_F_SHARED;
		bpf_map_update_elem(st->steer_fd, &key, &old, BPF_EXIST);
		return -EADDRINUSE;
	}
	if (bpf_map_update_elem(st->steer_fd, &key, &val, BPF_ANY))
		return -errno;
	return 0;
}

/* Mark our own entry shared: the kernel delivers (to us and the others). */
int ts_stack__steer_shared(struct ts_stack *st, uint32_t daddr, uint16_t dport)
{
	struct ts_steer_key key = { .daddr = daddr, .dport = dport };
	struct ts_steer_val v;

	if (st->xdpd) {
		char rep[16];
		int r = ts_xdpd__steer("shared", st->ifname, daddr, dport,
				       TS_STEER_UDP, rep, sizeof(rep));

		return r ? r : atoi(rep);
	}
	if (bpf_map_lookup_elem(st->steer_fd, &key, &v))
		return -errno;
	if (v.flags & TS_STEER_F_SHARED)
		return 0;
	v.flags |= TS_STEER_F_SHARED;
	if (bpf_map_update_elem(st->steer_fd, &key, &v, BPF_EXIST))
		return -errno;
	return 1;
}

/* This process has no XSK on ifindex (another process owns the queue) but
 * wants (daddr, dport) through its kernel socket: if a live process
 * steers that pair to its XSK, mark it shared so the kernel delivers to
 * both. Uses the maps found while trying to create the XSK. */
int ts_stack__share(int ifindex, uint32_t daddr, uint16_t dport)
{
	struct ts_steer_key key = { .daddr = daddr, .dport = dport };
	struct ts_steer_val old;
	int i;

	if (ts_xdpd__on()) {
		char ifn[IF_NAMESIZE], rep[16];
		int r;

		if (!if_indextoname((unsigned)ifindex, ifn))
			return -ENODEV;
		r = ts_xdpd__steer("share", ifn, daddr, dport, TS_STEER_UDP, rep,
				   sizeof(rep));
		return r ? r : atoi(rep);
	}

	for (i = 0; i < nstacks; i++) {
		struct ts_stack *st = stacks[i];

		if (st->ifindex != ifindex || st->steer_fd < 0)
			continue;
		if (bpf_map_lookup_elem(st->steer_fd, &key, &old))
			return 0;
		if ((pid_t)old.owner == ts_getpid() || !owner_alive((pid_t)old.owner))
			return 0;
		old.flags |= TS_STEER_F_SHARED;
		if (bpf_map_update_elem(st->steer_fd, &key, &old, BPF_EXIST))
			return -errno;
		return 1;
	}
	return -ENOENT;
}

int ts_stack__steer_del(struct ts_stack *st, uint32_t daddr, uint16_t dport,
			int only_mine)
{
	return ts_stack__steer_del_proto(st, daddr, dport, TS_STEER_UDP,
					 only_mine);
}

int ts_stack__steer_del_proto(struct ts_stack *st, uint32_t daddr,
			      uint16_t dport, int proto, int only_mine)
{
	struct ts_steer_key key = { .daddr = daddr, .dport = dport,
				    .proto = (__u8)proto };
	struct ts_steer_val old;

	if (st->xdpd)
		return ts_xdpd__steer("del", st->ifname, daddr, dport, proto,
				      NULL, 0);
	if (st->steer_fd < 0)
		return -EBADF;
	if (bpf_map_lookup_elem(st->steer_fd, &key, &old))
		return -errno;
	if (only_mine && (pid_t)old.owner != ts_getpid())
		return -EPERM;
	if (bpf_map_delete_elem(st->steer_fd, &key))
		return -errno;
	return 0;
}

static int link_info(struct ts_stack *st)
{
	struct ifreq ifr;
	int fd, err = 0;

	if (!if_indextoname((unsigned)st->ifindex, st->ifname))
		return -errno;
	fd = ts_real_socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", st->ifname);
	if (ts_real_ioctl(fd, SIOCGIFHWADDR, &ifr) < 0) {
		err = -errno;
		goto out;
	}
	memcpy(st->mac, ifr.ifr_hwaddr.sa_data, 6);
	if (ts_real_ioctl(fd, SIOCGIFMTU, &ifr) < 0) {
		err = -errno;
		goto out;
	}
	st->mtu = (uint32_t)ifr.ifr_mtu;
	ifr.ifr_addr.sa_family = AF_INET;
	if (ts_real_ioctl(fd, SIOCGIFADDR, &ifr) == 0)
		st->addr = ((struct sockaddr_in *)&ifr.ifr_addr)->sin_addr.s_addr;
out:
	ts_real_close(fd);
	return err;
}

static inline void free_push(struct ts_stack *st, uint64_t addr)
{
	st->freel[st->nfree++] = addr;
}

/* Whether frames of the link's MTU are longer than one UMEM frame takes,
 * so that the XSK is bound with XDP_USE_SG (chosen at setup: an XSK of
 * a standard MTU stays single-buffer, as before). */
static int needs_sg(const struct ts_stack *st)
{
	return st->mtu + TS_ETH_HLEN > TS_XSK_MAX_FRAME;
}

/* What the XSK carries, once bound: one UMEM frame (on receive the kernel
 * keeps 256 bytes of headroom, TS_XSK_MAX_FRAME), or with XDP_USE_SG a
 * chain up to TS_XSK_SG_MAX_FRAME; never more than the MTU. The program
 * passes longer frames to the kernel; a send that does not fit goes
 * through the kernel (which fragments what the MTU does not take). */
static void set_max_payload(struct ts_stack *st)
{
	uint32_t frame = st->sg ? TS_XSK_SG_MAX_FRAME : TS_XSK_MAX_FRAME;

	st->max_payload = st->mtu - TS_IP_HLEN - TS_UDP_HLEN;
	if (st->max_payload > frame - TS_HDRS_LEN)
		st->max_payload = frame - TS_HDRS_LEN;
	if (st->mtu + TS_ETH_HLEN > frame)
		/* said only with TICKSTACK_DEBUG, as every per-socket fallback:
		 * the sends that take the kernel are counted (tx_kernel_oversize),
		 * and a program's stderr stays as it is on the kernel */
		ts_dbg("interface %s: MTU %u is larger than the XSK carries "
		       "(%u bytes with the Ethernet header%s): datagrams above "
		       "%u bytes go through the kernel",
		       st->ifname, st->mtu, frame,
		       needs_sg(st) && !st->sg ? "; the kernel refused "
		       "XDP_USE_SG" : "", st->max_payload);
}

/* The most frames any socket's SO_RCVBUF holds (ts_stack__fill_want): a
 * fill ring is at least that deep, up to its stack's fill_max. */
static uint32_t fill_want;

static void fill_cap_set(struct ts_stack *st, uint32_t cap)
{
	__atomic_store_n(&st->fill_cap, cap, __ATOMIC_RELAXED); /* the snapshot reads it */
	st->fill_low_mark = TS_FILL_LOW < cap / 4 ? TS_FILL_LOW : cap / 4;
}

static void refill(struct ts_stack *st);

/* Every fill ring of the process's stacks frames deep (up to their
 * fill_max), now: the datagrams a socket's buffer holds may come before
 * any poll would top the rings up. */
void ts_stack__fill_want(uint32_t frames)
{
	uint32_t cur = __atomic_load_n(&fill_want, __ATOMIC_RELAXED);
	int i, n;

	do {
		if (frames <= cur)
			return;
	} while (!__atomic_compare_exchange_n(&fill_want, &cur, frames, 0,
					      __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	n = ts_stack__count();
	for (i = 0; i < n; i++) {
		struct ts_stack *st = stacks[i];

		if (!ts_stack__usable(st) || st->owner != ts_getpid())
			continue;
		pthread_mutex_lock(&st->lock);
		if (st->fill_cap < frames && st->fill_cap < st->fill_max) {
			fill_cap_set(st, frames < st->fill_max ? frames :
								 st->fill_max);
			refill(st);
		}
		pthread_mutex_unlock(&st->lock);
	}
}

/* How deep the fill rings are. Shallow by default (ts_cfg.fill_frames,
 * 256): the kernel writes each datagram into the frame at the head of the
 * ring, and the frames of a shallow ring were in use moments ago, so their
 * lines are in the CPUs' caches; those of a ring thousands deep come back
 * after megabytes of others and are written cold (in copy mode on the
 * sending CPU, inside its kick: 9 % of a half round trip at 1,472 bytes on
 * the benchmark's veth pair, docs/dataplane-design.md "A shallow fill
 * ring"). Deeper where more must wait for the application: as deep as the
 * largest SO_RCVBUF a socket set holds (fill_want), and twice as deep
 * whenever a refill finds the kernel took three quarters of the ring since
 * the last one (a burst the receiver did not keep up with), up to
 * fill_max. Never shallower again. */
static void fill_grow(struct ts_stack *st, struct ts_rxq *q, uint32_t held)
{
	uint32_t want = __atomic_load_n(&fill_want, __ATOMIC_RELAXED);
	uint32_t cap = st->fill_cap;

	/* three quarters of what the last refill left: the ring nearly ran
	 * dry (after a sleeper's full ring, a burst that took a few hundred
	 * of its thousands is no sign of that) */
	if (q->fill_level > held && (q->fill_level - held) * 4 >= q->fill_level * 3 &&
	    want < cap * 2)
		want = cap * 2;
	if (want > st->fill_max)
		want = st->fill_max;
	if (want <= cap)
		return;
	fill_cap_set(st, want);
	ts_dbg("interface %s: fill rings %u frames deep", st->ifname, want);
}

/* Top q's fill ring up to cap entries (st->fill_cap, or st->fill_max
 * before a sleep: at most the whole ring with one queue; with several,
 * each gets its share of the UMEM, half of it between them, so that no
 * queue starves the others). */
static void refill_q_to(struct ts_stack *st, struct ts_rxq *q, uint32_t cap)
{
	uint32_t room, held, n = 0, idx, i;

	q->rx_unfilled = 0;
	if (st->nfree <= TS_TX_RESERVE) {
		q->fill_low = 1; /* nothing to give: look again soon */
		return;
	}
	/* the room from the kernel's current index (asking for the whole
	 * ring reads it): a stale index would call a starving ring full */
	room = xsk_prod_nb_free(&q->fq, q->fq.size);
	held = q->fq.size - room;
	if (st->fill_cap < st->fill_max) {
		fill_grow(st, q, held);
		if (cap < st->fill_cap)
			cap = st->fill_cap;
	}
	if (held < cap) {
		n = cap - held;
		if (n > st->nfree - TS_TX_RESERVE)
			n = st->nfree - TS_TX_RESERVE;
		if (xsk_ring_prod__reserve(&q->fq, n, &idx) != n)
			n = 0;
		for (i = 0; i < n; i++)
			*xsk_ring_prod__fill_addr(&q->fq, idx + i) =
				st->freel[--st->nfree];
		if (n)
			xsk_ring_prod__submit(&q->fq, n);
	}
	q->fill_level = held + n;
	q->fill_low = held + n < st->fill_low_mark;
}

static void refill_q(struct ts_stack *st, struct ts_rxq *q)
{
	refill_q_to(st, q, st->fill_cap);
}

static void fill_low_update(struct ts_stack *st);

/* A thread about to sleep on st's XSKs: until something wakes it, nothing
 * tops the fill rings up (a spinning thread does, every 32 datagrams), so
 * they are filled to the most they take first, and whatever comes in while
 * it sleeps has a frame, as on the kernel; the shallow depth (fill_grow)
 * comes back as the kernel uses those frames. */
void ts_stack__fill_for_sleep(struct ts_stack *st)
{
	int i;

	if (st->owner != ts_getpid())
		return;
	pthread_mutex_lock(&st->lock);
	for (i = 0; i < st->nrq; i++)
		refill_q_to(st, &st->rq[i], st->fill_max);
	fill_low_update(st);
	pthread_mutex_unlock(&st->lock);
}

static void fill_low_update(struct ts_stack *st)
{
	int i, low = 0;

	for (i = 0; i < st->nrq; i++)
		low |= st->rq[i].fill_low;
	st->fill_low = low;
}

static void refill(struct ts_stack *st)
{
	int i;

	for (i = 0; i < st->nrq; i++)
		refill_q(st, &st->rq[i]);
	fill_low_update(st);
}

static void reclaim(struct ts_stack *st)
{
	uint32_t idx, n, i;

	/* sends go through rq[0] only: the other completion rings stay empty */
	n = xsk_ring_cons__peek(&st->rq[0].cq, TS_RING_SIZE, &idx);
	if (!n)
		return;
	for (i = 0; i < n; i++)
		free_push(st, *xsk_ring_cons__comp_addr(&st->rq[0].cq, idx + i) &
				      ~(uint64_t)(TS_FRAME_SIZE - 1));
	xsk_ring_cons__release(&st->rq[0].cq, n);
	if (ts_unlikely(st->fill_low))
		refill(st); /* as in ts_stack__frame_put */
}

/* Whether the XSK runs zero-copy. The copy mode (veth, and any driver
 * without AF_XDP zero-copy) sends through an skb, which finishes a
 * checksum the TX metadata asks for in any kernel that takes the metadata
 * (6.8); a zero-copy driver may not (its xsk-features say), so zero-copy
 * sockets sum in software. */
static int zerocopy(int fd)
{
	struct xdp_options o = {0};
	socklen_t len = sizeof(o);

	if (ts_real_getsockopt(fd, SOL_XDP, XDP_OPTIONS, &o, &len))
		return 1; /* unknown: as if it were */
	return !!(o.flags & XDP_OPTIONS_ZEROCOPY);
}

static int tx_pending(struct ts_stack *st)
{
	return st->tx.cached_prod !=
	       __atomic_load_n(st->tx.consumer, __ATOMIC_ACQUIRE);
}

/* The TX wake-up: a system call, made without the stack's lock. The
 * kernel's copy mode sends at most 32 descriptors a call and says EAGAIN
 * when more are left: the call is made again while it makes progress,
 * until the ring is empty (a TCP burst is hundreds of segments; those left
 * in the ring would wait for the next wake-up, which a sender waiting for
 * their ACKs never makes). A call that moved nothing counts as failed; up
 * to 8 of them, with the completion ring emptied between (a full one
 * stops the kernel). */
static void kick(struct ts_stack *st)
{
	int fails = 0;

	for (;;) {
		uint32_t cons = __atomic_load_n(st->tx.consumer, __ATOMIC_ACQUIRE);

		/* the system call itself (libc's, not the interposed
		 * syscall()): libc's sendto is a cancellation point, which
		 * costs two calls more in a threaded process */
		if (ts_real_syscall(SYS_sendto, st->rq[0].fd, NULL, 0,
				    MSG_DONTWAIT, NULL, 0) >= 0)
			break;
		if (errno != EAGAIN && errno != EBUSY && errno != ENOBUFS) {
			TS_INC(st->st->tx_kick_errors);
			break;
		}
		if (__atomic_load_n(st->tx.consumer, __ATOMIC_ACQUIRE) == cons) {
			TS_INC(st->st->tx_kick_errors);
			if (++fails >= 8)
				break;
		} else if (!tx_pending(st)) {
			break;
		}
		pthread_mutex_lock(&st->lock);
		reclaim(st);
		pthread_mutex_unlock(&st->lock);
	}
	TS_INC(st->st->tx_kicks);
}

/* The UMEM, on transparent huge pages where the kernel gives them (its
 * "madvise" mode too): received datagrams land in frames that cycle through
 * the whole fill ring, megabytes, and on 4 KiB pages most of them would
 * cost the copies a TLB miss. Aligned to 2 MiB so that every page can be
 * huge; faulted in now, as the ring's first datagrams should not be.
 * fd >= 0: a shared mapping of that memfd
 * (the daemon registers it: written here, its pages are charged to this
 * process's memory cgroup before the daemon pins them), else private
 * anonymous memory. */
static void *umem_map(size_t size, int fd)
{
	const size_t huge = (size_t)2 << 20;
	size_t len = size + huge;
	uint8_t *p, *a;

	p = mmap(NULL, len, fd < 0 ? PROT_READ | PROT_WRITE : PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return MAP_FAILED;
	a = (uint8_t *)(((uintptr_t)p + huge - 1) & ~(uintptr_t)(huge - 1));
	if (fd >= 0 && mmap(a, size, PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
		munmap(p, len);
		return MAP_FAILED;
	}
	if (a > p)
		munmap(p, (size_t)(a - p));
	if (p + len > a + size)
		munmap(a + size, (size_t)(p + len - (a + size)));
	(void)madvise(a, size, MADV_HUGEPAGE);
#ifdef MADV_POPULATE_WRITE
	if (madvise(a, size, MADV_POPULATE_WRITE) == 0)
		return a;
#endif
	memset(a, 0, size);
	return a;
}

/* The UMEM as a memfd for the daemon (xdpd__umem); *memfd gets the fd. */
static void *umem_map_memfd(size_t size, int *memfd)
{
	int fd = memfd_create("tickstack-umem", MFD_CLOEXEC), e;
	void *a;

	if (fd < 0)
		return MAP_FAILED;
	if (!ftruncate(fd, (off_t)size)) {
		a = umem_map(size, fd);
		if (a != MAP_FAILED) {
			*memfd = fd;
			return a;
		}
	}
	e = errno;
	ts_real_close(fd);
	errno = e;
	return MAP_FAILED;
}

static void stack__destroy(struct ts_stack *st)
{
	int i, j;

	/* the sockets sharing the UMEM before the one that registered it */
	for (j = st->nrq - 1; j >= 0; j--) {
		struct ts_rxq *q = &st->rq[j];

		for (i = 0; i < 4; i++)
			if (q->ring_map[i])
				munmap(q->ring_map[i], q->ring_len[i]);
		memset(q->ring_map, 0, sizeof(q->ring_map));
		if (st->memfd_mode && q->fd >= 0)
			ts_real_close(q->fd);
		if (q->xsk)
			xsk_socket__delete(q->xsk);
		q->xsk = NULL;
		q->fd = -1;
	}
	st->nrq = 0;
	if (st->epoll_fd >= 0)
		ts_real_close(st->epoll_fd);
	st->epoll_fd = -1;
	st->xsk_fd = -1;
	if (st->umem)
		xsk_umem__delete(st->umem);
	if (st->area)
		munmap(st->area, st->area_size);
	free(st->freel);
	free(st->refcnt);
	free(st->jbuf);
	st->jbuf = NULL;
	st->umem = NULL;
	st->area = NULL;
	st->freel = NULL;
	st->refcnt = NULL;
}

/* The rings are mmaps of the XSK: a forked child inheriting them would
 * keep the socket (and its XSKMAP slot) alive after the parent exits, a
 * black hole for the port. Keep them out of children. */
static void ring__dontfork(void *ring, uint64_t desc_off, size_t bytes)
{
	long pg = sysconf(_SC_PAGESIZE);
	uintptr_t base = (uintptr_t)ring - desc_off;
	size_t len = (size_t)desc_off + bytes;

	len = (len + (size_t)pg - 1) & ~((size_t)pg - 1);
	if (madvise((void *)base, len, MADV_DONTFORK))
		ts_dbg("madvise(MADV_DONTFORK) of an XSK ring: %s",
		       strerror(errno));
}

static void stack__rings_dontfork(struct ts_stack *st)
{
	struct xdp_mmap_offsets off;
	socklen_t len = sizeof(off);
	int i;

	for (i = 0; i < st->nrq; i++) {
		struct ts_rxq *q = &st->rq[i];

		len = sizeof(off);
		if (ts_real_getsockopt(q->fd, SOL_XDP, XDP_MMAP_OFFSETS, &off,
				       &len))
			return;
		ring__dontfork(q->rx.ring, off.rx.desc,
			       q->rx.size * sizeof(struct xdp_desc));
		if (!i)
			ring__dontfork(st->tx.ring, off.tx.desc,
				       st->tx.size * sizeof(struct xdp_desc));
		ring__dontfork(q->fq.ring, off.fr.desc,
			       q->fq.size * sizeof(__u64));
		ring__dontfork(q->cq.ring, off.cr.desc,
			       q->cq.size * sizeof(__u64));
	}
}

/* Queues of the interface (its rx-N in sysfs), at most TS_XSKS_MAX. */
static int link_queues(const struct ts_stack *st)
{
	char path[64 + IF_NAMESIZE];
	struct dirent *e;
	int n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/sys/class/net/%s/queues", st->ifname);
	d = opendir(path);
	if (!d)
		return 1;
	while ((e = readdir(d)))
		n += !strncmp(e->d_name, "rx-", 3);
	closedir(d);
	return n < 1 ? 1 : n > TS_XSKS_MAX ? TS_XSKS_MAX : n;
}

/* Whether queue q, busy, is held by no live process of the pod (a dead
 * process's XSK, which deferred kernel work frees in a moment). */
static int xdpd__queue_gone(const struct ts_stack *st, int q)
{
	char req[64], rep[16];

	snprintf(req, sizeof(req), "busy %s %d", st->ifname, q);
	return !ts_xdpd__request(req, -1, rep, sizeof(rep)) && !atoi(rep);
}

/* Point a ring at its mapping (as libxdp does for the rings it maps). */
static void ring_init(struct xsk_ring_prod *r, uint8_t *m,
		      const struct xdp_ring_offset *o, uint32_t n, int prod)
{
	r->mask = n - 1;
	r->size = n;
	r->producer = (__u32 *)(m + o->producer);
	r->consumer = (__u32 *)(m + o->consumer);
	r->flags = (__u32 *)(m + o->flags);
	r->ring = m + o->desc;
	r->cached_prod = *r->producer;
	/* a producer sees the whole ring free */
	r->cached_cons = *r->consumer + (prod ? n : 0);
}

/* Map the rings of an XSK the daemon made for us (q; the TX ring only for
 * rq[0]): mapping a passed AF_XDP socket needs no capability. */
static int xsk_rings_map(struct ts_stack *st, struct ts_rxq *q)
{
	static const off_t pgoff[4] = { XDP_UMEM_PGOFF_FILL_RING,
					XDP_UMEM_PGOFF_COMPLETION_RING,
					XDP_PGOFF_RX_RING, XDP_PGOFF_TX_RING };
	static const size_t el[4] = { sizeof(__u64), sizeof(__u64),
				      sizeof(struct xdp_desc),
				      sizeof(struct xdp_desc) };
	struct xdp_mmap_offsets off;
	const struct xdp_ring_offset *o[4] = { &off.fr, &off.cr, &off.rx, &off.tx };
	socklen_t len = sizeof(off);
	int i, n = q == &st->rq[0] ? 4 : 3;

	if (ts_real_getsockopt(q->fd, SOL_XDP, XDP_MMAP_OFFSETS, &off, &len))
		return -errno;
	for (i = 0; i < n; i++) {
		void *m;

		q->ring_len[i] = o[i]->desc + TS_RING_SIZE * el[i];
		m = mmap(NULL, q->ring_len[i], PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_POPULATE, q->fd, pgoff[i]);
		if (m == MAP_FAILED)
			return -errno;
		q->ring_map[i] = m;
	}
	ring_init(&q->fq, q->ring_map[0], o[0], TS_RING_SIZE, 1);
	ring_init((struct xsk_ring_prod *)&q->cq, q->ring_map[1], o[1],
		  TS_RING_SIZE, 0);
	ring_init((struct xsk_ring_prod *)&q->rx, q->ring_map[2], o[2],
		  TS_RING_SIZE, 0);
	if (n == 4)
		ring_init(&st->tx, q->ring_map[3], o[3], TS_RING_SIZE, 1);
	return 0;
}

/* Whether a reply of "umem" or "xsk" ends in "hwts": the daemon's program
 * is the device-bound ts_steer_hw (xdpd_proto.h). */
static int xdpd__hwts(const char *rep)
{
	size_t n = strlen(rep);

	return n >= 5 && !strcmp(rep + n - 5, " hwts");
}

/* The daemon makes q's XSK on queue qid from our UMEM's memfd ("umem",
 * xdpd_proto.h) and passes it back: a UMEM registration of its own over
 * the same memory, so a frame's address is the same in every queue's. */
static int xdpd__umem(struct ts_stack *st, struct ts_rxq *q, int qid, int memfd)
{
	char req[96], rep[64], mode[16], sg[8] = "";
	int fd = -1, txmd = 0, err;

	snprintf(req, sizeof(req), "umem %s %d %u %u", st->ifname, qid,
		 (unsigned)TS_FRAME_SIZE, TS_RING_SIZE);
	err = ts_xdpd__request_fd(req, memfd, rep, sizeof(rep), &fd);
	if (!err && (fd < 0 || sscanf(rep, "%15s %d %7s", mode, &txmd, sg) < 2)) {
		if (fd >= 0)
			ts_real_close(fd);
		return -EPROTO;
	}
	if (err)
		return err;
	q->fd = fd;
	if (q == &st->rq[0]) {
		st->mode = !strcmp(mode, "skb") ? 2 : 1;
		st->tx_off = txmd == (int)TS_TXMD_LEN ? TS_TXMD_LEN : 0;
		st->sg = !strcmp(sg, "sg"); /* bound with XDP_USE_SG */
		/* the daemon attached ts_steer_hw (tickstack-xdpd
		 * --rx-hwtstamp): frames carry its metadata */
		st->hwts = xdpd__hwts(rep);
	}
	return 0;
}

/* Hand q's XSK to the daemon: it goes into the XSKMAP slot of its queue. */
static int xdpd__register(struct ts_stack *st, struct ts_rxq *q)
{
	char req[64], rep[32];
	int err;

	snprintf(req, sizeof(req), "xsk %s %d%s", st->ifname, q->queue,
		 st->sg ? " sg" : "");
	err = ts_xdpd__request(req, q->fd, rep, sizeof(rep));
	if (err)
		return err;
	st->mode = !strncmp(rep, "skb", 3) ? 2 : 1;
	if (q == &st->rq[0])
		st->hwts = xdpd__hwts(rep);
	return 0;
}

/* q's XSK through libxdp on queue qid: rq[0]'s registers the UMEM's
 * rings and carries TX, the others share the UMEM (XDP_SHARED_UMEM, a
 * fill and completion ring of their own) and only receive. */
static int xsk_make(struct ts_stack *st, struct ts_rxq *q, int qid,
		    const struct xsk_socket_config *scfg)
{
	if (q == &st->rq[0])
		return xsk_socket__create(&q->xsk, st->ifname, (__u32)qid,
					  st->umem, &q->rx, &st->tx, scfg);
	return xsk_socket__create_shared(&q->xsk, st->ifname, (__u32)qid,
					 st->umem, &q->rx, NULL, &q->fq, &q->cq,
					 scfg);
}

/* One queue's XSK, in the way this process gets them. -EBUSY: another
 * process holds the queue; -EAGAIN: busy, but held by no live process of
 * the pod or namespace (a dead process's XSK, which deferred kernel work
 * frees in a moment): try again. */
static int stack__queue(struct ts_stack *st, struct ts_rxq *q, int qid,
			int memfd, const struct xsk_socket_config *scfg)
{
	int err;

	q->queue = qid;
	q->fd = -1;
	if (st->memfd_mode) {
		err = xdpd__umem(st, q, qid, memfd);
		if (!err)
			err = xsk_rings_map(st, q);
	} else {
		err = xsk_make(st, q, qid, scfg);
		if (!err)
			q->fd = xsk_socket__fd(q->xsk);
		if (!err && st->xdpd)
			err = xdpd__register(st, q);
	}
	if (err == -EBUSY &&
	    (st->xdpd ? xdpd__queue_gone(st, qid) : !steer__announced(st)))
		return -EAGAIN;
	if (err)
		return err;
	/* libxdp does not open it close-on-exec: an XSK surviving exec would
	 * keep receiving for a process image that no longer reads it */
	ts_real_fcntl(q->fd, F_SETFD, FD_CLOEXEC);
	if (st->xdpd)
		return 0; /* the daemon put it in the XSKMAP */
	err = xsk_socket__update_xskmap(q->xsk, st->xsks_fd);
	if (err)
		return err;
	if (st->qown_fd >= 0) { /* flows of ours landing here are ours */
		__u32 k = (__u32)qid, pid = (__u32)ts_getpid();

		bpf_map_update_elem(st->qown_fd, &k, &pid, BPF_ANY);
	}
	return 0;
}

/* XDP_USE_SG refused by the kernel or the driver (st->sg is cleared: the
 * caller binds again without it). */
static int sg_refused(struct ts_stack *st, int err)
{
	if ((err != -EINVAL && err != -EOPNOTSUPP) || !st->sg)
		return 0;
	ts_dbg("interface %s: XDP_USE_SG refused (%s): jumbo frames go "
	       "through the kernel", st->ifname, strerror(-err));
	st->sg = 0;
	return 1;
}

/* The queues this process serves: TICKSTACK_QUEUE's alone, else every
 * receive queue of the interface (TICKSTACK_QUEUE=any: one of them, the
 * first free, stack__any_queue). */
static int stack__queues(struct ts_stack *st, int *qids)
{
	int i, n;

	if (ts_cfg.queue_set) {
		qids[0] = ts_cfg.queue;
		return 1;
	}
	n = link_queues(st);
	for (i = 0; i < n; i++)
		qids[i] = i;
	return n;
}

/* What a sleeper polls (ts_stack__poll_fds): each queue's XSK; with more
 * than TS_XSK_POLL_QUEUES queues an epoll fd holding them all. Watched by
 * an epoll, an XSK makes the kernel run the epoll's callback for every
 * frame it receives: measured on veth, 4-7 % of the UDP ping-pong's round
 * trip, which is why the XSKs are polled directly where they fit. */
static int stack__poll_fd(struct ts_stack *st)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int i;

	if (st->nrq <= TS_XSK_POLL_QUEUES) {
		st->xsk_fd = st->rq[0].fd;
		return 0;
	}
	st->epoll_fd = ts_real_epoll_create1(EPOLL_CLOEXEC);
	if (st->epoll_fd < 0)
		return -errno;
	for (i = 0; i < st->nrq; i++) {
		ev.data.u32 = (uint32_t)i;
		if (ts_real_epoll_ctl(st->epoll_fd, EPOLL_CTL_ADD, st->rq[i].fd,
				      &ev))
			return -errno;
	}
	st->xsk_fd = st->epoll_fd;
	return 0;
}

/* The bind mode TICKSTACK_XDP_MODE insists on, checked on what the kernel
 * gave: 0, or -EOPNOTSUPP with st->why saying what and how to fix it. */
static int stack__mode_check(struct ts_stack *st)
{
	if (!ts_cfg.xdp_mode_auto &&
	    (st->mode == 2) != (ts_cfg.xdp_mode == XDP_FLAGS_SKB_MODE)) {
		snprintf(st->why, sizeof(st->why),
			 "TICKSTACK_XDP_MODE=%s: the XDP program on %s runs in "
			 "%s mode, not the one asked for (%s attached it: "
			 "detach it, or change TICKSTACK_XDP_MODE)",
			 ts_cfg.xdp_mode_str, st->ifname,
			 st->mode == 1 ? "native" : "generic (skb)",
			 st->xdpd ? "tickstack-xdpd" : "another process");
		return -EOPNOTSUPP;
	}
	if ((ts_cfg.xdp_bind == TS_BIND_ZEROCOPY && !st->zerocopy) ||
	    (ts_cfg.xdp_bind == TS_BIND_COPY && st->zerocopy)) {
		snprintf(st->why, sizeof(st->why),
			 "TICKSTACK_XDP_MODE=%s: tickstack-xdpd bound the XSK "
			 "of %s in %s mode",
			 ts_cfg.xdp_mode_str, st->ifname,
			 st->zerocopy ? "zero-copy" : "copy");
		return -EOPNOTSUPP;
	}
	return 0;
}

/* TICKSTACK_QUEUE=any: one queue, the first of qids no other process
 * holds (several processes share an interface, each flow steered to its
 * process's queue by the NIC's rules or by the sender). Busy queues whose
 * holder is gone (-EAGAIN) are tried again for up to 2 s. */
static int stack__any_queue(struct ts_stack *st, const int *qids, int nq,
			    int memfd, const struct xsk_socket_config *scfg)
{
	int i, tries, err = -EBUSY, again;

	for (tries = 0; tries <= 100; tries++) {
		again = 0;
		for (i = 0; i < nq; i++) {
			err = stack__queue(st, &st->rq[0], qids[i], memfd, scfg);
			if (!err) {
				st->nrq = 1;
				return 0;
			}
			if (st->rq[0].xsk)
				xsk_socket__delete(st->rq[0].xsk);
			st->rq[0].xsk = NULL;
			if (err == -EAGAIN)
				again = 1;
			else if (err != -EBUSY) {
				st->nrq = 1; /* what it made, for stack__destroy */
				return err;
			}
		}
		if (!again)
			break;
		usleep(20000);
	}
	snprintf(st->why, sizeof(st->why),
		 "TICKSTACK_QUEUE=any: every queue of %s is another process's",
		 st->ifname);
	return -EBUSY;
}

static int stack__create(struct ts_stack *st)
{
	struct xsk_umem_config ucfg = {
		.fill_size = TS_RING_SIZE,
		.comp_size = TS_RING_SIZE,
		.frame_size = TS_FRAME_SIZE,
		.frame_headroom = 0,
		.flags = 0,
	};
	struct xsk_socket_config scfg = {
		.rx_size = TS_RING_SIZE,
		.tx_size = TS_RING_SIZE,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.xdp_flags = 0,
		.bind_flags = XDP_USE_NEED_WAKEUP,
	};
	int qids[TS_XSKS_MAX];
	uint32_t i;
	int err, tries, nq, memfd = -1;

	if (ts_cfg.xdp_bind == TS_BIND_ZEROCOPY)
		scfg.bind_flags |= XDP_ZEROCOPY;
	else if (ts_cfg.xdp_bind == TS_BIND_COPY)
		scfg.bind_flags |= XDP_COPY;
	err = link_info(st);
	if (err)
		goto out;
	err = steer__setup(st);
	if (err)
		goto out;
	st->nframes = ts_cfg.umem_frames;
	st->area_size = (size_t)st->nframes * TS_FRAME_SIZE;
	st->memfd_mode = st->xdpd && !ts_cfg.xdpd_netraw;
	st->area = st->memfd_mode ? umem_map_memfd(st->area_size, &memfd) :
				    umem_map(st->area_size, -1);
	if (st->area == MAP_FAILED) {
		st->area = NULL;
		err = -errno;
		goto out;
	}
	st->freel = calloc(st->nframes, sizeof(*st->freel));
	st->refcnt = calloc(st->nframes, 1);
	if (!st->freel || !st->refcnt) {
		err = -ENOMEM;
		goto out_destroy;
	}
	for (i = 0; i < st->nframes; i++)
		free_push(st, (uint64_t)(st->nframes - 1 - i) * TS_FRAME_SIZE);
	if (!st->memfd_mode) {
		/* with room for TX metadata in front of every sent packet
		 * (libxdp 1.3 cannot ask for it: the interposed setsockopt
		 * adds it) */
		ts_umem_txmd_len = TS_TXMD_LEN;
		ts_umem_txmd_ok = 0;
		err = xsk_umem__create(&st->umem, st->area, st->area_size,
				       &st->rq[0].fq, &st->rq[0].cq, &ucfg);
		ts_umem_txmd_len = 0;
		if (err)
			goto out_destroy;
		st->tx_off = ts_umem_txmd_ok ? TS_TXMD_LEN : 0;
	}
	/* jumbo frames: a chain of frames per packet (Linux 6.6); a kernel
	 * or a zero-copy driver without it refuses the flag, and the XSKs
	 * then carry what one frame takes (the daemon decides for the XSKs
	 * it makes, and says so: xdpd__umem) */
	st->sg = !st->memfd_mode && needs_sg(st);
sg_retry:
	scfg.bind_flags = (scfg.bind_flags & ~TS_XDP_USE_SG) |
			  (st->sg ? TS_XDP_USE_SG : 0);
	nq = stack__queues(st, qids);
	if (ts_cfg.queue_any) {
		err = stack__any_queue(st, qids, nq, memfd, &scfg);
		if (err && sg_refused(st, err)) {
			st->nrq = 0;
			goto sg_retry;
		}
		if (err)
			goto out_destroy;
		nq = 0; /* done */
	}
	for (st->nrq = ts_cfg.queue_any; st->nrq < nq; st->nrq++) {
		for (tries = 0;; tries++) {
			err = stack__queue(st, &st->rq[st->nrq], qids[st->nrq],
					   memfd, &scfg);
			if (err != -EAGAIN || tries >= 100)
				break;
			if (st->rq[st->nrq].xsk)
				xsk_socket__delete(st->rq[st->nrq].xsk);
			st->rq[st->nrq].xsk = NULL;
			usleep(20000);
		}
		if (err == -EAGAIN)
			err = -EBUSY;
		if (err && !st->nrq && sg_refused(st, err))
			goto sg_retry; /* the first XSK: nothing made yet */
		if (err) {
			st->nrq++; /* what it made, for stack__destroy */
			if (err == -EBUSY)
				snprintf(st->why, sizeof(st->why),
					 "queue %d of %s is another process's; "
					 "a process serves every queue of an "
					 "interface, or the one TICKSTACK_QUEUE "
					 "names",
					 qids[st->nrq - 1], st->ifname);
			else if (err == -EOPNOTSUPP && ts_cfg.xdp_bind)
				snprintf(st->why, sizeof(st->why),
					 "TICKSTACK_XDP_MODE=%s: the driver of "
					 "%s cannot bind an AF_XDP socket in %s "
					 "mode (veth: copy only)",
					 ts_cfg.xdp_mode_str, st->ifname,
					 ts_cfg.xdp_bind == TS_BIND_ZEROCOPY ?
						 "zero-copy" : "copy");
			goto out_destroy;
		}
	}
	if (memfd >= 0) /* the mappings keep the UMEM */
		ts_real_close(memfd);
	memfd = -1;
	st->queue = st->rq[0].queue;
	st->zerocopy = zerocopy(st->rq[0].fd);
	err = stack__mode_check(st);
	if (err)
		goto out_destroy;
	set_max_payload(st);
	if (st->sg && !(st->jbuf = malloc(TS_XSK_SG_MAX_FRAME))) {
		err = -ENOMEM;
		goto out_destroy;
	}
	err = stack__poll_fd(st);
	if (err)
		goto out_destroy;
	/* each queue's fill ring may grow to its share of the UMEM: the
	 * whole ring with one queue; half the frames between them with
	 * several, the rest for sockets' queues and sends; it starts at
	 * ts_cfg.fill_frames (fill_grow) */
	st->fill_max = TS_RING_SIZE;
	if (st->nrq > 1 &&
	    (st->nframes - TS_TX_RESERVE) / (2u * (uint32_t)st->nrq) < st->fill_max)
		st->fill_max = (st->nframes - TS_TX_RESERVE) / (2u * (uint32_t)st->nrq);
	{
		uint32_t cap = ts_cfg.fill_frames,
			 want = __atomic_load_n(&fill_want, __ATOMIC_RELAXED);

		if (cap < want)
			cap = want;
		fill_cap_set(st, cap < st->fill_max ? cap : st->fill_max);
	}
	st->tx_csum = st->tx_off && ts_cfg.udp_csum && ts_cfg.tx_csum_offload &&
		      !st->zerocopy;
	stack__rings_dontfork(st);
	if (!st->xdpd) {
		steer__purge_stale(st);
		steer__announce(st);
	}
	refill(st);
	return 0;
out_destroy:
	if (memfd >= 0)
		ts_real_close(memfd);
	stack__destroy(st);
out:
	return err;
}

/* Why this process has no XSK on ifindex: TS_FB_QUEUE when its queue is
 * taken (EBUSY), else TS_FB_NOXSK. */
enum ts_fb_why ts_stack__why_none(int ifindex)
{
	int i;

	for (i = 0; i < ts_stack__count(); i++)
		if (stacks[i]->ifindex == ifindex && stacks[i]->owner == ts_getpid())
			return stacks[i]->err == -EBUSY ? TS_FB_QUEUE : TS_FB_NOXSK;
	return TS_FB_NOXSK;
}

struct ts_stack *ts_stack__get(int ifindex, int create)
{
	struct ts_stack *st = NULL;
	pid_t me = ts_getpid();
	int i, err;

	for (i = 0; i < nstacks; i++) {
		if (stacks[i]->ifindex == ifindex) {
			st = stacks[i];
			break;
		}
	}
	if (st && st->owner == me)
		return st->usable ? st : NULL;
	if (!create)
		return NULL;
	if (!st) {
		if (nstacks >= TS_MAX_STACKS)
			return NULL;
		st = calloc(1, sizeof(*st));
		if (!st)
			return NULL;
		pthread_mutex_init(&st->lock, NULL);
		stacks[nstacks] = st;
		__atomic_store_n(&nstacks, nstacks + 1, __ATOMIC_RELEASE);
	} else {
		/* Inherited from the parent: try once to get our own. The old
		 * object stays as it is: datagrams queued before the fork
		 * point into its UMEM (this process's copy of it). */
		st = calloc(1, sizeof(*st));
		if (!st)
			return NULL;
		pthread_mutex_init(&st->lock, NULL);
		__atomic_store_n(&stacks[i], st, __ATOMIC_RELEASE);
	}
	st->ifindex = ifindex;
	st->queue = ts_cfg.queue;
	st->owner = me;
	st->steer_fd = st->xsks_fd = st->xsk_fd = st->announce_fd = -1;
	st->qown_fd = st->epoll_fd = -1;
	st->xdpd = ts_xdpd__on();
	st->st = &st->dummy;
	st->sb = &st->dummy_bytes;
	libbpf_set_print(quiet_print);
	libxdp_set_print(quiet_xdp_print);
	err = stack__create(st);
	if (err) {
		ts_log("interface %s (ifindex %d) not accelerated: %s%s%s%s",
		       st->ifname[0] ? st->ifname : "?", ifindex,
		       strerror(-err), st->why[0] ? ": " : "", st->why,
		       st->why[0] ? "" :
		       err == -EBUSY ? " (another process owns this queue, or "
				       "another XDP program is attached)" :
		       err == -EPERM && st->xdpd && !st->memfd_mode ?
				       " (TICKSTACK_XDPD_MODE=netraw: an XSK "
				       "needs CAP_NET_RAW; the default mode "
				       "needs none)" :
		       err == -EPERM ? " (needs CAP_NET_ADMIN, CAP_BPF and "
				       "CAP_NET_RAW)" :
		       err == -ENOBUFS ? " (the UMEM is charged to RLIMIT_MEMLOCK "
					 "without CAP_IPC_LOCK: add CAP_IPC_LOCK, "
					 "raise the limit or lower "
					 "TICKSTACK_UMEM_FRAMES)" :
		       err == -ENODEV && st->xdpd ? " (tickstack-xdpd did not "
						    "attach it for this pod)" :
				       "");
		st->usable = 0;
		st->err = err;
		return NULL;
	}
	st->st = ts_stats__xsk_slot();
	st->sb = st->st ? ts_stats__xsk_ext(st->st) : &st->dummy_bytes;
	if (!st->st)
		st->st = &st->dummy;
	if (st->hwts) {
		st->hwtime = calloc(st->nframes, sizeof(*st->hwtime));
		if (!st->hwtime)
			st->hwts = 0; /* frames with metadata, none kept */
	}
	/* hardware stamps asked for, none to have here: counted, said once */
	if (ts_cfg.rx_hwtstamp && !st->hwts) {
		st->sb->hw_unbound = 1;
		ts_dbg("interface %s: TICKSTACK_RX_HWTSTAMP, but its XDP program "
		       "is not device-bound (%s): no hardware receive stamps",
		       st->ifname, st->xdpd ? "tickstack-xdpd attached the plain "
					      "one: run it with --rx-hwtstamp" :
				   st->mode == 2 ? "generic XDP" :
						   "a program without them");
	}
	snprintf(st->st->ifname, sizeof(st->st->ifname), "%s", st->ifname);
	st->st->ifindex = (uint32_t)ifindex;
	st->st->queue = (uint32_t)st->queue;
	st->st->mode = (uint32_t)st->mode;
	st->st->nqueues = (uint32_t)st->nrq;
	st->st->zerocopy = (uint32_t)st->zerocopy;
	st->st->tx_csum_offload = (uint32_t)st->tx_csum;
	__atomic_store_n(&st->usable, 1, __ATOMIC_RELEASE);
	ts_dbg("XSKs on %s queues %d-%d, XDP %s, bound %s, UDP checksums %s",
	       st->ifname, st->queue, st->rq[st->nrq - 1].queue,
	       st->mode == 1 ? "native" : "skb",
	       st->zerocopy ? "zero-copy" : "copy",
	       st->tx_csum ? "finished by the interface" : "summed here");
	return st;
}

const uint8_t *ts_stack__frame_data(struct ts_stack *st, uint64_t addr)
{
	return st->area + addr;
}

uint64_t ts_stack__frame_hw(const struct ts_stack *st, uint64_t addr)
{
	return st->hwts ? st->hwtime[addr / TS_FRAME_SIZE] : 0;
}

void ts_stack__frame_refs(struct ts_stack *st, uint64_t frame, int refs)
{
	st->refcnt[frame / TS_FRAME_SIZE] = (uint8_t)refs;
}

void ts_stack__frame_put(struct ts_stack *st, uint64_t frame)
{
	uint32_t i = (uint32_t)(frame / TS_FRAME_SIZE);

	if (st->owner != ts_getpid() || !st->usable)
		return; /* frame of the parent's UMEM (after fork) */
	pthread_mutex_lock(&st->lock);
	if (!st->refcnt[i] || !--st->refcnt[i]) {
		free_push(st, frame);
		/* a starved fill ring takes no datagram, so no poll would
		 * refill it: the frames the application gives back do */
		if (ts_unlikely(st->fill_low))
			refill(st);
	}
	pthread_mutex_unlock(&st->lock);
}

void ts_rxent_release(const struct ts_rxent *e)
{
	if (e->spilled)
		free((void *)(uintptr_t)e->frame);
	else
		ts_stack__frame_put(e->st, e->frame);
}

/* A datagram is taken when its checksums verify, or when its UDP checksum
 * field holds just the pseudo-header's sum (CHECKSUM_PARTIAL: a sender
 * on this host, such as the kernel over veth, left the rest to an offload
 * that never ran) and its IPv4 header verifies. The partial case is looked
 * at first: it reads the headers only, where a full verification that
 * fails would have read the whole payload for nothing. */
static int rx_csum_ok(const uint8_t *f, uint32_t len,
		      const struct ts_udp_meta *m)
{
	struct ts_udp_meta ip_only;

	if (m->udp_csum && ts_pkt__csum_is_partial(m)) {
		ip_only = *m;
		ip_only.udp_csum = 0; /* the IPv4 header checksum alone */
		if (!ts_pkt__verify_csum(f, len, &ip_only))
			return 1;
	}
	return !ts_pkt__verify_csum(f, len, m);
}

/* A chain of descriptors (a multi-buffer frame: every one but the last
 * says XDP_PKT_CONTD) from position i of the n peeked, joined into
 * st->jbuf; its frames go back to the free list. Returns the descriptors
 * it spans, 0 when the chain goes on past the n peeked (the kernel
 * publishes a chain whole: the next poll sees the rest), and *len the
 * joined length, 0 when it is longer than a jumbo frame (dropped). */
static uint32_t rx_chain(struct ts_stack *st, struct ts_rxq *q, uint32_t idx,
			 uint32_t i, uint32_t n, uint32_t *len)
{
	uint32_t j, k, off = 0;
	int fits = st->jbuf != NULL;

	for (j = i; j < n; j++)
		if (!(xsk_ring_cons__rx_desc(&q->rx, idx + j)->options &
		      TS_XDP_PKT_CONTD))
			break;
	if (j == n)
		return 0;
	for (k = i; k <= j; k++) {
		const struct xdp_desc *d = xsk_ring_cons__rx_desc(&q->rx, idx + k);
		uint64_t frame = d->addr & ~(uint64_t)(TS_FRAME_SIZE - 1);

		if (fits && d->len <= TS_FRAME_SIZE - (d->addr - frame) &&
		    d->len <= TS_XSK_SG_MAX_FRAME - off) {
			memcpy(st->jbuf + off, st->area + d->addr, d->len);
			off += d->len;
		} else {
			fits = 0; /* longer than a jumbo frame: dropped */
		}
		free_push(st, frame);
	}
	*len = fits ? off : 0;
	TS_INC(st->st->rx_multibuf);
	return j + 1 - i;
}

/* A capture is attached (capture.c): copy the batch's frames to its ring
 * before anything reads them, with the time the batch was taken (the
 * SO_TIMESTAMP time when a socket asked for one). The frames of a chain
 * (jumbo) are copied once joined (rx_joined). */
static void __attribute__((noinline, cold))
rx_capture(struct ts_stack *st, struct ts_rxq *q, uint32_t idx, uint32_t n,
	   uint64_t rx_ns)
{
	uint64_t ts = rx_ns ? rx_ns : ts_cap__now();
	int in_chain = 0;
	uint32_t i;

	for (i = 0; i < n; i++) {
		const struct xdp_desc *d = xsk_ring_cons__rx_desc(&q->rx, idx + i);
		uint64_t frame = d->addr & ~(uint64_t)(TS_FRAME_SIZE - 1);
		int contd = !!(d->options & TS_XDP_PKT_CONTD);

		if (!in_chain && !contd &&
		    d->len <= TS_FRAME_SIZE - (d->addr - frame))
			ts_cap__frame((uint32_t)st->ifindex, (uint32_t)q->queue,
				      TICKSTACK_CAP_IN, st->area + d->addr,
				      d->len, ts);
		in_chain = contd;
	}
}

/* One joined frame (rx_chain) to TCP or to its socket, as a copy: the
 * frames that carried it are free already. */
static int rx_joined(struct ts_stack *st, uint32_t len, uint64_t rx_ns,
		     struct ts_direct *dir)
{
	const uint8_t *f = st->jbuf;
	struct ts_udp_meta m;
	int k;

	if (ts_cap__on() && len)
		ts_cap__frame((uint32_t)st->ifindex, 0, TICKSTACK_CAP_IN, f, len,
			      rx_ns ? rx_ns : ts_cap__now());

	if (!len) {
		TS_INC(st->st->rx_bad);
		return 0;
	}
	if (ts_tcp__is_tcp(f, len)) {
		tcp_up.input(st, f, len, rx_ns);
		return 0;
	}
	if (ts_pkt__parse_udp(f, len, &m)) {
		TS_INC(st->st->rx_bad);
		return 0;
	}
	if (!rx_csum_ok(f, len, &m)) {
		TS_INC(st->st->rx_bad_csum);
		return 0;
	}
	k = udp_up.deliver(st, 0, f, &m, rx_ns, dir);
	if (k == TS_DELIVER_TAKEN)
		return 0;
	if (k == TS_DELIVER_COPIED)
		return 1;
	if (k == 0)
		TS_INC(st->st->rx_no_socket);
	else
		TS_INC(st->st->rx_sockq_full);
	return 0;
}

/* The hardware receive time ts_steer_hw put before the frame at addr
 * (struct ts_xdp_meta), 0 when it has none; its magic cleared, so that
 * the next frame in this UMEM frame is never read with it. */
static uint64_t rx_hw_meta(struct ts_stack *st, uint64_t addr)
{
	uint8_t *p = st->area + addr - sizeof(struct ts_xdp_meta);
	struct ts_xdp_meta md;

	memcpy(&md, p, sizeof(md));
	if (md.magic != TS_XDP_META_MAGIC)
		return 0;
	memset(p + offsetof(struct ts_xdp_meta, magic), 0, sizeof(md.magic));
	TS_INC(st->sb->rx_hw_meta);
	if (md.err || !md.hw_ns)
		return 0;
	TS_INC(st->sb->rx_hw_tstamps);
	return md.hw_ns;
}

/* All the lines of a received frame asked for at once, the headers' first,
 * as soon as its descriptor is read: the other CPU wrote them (veth
 * delivers, and the kernel copies into the UMEM, on the sender's), and
 * without this the parse waits for the headers' line and the copy out
 * then for the payload's, one wait after the other (at 1472 bytes the copy
 * alone took 230 ns, 40 ns with the lines on their way during the parse).
 * room: the frame's bytes from f (a longer length is dropped, unread). */
static inline void rx_prefetch(const uint8_t *f, uint32_t len, uint32_t room)
{
	uintptr_t a = (uintptr_t)f & ~(uintptr_t)63;
	uintptr_t end = (uintptr_t)f + (len < room ? len : room);

	for (; a < end; a += 64)
		__builtin_prefetch((const void *)a);
}

/* Drain q's RX ring into the sockets' queues; the caller holds st->lock. */
static int rxq__poll_locked(struct ts_stack *st, struct ts_rxq *q,
			    struct ts_direct *dir)
{
	uint32_t idx = 0, n, i, got = 0, extra = 0, peeked;
	uint64_t rx_ns = 0, bytes = 0;

	n = peeked = xsk_ring_cons__peek(&q->rx, TS_RX_BATCH, &idx);
	if (n && __atomic_load_n(&ts_tstamp_wanted, __ATOMIC_RELAXED)) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		rx_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	}
	if (xsk_ring_prod__needs_wakeup(&q->fq)) {
		/* a zero-copy driver waits for a wake-up to use the fill ring */
		ts_real_recvfrom(q->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
		TS_INC(st->st->fill_wakeups);
	}
	if (n && ts_cap__on())
		rx_capture(st, q, idx, n, rx_ns);
	if (n)
		udp_up.begin();
	for (i = 0; i < n; i++) {
		const struct xdp_desc *d = xsk_ring_cons__rx_desc(&q->rx, idx + i);
		uint64_t frame = d->addr & ~(uint64_t)(TS_FRAME_SIZE - 1);
		const uint8_t *f = st->area + d->addr;
		struct ts_udp_meta m;
		uint32_t span, jlen;
		int k;

		if (ts_unlikely(st->hwts))
			st->hwtime[frame / TS_FRAME_SIZE] =
				rx_hw_meta(st, d->addr);
		if (ts_unlikely(d->options & TS_XDP_PKT_CONTD)) {
			/* a jumbo frame (XDP_USE_SG) */
			span = rx_chain(st, q, idx, i, n, &jlen);
			if (!span) { /* published whole: the rest comes next */
				xsk_ring_cons__cancel(&q->rx, n - i);
				n = i;
				break;
			}
			extra += span - 1;
			i += span - 1;
			bytes += jlen;
			got += (uint32_t)rx_joined(st, jlen, rx_ns, dir);
			continue;
		}
		bytes += d->len;
		rx_prefetch(f, d->len, TS_FRAME_SIZE - (uint32_t)(d->addr - frame));
		if (d->len <= TS_FRAME_SIZE - (d->addr - frame) &&
		    ts_tcp__is_tcp(f, d->len)) {
			/* queued for the TCP layer (a copy), which runs after
			 * this ring's lock is released */
			if (tcp_up.input(st, f, d->len, rx_ns) == -EBADMSG)
				TS_INC(st->st->rx_bad_csum);
			free_push(st, frame);
			continue;
		}
		if (d->len > TS_FRAME_SIZE - (d->addr - frame) ||
		    ts_pkt__parse_udp(f, d->len, &m)) {
			TS_INC(st->st->rx_bad);
			free_push(st, frame);
			continue;
		}
		/* The kernel drops (and counts) datagrams with a wrong checksum;
		 * so does the stack. A frame of a local kernel socket over veth
		 * carries the unfinished offload checksum: the sender is on this
		 * host, nothing crossed a wire. */
		if (!ts_pkt__csum_fast_ok(f, &m) && !rx_csum_ok(f, d->len, &m)) {
			TS_INC(st->st->rx_bad_csum);
			free_push(st, frame);
			continue;
		}
		/* make the payload offset relative to the frame base */
		m.payload_off = (uint16_t)(m.payload_off + (d->addr - frame));
		st->refcnt[frame / TS_FRAME_SIZE] = 0;
		k = udp_up.deliver(st, frame, NULL, &m, rx_ns, dir);
		if (k == TS_DELIVER_TAKEN) { /* copied out already */
			free_push(st, frame);
			continue;
		}
		if (k == TS_DELIVER_COPIED) { /* queued as copies only */
			free_push(st, frame);
			got++;
			continue;
		}
		if (k <= 0) {
			if (k == 0)
				TS_INC(st->st->rx_no_socket);
			else
				TS_INC(st->st->rx_sockq_full);
			free_push(st, frame);
			continue;
		}
		got++;
	}
	if (peeked)
		udp_up.end();
	if (n) {
		xsk_ring_cons__release(&q->rx, n);
		TS_ADD(st->st->rx_packets, n - extra);
		TS_ADD(st->sb->rx_bytes, bytes);
	}
	q->rx_unfilled += n;
	if (q->rx_unfilled >= TS_FILL_BATCH || q->fill_low) {
		if (st->nfree <= TS_TX_RESERVE)
			TS_INC(st->st->fill_ring_empty);
		refill_q(st, q);
		if (st->nrq == 1)
			st->fill_low = q->fill_low;
		else
			fill_low_update(st);
	}
	return (int)got;
}

/* Drain every queue's RX ring; the caller holds st->lock. *kick_out: a TX
 * kick is due (made by the caller after unlocking). */
static int stack__poll_rx_locked(struct ts_stack *st, int *kick_out,
				  struct ts_direct *dir)
{
	int i, got = 0;

	for (i = 0; i < st->nrq; i++)
		got += rxq__poll_locked(st, &st->rq[i], dir);
	/* a kick only when the driver asks for one (copy mode always does;
	 * a zero-copy driver that is running does not) */
	*kick_out = tx_pending(st) && xsk_ring_prod__needs_wakeup(&st->tx);
	reclaim(st);
	return got;
}

/* Poll st's RX ring once. wait: 1 take the lock; 0 only if free (a
 * spinning thread leaves the ring to whoever is polling it: that one
 * delivers to every socket). dir: a receiving thread's offer to take its
 * own datagram (struct ts_direct). tcp: feed the TCP segments queued to
 * lwIP (not under ts_lock: its callbacks may take it). Returns datagrams
 * delivered, or -EBUSY when skipped (another thread polls the ring). */
static int stack__poll(struct ts_stack *st, int wait, struct ts_direct *dir,
		       int tcp)
{
	int got, k = 0;

	if (wait)
		pthread_mutex_lock(&st->lock);
	else if (pthread_mutex_trylock(&st->lock))
		return -EBUSY;
	got = stack__poll_rx_locked(st, &k, dir);
	pthread_mutex_unlock(&st->lock);
	if (got > 0) /* maybe into the queue of a thread asleep elsewhere */
		ts_wait__wake_sleepers();
	if (k)
		kick(st);
	if (tcp)
		tcp_up.drain(); /* TCP segments queued above, into lwIP */
	return got;
}

int ts_stack__poll(struct ts_stack *st, int wait)
{
	return stack__poll(st, wait, NULL, 1);
}

/* ts_stack__poll without waiting for the lock, offering dir the first
 * datagram for its socket. */
int ts_stack__poll_direct(struct ts_stack *st, struct ts_direct *dir)
{
	return stack__poll(st, 0, dir, 1);
}

/* Every datagram in st's RX ring into the sockets' queues, with ts_lock
 * held (atfork prepare): TCP segments stay queued for the next poll. */
int ts_stack__drain_rx(struct ts_stack *st)
{
	return stack__poll(st, 1, NULL, 0);
}

int ts_stack__poll_rx(struct ts_stack *st)
{
	return ts_stack__poll(st, 1);
}

/* Lock-free hint: frames waiting in the RX ring? (Transmissions are the
 * sender's business: a receiver that took the lock whenever a kick was in
 * flight would only make the sender wait for the lock.) */
int ts_stack__busy(const struct ts_stack *st)
{
	int i;

	/* the shared ring indices, not the poller's private cached ones */
	for (i = 0; i < st->nrq; i++)
		if (__atomic_load_n(st->rq[i].rx.producer, __ATOMIC_ACQUIRE) !=
		    __atomic_load_n(st->rq[i].rx.consumer, __ATOMIC_ACQUIRE))
			return 1;
	return 0;
}

int ts_stack__any_busy(void)
{
	int i, n = ts_stack__count();

	for (i = 0; i < n; i++)
		if (ts_stack__usable(stacks[i]) && ts_stack__busy(stacks[i]))
			return 1;
	return 0;
}

int ts_stack__poll_all(void)
{
	int i, got = 0, n = ts_stack__count();

	for (i = 0; i < n; i++)
		if (ts_stack__usable(stacks[i]) && ts_stack__busy(stacks[i])) {
			int k = ts_stack__poll(stacks[i], 0);

			got += k > 0 ? k : 0;
		}
	return got;
}

void ts_stack__flush(struct ts_stack *st)
{
	int k;

	pthread_mutex_lock(&st->lock);
	k = st->kick_pending &&
	    xsk_ring_prod__needs_wakeup(&st->tx);
	st->kick_pending = 0;
	pthread_mutex_unlock(&st->lock);
	if (k)
		kick(st);
}

/* Wait for room (a free frame, a TX slot): kick the kernel to complete
 * what is in flight. 0, or -EAGAIN (nonblock) / -ENOBUFS after 1 s /
 * -EINTR when a handler installed without SA_RESTART ran since the wait
 * began (the kernel's blocking send is interrupted so; with SA_RESTART it
 * goes on). *sig0 is taken at the first wait: a send that finds room at
 * once reads nothing. */
static int tx_wait(struct ts_stack *st, int *waited, uint64_t *deadline,
		   int nonblock, unsigned long *sig0)
{
	if (!(*waited)++) {
		TS_INC(st->st->tx_ring_full);
		*sig0 = ts_sig__norestart_gen();
	}
	kick(st);
	if (nonblock && *waited > 64)
		return -EAGAIN;
	if (!nonblock && ts_sig__norestart_gen() != *sig0)
		return -EINTR;
	if (!*deadline)
		*deadline = ts_now_ns() + 1000000000ull;
	else if (ts_now_ns() > *deadline)
		return -ENOBUFS;
	ts_cpu_relax();
	return 0;
}

/* A frame longer than one UMEM frame, as a chain of frames (XDP_USE_SG):
 * hlen bytes of hdr (may be 0), then blen bytes of body, copied straight
 * into the frames. csum_start > 0: the interface finishes the checksum at
 * csum_start + csum_offset (bytes from the frame's first byte), asked for
 * in the first descriptor's TX metadata (copy mode takes it there for the
 * whole chain: tests/tcp.sh tcp_txcsum_jumbo). Under st->lock; -EAGAIN
 * when the free list or the ring has no room for the chain. */
static int tx_chain_locked(struct ts_stack *st, const uint8_t *hdr,
			   size_t hlen, const uint8_t *body, size_t blen,
			   uint16_t csum_start, uint16_t csum_offset)
{
	const uint32_t room = TS_FRAME_SIZE - st->tx_off;
	const size_t flen = hlen + blen;
	uint32_t k = (uint32_t)((flen + room - 1) / room), idx, i;
	size_t off = 0;

	if (st->nfree < k || xsk_ring_prod__reserve(&st->tx, k, &idx) != k)
		return -EAGAIN;
	for (i = 0; i < k; i++) {
		struct xdp_desc *d = xsk_ring_prod__tx_desc(&st->tx, idx + i);
		uint64_t frame = st->freel[--st->nfree];
		uint8_t *p = st->area + frame + st->tx_off;
		uint32_t c = flen - off > room ? room : (uint32_t)(flen - off);
		uint32_t done = 0;

		if (off < hlen) { /* the header: in the first frame (room > 14) */
			done = (uint32_t)(hlen - off);
			memcpy(p, hdr + off, done);
		}
		memcpy(p + done, body + off + done - hlen, c - done);
		d->addr = frame + st->tx_off;
		d->len = c;
		d->options = i + 1 < k ? TS_XDP_PKT_CONTD : 0;
		if (!i && csum_start) {
			struct ts_txmd *md = (struct ts_txmd *)(void *)(p - TS_TXMD_LEN);

			md->flags = TS_TXMD_FLAGS_CHECKSUM;
			md->csum_start = csum_start;
			md->csum_offset = csum_offset;
			d->options |= TS_XDP_TX_METADATA;
		}
		off += c;
	}
	if (ts_cap__on()) {
		/* the capture takes one contiguous frame: joined here, off the
		 * path of a process nobody captures */
		uint8_t *j = malloc(flen);

		if (j) {
			if (hlen)
				memcpy(j, hdr, hlen);
			memcpy(j + hlen, body, blen);
			ts_cap__frame((uint32_t)st->ifindex, 0, TICKSTACK_CAP_OUT, j,
				      (uint32_t)flen, ts_cap__now());
			free(j);
		}
	}
	xsk_ring_prod__submit(&st->tx, k);
	TS_INC(st->st->tx_packets);
	TS_ADD(st->sb->tx_bytes, flen);
	TS_INC(st->st->tx_multibuf);
	return 0;
}

/* A datagram longer than one UMEM frame (XDP_USE_SG): built whole in a
 * buffer of its own, checksummed here (no TX metadata), then copied into
 * a chain of frames. */
static int send_jumbo(struct ts_stack *st, struct ts_udp_hdr_spec *h,
		      const struct iovec *iov, int iovcnt, size_t len,
		      int nonblock, int more)
{
	uint64_t deadline = 0;
	unsigned long sig0 = 0;
	size_t off = 0, cap = TS_HDRS_LEN + len;
	int i, n, k, err, waited = 0;
	uint8_t *p = malloc(cap);

	if (!p)
		return -ENOBUFS;
	for (i = 0; i < iovcnt && off < len; i++) {
		size_t c = iov[i].iov_len;

		if (c > len - off)
			c = len - off;
		memcpy(p + TS_HDRS_LEN + off, iov[i].iov_base, c);
		off += c;
	}
	memcpy(h->smac, st->mac, 6);
	h->udp_csum = ts_cfg.udp_csum;
	pthread_mutex_lock(&st->lock);
	h->ip_id = st->ip_id++;
	pthread_mutex_unlock(&st->lock);
	n = ts_pkt__build_udp(p, cap, len, h);
	if (n < 0) {
		free(p);
		return n;
	}
	for (;;) {
		pthread_mutex_lock(&st->lock);
		reclaim(st);
		err = tx_chain_locked(st, NULL, 0, p, (size_t)n, 0, 0);
		if (!err)
			break;
		pthread_mutex_unlock(&st->lock);
		err = tx_wait(st, &waited, &deadline, nonblock, &sig0);
		if (err) {
			free(p);
			return err;
		}
	}
	if (more) {
		st->kick_pending = 1;
		k = 0;
	} else {
		k = xsk_ring_prod__needs_wakeup(&st->tx);
		st->kick_pending = 0;
	}
	pthread_mutex_unlock(&st->lock);
	free(p);
	if (k)
		kick(st);
	return 0;
}

/* h's headers on st prepared once (struct ts_udp_tmpl): h gets st's
 * source MAC and the checksum mode st's sends use. */
void ts_stack__udp_tmpl(const struct ts_stack *st, struct ts_udp_hdr_spec *h,
			struct ts_udp_tmpl *t)
{
	memcpy(h->smac, st->mac, 6);
	h->udp_csum = st->tx_csum ? TS_UDP_CSUM_PARTIAL : ts_cfg.udp_csum;
	ts_pkt__udp_tmpl_init(t, h);
}

/* t: h's headers prepared by ts_stack__udp_tmpl on st (NULL: built from
 * h field by field); h->ip_id gets the datagram's identification. */
int ts_stack__send(struct ts_stack *st, struct ts_udp_hdr_spec *h,
		   const struct ts_udp_tmpl *t,
		   const struct iovec *iov, int iovcnt, size_t len,
		   int nonblock, int more)
{
	uint64_t frame, deadline = 0;
	uint8_t *p;
	uint32_t idx;
	size_t off = 0;
	int i, n, k, err, waited = 0;
	unsigned long sig0 = 0;

	if (len > st->max_payload)
		return -EMSGSIZE; /* the caller checks: never past the frame */
	if (ts_unlikely(TS_HDRS_LEN + len > TS_FRAME_SIZE - st->tx_off))
		return send_jumbo(st, h, iov, iovcnt, len, nonblock, more);
	for (;;) {
		pthread_mutex_lock(&st->lock);
		reclaim(st);
		if (st->nfree > 0 && xsk_prod_nb_free(&st->tx, 1)) {
			frame = st->freel[--st->nfree];
			h->ip_id = st->ip_id++;
			if (len <= TS_TX_ONE_LOCK)
				goto fill; /* small: one lock section for all */
			pthread_mutex_unlock(&st->lock);
			break;
		}
		pthread_mutex_unlock(&st->lock);
		err = tx_wait(st, &waited, &deadline, nonblock, &sig0);
		if (err)
			return err;
	}
	/* the frame is ours alone: fill it without the lock */
fill:
	p = st->area + frame + st->tx_off;
	for (i = 0; i < iovcnt && off < len; i++) {
		size_t c = iov[i].iov_len;

		if (c > len - off)
			c = len - off;
		memcpy(p + TS_HDRS_LEN + off, iov[i].iov_base, c);
		off += c;
	}
	if (t) {
		n = ts_pkt__udp_tmpl_put(p, t, len, h->ip_id);
	} else {
		memcpy(h->smac, st->mac, 6);
		h->udp_csum = st->tx_csum ? TS_UDP_CSUM_PARTIAL : ts_cfg.udp_csum;
		n = ts_pkt__build_udp(p, TS_FRAME_SIZE - st->tx_off, len, h);
	}
	if (st->tx_csum) {
		struct ts_txmd *md = (struct ts_txmd *)(void *)(p - TS_TXMD_LEN);

		md->flags = TS_TXMD_FLAGS_CHECKSUM;
		md->csum_start = TS_ETH_HLEN + TS_IP_HLEN;
		md->csum_offset = 6;
	}
	if (len > TS_TX_ONE_LOCK)
		pthread_mutex_lock(&st->lock);
	if (n < 0) {
		free_push(st, frame);
		pthread_mutex_unlock(&st->lock);
		return n;
	}
	while (xsk_ring_prod__reserve(&st->tx, 1, &idx) != 1) {
		pthread_mutex_unlock(&st->lock);
		err = tx_wait(st, &waited, &deadline, nonblock, &sig0);
		pthread_mutex_lock(&st->lock);
		if (err) {
			free_push(st, frame);
			pthread_mutex_unlock(&st->lock);
			return err;
		}
	}
	xsk_ring_prod__tx_desc(&st->tx, idx)->addr = frame + st->tx_off;
	xsk_ring_prod__tx_desc(&st->tx, idx)->len = (uint32_t)n;
	xsk_ring_prod__tx_desc(&st->tx, idx)->options =
		st->tx_csum ? TS_XDP_TX_METADATA : 0;
	if (ts_cap__on())
		ts_cap__frame((uint32_t)st->ifindex, 0, TICKSTACK_CAP_OUT, p,
			      (uint32_t)n, ts_cap__now());
	xsk_ring_prod__submit(&st->tx, 1);
	TS_INC(st->st->tx_packets);
	TS_ADD(st->sb->tx_bytes, n);
	if (more) {
		st->kick_pending = 1;
		k = 0;
	} else {
		k = xsk_ring_prod__needs_wakeup(&st->tx);
		st->kick_pending = 0;
	}
	pthread_mutex_unlock(&st->lock);
	if (k)
		kick(st); /* one per datagram, or one per batch (sendmmsg) */
	return 0;
}

/* An IPv4 packet's Ethernet header: to dmac, from this interface. */
static inline void ip_eth_hdr(const struct ts_stack *st, uint8_t *p,
			      const uint8_t dmac[6])
{
	memcpy(p, dmac, 6);
	memcpy(p + 6, st->mac, 6);
	p[12] = 0x08;
	p[13] = 0x00;
}

/* After ts_stack__send_ip put a packet on the TX ring (under the lock,
 * released here): more leaves the wake-up to ts_stack__flush; else the
 * kernel is kicked when the ring asks for it or frames are in flight. */
static inline void ip_sent_unlock(struct ts_stack *st, int more)
{
	int k;

	if (more) {
		st->kick_pending = 1;
		k = 0;
	} else {
		k = xsk_ring_prod__needs_wakeup(&st->tx) || tx_pending(st);
		st->kick_pending = 0;
	}
	pthread_mutex_unlock(&st->lock);
	if (k)
		kick(st);
}

/* ts_stack__send_ip of a packet longer than one UMEM frame (a TCP
 * segment of a jumbo MSS): its Ethernet header and the packet copied
 * straight into a chain of frames; dropped (-ENOBUFS) when there is no
 * room. csum_start: as for ts_stack__send_ip. */
static int send_ip_jumbo(struct ts_stack *st, const uint8_t dmac[6],
			 const void *ip, size_t len, int more,
			 uint16_t csum_start, uint16_t csum_offset)
{
	uint8_t eth[TS_ETH_HLEN];
	int err;

	ip_eth_hdr(st, eth, dmac);
	if (!st->tx_csum)
		csum_start = 0;
	pthread_mutex_lock(&st->lock);
	reclaim(st);
	err = tx_chain_locked(st, eth, TS_ETH_HLEN, ip, len,
			      csum_start ? (uint16_t)(TS_ETH_HLEN + csum_start) : 0,
			      csum_offset);
	if (err) {
		pthread_mutex_unlock(&st->lock);
		kick(st); /* complete what is in flight for the retransmission */
		return -ENOBUFS;
	}
	ip_sent_unlock(st, more);
	return 0;
}

/* Transmit one IPv4 packet (headers built by the caller) behind an
 * Ethernet header to dmac. more: leave the wake-up to ts_stack__flush
 * (several segments, one system call). csum_start > 0 (only where
 * ts_stack__tx_csum says the XSK takes it): the interface finishes the
 * checksum at csum_start + csum_offset (bytes from the IPv4 header), whose
 * field holds the pseudo-header sum. Never waits long: a segment that
 * finds no room is dropped (-ENOBUFS) and TCP retransmits it. */
int ts_stack__send_ip(struct ts_stack *st, const uint8_t dmac[6],
		      const void *ip, size_t len, int more,
		      uint16_t csum_start, uint16_t csum_offset)
{
	uint64_t frame, deadline = 0;
	uint8_t *p;
	uint32_t idx;
	int err, waited = 0;
	unsigned long sig0 = 0;

	if (len > st->max_payload + TS_IP_HLEN + TS_UDP_HLEN)
		return -EMSGSIZE; /* longer than the netif's MTU (tcp_lwip.c) */
	if (ts_unlikely(len + TS_ETH_HLEN > TS_FRAME_SIZE - st->tx_off))
		return send_ip_jumbo(st, dmac, ip, len, more, csum_start,
				     csum_offset);
	for (;;) {
		pthread_mutex_lock(&st->lock);
		reclaim(st);
		if (st->nfree > 0 && xsk_prod_nb_free(&st->tx, 1))
			break;
		pthread_mutex_unlock(&st->lock);
		err = tx_wait(st, &waited, &deadline, 1, &sig0);
		if (err)
			return -ENOBUFS;
	}
	frame = st->freel[--st->nfree];
	p = st->area + frame + st->tx_off;
	ip_eth_hdr(st, p, dmac);
	memcpy(p + TS_ETH_HLEN, ip, len);
	if (csum_start && st->tx_csum) {
		struct ts_txmd *md = (struct ts_txmd *)(void *)(p - TS_TXMD_LEN);

		md->flags = TS_TXMD_FLAGS_CHECKSUM;
		md->csum_start = (uint16_t)(TS_ETH_HLEN + csum_start);
		md->csum_offset = csum_offset;
	} else {
		csum_start = 0;
	}
	if (xsk_ring_prod__reserve(&st->tx, 1, &idx) != 1) {
		free_push(st, frame);
		pthread_mutex_unlock(&st->lock);
		return -ENOBUFS;
	}
	xsk_ring_prod__tx_desc(&st->tx, idx)->addr = frame + st->tx_off;
	xsk_ring_prod__tx_desc(&st->tx, idx)->len = (uint32_t)(len + TS_ETH_HLEN);
	xsk_ring_prod__tx_desc(&st->tx, idx)->options =
		csum_start ? TS_XDP_TX_METADATA : 0;
	if (ts_cap__on())
		ts_cap__frame((uint32_t)st->ifindex, 0, TICKSTACK_CAP_OUT, p,
			      (uint32_t)(len + TS_ETH_HLEN), ts_cap__now());
	xsk_ring_prod__submit(&st->tx, 1);
	TS_INC(st->st->tx_packets);
	TS_ADD(st->sb->tx_bytes, len + TS_ETH_HLEN);
	ip_sent_unlock(st, more);
	return 0;
}

/* Frames the process holds outside the free list and the fill ring
 * (in the RX ring, socket queues, TX ring or completion ring). */
uint32_t ts_stack__frames_out(struct ts_stack *st)
{
	uint32_t in_fill = 0, out;
	int i;

	pthread_mutex_lock(&st->lock);
	reclaim(st);
	for (i = 0; i < st->nrq; i++)
		in_fill += st->rq[i].fq.cached_prod -
			   __atomic_load_n(st->rq[i].fq.consumer, __ATOMIC_ACQUIRE);
	out = st->nframes - st->nfree - in_fill;
	pthread_mutex_unlock(&st->lock);
	return out;
}

void ts_stack__refresh_stats(void)
{
	int i;

	for (i = 0; i < nstacks; i++) {
		struct ts_stack *st = stacks[i];
		struct xdp_statistics xs, sum;
		socklen_t len;
		int j;

		if (!st->usable || st->owner != ts_getpid())
			continue;
		memset(&sum, 0, sizeof(sum));
		for (j = 0; j < st->nrq; j++) { /* the sum over the queues */
			memset(&xs, 0, sizeof(xs));
			len = sizeof(xs);
			if (ts_real_getsockopt(st->rq[j].fd, SOL_XDP,
					       XDP_STATISTICS, &xs, &len))
				continue;
			sum.rx_dropped += xs.rx_dropped;
			sum.rx_invalid_descs += xs.rx_invalid_descs;
			sum.tx_invalid_descs += xs.tx_invalid_descs;
			sum.rx_ring_full += xs.rx_ring_full;
			sum.rx_fill_ring_empty_descs += xs.rx_fill_ring_empty_descs;
			sum.tx_ring_empty_descs += xs.tx_ring_empty_descs;
		}
		st->st->xdp_rx_dropped = sum.rx_dropped;
		st->st->xdp_rx_invalid = sum.rx_invalid_descs;
		st->st->xdp_tx_invalid = sum.tx_invalid_descs;
		st->st->xdp_rx_ring_full = sum.rx_ring_full;
		st->st->xdp_fill_empty = sum.rx_fill_ring_empty_descs;
		st->st->xdp_tx_ring_empty = sum.tx_ring_empty_descs;
		st->st->umem_frames_out = ts_stack__frames_out(st);
	}
}

/* Replace the shared UMEM mapping by a private copy in place. */
static void umem_private_copy(struct ts_stack *st)
{
	void *p = mmap(NULL, st->area_size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return;
	memcpy(p, st->area, st->area_size);
	if (mremap(p, st->area_size, st->area_size, MREMAP_MAYMOVE | MREMAP_FIXED,
		   st->area) == MAP_FAILED)
		munmap(p, st->area_size);
}

/* In a forked child the parent's XSKs stay the parent's: close our copy
 * of their fds and never touch their rings. */
void ts_stack__after_fork_child(void)
{
	int i, j;

	ts_xdpd__after_fork_child();

	for (i = 0; i < nstacks; i++) {
		struct ts_stack *st = stacks[i];

		/* only this thread runs: a lock another thread held at the
		 * fork is free again */
		pthread_mutex_init(&st->lock, NULL);
		if (!st->usable)
			continue;
		for (j = 0; j < st->nrq; j++) {
			if (st->rq[j].fd >= 0)
				ts_real_close(st->rq[j].fd);
			st->rq[j].fd = -1;
		}
		if (st->epoll_fd >= 0)
			ts_real_close(st->epoll_fd);
		st->epoll_fd = -1;
		st->xsk_fd = -1;
		/* a daemon-made UMEM is a shared mapping of a memfd: the
		 * child reads the datagrams queued before the fork from a
		 * private copy, as it would from a private UMEM */
		if (st->memfd_mode)
			umem_private_copy(st);
		/* the parent's announcement (or daemon connection) is the
		 * parent's */
		if (st->announce_fd >= 0)
			ts_real_close(st->announce_fd);
		st->announce_fd = -1;
		st->usable = 0;
		st->st = &st->dummy;
		st->sb = &st->dummy_bytes;
	}
}

void ts_stack__fini_all(void)
{
	int i;
	pid_t me = ts_getpid();

	for (i = 0; i < nstacks; i++) {
		struct ts_stack *st = stacks[i];

		if (!st->usable || st->owner != me)
			continue;
		/* flush what is still queued for transmission */
		if (tx_pending(st))
			kick(st);
	}
}

/* The snapshot's rings (tickstack-stackdump; the control thread): one
 * entry per XSK, its rings' entries now and the interface's UMEM. */
static uint32_t ring_entries(const uint32_t *prod, const uint32_t *cons)
{
	if (!prod || !cons)
		return 0;
	return __atomic_load_n(prod, __ATOMIC_ACQUIRE) -
	       __atomic_load_n(cons, __ATOMIC_ACQUIRE);
}

int ts_stack__snapshot(struct tickstack_dump_xsk *x, int max)
{
	int i, j, n = 0;

	for (i = 0; i < ts_stack__count(); i++) {
		struct ts_stack *st = stacks[i];
		uint32_t out;

		if (!st->usable || st->owner != ts_getpid())
			continue;
		out = ts_stack__frames_out(st);
		for (j = 0; j < st->nrq && n < max; j++, n++) {
			struct ts_rxq *q = &st->rq[j];

			memset(&x[n], 0, sizeof(x[n]));
			snprintf(x[n].ifname, sizeof(x[n].ifname), "%s",
				 st->ifname);
			x[n].ifindex = (uint32_t)st->ifindex;
			x[n].queue = (uint32_t)q->queue;
			x[n].ring_size = TS_RING_SIZE;
			x[n].rx = ring_entries(q->rx.producer, q->rx.consumer);
			x[n].fill = ring_entries(q->fq.producer, q->fq.consumer);
			x[n].comp = ring_entries(q->cq.producer, q->cq.consumer);
			if (j == 0)
				x[n].tx = ring_entries(st->tx.producer,
						       st->tx.consumer);
			x[n].umem_frames = st->nframes;
			x[n].umem_free = __atomic_load_n(&st->nfree,
							 __ATOMIC_RELAXED);
			x[n].umem_out = out;
			x[n].fill_depth = __atomic_load_n(&st->fill_cap,
							  __ATOMIC_RELAXED);
		}
	}
	return n;
}
