/* SPDX-License-Identifier: Apache-2.0 */
/* ts_internal.h - private declarations of libtickstack. */
#ifndef TS_INTERNAL_H
#define TS_INTERNAL_H

#define _GNU_SOURCE
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <linux/netlink.h>

#include "tickstack.h"
#include "pkt.h"

#define TS_HIDDEN __attribute__((visibility("hidden")))
#define ts_likely(x) __builtin_expect(!!(x), 1)
#define ts_unlikely(x) __builtin_expect(!!(x), 0)

/* ---- real libc functions, resolved once (X-macro list in interpose.c) */
#define TS_REAL_CALLS(X)                                                      \
	X(int, socket, (int, int, int))                                       \
	X(int, bind, (int, const struct sockaddr *, socklen_t))               \
	X(int, connect, (int, const struct sockaddr *, socklen_t))            \
	X(int, close, (int))                                                  \
	X(int, open, (const char *, int, ...))                                \
	X(int, getsockname, (int, struct sockaddr *, socklen_t *))            \
	X(ssize_t, recv, (int, void *, size_t, int))                          \
	X(ssize_t, recvfrom,                                                  \
	  (int, void *, size_t, int, struct sockaddr *, socklen_t *))         \
	X(ssize_t, recvmsg, (int, struct msghdr *, int))                      \
	X(int, recvmmsg, (int, struct mmsghdr *, unsigned int, int,           \
			  struct timespec *))                                 \
	X(ssize_t, send, (int, const void *, size_t, int))                    \
	X(ssize_t, sendto, (int, const void *, size_t, int,                   \
			    const struct sockaddr *, socklen_t))              \
	X(ssize_t, sendmsg, (int, const struct msghdr *, int))                \
	X(int, sendmmsg, (int, struct mmsghdr *, unsigned int, int))          \
	X(ssize_t, read, (int, void *, size_t))                               \
	X(ssize_t, write, (int, const void *, size_t))                        \
	X(ssize_t, readv, (int, const struct iovec *, int))                   \
	X(ssize_t, writev, (int, const struct iovec *, int))                  \
	X(int, close_range, (unsigned int, unsigned int, int))                \
	X(long, syscall, (long, ...))                                         \
	X(int, poll, (struct pollfd *, nfds_t, int))                          \
	X(int, ppoll, (struct pollfd *, nfds_t, const struct timespec *,      \
		       const sigset_t *))                                     \
	X(int, select, (int, fd_set *, fd_set *, fd_set *, struct timeval *)) \
	X(int, pselect, (int, fd_set *, fd_set *, fd_set *,                   \
			 const struct timespec *, const sigset_t *))          \
	X(int, epoll_create, (int))                                           \
	X(int, epoll_create1, (int))                                          \
	X(int, epoll_ctl, (int, int, int, struct epoll_event *))              \
	X(int, epoll_wait, (int, struct epoll_event *, int, int))             \
	X(int, epoll_pwait,                                                   \
	  (int, struct epoll_event *, int, int, const sigset_t *))            \
	X(int, fcntl, (int, int, ...))                                        \
	X(int, ioctl, (int, unsigned long, ...))                              \
	X(int, setsockopt, (int, int, int, const void *, socklen_t))          \
	X(int, getsockopt, (int, int, int, void *, socklen_t *))              \
	X(int, dup, (int))                                                    \
	X(int, dup2, (int, int))                                              \
	X(int, dup3, (int, int, int))                                         \
	X(int, sigaction,                                                     \
	  (int, const struct sigaction *, struct sigaction *))                \
	X(int, epoll_pwait2, (int, struct epoll_event *, int,                 \
			      const struct timespec *, const sigset_t *))      \
	X(int, listen, (int, int))                                            \
	X(int, accept, (int, struct sockaddr *, socklen_t *))                 \
	X(int, accept4, (int, struct sockaddr *, socklen_t *, int))           \
	X(int, getpeername, (int, struct sockaddr *, socklen_t *))            \
	X(int, shutdown, (int, int))                                          \
	X(ssize_t, sendfile, (int, int, off_t *, size_t))                     \
	X(ssize_t, sendfile64, (int, int, off64_t *, size_t))                 \
	X(ssize_t, splice, (int, loff_t *, int, loff_t *, size_t, unsigned int)) \
	X(ssize_t, preadv2, (int, const struct iovec *, int, off_t, int))      \
	X(ssize_t, preadv64v2, (int, const struct iovec *, int, off64_t, int)) \
	X(ssize_t, pwritev2, (int, const struct iovec *, int, off_t, int))     \
	X(ssize_t, pwritev64v2, (int, const struct iovec *, int, off64_t, int))

#define TS_DECLARE_REAL(ret, name, args) extern ret(*ts_real_##name) args TS_HIDDEN;
TS_REAL_CALLS(TS_DECLARE_REAL)
#undef TS_DECLARE_REAL
TS_HIDDEN void ts_real__resolve(void);
/* lwIP's heap cache (lwip_mem.c): held across a fork by atfork */
TS_HIDDEN void ts_mem__fork_prepare(void);
TS_HIDDEN void ts_mem__fork_parent(void);
TS_HIDDEN void ts_mem__fork_child(void);
/* the next definition of name past the library (libc's; the TSan build's
 * from libc itself) */
TS_HIDDEN void *ts_real__sym(const char *name);

