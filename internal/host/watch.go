package host

import (
	"context"
	"fmt"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
)

// WatchNICChanges reports, by interface name, every change of NIC settings the kernel announces
// on the ethtool netlink "monitor" group (channels, rings, coalescing, features, link modes...),
// whoever made it. It is the event half of drift detection for NIC settings; procfs and sysfs
// values have no such events and are checked periodically. netNS is a namespace descriptor (0:
// the caller's). The channel is closed when ctx ends or the socket fails.
func WatchNICChanges(ctx context.Context, netNS int) (<-chan string, error) {
	c, err := genetlink.Dial(&netlink.Config{NetNS: netNS})
	if err != nil {
		return nil, fmt.Errorf("ethtool netlink: %w", err)
	}
	fam, err := c.GetFamily("ethtool")
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("ethtool netlink family: %w", err)
	}
	joined := false
	for _, g := range fam.Groups {
		if g.Name == "monitor" {
			if err := c.JoinGroup(g.ID); err != nil {
				c.Close()
				return nil, fmt.Errorf("join ethtool monitor group: %w", err)
			}
			joined = true
		}
	}
	if !joined {
		c.Close()
		return nil, fmt.Errorf("ethtool netlink has no monitor group: %w", ErrUnsupported)
	}
	out := make(chan string, 16)
	stop := context.AfterFunc(ctx, func() { c.Close() })
	go func() {
		defer close(out)
		defer stop()
		defer c.Close()
		for {
			msgs, _, err := c.Receive()
			if err != nil {
				return
			}
			for _, m := range msgs {
				name := notifiedIfname(m.Data)
				if name == "" {
					continue
				}
				select {
				case out <- name:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out, nil
}

// notifiedIfname reads the device name from a notification's header attribute (attribute 1 of
// every ethtool message, nested).
func notifiedIfname(data []byte) string {
	ad, err := netlink.NewAttributeDecoder(data)
	if err != nil {
		return ""
	}
	name := ""
	for ad.Next() {
		if ad.Type() != ethtoolAHeader {
			continue
		}
		ad.Nested(func(nad *netlink.AttributeDecoder) error {
			for nad.Next() {
				if nad.Type() == ethtoolAHeaderDevName {
					name = nad.String()
				}
			}
			return nil
		})
	}
	return name
}
