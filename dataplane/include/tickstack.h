/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tickstack.h - public interface of the tickstack AF_XDP data plane (UDP,
 * and TCP through lwIP).
 *
 * The library is used through LD_PRELOAD (tickstack-run); this header only
 * describes what other programs may read: the layout of the statistics
 * region every accelerated process publishes in /dev/shm/tickstack-<pid>,
 * read by tickstack-stats while the process runs, and by the node agent,
 * which exports it per pod (internal/bypass, docs/monitoring.md).
 *
 * From version 6 on the layout only grows at its end: a new field, array or
 * group of counters goes after nh, never into the X-macro lists below (a
 * counter added to one moves every member after it), and raises
 * TICKSTACK_STATS_VERSION. The agent reads a later version by the prefix it
 * knows; internal/bypass's tests compile this header and fail when a member
 * it knows moves.
 */
#ifndef TICKSTACK_H
#define TICKSTACK_H

#include <stdint.h>

#define TICKSTACK_STATS_MAGIC 0x54534b53u /* "TSKS" */
#define TICKSTACK_STATS_VERSION 7u
#define TICKSTACK_STATS_MAX_XSK 8
#define TICKSTACK_STATS_MAX_SOCK 256
#define TICKSTACK_STATS_PATH_FMT "/dev/shm/tickstack-%d"

/* Counters of the XSKs of one interface: one AF_XDP socket per receive
 * queue the process serves (queue .. queue + nqueues - 1), summed. */
#define TICKSTACK_XSK_COUNTERS(X)                                              \
	X(rx_packets)        /* frames taken from the RX ring */               \
	X(tx_packets)        /* frames put on the TX ring */                   \
	X(rx_no_socket)      /* steered frame no local socket wanted */        \
	X(rx_bad)            /* steered frame that failed parsing */           \
	X(rx_sockq_full)     /* dropped: socket queue full */                  \
	X(tx_ring_full)      /* TX waited: ring or free frames exhausted */    \
	X(fill_ring_empty)   /* fill ring found empty when refilling */        \
	X(tx_kicks)          /* sendto() wake-ups of the kernel TX path */     \
	X(tx_kick_errors)    /* wake-up calls that moved nothing or failed */ \
	X(rx_bad_csum)       /* dropped: IPv4 or UDP checksum wrong */         \
	X(fill_wakeups)      /* fill ring needs_wakeup serviced */             \
	X(xdp_rx_dropped)    /* kernel XDP_STATISTICS: rx_dropped */           \
	X(xdp_rx_invalid)    /* kernel: rx_invalid_descs */                    \
	X(xdp_tx_invalid)    /* kernel: tx_invalid_descs */                    \
	X(xdp_rx_ring_full)  /* kernel: rx_ring_full */                        \
	X(xdp_fill_empty)    /* kernel: rx_fill_ring_empty_descs */            \
	X(xdp_tx_ring_empty) /* kernel: tx_ring_empty_descs */             \
	X(umem_frames_out)   /* frames not free (rings, queues), refreshed */ \
	X(rx_multibuf)       /* jumbo frames received as a chain (XDP_USE_SG) */ \
	X(tx_multibuf)       /* jumbo frames sent as a chain */

/* Counters of one socket. "kernel" means the datagram went through the
 * ordinary kernel socket (fallback), "accel" through the XSK. */
#define TICKSTACK_SOCK_COUNTERS(X)                                             \
	X(rx_accel)            /* datagrams received from the XSK */           \
	X(rx_kernel)           /* datagrams received from the kernel fd */     \
	X(tx_accel)            /* datagrams sent through the XSK */            \
	X(tx_kernel)           /* datagrams sent through the kernel */         \
	X(rx_drops)            /* dropped: socket queue full */                \
	X(rx_filtered)         /* dropped: connected socket, other peer */     \
	X(tx_kernel_noroute)   /* fallback reason: no usable route */          \
	X(tx_kernel_neigh)     /* fallback reason: neighbour unresolved (ARP) */ \
	X(tx_kernel_local)     /* fallback reason: local/broadcast dest */     \
	X(tx_kernel_oversize)  /* fallback reason: larger than the MTU */      \
	X(tx_kernel_nostack)   /* fallback reason: no XSK on that interface */ \
	X(tx_kernel_flags)     /* fallback reason: unsupported send flags */   \
	X(tx_kernel_mcloop)    /* fallback reason: multicast loopback on */   \
	X(rx_spilled)          /* queued as a copy: past the socket queue     \
				* length, within SO_RCVBUF */