/* ---- configuration (environment, profiles) */
struct ts_config {
	char profile[16];
	long spin_usec;         /* blocking calls spin this long; -1 forever */
	uint64_t kernel_poll_ns; /* spin time between looks at the kernel fds */
	int require;            /* TICKSTACK_REQUIRE=1 */
	int xdp_mode;           /* XDP_FLAGS_DRV_MODE or XDP_FLAGS_SKB_MODE */
	int xdp_mode_auto;      /* try native, then generic */
	int xdp_bind;           /* TS_BIND_ANY, TS_BIND_ZEROCOPY or TS_BIND_COPY */
	char xdp_mode_str[64];  /* TICKSTACK_XDP_MODE as given (messages) */
	int udp_csum;           /* compute UDP checksums on TX */
	int tx_csum_offload;    /* let the interface finish them (AF_XDP TX metadata) */
	int queue;              /* NIC queue to bind */
	int queue_set;          /* TICKSTACK_QUEUE given: that queue only */
	int queue_any;          /* TICKSTACK_QUEUE=any: one queue, the first free */
	char xdpd_socket[108];  /* TICKSTACK_XDPD_SOCKET: the node daemon's */
	int xdpd_netraw;        /* TICKSTACK_XDPD_MODE=netraw: the process makes its XSK */
	int xdpd_wait_ms;       /* TICKSTACK_XDPD_WAIT_MS: a request waits that
				 * long for a restarting daemon */
	int stats_dump;         /* print counters at exit */
	char stats_file[256];   /* dump there instead of stderr */
	char ifaces[256];       /* comma list of interfaces, empty = all */
	int debug;
	int disabled;           /* TICKSTACK_DISABLE=1: pure pass-through */
	uint32_t umem_frames;
	uint32_t fill_frames;   /* TICKSTACK_FILL_FRAMES: a fill ring's first depth */
	uint32_t sockq_len;
	uint64_t yield_ns;      /* spin time between sched_yield() calls */
	int rx_hwtstamp;        /* TICKSTACK_RX_HWTSTAMP=1: hardware receive
				 * stamps from XDP metadata (device-bound
				 * program) for SO_TIMESTAMPING */
};
/* TICKSTACK_XDP_MODE's bind mode: what the kernel picks (zero-copy where
 * the driver has it), or insisted on (refused where it cannot be had). */
#define TS_BIND_ANY 0
#define TS_BIND_ZEROCOPY 1
#define TS_BIND_COPY 2
/* Entries of each XSK ring (fill, completion, RX, TX); the statistics dump
 * reports it with the other receive buffering ("buffers" line). */
#define TS_RING_SIZE 4096u
/* Largest socket queue ring, in datagrams: a socket grows its ring past the
 * profile's length only while SO_RCVBUF has room (sock__enqueue). */
#define TS_SOCKQ_MAX (1u << 20)
extern struct ts_config ts_cfg TS_HIDDEN;
TS_HIDDEN int ts_config__load(void);
TS_HIDDEN void ts_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* While set, ts_log says nothing (ts_dbg still does): a forked child
 * adopting an inherited socket expects to find its parent's queue busy. */
TS_HIDDEN extern __thread int ts_log_quiet;
/* Set by the stack around xsk_umem__create: the TX metadata length its UMEM
 * registration asks for (libxdp's setsockopt, interposed, adds it; libxdp
 * 1.3 has no field for it), and whether the kernel took it. */
TS_HIDDEN extern __thread uint32_t ts_umem_txmd_len;
TS_HIDDEN extern __thread int ts_umem_txmd_ok;
TS_HIDDEN void ts_dbg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- fallback to the kernel (src/fallback.c): the one function every
 * path asks before a socket, or a call on it, uses the kernel instead of
 * the XSK. 0: go on (counted: fallback_events and *counter); -EOPNOTSUPP:
 * TICKSTACK_REQUIRE=1 refuses this reason (said on stderr): the caller
 * fails its call with that errno and leaves the socket as it was. */
enum ts_fb_why {
	TS_FB_NOXSK,   /* no XSK on the interfaces of its address or route */
	TS_FB_QUEUE,   /* the interface's queue is another process's (EBUSY) */
	TS_FB_OPTION,  /* an option the stack does not reproduce */
	TS_FB_SIZE,    /* larger than the MTU or an XSK frame */
	TS_FB_SHAPE,   /* flags, control messages, source filters, families */
	TS_FB_LOCAL,   /* a local, loopback or broadcast destination */
	TS_FB_NOROUTE, /* no route to the destination */
	TS_FB_MCLOOP,  /* a multicast send with IP_MULTICAST_LOOP on */
	TS_FB_URING,   /* io_uring in the process */
	TS_FB_MEMORY,  /* no memory for the socket's state */
	/* never refused */
	TS_FB_NEIGH,   /* next hop unresolved: the kernel resolves it */
	TS_FB_SHARED,  /* another socket shares the port: the kernel delivers */
	TS_FB_FORK,    /* a forked child reads an inherited socket */
	TS_FB_ASKED,   /* the configuration asks for it (TICKSTACK_TCP=connect) */
};
struct ts_fb {
	int fd;
	int stream;          /* 1: a stream socket */
	uint32_t laddr;      /* network order, for the message */
	uint16_t lport;
	enum ts_fb_why why;
	const char *detail;  /* which option, size, destination... */
	uint64_t *counter;   /* the reason's own counter, or NULL */
};
TS_HIDDEN int ts_fallback(const struct ts_fb *f);
TS_HIDDEN const char *ts_fallback__name(enum ts_fb_why why);

/* ---- statistics region */
extern struct tickstack_stats *ts_stats TS_HIDDEN;
TS_HIDDEN int ts_stats__init(void);
TS_HIDDEN void ts_stats__reinit_after_fork(void);
TS_HIDDEN void ts_stats__dump(void);
TS_HIDDEN void ts_stats__refresher(void (*fn)(void));
TS_HIDDEN void ts_stats__fini(void);
TS_HIDDEN struct tickstack_xsk_stats *ts_stats__xsk_slot(void);
TS_HIDDEN struct tickstack_xsk_ext *
ts_stats__xsk_ext(struct tickstack_xsk_stats *x);
TS_HIDDEN struct tickstack_sock_stats *ts_stats__sock_slot(int fd);

/* ---- inspection (capture.c): tickstack-dump's capture ring and
 * tickstack-stackdump's snapshot. ts_cap_on is the data path's one look per
 * batch (relaxed): set only while a reader's ring is attached. */
