// SPDX-License-Identifier: Apache-2.0
/* test_pkt.c - unit tests for header building, parsing and checksums.
 * Known-answer vectors are computed independently (RFC 1071 examples and
 * a frame whose checksums were checked with the kernel: a kernel UDP
 * socket accepted it over veth). Built with ASan/UBSan by make test. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "pkt.h"

static void test_rfc1071(void)
{
	/* RFC 1071 section 3 example: 00 01 f2 03 f4 f5 f6 f7 -> sum ddf2 */
	static const unsigned char d[] = { 0x00, 0x01, 0xf2, 0x03,
					   0xf4, 0xf5, 0xf6, 0xf7 };

	CHECK(ts_csum__fold(ts_csum__partial(d, sizeof(d), 0)) == 0xddf2,
	      "got %04x", ts_csum__fold(ts_csum__partial(d, sizeof(d), 0)));
	/* odd length: the last byte is padded with a zero: 0001 + f200 */
	CHECK(ts_csum__fold(ts_csum__partial(d, 3, 0)) == 0xf201,
	      "got %04x", ts_csum__fold(ts_csum__partial(d, 3, 0)));
}

/* The word-at-a-time sum must equal the plain RFC 1071 loop for every
 * length and alignment. */
static void test_csum_reference(void)
{
	static unsigned char b[9100];
	size_t off, len, i;

	for (i = 0; i < sizeof(b); i++)
		b[i] = (unsigned char)(i * 37 + 11 + (i >> 8));
	for (off = 0; off < 8; off++) {
		/* every length around the 32- and 8-byte steps, then jumps up
		 * to a 9,000-byte frame */
		for (len = 0; len + off <= sizeof(b);
		     len += len < 300 ? 1 : len < 1600 ? 13 : 997) {
			uint32_t ref = 0;

			for (i = 0; i + 1 < len; i += 2)
				ref += (uint32_t)((b[off + i] << 8) | b[off + i + 1]);
			if (len & 1)
				ref += (uint32_t)(b[off + len - 1] << 8);
			CHECK(ts_csum__fold(ts_csum__partial(b + off, len, 0)) ==
				      ts_csum__fold(ref),
			      "off %zu len %zu", off, len);
		}
	}
	memset(b, 0xff, sizeof(b));
	CHECK(ts_csum__fold(ts_csum__partial(b, 64, 0xffff)) == 0xffff, "all ones");
	CHECK(ts_csum__fold(ts_csum__partial(b, 9000, 0xffff)) == 0xffff,
	      "all ones, 9000 bytes");
}

static void test_ipv4_known(void)
{
	/* Classic example header (Wikipedia "IPv4 header checksum"):
	 * 4500 0073 0000 4000 4011 [b861] c0a8 0001 c0a8 00c7 */
	unsigned char h[20] = { 0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40,
				0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
				0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7 };
	uint16_t c = ts_csum__ipv4(h, 20);

	CHECK(ntohs(c) == 0xb861, "got %04x", ntohs(c));
	memcpy(h + 10, &c, 2);
	CHECK(ts_csum__fold(ts_csum__partial(h, 20, 0)) == 0xffff,
	      "header with checksum does not verify");
}

static struct ts_udp_hdr_spec spec(void)
{
	struct ts_udp_hdr_spec s;
	static const uint8_t dm[6] = { 0x02, 0, 0, 0, 0, 2 };
	static const uint8_t sm[6] = { 0x02, 0, 0, 0, 0, 1 };

	memset(&s, 0, sizeof(s));
	memcpy(s.dmac, dm, 6);
	memcpy(s.smac, sm, 6);
	s.saddr = inet_addr("198.18.0.1");
	s.daddr = inet_addr("198.18.0.2");
	s.sport = htons(40000);
	s.dport = htons(11111);
	s.ip_id = 0x1234;
	s.ttl = 64;
	s.udp_csum = 1;
	return s;
}

