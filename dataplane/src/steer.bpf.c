// SPDX-License-Identifier: GPL-2.0
/* steer.bpf.c - XDP steering: redirect only registered (dst IP, dst port,
 * UDP or TCP) keys to the AF_XDP socket of their queue, pass everything
 * else (ARP, ICMP, fragments, broadcast, unknown ports) to the kernel. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "steer_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TS_STEER_MAX_ENTRIES);
	__type(key, struct ts_steer_key);
	__type(value, struct ts_steer_val);
} ts_steer_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, TS_XSKS_MAX);
	__type(key, __u32);
	__type(value, __u32);
} ts_xsks SEC(".maps");

/* Which process (the owner of steering entries) holds the XSK of each
 * queue: a flow of a process that serves every queue is redirected on
 * whichever queue it lands. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TS_XSKS_MAX);
	__type(key, __u32);
	__type(value, __u32);
} ts_qown SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TS_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} ts_cnt SEC(".maps");

static __always_inline int count(__u32 idx, int action)
{
	__u64 *c = bpf_map_lookup_elem(&ts_cnt, &idx);

	if (c)
		*c += 1;
	return action;
}

#ifdef TS_STEER_HWTS
extern int bpf_xdp_metadata_rx_timestamp(const struct xdp_md *ctx,
					 __u64 *timestamp) __ksym;

/* The frame's hardware receive time into the metadata area, for the XSK
 * (docs/dataplane.md, "Timestamps") */
static __always_inline void rx_meta(struct xdp_md *ctx)
{
	struct ts_xdp_meta *m;
	__u64 t = 0;
	int err;

	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(*m))) {
		count(TS_CNT_META_FAIL, 0);
		return;
	}
	m = (void *)(long)ctx->data_meta;
	if ((void *)(m + 1) > (void *)(long)ctx->data) {
		count(TS_CNT_META_FAIL, 0);
		return;
	}
	err = bpf_xdp_metadata_rx_timestamp(ctx, &t);
	m->hw_ns = err ? 0 : t;
	m->err = err;
	m->magic = TS_XDP_META_MAGIC;
}
#define TS_STEER_FN ts_steer_hw
#else
static __always_inline void rx_meta(struct xdp_md *ctx)
{
	(void)ctx;
}
#define TS_STEER_FN ts_steer
#endif

/* "xdp.frags" (BPF_F_XDP_HAS_FRAGS): the program sees multi-buffer
 * frames whole, so native XDP attaches to a veth whose peer's MTU is
 * above a page, and a jumbo frame can go to an XSK bound with XDP_USE_SG.
 * It reads the headers only, which are in the first buffer. */
SEC("xdp.frags")
int TS_STEER_FN(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *iph;
	void *l4;
	struct ts_steer_key key = {};
	struct ts_steer_val *v;
	__u64 len;

	if ((void *)(eth + 1) > data_end)
		return XDP_PASS;
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	if (eth->h_dest[0] == 0xff && eth->h_dest[1] == 0xff &&
	    eth->h_dest[2] == 0xff && eth->h_dest[3] == 0xff &&
	    eth->h_dest[4] == 0xff && eth->h_dest[5] == 0xff)
		return XDP_PASS;
	iph = (void *)(eth + 1);
	if ((void *)(iph + 1) > data_end)
		return XDP_PASS;
	if (iph->version != 4 || iph->ihl < 5)
		return XDP_PASS;
	if (iph->frag_off & bpf_htons(0x3fff))
		return XDP_PASS;
	if (iph->protocol == IPPROTO_UDP)
		key.proto = TS_STEER_UDP;
	else if (iph->protocol == IPPROTO_TCP)
		key.proto = TS_STEER_TCP;
	else
		return XDP_PASS;
	/* UDP and TCP headers both start with the source and destination
	 * ports */
	l4 = (void *)iph + iph->ihl * 4;
	if (l4 + 4 > data_end)
		return XDP_PASS;
	key.dport = *(__u16 *)(l4 + 2);
	key.daddr = iph->daddr;
	v = bpf_map_lookup_elem(&ts_steer_map, &key);
	/* A wildcard (0.0.0.0) binding takes unicast only: multicast goes
	 * to an XSK only for a (group, port) a process joined, so that the
	 * kernel still delivers groups other processes joined. */
	if (!v && (iph->daddr & bpf_htonl(0xf0000000)) != bpf_htonl(0xe0000000)) {
		key.daddr = 0;
		v = bpf_map_lookup_elem(&ts_steer_map, &key);
	}
	if (!v)
		return count(TS_CNT_PASS_NOMATCH, XDP_PASS);
	len = bpf_xdp_get_buff_len(ctx);
	/* an XSK without XDP_USE_SG would drop a frame longer than one of
	 * its frames: the kernel takes it */
	if (len > TS_XSK_MAX_FRAME &&
	    (!(v->flags & TS_STEER_F_SG) || len > TS_XSK_SG_MAX_FRAME))
		return count(TS_CNT_PASS_BIG, XDP_PASS);
	if (v->flags & TS_STEER_F_SHARED)
		return count(TS_CNT_PASS_SHARED, XDP_PASS);
	if (v->queue != ctx->rx_queue_index) {
		/* another queue: the owner's too when it serves it */
		__u32 q = ctx->rx_queue_index;
		__u32 *o = bpf_map_lookup_elem(&ts_qown, &q);

		if (!o || *o != v->owner)
			return count(TS_CNT_PASS_QUEUE, XDP_PASS);
		count(TS_CNT_REDIRECT, 0);
		rx_meta(ctx);
		return bpf_redirect_map(&ts_xsks, q, XDP_PASS);
	}
	count(TS_CNT_REDIRECT, 0);
	rx_meta(ctx);
	/* An empty slot (the owner exited) falls back to the kernel. */
	return bpf_redirect_map(&ts_xsks, v->queue, XDP_PASS);
}

char _license[] SEC("license") = "GPL";