TS_HIDDEN extern int ts_cap_on;
#define ts_cap__on() ts_unlikely(__atomic_load_n(&ts_cap_on, __ATOMIC_RELAXED))
TS_HIDDEN void ts_cap__frame(uint32_t ifindex, uint32_t queue, uint32_t flags,
			     const void *p, uint32_t len, uint64_t ts_ns);
TS_HIDDEN uint64_t ts_cap__now(void); /* CLOCK_REALTIME, ns */
TS_HIDDEN void ts_cap__after_fork_child(void);
TS_HIDDEN void ts_cap__fini(void); /* exit: the reader is told */
/* the control thread's tick: attach/detach the ring, answer a snapshot */
TS_HIDDEN void ts_inspect__poll(void);
TS_HIDDEN struct tickstack_dump_sock *ts_dump__sock_slot(struct tickstack_dump *d);
/* each layer fills its part of the snapshot, registered at start (the
 * stack's, the sockets', the streams'): capture.c calls none directly */
TS_HIDDEN void ts_dump__part(void (*fill)(struct tickstack_dump *d));
TS_HIDDEN int ts_stack__snapshot(struct tickstack_dump_xsk *x, int max);
TS_HIDDEN void ts_sock__snapshot(struct tickstack_dump *d);
TS_HIDDEN void ts_tcp__snapshot(struct tickstack_dump *d);

/* ---- the node daemon (TICKSTACK_XDPD_SOCKET; xdpd.c, xdpd_proto.h) */
TS_HIDDEN int ts_xdpd__on(void);
TS_HIDDEN int ts_xdpd__request(const char *req, int passfd, char *rep,
			       size_t cap);
TS_HIDDEN int ts_xdpd__request_fd(const char *req, int passfd, char *rep,
				  size_t cap, int *gotfd);
TS_HIDDEN int ts_xdpd__serves(const char *ifname);
TS_HIDDEN int ts_xdpd__proof_fd(uint32_t daddr, uint16_t dport, int proto);
/* the socket layers' "fd is ours" for proto (TS_STEER_UDP, TS_STEER_TCP),
 * registered at start; fds below TS_XDPD_MAX_FD (the sockets' tables) */
#define TS_XDPD_MAX_FD 65536
TS_HIDDEN void ts_xdpd__register_owner(int proto, int (*owns)(int fd));
TS_HIDDEN int ts_xdpd__steer(const char *op, const char *ifname,
			     uint32_t daddr, uint16_t dport, int proto,
			     char *rep, size_t cap);
TS_HIDDEN void ts_xdpd__after_fork_child(void);

/* ---- interfaces the stack may use (TICKSTACK_IFACES, up, not loopback) */
TS_HIDDEN int ts_iface__allowed(const char *name);
/* Interfaces carrying IPv4 address addr (0: every candidate); how many. */
TS_HIDDEN int ts_iface__for(uint32_t addr, int *out, int max);

/* ---- routes and neighbours (netlink) */
struct ts_flow {          /* the keys of the kernel's output route lookup */
	uint32_t daddr, saddr;  /* network order; saddr 0: any */
	int oif;                /* 0: any */
	uint16_t sport, dport;  /* network order */
	uint8_t tos;
};

struct ts_nexthop {
	struct ts_flow fl;
	uint32_t daddr;
	int ifindex;
	uint32_t gw;      /* 0 when on link */
	uint32_t prefsrc;
	int type;         /* RTN_* */
	uint8_t mac[6];
	int resolved;
	uint64_t expires_ns;
};
TS_HIDDEN int ts_route__lookup(uint32_t daddr, struct ts_nexthop *nh);
TS_HIDDEN int ts_route__lookup_flow(const struct ts_flow *fl,
				   struct ts_nexthop *nh);
TS_HIDDEN int ts_neigh__lookup(int ifindex, uint32_t addr, uint8_t mac[6]);
TS_HIDDEN int ts_route__open(void);
TS_HIDDEN void ts_route__reset_after_fork(void);

/* ---- per (interface, queue) XSK stack */
struct xsk_umem;
struct xsk_socket;

struct ts_stack;
TS_HIDDEN struct ts_stack *ts_stack__get(int ifindex, int create);
TS_HIDDEN enum ts_fb_why ts_stack__why_none(int ifindex);
TS_HIDDEN int ts_stack__fd(const struct ts_stack *st);
/* The fds a sleeping thread polls for st's RX rings: every queue's XSK, or
 * for a stack of more than TS_XSK_POLL_QUEUES queues one epoll fd holding
 * them (an epoll watch costs every received frame a callback in the
 * kernel: docs/dataplane-design.md "Every queue served"). Writes at most room
 * entries to pf and returns how many. */
#define TS_XSK_POLL_QUEUES 8
#define TS_XSK_POLLFDS (TICKSTACK_STATS_MAX_XSK * TS_XSK_POLL_QUEUES)
TS_HIDDEN int ts_stack__poll_fds(const struct ts_stack *st, struct pollfd *pf,
				 int room);
TS_HIDDEN int ts_stack__ifindex(const struct ts_stack *st);
TS_HIDDEN int ts_stack__usable(const struct ts_stack *st);
TS_HIDDEN void ts_stack__mac(const struct ts_stack *st, uint8_t mac[6]);
TS_HIDDEN uint32_t ts_stack__mtu(const struct ts_stack *st);
TS_HIDDEN uint32_t ts_stack__max_payload(const struct ts_stack *st);
TS_HIDDEN uint32_t ts_stack__addr(const struct ts_stack *st);
TS_HIDDEN void ts_stack__flush(struct ts_stack *st);
TS_HIDDEN int ts_stack__poll_rx(struct ts_stack *st);
TS_HIDDEN int ts_stack__drain_rx(struct ts_stack *st);
TS_HIDDEN int ts_stack__poll(struct ts_stack *st, int wait);
struct ts_direct;
TS_HIDDEN int ts_stack__poll_direct(struct ts_stack *st, struct ts_direct *dir);
TS_HIDDEN int ts_stack__poll_all(void);
TS_HIDDEN int ts_stack__busy(const struct ts_stack *st);
TS_HIDDEN int ts_stack__any_busy(void);
TS_HIDDEN int ts_stack__steer_add(struct ts_stack *st, uint32_t daddr,
				  uint16_t dport);
