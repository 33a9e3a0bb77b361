package agent

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A stream that fails is opened again, with a notification that makes the agent verify at once.
func TestKeepWatchingNICs(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opened := 0
	watch := func(context.Context) (<-chan string, error) {
		opened++
		switch opened {
		case 2:
			return nil, errors.New("no ethtool netlink family")
		case 1, 3:
			ch := make(chan string, 2)
			ch <- "eth" + string(rune('0'+opened))
			if opened == 1 {
				close(ch) // the socket failed
			}
			return ch, nil
		}
		t.Errorf("opened %d times", opened)
		return nil, errors.New("unexpected")
	}
	out := KeepWatchingNICs(ctx, watch, time.Millisecond)
	var got []string
	for len(got) < 3 {
		select {
		case n := <-out:
			got = append(got, n)
		case <-time.After(5 * time.Second):
			t.Fatalf("got %q", got)
		}
	}
	if got[0] != "eth1" || got[1] != "" || got[2] != "eth3" {
		t.Errorf("notifications %q, want eth1, a re-open marker, eth3", got)
	}
	cancel()
	for range out {
	}
}
