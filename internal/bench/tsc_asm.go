//go:build amd64 || arm64

package bench

// readTSC reads the counter sockperf takes its times from: the time stamp counter (RDTSC) on
// amd64, the virtual counter (CNTVCT_EL0) on arm64.
func readTSC() uint64

const haveTSC = true
