/* SPDX-License-Identifier: Apache-2.0 */
/* pkt.h - Ethernet/IPv4/UDP header building, parsing and checksums.
 * Pure functions (no I/O) so that unit tests and the fuzzer drive them. */
#ifndef TS_PKT_H
#define TS_PKT_H

#include <stddef.h>
#include <stdint.h>

#define TS_ETH_HLEN 14
#define TS_IP_HLEN 20
#define TS_UDP_HLEN 8
#define TS_HDRS_LEN (TS_ETH_HLEN + TS_IP_HLEN + TS_UDP_HLEN)

/* Addresses and ports are in network byte order. */
struct ts_udp_meta {
	uint8_t dmac[6];
	uint8_t smac[6];
	uint32_t saddr;
	uint32_t daddr;
	uint16_t sport;
	uint16_t dport;
	uint16_t payload_off; /* from the start of the frame */
	uint16_t payload_len;
	uint16_t udp_csum;    /* as found in the frame */
	uint8_t ttl;
	uint8_t tos;
};

struct ts_udp_hdr_spec {
	uint8_t dmac[6];
	uint8_t smac[6];
	uint32_t saddr;
	uint32_t daddr;
	uint16_t sport;
	uint16_t dport;
	uint16_t ip_id; /* host order */
	uint8_t ttl;
	uint8_t tos;
	/* 1: compute, 0: send zero (legal on IPv4), TS_UDP_CSUM_PARTIAL: the
	 * pseudo-header sum only, for the interface to finish (AF_XDP TX
	 * checksum offload, as the kernel's CHECKSUM_PARTIAL) */
	int udp_csum;
};

#define TS_UDP_CSUM_PARTIAL 2

/* Sum 16-bit words (one's complement, not folded or inverted). */
uint32_t ts_csum__partial(const void *buf, size_t len, uint32_t sum);
uint16_t ts_csum__fold(uint32_t sum);
/* IPv4 header checksum over hdr_len bytes (checksum field included as is). */
uint16_t ts_csum__ipv4(const void *iph, size_t hdr_len);
/* UDP checksum with pseudo-header; udp points at the UDP header followed
 * by the payload, len is the UDP length. Returns the value to store
 * (0 is mapped to 0xffff as RFC 768 asks). */
uint16_t ts_csum__udp(uint32_t saddr, uint32_t daddr, const void *udp,
		      size_t len);

/* Parse an untagged Ethernet/IPv4/UDP frame. Returns 0, or -EINVAL when
 * the frame is not a well-formed unfragmented IPv4/UDP datagram. */
int ts_pkt__parse_udp(const void *frame, size_t len, struct ts_udp_meta *m);

/* Check the IPv4 header checksum and (when non zero) the UDP checksum of a
 * parsed frame: 0 if good, -EBADMSG otherwise. */
int ts_pkt__verify_csum(const void *frame, size_t len,
			const struct ts_udp_meta *m);

/* Whether the UDP checksum of a parsed frame is the unfinished one a local
 * sender leaves for checksum offload (CHECKSUM_PARTIAL: the folded
 * pseudo-header sum, not inverted), as veth delivers frames of kernel
 * sockets: 1 if so, else 0. */
int ts_pkt__csum_is_partial(const struct ts_udp_meta *m);
/* The value of a UDP checksum field that holds the pseudo-header sum alone
 * (what an offloading sender leaves for the interface to finish). */
uint16_t ts_csum__udp_partial(uint32_t saddr, uint32_t daddr, size_t ulen);

/* Write Ethernet, IPv4 and UDP headers for payload_len bytes of payload
 * already placed at frame + TS_HDRS_LEN. Returns the frame length, or
 * -EMSGSIZE when the datagram does not fit in cap bytes / 65507. */
int ts_pkt__build_udp(void *frame, size_t cap, size_t payload_len,
		      const struct ts_udp_hdr_spec *spec);

/* A destination's headers prepared once (the send path's memo, tx.c):
 * Ethernet, IPv4 and UDP headers with the fields that change per datagram
 * (IPv4 total length, identification and checksum; UDP length and
 * checksum) zero, and the ones' complement sums of the rest, so that a
 * send copies 42 bytes and adds its length and identification into the
 * sums (RFC 1624). ts_pkt__udp_tmpl_put writes exactly what
 * ts_pkt__build_udp writes for the same spec. */