TS_HIDDEN int ts_stack__steer_add_proto(struct ts_stack *st, uint32_t daddr,
					uint16_t dport, int proto);
TS_HIDDEN int ts_stack__steer_del_proto(struct ts_stack *st, uint32_t daddr,
					uint16_t dport, int proto,
					int only_mine);
TS_HIDDEN int ts_stack__send_ip(struct ts_stack *st, const uint8_t dmac[6],
				const void *ip, size_t len, int more,
				uint16_t csum_start, uint16_t csum_offset);
/* the XSK's interface finishes checksums (AF_XDP TX metadata) */
TS_HIDDEN int ts_stack__tx_csum(const struct ts_stack *st);
TS_HIDDEN uint32_t ts_stack__frames_out(struct ts_stack *st);
TS_HIDDEN int ts_stack__steer_shared(struct ts_stack *st, uint32_t daddr,
				     uint16_t dport);
TS_HIDDEN int ts_stack__share(int ifindex, uint32_t daddr, uint16_t dport);
TS_HIDDEN int ts_stack__steer_del(struct ts_stack *st, uint32_t daddr,
				  uint16_t dport, int only_mine);
/* Build and send one datagram; iov payload. 0 or negative errno. t: h's
 * headers prepared once by ts_stack__udp_tmpl on st, or NULL. */
struct ts_udp_hdr_spec;
struct ts_udp_tmpl;
TS_HIDDEN void ts_stack__udp_tmpl(const struct ts_stack *st,
				  struct ts_udp_hdr_spec *h,
				  struct ts_udp_tmpl *t);
TS_HIDDEN int ts_stack__send(struct ts_stack *st, struct ts_udp_hdr_spec *h,
			     const struct ts_udp_tmpl *t,
			     const struct iovec *iov, int iovcnt, size_t len,
			     int nonblock, int more);
TS_HIDDEN void ts_stack__frame_refs(struct ts_stack *st, uint64_t frame,
				     int refs);
TS_HIDDEN void ts_stack__frame_put(struct ts_stack *st, uint64_t addr);
/* every fill ring at least this many frames deep (SO_RCVBUF) */
TS_HIDDEN void ts_stack__fill_want(uint32_t frames);
/* st's fill rings as deep as they go: a thread is about to sleep on them */
TS_HIDDEN void ts_stack__fill_for_sleep(struct ts_stack *st);
struct ts_rxent;
/* Give back what a dequeued datagram held: its UMEM frame, or its copy. */
TS_HIDDEN void ts_rxent_release(const struct ts_rxent *e);
TS_HIDDEN const uint8_t *ts_stack__frame_data(struct ts_stack *st,
					      uint64_t addr);
/* The hardware receive time of the datagram in the UMEM frame at addr
 * (TICKSTACK_RX_HWTSTAMP), 0: none */
TS_HIDDEN uint64_t ts_stack__frame_hw(const struct ts_stack *st,
				      uint64_t addr);
TS_HIDDEN void ts_stack__after_fork_child(void);
/* What the stack hands up, as the kernel's IP layer reaches UDP and TCP
 * through inet_protos: each socket layer registers its handlers at start
 * (ts_sock__init_tables, ts_tcp__init), before any XSK exists; the stack
 * calls nothing of the layers above it (tests/layers.py). */
struct ts_udp_meta;
struct ts_direct;
struct ts_stack_udp_up {
	/* one datagram to the socket(s) the kernel would pick: ts_sock__deliver */
	int (*deliver)(struct ts_stack *st, uint64_t frame, const uint8_t *lin,
		       const struct ts_udp_meta *m, uint64_t rx_ns,
		       struct ts_direct *dir);
	void (*begin)(void); /* around a batch (the port table's read lock) */
	void (*end)(void);
};
struct ts_stack_tcp_up {
	/* one segment queued under the ring's lock: ts_tcp__input */
	int (*input)(struct ts_stack *st, const uint8_t *frame, uint32_t len,
		     uint64_t rx_ns);
	void (*drain)(void); /* the queue into lwIP, the ring's lock released */
};
TS_HIDDEN void ts_stack__register_udp(const struct ts_stack_udp_up *up);
TS_HIDDEN void ts_stack__register_tcp(const struct ts_stack_tcp_up *up);
TS_HIDDEN void ts_stack__refresh_stats(void);
/* at start, before the sockets: the stack's hooks in the layers below
 * (the statistics refresh, its part of the snapshot) */
TS_HIDDEN void ts_stack__init(void);
TS_HIDDEN void ts_stack__fini_all(void);
TS_HIDDEN int ts_stack__count(void);
TS_HIDDEN struct ts_stack *ts_stack__at(int i);

/* ---- sockets */
/* What a queued datagram of len payload bytes charges against SO_RCVBUF:
 * an approximation of the kernel's skb truesize for it (the data buffer's
 * allocation, a power of two holding the headers, headroom and shared
 * info, plus the skb), measured on Linux 6.x: 840 bytes for 16 B, about
 * 1290 for 512 B, 2368 for 1000-1472 B. */
static inline uint32_t ts_rx_truesize(uint32_t len)
{
	uint32_t need = len + 490; /* > 490: the power of two above, at least 512 */

	return (1u << (32 - __builtin_clz(need - 1))) + 320;
}