/* Counters of the TCP layer (process wide). Per stream socket, the sock
 * counters rx_accel/tx_accel count bytes. */
#define TICKSTACK_TCP_COUNTERS(X)                                              \
	X(conns_accel)      /* connections through the XSK (connect, accept) */ \
	X(conns_kernel)     /* stream sockets left on the kernel */            \
	X(conns_live)       /* accelerated connections lwIP still holds */     \
	X(listen_accel)     /* listeners steered to the XSK */                 \
	X(ports_held)       /* closed sockets whose steering waits for lwIP */ \
	X(segs_rx)          /* segments handed to lwIP */                      \
	X(segs_tx)          /* segments lwIP sent through the XSK */           \
	X(rx_csum_completed) /* partial checksums completed (veth senders) */ \
	X(rx_no_netif)      /* segment for an address lwIP does not carry */   \
	X(tx_noroute)       /* segment dropped: no route / not our interface */ \
	X(tx_neigh)         /* segment dropped: neighbour unresolved (probed) */ \
	X(tx_ring_full)     /* segment dropped: TX ring or frames exhausted */ \
	X(resets)           /* connections ended by a reset or an abort */ \
	X(newreno_rexmits)  /* partial ACKs answered with a retransmission */ \
	X(listen_overflow)  /* SYNs / handshake ACKs dropped: accept queue full */ \
	X(early_rexmits)    /* early retransmits (RFC 5827): a loss with under \
			       four segments out, found by fewer than three \
			       duplicate ACKs */ \
	X(fork_shared)      /* connections and listeners shared with forked \
			       children, pumped by this process (live) */

/* Counters of the next-hop cache the send path reads (process wide): a
 * route, rule, address, link or neighbour change that dropped cached next
 * hops (a refresh), and what it cost the senders after it. */
#define TICKSTACK_NH_COUNTERS(X)                                               \
	X(refreshes)     /* rtnetlink changes that dropped cached next hops */ \
	X(misses)        /* sends that found no next hop cached (a new flow,  \
			    or the first send after a refresh) */              \
	X(wait_timeouts) /* misses not answered by the control thread within  \
			    5 ms: that datagram went through the kernel */

/* Version 7: more counters of xsk[i], in xsk_ext[i] (the same index).
 * Bytes: whole frames with their Ethernet header, as the kernel's rx_bytes
 * and tx_bytes of an interface count them (a jumbo chain once, whole).
 * Hardware receive timestamps (TICKSTACK_RX_HWTSTAMP=1, docs/dataplane.md):
 * frames that came with the device-bound program's metadata, those of them
 * with a hardware time, and hw_unbound, 1 when the stamps were asked for
 * but the program is not device-bound (generic XDP, tickstack-xdpd, a
 * driver that refused it): the XSK's frames carry no hardware time. */
#define TICKSTACK_XSK_EXT_COUNTERS(X)                                          \
	X(rx_bytes)      /* bytes of the frames counted in rx_packets */       \
	X(tx_bytes)      /* bytes of the frames counted in tx_packets */       \
	X(rx_hw_meta)    /* frames with the XDP program's metadata */          \
	X(rx_hw_tstamps) /* ... carrying a hardware receive time */            \
	X(hw_unbound)    /* 1: stamps asked for, program not device-bound */

/* Version 7: TCP counters appended after the first group (tcp). */
#define TICKSTACK_TCP_EXT_COUNTERS(X)                                          \
	X(rexmit_segs) /* every segment sent again: retransmission timer,      \
			  fast retransmit, early retransmit, NewReno partial \
			  ACKs, SYN and FIN resends (Linux's TcpRetransSegs) */

#define TICKSTACK_DECLARE_U64(name) uint64_t name;

struct tickstack_xsk_stats {
	char ifname[16];
	uint32_t ifindex;
	uint32_t queue;   /* the first queue served */
	uint32_t in_use;
	uint32_t mode; /* 1 native (drv), 2 generic (skb) */
	uint32_t tx_csum_offload; /* 1: the interface finishes UDP checksums
				   * (AF_XDP TX metadata), 0: summed here */
	uint32_t zerocopy; /* 1: bound zero-copy, 0: copy mode */
	uint32_t nqueues;  /* receive queues served, one XSK each */
	uint32_t reserved;
	TICKSTACK_XSK_COUNTERS(TICKSTACK_DECLARE_U64)
};