static void test_build_parse_roundtrip(void)
{
	unsigned char f[2048];
	size_t sizes[] = { 0, 1, 14, 64, 255, 1472 };
	size_t i, j;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct ts_udp_hdr_spec s = spec();
		struct ts_udp_meta m;
		int n;

		for (j = 0; j < sizes[i]; j++)
			f[TS_HDRS_LEN + j] = (unsigned char)(j * 7 + i);
		n = ts_pkt__build_udp(f, sizeof(f), sizes[i], &s);
		CHECK(n == (int)(TS_HDRS_LEN + sizes[i]), "len %d", n);
		CHECK(ts_pkt__parse_udp(f, (size_t)n, &m) == 0, "parse");
		CHECK(m.saddr == s.saddr && m.daddr == s.daddr, "addresses");
		CHECK(m.sport == s.sport && m.dport == s.dport, "ports");
		CHECK(m.payload_len == sizes[i], "payload len %u", m.payload_len);
		CHECK(m.payload_off == TS_HDRS_LEN, "payload off");
		CHECK(!memcmp(m.dmac, s.dmac, 6) && !memcmp(m.smac, s.smac, 6), "macs");
		CHECK(m.ttl == 64, "ttl");
		CHECK(f[20] == 0x40 && f[21] == 0, "DF set, no offset");
		CHECK(ts_pkt__verify_csum(f, (size_t)n, &m) == 0,
		      "checksums do not verify for size %zu", sizes[i]);
		/* a flipped payload bit must break the UDP checksum */
		if (sizes[i]) {
			f[TS_HDRS_LEN] ^= 1;
			CHECK(ts_pkt__verify_csum(f, (size_t)n, &m) == -EBADMSG,
			      "corruption not detected");
			f[TS_HDRS_LEN] ^= 1;
		}
		/* zero UDP checksum: legal, not verified */
		s.udp_csum = 0;
		n = ts_pkt__build_udp(f, sizeof(f), sizes[i], &s);
		CHECK(f[40] == 0 && f[41] == 0, "udp csum not zero");
		CHECK(ts_pkt__parse_udp(f, (size_t)n, &m) == 0 &&
			      ts_pkt__verify_csum(f, (size_t)n, &m) == 0,
		      "zero checksum frame");
	}
}

/* A destination's prepared headers (struct ts_udp_tmpl, the send path's
 * memo) write, for every length and identification, the bytes
 * ts_pkt__build_udp writes: each checksum mode, TOS and TTL, lengths
 * whose sums carry, identifications at the edges. */
static void test_tmpl_matches_build(void)
{
	static unsigned char a[65600], b[65600];
	size_t sizes[] = { 0, 1, 2, 13, 14, 63, 64, 255, 256, 1024, 1471, 1472,
			   8972, 65507 };
	uint16_t ids[] = { 0, 1, 0x00ff, 0x7fff, 0x8000, 0xfffe, 0xffff };
	int modes[] = { 0, 1, TS_UDP_CSUM_PARTIAL };
	uint32_t saddrs[] = { 0x0100a8c0u, 0xffffffffu, 0 };
	size_t i, j, k, l, x;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (j = 0; j < sizeof(ids) / sizeof(ids[0]); j++)
			for (k = 0; k < sizeof(modes) / sizeof(modes[0]); k++)
				for (l = 0; l < sizeof(saddrs) / sizeof(saddrs[0]); l++) {
					struct ts_udp_hdr_spec s = spec();
					struct ts_udp_tmpl t;
					int n, m;

					s.udp_csum = modes[k];
					s.saddr = saddrs[l];
					s.tos = (uint8_t)(0xb8 + j);
					s.ttl = (uint8_t)(255 - i);
					for (x = 0; x < sizes[i]; x++)
						a[TS_HDRS_LEN + x] = b[TS_HDRS_LEN + x] =
							(unsigned char)(x * 13 + j);
					ts_pkt__udp_tmpl_init(&t, &s);
					s.ip_id = ids[j];
					n = ts_pkt__build_udp(a, sizeof(a), sizes[i], &s);
					m = ts_pkt__udp_tmpl_put(b, &t, sizes[i], ids[j]);
					CHECK(n == m && !memcmp(a, b, TS_HDRS_LEN),
					      "template differs: size %zu id %u mode %d",
					      sizes[i], ids[j], modes[k]);
				}
}