/* Datagrams queued before a fork are in the parent's and the child's copy
 * of the queue: whichever process reads one first takes it (a byte set
 * atomically in memory both share, mapped at fork), the other skips it,
 * as both would share the kernel's one queue. One region per fork that
 * found datagrams not yet covered; freed once the reader passed it. */
struct ts_claim {
	uint32_t from, to;      /* queue positions [from, to) */
	uint8_t *taken;         /* MAP_SHARED, to - from bytes */
	struct ts_claim *next;
};

struct ts_rxent {
	struct ts_stack *st;
	uint64_t frame;   /* frame base address in the UMEM */
	uint64_t rx_ns;   /* CLOCK_REALTIME when taken from the RX ring */
	uint32_t off;     /* payload offset from frame base */
	uint16_t len;
	uint16_t sport;
	uint32_t saddr;
	uint32_t daddr;
	uint8_t tos, ttl;
	uint8_t spilled;  /* frame is a malloc'd copy of the payload (off 0),
			   * not a UMEM frame: ts_rxent_release */
};

/* Control messages a socket asked for (setsockopt); those the stack
 * produces itself. Any other receive-side option moves the socket to the
 * kernel. */
enum {
	TS_CM_PKTINFO = 1 << 0,
	TS_CM_TTL = 1 << 1,
	TS_CM_TOS = 1 << 2,
	TS_CM_TSTAMP = 1 << 3,   /* SO_TIMESTAMP(_NEW): struct timeval */
	TS_CM_TSTAMPNS = 1 << 4, /* SO_TIMESTAMPNS(_NEW): struct timespec */
	TS_CM_TSTAMPING = 1 << 5, /* SO_TIMESTAMPING software RX: SCM_TIMESTAMPING */
	TS_CM_TSHW = 1 << 6,      /* SO_TIMESTAMPING raw hardware RX: its slot */
};
#define TS_CM_TSTAMP_ANY (TS_CM_TSTAMP | TS_CM_TSTAMPNS | TS_CM_TSTAMPING)
/* The timestamp control messages (rx.c), for datagrams, streams and the
 * error queue. */
TS_HIDDEN void ts_rx__tstamp_cmsgs(struct msghdr *msg, size_t *used, int cm,
				   int tsnew, uint64_t ns);
/* the same with a hardware receive time (0: none) for TS_CM_TSHW */
TS_HIDDEN void ts_rx__tstamp_cmsgs_hw(struct msghdr *msg, size_t *used, int cm,
				      int tsnew, uint64_t ns, uint64_t hw_ns);

#define TS_MAX_GROUPS 16
#define TS_MAX_RX_STACKS 8

/* A shadow socket. Locking: the addressing, steering and option fields
 * change under the control lock (ts_lock) and, where the RX path reads
 * them, the port table's write lock too; the RX queue (q, qhead, qtail)
 * under qlock; state, users, dead and kernel_hint are atomics. Objects are
 * never returned to libc: a closed socket goes back to a pool, so a thread
 * that looked it up just before a close never touches freed memory. */
struct ts_sock {
	int refs;             /* fds (dup) pointing here; ts_lock */
	int users;            /* calls in flight (atomic) */
	int dead;             /* every fd closed (atomic) */
	int fin;              /* finalised (atomic, once per incarnation) */
	uint32_t gen;         /* incarnation: bumped when pooled (ts_lock) */
	int fd;               /* first fd, for statistics */
	int kfd;              /* after close with calls in flight: a dup of the
			       * kernel socket they keep using, as the kernel
			       * keeps a socket while a call runs on it; -1 */
	pid_t owner;          /* process that installed the steering */
	int state;            /* TS_S_* (atomic) */
	int nonblock;
	uint32_t laddr;       /* network order */
	uint16_t lport;
	uint32_t raddr;
	uint16_t rport;
	int connected;
	uint32_t conn_laddr;  /* bound to 0.0.0.0 and connected: the local
			       * address the kernel chose (getsockname); 0 */
	int64_t rcvtimeo_ns;  /* SO_RCVTIMEO and SO_SNDTIMEO (ts_timeo__set) */
	int64_t sndtimeo_ns;
	uint8_t ttl, mcast_ttl, tos, mcast_loop, mc_all;
	uint32_t mcast_if;    /* IP_MULTICAST_IF address */
	int mcast_ifindex;
	uint32_t groups[TS_MAX_GROUPS];
	int group_ifindex[TS_MAX_GROUPS];
	int ngroups;
	struct ts_stack *rx_stacks[TS_MAX_RX_STACKS];
	int nrx;              /* atomic: entries are only appended */
	int cmsgs;            /* TS_CM_* */
	int tstamp_new;       /* the kernel's SOCK_TSTAMP_NEW: _NEW cmsg types */
	/* transmit software stamps (SOF_TIMESTAMPING_TX_SOFTWARE): the socket's
	 * SO_TIMESTAMPING flags when they ask for them, else 0 (ts_lock); the
	 * next OPT_ID key and the stamps not yet read (MSG_ERRQUEUE), a ring
	 * allocated by the first (qlock; errq_tail atomic, for poll) */
	int txts;
	uint32_t tskey;
	struct ts_errent *errq;
	uint32_t errq_head, errq_tail;
	int reuse;            /* SO_REUSEADDR: others may share the port */
	int reuseport;        /* SO_REUSEPORT: a group of this process's sockets */
	uint64_t ino;         /* the kernel socket's inode (foreign-socket check) */
	struct ts_stack *tx_pending_st; /* a batch left descriptors unkicked */
	int kernel_hint;      /* kernel fd reported readable (atomic) */
	/* RX queue of datagrams steered to this socket */
	pthread_mutex_t qlock;
	struct ts_rxent *q;
	uint32_t qcap, qhead, qtail;
	uint32_t rcvbuf;      /* SO_RCVBUF as the kernel keeps it (doubled,
			       * clamped) once the application set it; 0: the
			       * queue holds qcap datagrams whatever their size */
	uint32_t qbytes;      /* what the queued datagrams charge against rcvbuf
			       * (ts_rx_truesize); under qlock */
	uint32_t qframes;     /* queued datagrams that hold a UMEM frame; past
			       * ts_cfg.sockq_len of them a socket whose
			       * SO_RCVBUF has room queues copies instead
			       * (spilled), as the kernel's buffer holds what
			       * SO_RCVBUF allows; under qlock */
	struct ts_claim *claims; /* datagrams queued before a fork; qlock */
	int fork_locked;      /* qlock held across fork (atfork prepare) */
	int parked;           /* forked children that may still read it: its
			       * steering entries are marked shared, so the
			       * kernel socket they share delivers (ts_lock) */
	struct ts_forkrec *fork_rec; /* in a forked child: the record of the
				      * fork it came through, where closing
				      * its copy is noted; NULL */
	uint32_t fork_idx;    /* its slot there */
	int exec_let_go;      /* 1: cleared its slot for an exec under way;
			       * -1 while looking: an fd keeps it */
	struct ts_sock *next_port; /* chain in the port table */
	struct ts_sock *next_free; /* pool */
	struct tickstack_sock_stats *stats;
	struct tickstack_sock_stats dummy_stats;
};