struct tickstack_sock_stats {
	int32_t fd;
	uint32_t in_use;
	uint32_t accelerated; /* 1 when steering is installed */
	uint32_t laddr;       /* network order */
	uint32_t raddr;
	uint16_t lport;       /* network order */
	uint16_t rport;
	TICKSTACK_SOCK_COUNTERS(TICKSTACK_DECLARE_U64)
};

struct tickstack_stats {
	uint32_t magic;
	uint32_t version;
	int32_t pid;
	uint32_t nxsk;
	char profile[16];
	uint64_t sockets_accelerated; /* sockets that got steering */
	uint64_t sockets_kernel;      /* UDP sockets left on the kernel */
	uint64_t fallback_events;     /* any fallback, with a reason counter */
	uint64_t kernel_option;       /* sockets moved to the kernel by an option
				       * the stack cannot honour (SO_REUSEPORT,
				       * SO_BINDTODEVICE, SO_MARK, cmsgs...) */
	uint64_t kernel_uring;        /* sockets moved to the kernel: io_uring */
	uint64_t kernel_shared;       /* ports handed to the kernel: another
				       * socket on the host shares them */
	struct tickstack_xsk_stats xsk[TICKSTACK_STATS_MAX_XSK];
	struct tickstack_sock_stats sock[TICKSTACK_STATS_MAX_SOCK];
	struct {
		TICKSTACK_TCP_COUNTERS(TICKSTACK_DECLARE_U64)
	} tcp;
	struct {
		TICKSTACK_NH_COUNTERS(TICKSTACK_DECLARE_U64)
	} nh;
	/* Requests of the inspection tools (docs/dataplane.md, "Seeing
	 * inside the bypass"), appended to the region: a reader sees them
	 * when the file is at least sizeof(struct tickstack_stats) long.
	 * The process's control thread looks at them every 100 ms. */
	uint32_t cap_req;   /* tickstack-dump: nonzero, a capture ring is in
			     * tickstack-<pid>.cap, this generation */
	uint32_t cap_att;   /* the generation the stack attached, 0: none */
	uint32_t dump_req;  /* tickstack-stackdump: bumped for a snapshot */
	uint32_t dump_done; /* dump_req once tickstack-<pid>.dump holds it */
	/* version 7 */
	struct tickstack_xsk_ext {
		TICKSTACK_XSK_EXT_COUNTERS(TICKSTACK_DECLARE_U64)
	} xsk_ext[TICKSTACK_STATS_MAX_XSK];
	struct {
		TICKSTACK_TCP_EXT_COUNTERS(TICKSTACK_DECLARE_U64)
	} tcp_ext;
};

/* ---- the capture ring (tickstack-dump)
 *
 * /dev/shm/tickstack-<pid>.cap, made by the reader (tickstack-dump), owned
 * by the process's user, mode 0600: a header, then `size` bytes of records.
 * One producer side (the stack, under its capture lock), one consumer (the
 * reader). The stack copies each frame it receives from or puts on an XSK
 * (up to snaplen bytes) with the time it saw it; when the ring has no room
 * it drops the frame and counts it, never waits. */
#define TICKSTACK_CAP_MAGIC 0x50435354u /* "TSCP" */
#define TICKSTACK_CAP_VERSION 1u
#define TICKSTACK_CAP_PATH_FMT "/dev/shm/tickstack-%d.cap"
#define TICKSTACK_CAP_ALIGN 32u
#define TICKSTACK_CAP_IN 1u    /* received from the XSK */
#define TICKSTACK_CAP_OUT 2u   /* put on the XSK's TX ring */
#define TICKSTACK_CAP_PAD 0x100u /* filler to the end of the ring: skip */
/* A reader that has not looked for this long is gone: the stack detaches. */
#define TICKSTACK_CAP_STALE_NS 10000000000ull