/* What the receive path takes (stack.c's rx_csum_ok): the partial UDP
 * checksum with a good IPv4 header, or every checksum verified. */
static int csum_ok_ref(const unsigned char *f, size_t len,
		       const struct ts_udp_meta *m)
{
	struct ts_udp_meta ip_only = *m;

	ip_only.udp_csum = 0;
	if (m->udp_csum && ts_pkt__csum_is_partial(m) &&
	    !ts_pkt__verify_csum(f, len, &ip_only))
		return 1;
	return !ts_pkt__verify_csum(f, len, m);
}

/* The inline receive check takes a frame only when the full one would,
 * and takes the partial and the zero checksum of a good header: every
 * single-bit corruption of the IPv4 and UDP headers, each mode. */
static void test_csum_fast(void)
{
	static unsigned char f[2048];
	size_t sizes[] = { 0, 1, 14, 64, 255, 1472 };
	int modes[] = { 0, 1, TS_UDP_CSUM_PARTIAL };
	size_t i, k, bit, x;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (k = 0; k < sizeof(modes) / sizeof(modes[0]); k++) {
			struct ts_udp_hdr_spec s = spec();
			struct ts_udp_meta m;
			int n;

			s.udp_csum = modes[k];
			s.ip_id = (uint16_t)(i * 4099 + k);
			for (x = 0; x < sizes[i]; x++)
				f[TS_HDRS_LEN + x] = (unsigned char)(x * 5 + k);
			n = ts_pkt__build_udp(f, sizeof(f), sizes[i], &s);
			CHECK(n > 0 && !ts_pkt__parse_udp(f, (size_t)n, &m), "parse");
			CHECK(ts_pkt__csum_fast_ok(f, &m) == (modes[k] != 1),
			      "good frame, mode %d size %zu", modes[k], sizes[i]);
			for (bit = TS_ETH_HLEN * 8; bit < TS_HDRS_LEN * 8; bit++) {
				f[bit / 8] ^= (unsigned char)(1u << (bit % 8));
				if (!ts_pkt__parse_udp(f, (size_t)n, &m) &&
				    ts_pkt__csum_fast_ok(f, &m))
					CHECK(csum_ok_ref(f, (size_t)n, &m),
					      "taken, refused by the full check: bit %zu mode %d",
					      bit, modes[k]);
				f[bit / 8] ^= (unsigned char)(1u << (bit % 8));
			}
		}
}

static void test_known_udp(void)
{
	/* UDP checksum computed by hand for: 198.18.0.1:40000 ->
	 * 198.18.0.2:11111, payload "hi" (2 bytes).
	 * pseudo: c612 0001 c612 0002 0011 000a; udp: 9c40 2b67 000a 0000 6869
	 * sum = c612+0001+c612+0002+0011+000a+9c40+2b67+000a+6869 = 0x2bc5c
	 * fold -> bc5e, ~ -> 43a1 */
	unsigned char f[64];
	struct ts_udp_hdr_spec s = spec();

	memcpy(f + TS_HDRS_LEN, "hi", 2);
	CHECK(ts_pkt__build_udp(f, sizeof(f), 2, &s) == TS_HDRS_LEN + 2, "build");
	CHECK(f[40] == 0x43 && f[41] == 0xa1, "udp csum %02x%02x", f[40], f[41]);
}

/* A frame of a local kernel socket over veth carries the unfinished
 * offload checksum (the folded pseudo-header sum): recognised as such, and
 * neither a full checksum nor a corrupted one is taken for it. */
