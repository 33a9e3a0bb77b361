package judge

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// The runner prints its results in its log between marker lines, so a controller can read them
// from the pod log without the termination message's 4 KiB cap. The compact JSON is cut into lines
// of at most LogChunkSize bytes (container runtimes split longer log lines), each line starting
// with LogChunkPrefix (anything before it, such as a timestamp, is ignored), and the begin line
// carries the SHA-256 and length of the whole document.
const (
	LogBeginMarker = "=== BEGIN TICKSTACK BENCH RESULTS"
	LogEndMarker   = "=== END TICKSTACK BENCH RESULTS ==="
	LogChunkPrefix = "@tsb@ "
	LogChunkSize   = 2048
)

// MarshalResults returns the compact JSON document.
func MarshalResults(r *tsv1.BenchmarkResults) ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encoding results: %w", err)
	}
	return b, nil
}

// UnmarshalResults decodes a document and checks its schema version.
func UnmarshalResults(b []byte) (*tsv1.BenchmarkResults, error) {
	var r tsv1.BenchmarkResults
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("decoding results: %w", err)
	}
	if r.SchemaVersion != tsv1.BenchmarkResultsSchemaVersion {
		return nil, fmt.Errorf("results schema %q, this build reads %q: run a matching runner image", r.SchemaVersion, tsv1.BenchmarkResultsSchemaVersion)
	}
	if err := readLegacyMicroburst(b, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// legacyMicroburst is the microburst result of a runner older than receive buffer sizes: one
// search, at the socket's default buffering, its answer beside the protocol.
type legacyMicroburst struct {
	Trials          []tsv1.BurstTrial `json:"trials"`
	MaxBurstPackets int64             `json:"maxBurstPackets"`
	BurstTimeNs     int64             `json:"burstTimeNs"`
	LimitReached    bool              `json:"limitReached"`
	Error           string            `json:"error"`
}

// readLegacyMicroburst reads an older runner's microburst result as the one row it is (the
// socket's default buffering, which that runner did not report), so that its answer is not lost.
func readLegacyMicroburst(b []byte, r *tsv1.BenchmarkResults) error {
	var legacy struct {
		Stacks []struct {
			Microburst *legacyMicroburst `json:"microburst"`
		} `json:"stacks"`
	}
	if err := json.Unmarshal(b, &legacy); err != nil {
		return fmt.Errorf("decoding results: %w", err)
	}
	for i, s := range legacy.Stacks {
		m, old := r.Stacks[i].Microburst, s.Microburst
		if m == nil || old == nil || len(m.Rows) > 0 || (len(old.Trials) == 0 && old.Error == "") {
			continue
		}
		m.Rows = []tsv1.MicroburstRow{{Buffering: &tsv1.ReceiveBuffering{Missing: "an older tickstack-bench measured this row at the socket's default buffering and reported none"},
			Trials: old.Trials, MaxBurstPackets: old.MaxBurstPackets, BurstTimeNs: old.BurstTimeNs, LimitReached: old.LimitReached, Error: old.Error}}
	}
	return nil
}

// WriteResultsFile writes the compact document to path atomically (temp file + rename).
func WriteResultsFile(path string, r *tsv1.BenchmarkResults) error {
	b, err := MarshalResults(r)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tsbench-*.json")
	if err != nil {
		return fmt.Errorf("writing results file: %w", err)
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("writing results file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing results file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing results file: %w", err)
	}
	return nil
}

// ReadResultsFile reads the document WriteResultsFile wrote to path.
func ReadResultsFile(path string) (*tsv1.BenchmarkResults, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading results file: %w", err)
	}
	return UnmarshalResults(b)
}

// WriteResultsLog prints the document between the marker lines.
func WriteResultsLog(w io.Writer, r *tsv1.BenchmarkResults) error {
	b, err := MarshalResults(r)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(b)
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "%s sha256=%s bytes=%d ===\n", LogBeginMarker, hex.EncodeToString(sum[:]), len(b))
	for len(b) > 0 {
		n := min(LogChunkSize, len(b))
		buf.WriteString(LogChunkPrefix)
		buf.Write(b[:n])
		buf.WriteByte('\n')
		b = b[n:]
	}
	buf.WriteString(LogEndMarker + "\n")
	_, err = w.Write(buf.Bytes())
	return err
}

// ReadResultsLog finds the last complete, intact results block in a pod log and decodes it.
func ReadResultsLog(r io.Reader) (*tsv1.BenchmarkResults, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	var (
		in       bool
		wantSum  string
		wantLen  int
		body     bytes.Buffer
		found    []byte
		problems []string
	)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, LogBeginMarker); i >= 0 {
			in, wantSum, wantLen = true, "", -1
			body.Reset()
			for _, f := range strings.Fields(line[i+len(LogBeginMarker):]) {
				if v, ok := strings.CutPrefix(f, "sha256="); ok {
					wantSum = v
				}
				if v, ok := strings.CutPrefix(f, "bytes="); ok {
					wantLen, _ = strconv.Atoi(v)
				}
			}
			continue
		}
		if !in {
			continue
		}
		if strings.Contains(line, LogEndMarker) {
			in = false
			sum := sha256.Sum256(body.Bytes())
			switch {
			case wantLen >= 0 && body.Len() != wantLen:
				problems = append(problems, fmt.Sprintf("block of %d bytes, marker says %d", body.Len(), wantLen))
			case hex.EncodeToString(sum[:]) != wantSum:
				problems = append(problems, "block checksum mismatch")
			default:
				found = append(found[:0], body.Bytes()...)
			}
			continue
		}
		if i := strings.Index(line, LogChunkPrefix); i >= 0 {
			body.WriteString(line[i+len(LogChunkPrefix):])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading runner log: %w", err)
	}
	if found == nil {
		if len(problems) > 0 {
			return nil, fmt.Errorf("runner log holds no intact results block: %s", strings.Join(problems, "; "))
		}
		return nil, fmt.Errorf("runner log holds no results block (%q ... %q): did the runner finish?", LogBeginMarker, LogEndMarker)
	}
	return UnmarshalResults(found)
}
