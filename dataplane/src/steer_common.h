/* SPDX-License-Identifier: Apache-2.0 */
/* steer_common.h - map layouts shared by steer.bpf.c and the library. */
#ifndef TS_STEER_COMMON_H
#define TS_STEER_COMMON_H

#define TS_STEER_MAX_ENTRIES 4096
#define TS_XSKS_MAX 64

/* UMEM frames are TS_FRAME_SIZE bytes; the kernel keeps XDP_PACKET_HEADROOM
 * (256) of each for itself on receive, so a longer frame cannot enter an
 * XSK: the program passes those to the kernel. */
#define TS_FRAME_SIZE 2048
#define TS_XSK_MAX_FRAME (TS_FRAME_SIZE - 256)
/* A longer frame (a jumbo frame) enters an XSK bound with XDP_USE_SG as a
 * chain of frames (AF_XDP multi-buffer, Linux 6.6), up to this length:
 * an MTU of 9,216, the largest jumbo frame NICs take, behind its Ethernet
 * header. The kernel's chunk size is at most a page (4 KiB), so a larger
 * frame size cannot carry an MTU of 9,000 (docs/dataplane-design.md,
 * "Jumbo frames"). */
#define TS_XSK_SG_MAX_FRAME (9216 + 14)

/* Names the library uses to find the program and its maps when another
 * process of the same namespace attached it first (max 15 chars). */
#define TS_PROG_NAME "ts_steer"
/* The same program built with TS_STEER_HWTS (steer_hw.bpf.o): device-bound
 * (BPF_F_XDP_DEV_BOUND_ONLY), it reads each steered frame's hardware
 * receive timestamp (bpf_xdp_metadata_rx_timestamp) into the metadata
 * area before the frame (struct ts_xdp_meta). */
#define TS_PROG_NAME_HW "ts_steer_hw"
#define TS_MAP_STEER "ts_steer_map"
#define TS_MAP_XSKS "ts_xsks"
#define TS_MAP_CNT "ts_cnt"
#define TS_MAP_QOWN "ts_qown"

/* Key: destination (IPv4, port, protocol), network order; daddr 0 = any.
 * proto is TS_STEER_UDP (0: the layout entries had before TCP, so a
 * program left attached by an older library keeps steering UDP) or
 * TS_STEER_TCP. */
struct ts_steer_key {
	__u32 daddr;
	__u16 dport;
	__u8 proto;
	__u8 pad;
};

#define TS_STEER_UDP 0
#define TS_STEER_TCP 6 /* IPPROTO_TCP */

#define TS_STEER_F_SHARED 1 /* several processes want it: kernel delivers */
#define TS_STEER_F_SG 2     /* the owner's XSK takes multi-buffer frames
			     * (XDP_USE_SG) up to TS_XSK_SG_MAX_FRAME */

struct ts_steer_val {
	__u32 owner; /* pid of the process whose XSK receives it */
	__u16 queue; /* queue the XSK is bound to: key of ts_xsks */
	__u16 flags;
};

/* What ts_steer_hw puts right before a steered frame's data (its XSK
 * descriptor's address less sizeof): the kfunc's result. magic last, next
 * to the data: the stack checks it and clears it, so a frame the program
 * could not give metadata (no headroom) is never read with a stale one. */
struct ts_xdp_meta {
	__u64 hw_ns; /* the hardware receive time (the NIC's clock), 0: none */
	__s32 err;   /* the kfunc's result: 0, -ENODATA (no stamp for this
		      * frame), -EOPNOTSUPP (the driver has no such kfunc) */
	__u32 magic; /* TS_XDP_META_MAGIC */
};
#define TS_XDP_META_MAGIC 0x54534d44u /* "TSMD" */

enum ts_cnt_idx {
	TS_CNT_REDIRECT = 0,
	TS_CNT_PASS_NOMATCH,
	TS_CNT_PASS_SHARED,
	TS_CNT_PASS_QUEUE,
	TS_CNT_PASS_BIG, /* longer than the owner's XSK takes */
	TS_CNT_META_FAIL, /* ts_steer_hw: no room for the metadata */
	TS_CNT_MAX,
};

#endif