struct tickstack_cap_hdr {
	uint32_t magic;
	uint32_t version;
	uint32_t size;      /* bytes of records: a power of two */
	uint32_t snaplen;   /* bytes of a frame kept */
	uint64_t reader_ns; /* CLOCK_MONOTONIC of the reader's last look */
	uint32_t attached;  /* stack: 1 copying into this ring, 2 let go */
	uint32_t reserved[9];
	/* the stack's (a cache line of its own) */
	uint64_t head __attribute__((aligned(64))); /* bytes written */
	uint64_t captured; /* frames copied */
	uint64_t dropped;  /* frames dropped: no room */
	/* the reader's */
	uint64_t tail __attribute__((aligned(64))); /* bytes consumed */
	uint8_t data[] __attribute__((aligned(64)));
};

/* One record: this header, caplen bytes of the frame, padding to
 * TICKSTACK_CAP_ALIGN. A record never wraps: the stack pads the ring's
 * end (TICKSTACK_CAP_PAD) and starts over at 0. */
struct tickstack_cap_rec {
	uint32_t reclen;  /* header, frame and padding */
	uint32_t caplen;
	uint32_t origlen;
	uint32_t ifindex;
	uint64_t ts_ns;   /* CLOCK_REALTIME where the stack saw it */
	uint32_t flags;   /* TICKSTACK_CAP_IN / _OUT / _PAD */
	uint32_t queue;   /* the receive queue (RX), 0 on TX */
};

/* ---- the stack snapshot (tickstack-stackdump)
 *
 * /dev/shm/tickstack-<pid>.dump, made by the reader like the capture ring;
 * the control thread writes a snapshot into it when dump_req moves, then
 * sets dump_done. */
#define TICKSTACK_DUMP_MAGIC 0x50445354u /* "TSDP" */
#define TICKSTACK_DUMP_VERSION 1u
#define TICKSTACK_DUMP_PATH_FMT "/dev/shm/tickstack-%d.dump"
#define TICKSTACK_DUMP_MAX_SOCK 1024
#define TICKSTACK_DUMP_MAX_XSK 64

struct tickstack_dump_xsk {
	char ifname[16];
	uint32_t ifindex;
	uint32_t queue;
	/* entries in each ring now, and its size */
	uint32_t rx, fill, tx, comp, ring_size;
	/* UMEM frames of the interface (every queue's XSK shares it) */
	uint32_t umem_frames, umem_free, umem_out;
	/* entries the fill ring is topped up to now (it grows: docs/dataplane.md,
	 * TICKSTACK_FILL_FRAMES) */
	uint32_t fill_depth;
	uint32_t reserved[2];
};

struct tickstack_dump_sock {
	int32_t fd;
	uint32_t proto;   /* 17 UDP, 6 TCP */
	uint32_t state;   /* UDP: 1 accelerated, 2 kernel; TCP: lwIP's
			   * enum tcp_state (0 CLOSED .. 10 TIME_WAIT) */
	uint32_t laddr, raddr; /* network order */
	uint16_t lport, rport;
	uint32_t rxq;     /* UDP: datagrams queued; TCP: bytes not read */
	uint32_t rxq_bytes;
	uint32_t txq;     /* TCP: bytes sent, not acknowledged */
	uint32_t txq_segs; /* TCP: segments queued (lwIP snd_queuelen) */
	/* TCP (0 for UDP), from lwIP's pcb */
	uint32_t cwnd, ssthresh, snd_wnd, rcv_wnd, mss;
	uint32_t srtt_us; /* smoothed round trip time */
	uint32_t rto_ms;
	uint32_t nrtx;    /* retransmissions of the segment now timed */
	uint32_t backlog; /* listener: connections waiting for accept */
	uint32_t reserved[3];
	uint64_t rx, tx;  /* datagrams (UDP) or bytes (TCP) through the XSK */
};

struct tickstack_dump {
	uint32_t magic;
	uint32_t version;
	uint32_t seq;    /* the dump_req it answers */
	uint32_t nsock, nxsk;
	uint32_t truncated; /* sockets past TICKSTACK_DUMP_MAX_SOCK */
	uint64_t time_ns;   /* CLOCK_REALTIME of the snapshot */
	struct tickstack_dump_xsk xsk[TICKSTACK_DUMP_MAX_XSK];
	struct tickstack_dump_sock sock[TICKSTACK_DUMP_MAX_SOCK];
};

#endif /* TICKSTACK_H */