struct ts_udp_tmpl {
	uint8_t hdr[TS_HDRS_LEN];
	uint32_t ip_sum; /* the IPv4 header's words, host order, unfolded */
	uint32_t ph_sum; /* the pseudo-header's, without the UDP length */
	uint32_t saddr, daddr;
	int udp_csum;    /* as struct ts_udp_hdr_spec's */
};

void ts_pkt__udp_tmpl_init(struct ts_udp_tmpl *t,
			   const struct ts_udp_hdr_spec *spec);

static inline uint16_t ts_pkt__fold16(uint32_t sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* The headers of t for payload_len bytes of payload (at most 65507,
 * already placed at frame + TS_HDRS_LEN) and identification ip_id (host
 * order). Returns the frame length. */
static inline int ts_pkt__udp_tmpl_put(void *frame, const struct ts_udp_tmpl *t,
				       size_t payload_len, uint16_t ip_id)
{
	uint8_t *f = (uint8_t *)frame;
	uint8_t *ip = f + TS_ETH_HLEN, *udp = ip + TS_IP_HLEN;
	uint32_t ulen = (uint32_t)payload_len + TS_UDP_HLEN;
	uint32_t tot = ulen + TS_IP_HLEN;
	uint16_t c;

	__builtin_memcpy(f, t->hdr, TS_HDRS_LEN);
	ip[2] = (uint8_t)(tot >> 8);
	ip[3] = (uint8_t)tot;
	ip[4] = (uint8_t)(ip_id >> 8);
	ip[5] = (uint8_t)ip_id;
	c = (uint16_t)~ts_pkt__fold16(t->ip_sum + tot + ip_id);
	ip[10] = (uint8_t)(c >> 8);
	ip[11] = (uint8_t)c;
	udp[4] = (uint8_t)(ulen >> 8);
	udp[5] = (uint8_t)ulen;
	if (t->udp_csum == TS_UDP_CSUM_PARTIAL) {
		c = ts_pkt__fold16(t->ph_sum + ulen);
		udp[6] = (uint8_t)(c >> 8);
		udp[7] = (uint8_t)c;
	} else if (t->udp_csum) {
		c = ts_csum__udp(t->saddr, t->daddr, udp, ulen);
		__builtin_memcpy(udp + 6, &c, 2);
	}
	return (int)(TS_ETH_HLEN + tot);
}

/* The receive check's common case, inline, for a frame
 * ts_pkt__parse_udp accepted into m: a 20-byte IPv4 header that verifies
 * and a UDP checksum that is the partial one (ts_pkt__csum_is_partial) or
 * none. 1: the frame is good; 0: not decided here (the full check
 * decides). Sums of the words as they lie in memory, compared with the
 * fields as they lie: a ones' complement sum commutes with byte swapping
 * (RFC 1071, 2(B)). */
static inline int ts_pkt__csum_fast_ok(const void *frame,
				       const struct ts_udp_meta *m)
{
	const uint8_t *ip = (const uint8_t *)frame + TS_ETH_HLEN;
	uint32_t w[5];
	uint64_t acc;

	if (ip[0] != 0x45)
		return 0;
	if (m->udp_csum) {
		uint16_t ulen = (uint16_t)(m->payload_len + TS_UDP_HLEN);
		uint32_t sum = (m->saddr & 0xffff) + (m->saddr >> 16) +
			       (m->daddr & 0xffff) + (m->daddr >> 16);

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		sum += 0x1100u + __builtin_bswap16(ulen);
#else
		sum += 17u + ulen;
#endif
		if (ts_pkt__fold16(sum) != m->udp_csum)
			return 0;
	}
	__builtin_memcpy(w, ip, sizeof(w));
	acc = (uint64_t)w[0] + w[1] + w[2] + w[3] + w[4];
	acc = (acc & 0xffffffffu) + (acc >> 32);
	return ts_pkt__fold16((uint32_t)acc + (uint32_t)(acc >> 32)) == 0xffff;
}

/* Multicast MAC for an IPv4 group (network order). */
void ts_pkt__mcast_mac(uint32_t group, uint8_t mac[6]);

#endif