static void test_csum_partial(void)
{
	struct ts_udp_hdr_spec s = { .saddr = htonl(0xc6120a01),
				     .daddr = htonl(0xc6120a02),
				     .sport = htons(1000), .dport = htons(2000),
				     .ttl = 64, .udp_csum = 1 };
	uint8_t f[256] = { 0 };
	struct ts_udp_meta m;
	uint8_t ph[12];
	uint16_t seed;
	int n;

	memcpy(f + TS_HDRS_LEN, "partial!", 8);
	n = ts_pkt__build_udp(f, sizeof(f), 8, &s);
	CHECK(ts_pkt__parse_udp(f, (size_t)n, &m) == 0, "parse");
	CHECK(!ts_pkt__csum_is_partial(&m), "a full checksum is not partial");
	memcpy(ph, &s.saddr, 4);
	memcpy(ph + 4, &s.daddr, 4);
	ph[8] = 0;
	ph[9] = 17;
	ph[10] = 0;
	ph[11] = 16; /* UDP length */
	seed = htons(ts_csum__fold(ts_csum__partial(ph, 12, 0)));
	memcpy(f + 40, &seed, 2);
	CHECK(ts_pkt__parse_udp(f, (size_t)n, &m) == 0, "parse partial");
	CHECK(ts_pkt__csum_is_partial(&m), "the offload seed is partial");
	CHECK(ts_pkt__verify_csum(f, (size_t)n, &m) == -EBADMSG,
	      "the seed is no valid full checksum");
	seed ^= htons(1);
	memcpy(f + 40, &seed, 2);
	CHECK(ts_pkt__parse_udp(f, (size_t)n, &m) == 0, "parse corrupted");
	CHECK(!ts_pkt__csum_is_partial(&m), "a corrupted checksum is not partial");
}

/* A datagram built for the interface to finish (TS_UDP_CSUM_PARTIAL)
 * carries the pseudo-header sum, as a kernel sender's; finished as a NIC or
 * the kernel's skb_checksum_help does (the ones' complement of the sum from
 * the UDP header on, the field included), it is the full checksum. */
static void test_csum_offload_build(void)
{
	size_t sizes[] = { 0, 1, 2, 14, 255, 1472 };
	unsigned char f[2048], g[2048];
	size_t i, j;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		struct ts_udp_hdr_spec s = spec();
		struct ts_udp_meta m;
		uint16_t fin;
		int n;

		for (j = 0; j < sizes[i]; j++)
			f[TS_HDRS_LEN + j] = g[TS_HDRS_LEN + j] = (unsigned char)(j * 13 + i);
		n = ts_pkt__build_udp(g, sizeof(g), sizes[i], &s); /* full */
		s.udp_csum = TS_UDP_CSUM_PARTIAL;
		CHECK(ts_pkt__build_udp(f, sizeof(f), sizes[i], &s) == n, "len");
		CHECK(ts_pkt__parse_udp(f, (size_t)n, &m) == 0, "parse");
		CHECK(ts_pkt__csum_is_partial(&m), "size %zu: not the partial sum", sizes[i]);
		CHECK(!memcmp(f, g, 40) && !memcmp(f + 42, g + 42, (size_t)n - 42),
		      "only the checksum field differs");
		fin = htons((uint16_t)~ts_csum__fold(ts_csum__partial(f + TS_ETH_HLEN + TS_IP_HLEN,
								      (size_t)n - TS_ETH_HLEN - TS_IP_HLEN, 0)));
		if (!fin)
			fin = 0xffff;
		CHECK(!memcmp(&fin, g + 40, 2), "size %zu: finished %04x, full %02x%02x",
		      sizes[i], ntohs(fin), g[40], g[41]);
	}
}