enum {
	TS_S_NEW = 0,     /* not bound yet */
	TS_S_ACCEL,       /* steering installed */
	TS_S_KERNEL,      /* decided: kernel only */
};

TS_HIDDEN extern struct ts_sock **ts_fdtab;
TS_HIDDEN extern int ts_fdtab_size;
TS_HIDDEN extern struct ts_sock **ts_port_tab;

/* The socket behind fd without a reference: for readiness hints only. */
static inline struct ts_sock *ts_sock__of(int fd)
{
	if (ts_unlikely(fd < 0 || fd >= ts_fdtab_size || !ts_fdtab))
		return NULL;
	return __atomic_load_n(&ts_fdtab[fd], __ATOMIC_ACQUIRE);
}

TS_HIDDEN void ts_sock__finalize(struct ts_sock *s);

/* The socket behind fd with a reference held for the call: a close in
 * another thread meanwhile leaves it working until ts_sock__put. */
static inline struct ts_sock *ts_sock__get(int fd)
{
	struct ts_sock *s;

	for (;;) {
		s = ts_sock__of(fd);
		if (!s)
			return NULL;
		__atomic_add_fetch(&s->users, 1, __ATOMIC_ACQ_REL);
		if (ts_likely(ts_sock__of(fd) == s))
			return s;
		if (!__atomic_sub_fetch(&s->users, 1, __ATOMIC_ACQ_REL) &&
		    __atomic_load_n(&s->dead, __ATOMIC_ACQUIRE))
			ts_sock__finalize(s);
	}
}

static inline void ts_sock__put(struct ts_sock *s)
{
	if (!__atomic_sub_fetch(&s->users, 1, __ATOMIC_ACQ_REL) &&
	    __atomic_load_n(&s->dead, __ATOMIC_ACQUIRE))
		ts_sock__finalize(s);
}

static inline int ts_sock__state(const struct ts_sock *s)
{
	return __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
}

/* The kernel fd to use: the caller's, or the dup kept after a close. */
static inline int ts_sock__kfd(const struct ts_sock *s, int fd)
{
	int k = __atomic_load_n(&s->kfd, __ATOMIC_ACQUIRE);

	return k >= 0 ? k : fd;
}

TS_HIDDEN void ts_sock__skip_taken(struct ts_sock *s);
TS_HIDDEN int ts_sock__claim(struct ts_sock *s, uint32_t pos, int peek);
TS_HIDDEN void ts_sock__fork_prepare(void);
TS_HIDDEN void ts_sock__fork_parent(void);

static inline int ts_sock__rx_ready(struct ts_sock *s)
{
	/* datagrams queued before a fork may have been taken by the other
	 * process: look (rare: only sockets that crossed a fork) */
	if (ts_unlikely(__atomic_load_n(&s->claims, __ATOMIC_ACQUIRE) != NULL))
		ts_sock__skip_taken(s);
	return __atomic_load_n(&s->qtail, __ATOMIC_ACQUIRE) !=
	       __atomic_load_n(&s->qhead, __ATOMIC_ACQUIRE);
}

TS_HIDDEN extern int ts_sig_efd;
TS_HIDDEN extern int ts_uring_used;
TS_HIDDEN extern int ts_tstamp_wanted; /* a socket asked for SO_TIMESTAMP* */
TS_HIDDEN extern pthread_rwlock_t ts_port_lock;
TS_HIDDEN void ts_sock__uring_used(void);
TS_HIDDEN int ts_sock__uring_gate(void);
TS_HIDDEN int ts_uring__unseen(void); /* a ring not yet known is mapped */
TS_HIDDEN struct ts_sock *ts_sock__new(int fd, int nonblock);
TS_HIDDEN void ts_sock__release(int fd);
TS_HIDDEN void ts_sock__dup(int oldfd, int newfd);
TS_HIDDEN void ts_sock__check_owner(struct ts_sock *s, int fd);
TS_HIDDEN int ts_sock__activate_for_send(struct ts_sock *s, int fd);
TS_HIDDEN int ts_sock__fallback(struct ts_sock *s, enum ts_fb_why why,
				 const char *detail, uint64_t *counter);
TS_HIDDEN ssize_t ts_rx__copyout(const struct ts_sock *s,
				 const struct ts_rxent *e, struct msghdr *msg,
				 int flags);
TS_HIDDEN ssize_t ts_sock__pop(struct ts_sock *s, struct msghdr *msg,
			       int flags);
/* Transmit stamps (rx.c): queue the one of a datagram just sent (its
 * frame rebuilt from h, the payload from msg), read the oldest as
 * recvmsg(MSG_ERRQUEUE) returns it (-1 when none), free them all. */
