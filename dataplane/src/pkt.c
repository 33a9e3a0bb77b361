// SPDX-License-Identifier: Apache-2.0
/* pkt.c - header building, parsing and checksums for Ethernet/IPv4/UDP. */
#include "pkt.h"

#include <errno.h>
#include <string.h>
#include <arpa/inet.h>

/* One's complement sum of big-endian 16-bit words, in host order, not
 * folded to 16 bits. The body adds native-order 32-bit halves of 64-bit
 * loads and swaps the folded result once at the end: a one's complement
 * sum commutes with byte swapping (RFC 1071, section 2(B)). */
uint32_t ts_csum__partial(const void *buf, size_t len, uint32_t sum)
{
	const uint8_t *p = buf;
	uint64_t acc = 0, a1 = 0, a2 = 0, a3 = 0, s;
	uint16_t folded;

	/* four independent sums, so that a datagram's checksum (verified on
	 * receive, computed on send) is not one long chain of dependent
	 * additions; 32-bit halves added into 64 bits cannot overflow for any
	 * IP length, and the order of a ones' complement sum does not matter */
	/* a received datagram was written by another CPU: ask for all its
	 * lines at once rather than miss on one after the other */
	for (size_t off = 64; off < len; off += 64)
		__builtin_prefetch(p + off);
	while (len >= 32) {
		uint64_t v[4];

		memcpy(v, p, 32);
		acc += (v[0] & 0xffffffffu) + (v[0] >> 32);
		a1 += (v[1] & 0xffffffffu) + (v[1] >> 32);
		a2 += (v[2] & 0xffffffffu) + (v[2] >> 32);
		a3 += (v[3] & 0xffffffffu) + (v[3] >> 32);
		p += 32;
		len -= 32;
	}
	acc += a1 + a2 + a3;
	while (len >= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		acc += (v & 0xffffffffu) + (v >> 32);
		p += 8;
		len -= 8;
	}
	while (len >= 2) {
		uint16_t v;

		memcpy(&v, p, 2);
		acc += v;
		p += 2;
		len -= 2;
	}
	while (acc >> 16)
		acc = (acc & 0xffff) + (acc >> 16);
	folded = (uint16_t)acc;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	folded = __builtin_bswap16(folded);
#endif
	s = (uint64_t)sum + folded;
	if (len)
		s += (uint32_t)(p[0] << 8);
	while (s >> 32)
		s = (s & 0xffffffffu) + (s >> 32);
	return (uint32_t)s;
}

uint16_t ts_csum__fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* Checksums are computed in host order over big-endian words and stored
 * with htons, which keeps the code independent of the host's endianness. */
uint16_t ts_csum__ipv4(const void *iph, size_t hdr_len)
{
	return htons((uint16_t)~ts_csum__fold(ts_csum__partial(iph, hdr_len, 0)));
}

/* The unfolded sum of UDP's pseudo-header (addresses in network order,
 * protocol 17, ulen: the UDP header and payload). */
static inline uint32_t udp_pseudo_sum(uint32_t saddr, uint32_t daddr,
				      size_t ulen)
{
	uint8_t ph[12];

	memcpy(ph, &saddr, 4);
	memcpy(ph + 4, &daddr, 4);
	ph[8] = 0;
	ph[9] = 17;
	ph[10] = (uint8_t)(ulen >> 8);
	ph[11] = (uint8_t)ulen;
	return ts_csum__partial(ph, sizeof(ph), 0);
}

uint16_t ts_csum__udp(uint32_t saddr, uint32_t daddr, const void *udp,
		      size_t len)
{
	uint32_t sum = udp_pseudo_sum(saddr, daddr, len);
	uint16_t c = (uint16_t)~ts_csum__fold(ts_csum__partial(udp, len, sum));

	if (c == 0)
		c = 0xffff;
	return htons(c);
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}

int ts_pkt__parse_udp(const void *frame, size_t len, struct ts_udp_meta *m)
{
	const uint8_t *f = frame;
	const uint8_t *ip, *udp;
	size_t ihl, tot, ulen;

	if (!frame || !m || len < TS_HDRS_LEN)
		return -EINVAL;
	if (get16(f + 12) != 0x0800)
		return -EINVAL;
	ip = f + TS_ETH_HLEN;
	if ((ip[0] >> 4) != 4)
		return -EINVAL;
	ihl = (size_t)(ip[0] & 0xf) * 4;
	if (ihl < TS_IP_HLEN)
		return -EINVAL;
	tot = get16(ip + 2);
	if (tot < ihl + TS_UDP_HLEN || TS_ETH_HLEN + tot > len)
		return -EINVAL;
	if (get16(ip + 6) & 0x3fff) /* MF or a fragment offset */
		return -EINVAL;
	if (ip[9] != 17)
		return -EINVAL;
	udp = ip + ihl;
	ulen = get16(udp + 4);
	if (ulen < TS_UDP_HLEN || ulen > tot - ihl)
		return -EINVAL;
	memcpy(m->dmac, f, 6);
	memcpy(m->smac, f + 6, 6);
	memcpy(&m->saddr, ip + 12, 4);
	memcpy(&m->daddr, ip + 16, 4);
	memcpy(&m->sport, udp, 2);
	memcpy(&m->dport, udp + 2, 2);
	memcpy(&m->udp_csum, udp + 6, 2);
	m->ttl = ip[8];
	m->tos = ip[1];
	m->payload_off = (uint16_t)(udp + TS_UDP_HLEN - f);
	m->payload_len = (uint16_t)(ulen - TS_UDP_HLEN);
	return 0;
}

