package judge

import (
	"fmt"
	"math/big"
)

// EthIPUDPOverhead is paper 002's "46 (Ethernet/IP/UDP Header Size)" added to each message.
const EthIPUDPOverhead = 46

// BurstTimeNs is paper 002's microburst time in nanoseconds:
//
//	Burst Time = (46 + UDP message size) x packets without drop x bit time x 8
//
// where the bit time is 1/link speed (0.1 ns at 10 Gb/s). The paper's example: (46+64) x 23000 x
// 0.1 ns x 8 = 2024000 ns. The result is rounded to the nearest nanosecond.
func BurstTimeNs(messageSize int32, packets int64, linkSpeedMbps int64) int64 {
	if linkSpeedMbps <= 0 || packets <= 0 || messageSize < 0 {
		return 0
	}
	// bits = (46+size)*packets*8; time = bits / (Mbps*1e6) s = bits*1000/Mbps ns.
	num := new(big.Int).Mul(big.NewInt(int64(EthIPUDPOverhead)+int64(messageSize)), big.NewInt(packets))
	num.Mul(num, big.NewInt(8000))
	den := big.NewInt(linkSpeedMbps)
	q, r := new(big.Int).QuoRem(num, den, new(big.Int))
	if new(big.Int).Mul(r, big.NewInt(2)).Cmp(den) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() {
		return 1<<63 - 1
	}
	return q.Int64()
}

// Ratio renders a/b as a decimal string with three decimals ("2.315"), the API's float-free form
// of a ratio; it returns "" when b is 0.
func Ratio(a, b int64) string {
	if b == 0 {
		return ""
	}
	r := new(big.Rat).SetFrac(big.NewInt(a), big.NewInt(b))
	return r.FloatString(3)
}

// ParseRatio reads a decimal string written by Ratio (or by a user: "1.5") as thousandths.
func ParseRatio(s string) (int64, error) {
	r, ok := new(big.Rat).SetString(s)
	if !ok || r.Sign() < 0 {
		return 0, fmt.Errorf("%q is not a non-negative decimal number such as \"1.5\"", s)
	}
	r.Mul(r, big.NewRat(1000, 1))
	f, _ := r.Float64()
	return int64(f + 0.5), nil
}