struct ts_udp_hdr_spec;
TS_HIDDEN void ts_sock__tx_stamp(struct ts_sock *s, struct ts_udp_hdr_spec *h,
				 const struct msghdr *msg, size_t len);
TS_HIDDEN ssize_t ts_sock__errq_pop(struct ts_sock *s, struct msghdr *msg);
TS_HIDDEN void ts_sock__errq_free(struct ts_sock *s);
static inline int ts_sock__errq_ready(const struct ts_sock *s)
{
	return __atomic_load_n(&s->errq_tail, __ATOMIC_ACQUIRE) !=
	       __atomic_load_n(&s->errq_head, __ATOMIC_ACQUIRE);
}
TS_HIDDEN ssize_t ts_sock__recvmsg(struct ts_sock *s, int fd,
				   struct msghdr *msg, int flags);
TS_HIDDEN ssize_t ts_sock__sendmsg(struct ts_sock *s, int fd,
				   const struct msghdr *msg, int flags, int more);
TS_HIDDEN void ts_sock__flush(struct ts_sock *s);
TS_HIDDEN int ts_sock__after_bind(struct ts_sock *s, int fd);
TS_HIDDEN int ts_sock__after_connect(struct ts_sock *s, int fd,
				     const struct sockaddr *addr,
				     socklen_t len);
TS_HIDDEN int ts_sock__setsockopt_pre(struct ts_sock *s, int fd, int level,
				       int opt, const void *val, socklen_t len);
TS_HIDDEN int ts_sock__setsockopt(struct ts_sock *s, int fd, int level,
				   int opt, const void *val, socklen_t len);
TS_HIDDEN int ts_sock__fionread(struct ts_sock *s, int *out);
TS_HIDDEN void ts_sock__check_shared(void);
TS_HIDDEN void ts_sock__check_forks(void);
TS_HIDDEN int ts_sock__fork_pollfds(struct pollfd *pf, int max);
TS_HIDDEN void ts_sock__before_exec(void);
TS_HIDDEN void ts_sock__exec_failed(void);
TS_HIDDEN int ts_poll__has_accel(struct pollfd *fds, nfds_t n);
TS_HIDDEN int ts_poll__wait(struct pollfd *fds, nfds_t n, int64_t timeout_ns,
			    const sigset_t *mask);
/* What has woken an accelerated socket's waiters, per kind: counts that
 * only grow. The kernel wakes an epoll member for data (in), for send
 * room (out) and for a change of state (any: connected, end of stream,
 * an error); an EPOLLET member is reported once one of them moved (in
 * and out only when it asked for them), with everything then ready. */
struct ts_edges {
	uint32_t in, out, any;
};

TS_HIDDEN int ts_ep__ctl(int epfd, int op, int fd, struct epoll_event *ev);
TS_HIDDEN void ts_ep__forget_fd(int fd);
TS_HIDDEN void ts_ep__kernel_forget(int fd);
TS_HIDDEN void ts_ep__kernel_adopt(int fd);
TS_HIDDEN int ts_ep__active(int epfd);
TS_HIDDEN int ts_ep__wait(int epfd, struct epoll_event *out, int max,
			  int64_t timeout_ns, const sigset_t *mask);
TS_HIDDEN void ts_ep__after_fork_child(void);
TS_HIDDEN void ts_sock__after_fork_child(struct tickstack_stats *old,
					 struct tickstack_stats *now);
TS_HIDDEN int ts_sock__init_tables(void);
TS_HIDDEN void ts_sock__deliver_begin(void);
TS_HIDDEN void ts_sock__deliver_end(void);
/* A receiving thread's offer to take its own next datagram straight from
 * the RX ring it polls (ts_stack__poll_direct): when the ring's datagram
 * is for s alone and s's queue is empty, it is copied to msg at once (no
 * queue, no second lock), and the frame goes back to the fill ring. */
struct ts_direct {
	struct ts_sock *s;
	struct msghdr *msg;
	int flags;
	int done;     /* taken: ret is recvmsg's result */
	ssize_t ret;
};
#define TS_DELIVER_TAKEN (-2) /* ts_sock__deliver: copied to the ts_direct */
#define TS_DELIVER_COPIED (-3) /* ts_sock__deliver: queued as copies only */
TS_HIDDEN int ts_sock__deliver(struct ts_stack *st, uint64_t frame,
			       const uint8_t *lin, const struct ts_udp_meta *m,
			       uint64_t rx_ns, struct ts_direct *dir);

/* ---- the wait primitive: recv, poll, select and epoll spin, then sleep
 * in ppoll on their kernel fds, the XSKs and the signal eventfd. */
struct ts_wait {
	/* >0: done, returned as is; 0: not yet; a negative errno: failed,
	 * returned as is. kernel: look at the kernel fds too (due now and
	 * then while spinning, and after a sleep) */
	int (*check)(struct ts_wait *w, int kernel);
	/* the caller's fds to sleep on; returns how many it wrote */
	int (*sleep_fds)(struct ts_wait *w, struct pollfd *pf, int max);
	void *arg;
	int64_t timeout_ns;     /* <0 forever, 0 one look */
	int kernel_lazy;        /* no kernel look before kernel_poll_ns of
				 * spinning (recv); else one at once (poll) */
	int any_signal;         /* EINTR for any handler (poll, select, epoll),
				 * else only for one without SA_RESTART */
	const sigset_t *mask;   /* ppoll's and epoll_pwait's mask */
	struct ts_stack **stacks; /* XSKs to poll; NULL: all of the process */
	int *nstacks;
	struct ts_direct *direct; /* recv: take our datagram from the ring */
	struct pollfd *sleep_buf; /* NULL: 16 of the caller's fds on the stack */
	int sleep_cap;            /* the caller's fds that fit (the XSKs and
				   * the eventfd get room after them) */
};
/* The check's result, 0 on timeout, -EINTR when a signal's handler ran
 * (any handler with any_signal, else one without SA_RESTART). */
