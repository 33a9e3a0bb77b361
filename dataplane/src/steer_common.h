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

enum ts_cnt_idx {
	TS_CNT_REDIRECT = 0,
	TS_CNT_PASS_NOMATCH,
	TS_CNT_PASS_SHARED,
	TS_CNT_PASS_QUEUE,
	TS_CNT_PASS_BIG, /* longer than the owner's XSK takes */
	TS_CNT_MAX,
};

#endif
