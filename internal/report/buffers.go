package report

import (
	"fmt"
	"strings"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
)

// The receive buffering in force is printed next to every burst figure and every rateSweep
// table (docs/benchmark-methods.md "Bounds, buffers and stalls"): the SO_RCVBUF asked for, what
// the kernel granted, net.core.rmem_default and rmem_max, and on the bypass stack its socket
// queue, UMEM frames and RX ring. A value the reflector could not read prints "?", never 0.

// unknownCell is a value the results do not hold.
const unknownCell = "?"

// RcvbufAsked names a requested receive buffer: its bytes, or "default" for none.
func RcvbufAsked(asked int64) string {
	if asked == 0 {
		return "default"
	}
	return fmt.Sprint(asked)
}

func known(v *int64) string {
	if v == nil {
		return unknownCell
	}
	return fmt.Sprint(*v)
}

// BufferingHead are the buffering columns' headings.
func BufferingHead(bypass bool) []string {
	h := []string{"SO_RCVBUF", "granted", "rmem_default", "rmem_max"}
	if bypass {
		h = append(h, "sockq", "UMEM frames", "RX ring")
	}
	return h
}

// BufferingCells are one row's buffering columns (BufferingHead).
func BufferingCells(asked int64, b *tsv1.ReceiveBuffering, bypass bool) []string {
	if b == nil {
		b = &tsv1.ReceiveBuffering{}
	}
	c := []string{RcvbufAsked(asked), known(b.GrantedBytes), known(b.RmemDefaultBytes), known(b.RmemMaxBytes)}
	if bypass {
		c = append(c, known(b.SocketQueueDatagrams), known(b.UMEMFrames), known(b.RXRingEntries))
	}
	return c
}

// BufferingText is the buffering in one sentence, for a table that has one setting (rateSweep).
func BufferingText(asked int64, b *tsv1.ReceiveBuffering, bypass bool) string {
	if b == nil {
		b = &tsv1.ReceiveBuffering{}
	}
	s := fmt.Sprintf("SO_RCVBUF %s, granted %s (net.core.rmem_default %s, rmem_max %s)", RcvbufAsked(asked), known(b.GrantedBytes), known(b.RmemDefaultBytes), known(b.RmemMaxBytes))
	if bypass {
		s += fmt.Sprintf("; socket queue %s datagrams, %s UMEM frames, RX ring %s", known(b.SocketQueueDatagrams), known(b.UMEMFrames), known(b.RXRingEntries))
	}
	return s
}

// BufferingNotes say what a reader of the buffering columns needs: why a value is unknown, a
// request the kernel capped at rmem_max, and that the bypass stack without a request bounds a
// socket's queue in datagrams only.
func BufferingNotes(asked int64, b *tsv1.ReceiveBuffering, bypass bool) []string {
	var out []string
	at := "SO_RCVBUF " + RcvbufAsked(asked)
	switch {
	case b == nil:
		out = append(out, at+": buffering unknown: the results carry none")
	case b.Missing != "":
		out = append(out, at+": unknown: "+b.Missing)
	}
	if b != nil && asked > 0 && b.GrantedBytes != nil && *b.GrantedBytes < 2*asked {
		out = append(out, fmt.Sprintf("%s: the kernel granted %d, less than twice the request: net.core.rmem_max (%s) caps SO_RCVBUF (sockperf does not force it)", at, *b.GrantedBytes, known(b.RmemMaxBytes)))
	}
	if bypass && asked == 0 {
		out = append(out, at+": on the bypass stack a socket without SO_RCVBUF queues up to its socket queue's datagrams whatever their size; the kernel's granted bytes do not bound it")
	}
	return out
}

// TrialsCell lists a microburst row's trials as burst:dropped, in the order they ran.
func TrialsCell(trials []tsv1.BurstTrial) string {
	if len(trials) == 0 {
		return "-"
	}
	parts := make([]string, len(trials))
	for i, t := range trials {
		parts[i] = fmt.Sprintf("%d:%d", t.Packets, t.Dropped)
	}
	return strings.Join(parts, ",")
}