TS_HIDDEN int ts_wait(struct ts_wait *w);
TS_HIDDEN void ts_wait__efd_drain(void);
/* a deliverer filled a socket's queue: wake the library's sleepers */
TS_HIDDEN void ts_wait__wake_sleepers(void);
TS_HIDDEN void ts_wait__after_fork_child(void);
/* threads asleep in the library (ppoll): another thread that changed
 * what they may wait for (TCP) writes the signal eventfd when non zero */
TS_HIDDEN extern int ts_wait_sleepers;

/* ---- the control thread: rtnetlink subscription keeping the next-hop
 * cache current, next-hop resolution, shared-port checks */
enum { NH_OK = 0, NH_NOROUTE, NH_LOCAL, NH_NEIGH, NH_PENDING };
TS_HIDDEN int ts_nh__get(const struct ts_flow *fl, struct ts_nexthop *out);
/* The next-hop cache's generation: read (acquire) before a ts_nh__get, a
 * result is still current while it has not moved. */
TS_HIDDEN extern uint32_t ts_nh_gen;
TS_HIDDEN void ts_nh__resolve_pending(void);
TS_HIDDEN void ts_nh__event(const struct nlmsghdr *h);
TS_HIDDEN void ts_nh__reset(void);
TS_HIDDEN void ts_nh__init(void);
/* An upper layer's chore on the control thread, registered at start
 * (before the thread runs; ts_sock__init_tables): fds the thread also
 * wakes for, and work it runs on every wake-up (period_ns 0) or at most
 * once a period. The control thread calls nothing of the layers above it
 * but through these (tests/layers.py). */
struct ts_ctl_hook {
	int (*pollfds)(struct pollfd *pf, int max); /* NULL: none */
	void (*run)(void);
	uint64_t period_ns;
	uint64_t next_ns; /* the control thread's */
};
TS_HIDDEN void ts_ctl__hook(struct ts_ctl_hook *h);
TS_HIDDEN void ts_ctl__start(void);
TS_HIDDEN void ts_ctl__wake(void);
TS_HIDDEN void ts_ctl__poke(void);
TS_HIDDEN void ts_ctl__after_fork_child(void);

/* ---- the process id, cached (getpid() is a system call); the fork
 * handler refreshes it in the child */
extern pid_t ts_pid TS_HIDDEN;
static inline pid_t ts_getpid(void)
{
	return ts_pid;
}

/* ---- the process lock and reentrancy guard */
TS_HIDDEN void ts_lock(void);
TS_HIDDEN void ts_unlock(void);
extern __thread int ts_in_lib TS_HIDDEN;

/* ---- signals (core.c) */
TS_HIDDEN void ts_sig__note(int restart); /* a handler runs (the trampoline) */
TS_HIDDEN unsigned long ts_sig__gen(void);         /* any handler ran */
TS_HIDDEN unsigned long ts_sig__norestart_gen(void); /* one without SA_RESTART */

/* Statistics counters are updated by several threads. */
#define TS_INC(c) __atomic_fetch_add(&(c), 1, __ATOMIC_RELAXED)
#define TS_ADD(c, n) __atomic_fetch_add(&(c), (n), __ATOMIC_RELAXED)

/* SO_RCVTIMEO and SO_SNDTIMEO kept as the kernel keeps them
 * (sock_set_timeout), in one word that a setsockopt may change while another
 * thread's call reads it, so atomically both ways: 0 none (0 s and 0 us, the
 * default), TS_TIMEO_NOW at once (a negative tv_sec: the call does not wait),
 * else nanoseconds (a tv_sec too large for them: none, as the kernel's
 * MAX_SCHEDULE_TIMEOUT). The kernel took the value first (its EDOM). */
#define TS_TIMEO_NOW INT64_MIN

static inline void ts_timeo__set(int64_t *slot, const void *val, socklen_t len)
{
	struct timeval tv;
	int64_t ns;

	if (len < sizeof(tv))
		return;
	__builtin_memcpy(&tv, val, sizeof(tv));
	if (tv.tv_sec < 0)
		ns = TS_TIMEO_NOW;
	else if (tv.tv_sec >= INT64_MAX / 1000000000ll - 1)
		ns = 0;
	else
		ns = (int64_t)tv.tv_sec * 1000000000ll + (int64_t)tv.tv_usec * 1000ll;
	__atomic_store_n(slot, ns, __ATOMIC_RELAXED);
}

/* The wait a timeout slot gives a call: -1 none, 0 at once, else ns. */
static inline int64_t ts_timeo__wait_ns(const int64_t *slot)
{
	int64_t v = __atomic_load_n(slot, __ATOMIC_RELAXED);

	return v == 0 ? -1 : v == TS_TIMEO_NOW ? 0 : v;
}

static inline uint64_t ts_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void ts_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* Time-driven chores of a spin loop (called when the loop reads the
 * clock): a look at the kernel fds now and then, and a sched_yield() now
 * and then so that ksoftirqd, which carries the veth and copy-mode XDP
 * work, is not starved by a spinner sharing its CPU. Time, not iteration
 * counts: a short wait for a datagram then makes no system call. */
struct ts_spin {
	uint64_t next_kernel;
	uint64_t next_yield;
};

static inline void ts_spin__start(struct ts_spin *sp, uint64_t now)
{
	sp->next_kernel = now + ts_cfg.kernel_poll_ns;
	sp->next_yield = now + ts_cfg.yield_ns;
}

static inline int ts_spin__tick(struct ts_spin *sp, uint64_t now)
{
	extern int sched_yield(void);
	int kernel_due = 0;

	if (now >= sp->next_kernel) {
		kernel_due = 1;
		sp->next_kernel = now + ts_cfg.kernel_poll_ns;
	}
	if (ts_cfg.yield_ns && now >= sp->next_yield) {
		sched_yield();
		sp->next_yield = now + ts_cfg.yield_ns;
	}
	return kernel_due;
}

#endif