static void test_parse_rejects(void)
{
	unsigned char f[128], g[128];
	struct ts_udp_hdr_spec s = spec();
	struct ts_udp_meta m;
	int n = ts_pkt__build_udp(f, sizeof(f), 20, &s);

	CHECK(ts_pkt__parse_udp(f, (size_t)n - 1, &m) == -EINVAL, "truncated");
	CHECK(ts_pkt__parse_udp(f, 10, &m) == -EINVAL, "tiny");
	CHECK(ts_pkt__parse_udp(NULL, 10, &m) == -EINVAL, "null");
	memcpy(g, f, (size_t)n);
	g[12] = 0x86; g[13] = 0xdd; /* IPv6 ethertype */
	CHECK(ts_pkt__parse_udp(g, (size_t)n, &m) == -EINVAL, "ethertype");
	memcpy(g, f, (size_t)n);
	g[23] = 6; /* TCP */
	CHECK(ts_pkt__parse_udp(g, (size_t)n, &m) == -EINVAL, "protocol");
	memcpy(g, f, (size_t)n);
	g[20] = 0x20; /* MF: a fragment */
	CHECK(ts_pkt__parse_udp(g, (size_t)n, &m) == -EINVAL, "fragment");
	memcpy(g, f, (size_t)n);
	g[21] = 0x10; /* fragment offset */
	CHECK(ts_pkt__parse_udp(g, (size_t)n, &m) == -EINVAL, "offset");
	memcpy(g, f, (size_t)n);
	g[14] = 0x44; /* IHL 4 */
	CHECK(ts_pkt__parse_udp(g, (size_t)n, &m) == -EINVAL, "ihl");
	memcpy(g, f, (size_t)n);
	g[14] = 0x65; /* version 6 */
	CHECK(ts_pkt__parse_udp(g, (size_t)n, &m) == -EINVAL, "version");
	memcpy(g, f, (size_t)n);
	g[38] = 0; g[39] = 4; /* UDP length below the header */
	CHECK(ts_pkt__parse_udp(g, (size_t)n, &m) == -EINVAL, "udp len");
	memcpy(g, f, (size_t)n);
	g[38] = 0x10; /* UDP length beyond the IP datagram */
	CHECK(ts_pkt__parse_udp(g, (size_t)n, &m) == -EINVAL, "udp len big");
	memcpy(g, f, (size_t)n);
	g[16] = 0x10; /* IP total length beyond the frame */
	CHECK(ts_pkt__parse_udp(g, (size_t)n, &m) == -EINVAL, "ip len");
	/* IP options: IHL 6 is accepted, the payload offset follows */
	{
		unsigned char h[128];

		memcpy(h, f, 34);
		h[14] = 0x46;
		h[16] = 0; h[17] = (unsigned char)(24 + 8 + 20);
		memset(h + 34, 1, 4); /* 4 bytes of options (NOPs) */
		memcpy(h + 38, f + 34, 8 + 20);
		CHECK(ts_pkt__parse_udp(h, (size_t)n + 4, &m) == 0 &&
			      m.payload_off == TS_HDRS_LEN + 4,
		      "options: off %u", m.payload_off);
	}
}

static void test_build_limits(void)
{
	unsigned char f[100];
	struct ts_udp_hdr_spec s = spec();

	CHECK(ts_pkt__build_udp(f, sizeof(f), 100, &s) == -EMSGSIZE, "cap");
	CHECK(ts_pkt__build_udp(f, 1u << 20, 65508, &s) == -EMSGSIZE, "65507");
	CHECK(ts_pkt__build_udp(NULL, 100, 1, &s) == -EINVAL, "null");
}

static void test_mcast_mac(void)
{
	uint8_t m[6];

	ts_pkt__mcast_mac(inet_addr("239.198.18.1"), m);
	/* 239.198.18.1: low 23 bits 0x46 0x12 0x01 -> 01:00:5e:46:12:01 */
	CHECK(m[0] == 1 && m[1] == 0 && m[2] == 0x5e && m[3] == 0x46 &&
		      m[4] == 0x12 && m[5] == 0x01,
	      "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

int main(void)
{
	test_rfc1071();
	test_csum_reference();
	test_ipv4_known();
	test_known_udp();
	test_build_parse_roundtrip();
	test_tmpl_matches_build();
	test_csum_fast();
	test_parse_rejects();
	test_csum_partial();
	test_csum_offload_build();
	test_build_limits();
	test_mcast_mac();
	return check_exit("test_pkt");
}