int ts_pkt__verify_csum(const void *frame, size_t len,
			const struct ts_udp_meta *m)
{
	const uint8_t *f = frame;
	const uint8_t *ip = f + TS_ETH_HLEN;
	size_t ihl = (size_t)(ip[0] & 0xf) * 4;
	size_t ulen = (size_t)m->payload_len + TS_UDP_HLEN;
	const uint8_t *udp = f + m->payload_off - TS_UDP_HLEN;
	uint32_t sum;

	if (TS_ETH_HLEN + ihl > len || m->payload_off + m->payload_len > len)
		return -EBADMSG;
	if (ts_csum__fold(ts_csum__partial(ip, ihl, 0)) != 0xffff)
		return -EBADMSG;
	if (m->udp_csum == 0)
		return 0;
	sum = udp_pseudo_sum(m->saddr, m->daddr, ulen);
	sum = ts_csum__partial(udp, ulen, sum);
	return ts_csum__fold(sum) == 0xffff ? 0 : -EBADMSG;
}

uint16_t ts_csum__udp_partial(uint32_t saddr, uint32_t daddr, size_t ulen)
{
	return htons(ts_csum__fold(udp_pseudo_sum(saddr, daddr, ulen)));
}

int ts_pkt__csum_is_partial(const struct ts_udp_meta *m)
{
	return m->udp_csum == ts_csum__udp_partial(m->saddr, m->daddr,
						   (size_t)m->payload_len + TS_UDP_HLEN);
}

int ts_pkt__build_udp(void *frame, size_t cap, size_t payload_len,
		      const struct ts_udp_hdr_spec *s)
{
	uint8_t *f = frame;
	uint8_t *ip = f + TS_ETH_HLEN;
	uint8_t *udp = ip + TS_IP_HLEN;
	size_t ulen = payload_len + TS_UDP_HLEN;
	size_t tot = ulen + TS_IP_HLEN;
	uint16_t v;

	if (!frame || !s)
		return -EINVAL;
	if (payload_len > 65507 || TS_ETH_HLEN + tot > cap)
		return -EMSGSIZE;
	memcpy(f, s->dmac, 6);
	memcpy(f + 6, s->smac, 6);
	f[12] = 0x08;
	f[13] = 0x00;
	ip[0] = 0x45;
	ip[1] = s->tos;
	ip[2] = (uint8_t)(tot >> 8);
	ip[3] = (uint8_t)tot;
	ip[4] = (uint8_t)(s->ip_id >> 8);
	ip[5] = (uint8_t)s->ip_id;
	ip[6] = 0x40; /* DF */
	ip[7] = 0;
	ip[8] = s->ttl;
	ip[9] = 17;
	ip[10] = 0;
	ip[11] = 0;
	memcpy(ip + 12, &s->saddr, 4);
	memcpy(ip + 16, &s->daddr, 4);
	v = ts_csum__ipv4(ip, TS_IP_HLEN);
	memcpy(ip + 10, &v, 2);
	memcpy(udp, &s->sport, 2);
	memcpy(udp + 2, &s->dport, 2);
	udp[4] = (uint8_t)(ulen >> 8);
	udp[5] = (uint8_t)ulen;
	udp[6] = 0;
	udp[7] = 0;
	if (s->udp_csum == TS_UDP_CSUM_PARTIAL) {
		v = ts_csum__udp_partial(s->saddr, s->daddr, ulen);
		memcpy(udp + 6, &v, 2);
	} else if (s->udp_csum) {
		v = ts_csum__udp(s->saddr, s->daddr, udp, ulen);
		memcpy(udp + 6, &v, 2);
	}
	return (int)(TS_ETH_HLEN + tot);
}

void ts_pkt__udp_tmpl_init(struct ts_udp_tmpl *t,
			   const struct ts_udp_hdr_spec *s)
{
	uint8_t ph[12];
	struct ts_udp_hdr_spec z = *s;

	z.ip_id = 0;
	z.udp_csum = 0;
	/* the fixed fields, with the length ones written too: cleared below */
	(void)ts_pkt__build_udp(t->hdr, sizeof(t->hdr), 0, &z);
	memset(t->hdr + TS_ETH_HLEN + 2, 0, 2);  /* total length */
	memset(t->hdr + TS_ETH_HLEN + 10, 0, 2); /* checksum */
	memset(t->hdr + TS_ETH_HLEN + TS_IP_HLEN + 4, 0, 2); /* UDP length */
	t->ip_sum = ts_csum__partial(t->hdr + TS_ETH_HLEN, TS_IP_HLEN, 0);
	memcpy(ph, &s->saddr, 4);
	memcpy(ph + 4, &s->daddr, 4);
	ph[8] = 0;
	ph[9] = 17;
	ph[10] = 0;
	ph[11] = 0;
	t->ph_sum = ts_csum__partial(ph, sizeof(ph), 0);
	t->saddr = s->saddr;
	t->daddr = s->daddr;
	t->udp_csum = s->udp_csum;
}

void ts_pkt__mcast_mac(uint32_t group, uint8_t mac[6])
{
	const uint8_t *g = (const uint8_t *)&group;

	mac[0] = 0x01;
	mac[1] = 0x00;
	mac[2] = 0x5e;
	mac[3] = g[1] & 0x7f;
	mac[4] = g[2];
	mac[5] = g[3];
}
