package host

import (
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// NICGroup names one group of NIC parameters set through ethtool netlink.
type NICGroup string

// NIC parameter groups.
const (
	// Channels are queue counts: rx, tx, other, combined (ethtool -l/-L).
	Channels NICGroup = "channels"
	// Rings are descriptor ring sizes: rx, rx-mini, rx-jumbo, tx (ethtool -g/-G).
	Rings NICGroup = "rings"
	// Coalesce is interrupt coalescing: rx-usecs, rx-frames, tx-usecs, tx-frames, ...,
	// adaptive-rx, adaptive-tx (0 or 1) (ethtool -c/-C).
	Coalesce NICGroup = "coalesce"
)

// NIC reads and writes NIC parameters of one group. Parameter names follow the ethtool command
// line; reading also returns the driver's limits as "max-<name>" for channels and rings.
// A driver without the operation answers an error wrapping ErrUnsupported.
type NIC interface {
	NICParams(ifname string, group NICGroup) (map[string]uint32, error)
	SetNICParams(ifname string, group NICGroup, params map[string]uint32) error
}

// ethtool generic netlink commands and attributes (include/uapi/linux/ethtool_netlink.h).
const (
	ethtoolMsgRingsGet    = 15
	ethtoolMsgRingsSet    = 16
	ethtoolMsgChannelsGet = 17
	ethtoolMsgChannelsSet = 18
	ethtoolMsgCoalesceGet = 19
	ethtoolMsgCoalesceSet = 20

	ethtoolAHeaderDevName = 2
	ethtoolAHeader        = 1 // ETHTOOL_A_{RINGS,CHANNELS,COALESCE}_HEADER
)

type nicAttr struct {
	name string
	id   uint16
	u8   bool
}

type nicGroupSpec struct {
	get, set uint8
	attrs    []nicAttr
}

var nicSpecs = map[NICGroup]nicGroupSpec{
	Rings: {get: ethtoolMsgRingsGet, set: ethtoolMsgRingsSet, attrs: []nicAttr{
		{"max-rx", 2, false}, {"max-rx-mini", 3, false}, {"max-rx-jumbo", 4, false}, {"max-tx", 5, false},
		{"rx", 6, false}, {"rx-mini", 7, false}, {"rx-jumbo", 8, false}, {"tx", 9, false},
	}},
	Channels: {get: ethtoolMsgChannelsGet, set: ethtoolMsgChannelsSet, attrs: []nicAttr{
		{"max-rx", 2, false}, {"max-tx", 3, false}, {"max-other", 4, false}, {"max-combined", 5, false},
		{"rx", 6, false}, {"tx", 7, false}, {"other", 8, false}, {"combined", 9, false},
	}},
	Coalesce: {get: ethtoolMsgCoalesceGet, set: ethtoolMsgCoalesceSet, attrs: []nicAttr{
		{"rx-usecs", 2, false}, {"rx-frames", 3, false}, {"rx-usecs-irq", 4, false}, {"rx-frames-irq", 5, false},
		{"tx-usecs", 6, false}, {"tx-frames", 7, false}, {"tx-usecs-irq", 8, false}, {"tx-frames-irq", 9, false},
		{"stats-block-usecs", 10, false}, {"adaptive-rx", 11, true}, {"adaptive-tx", 12, true},
	}},
}

// NICParamNames lists the settable parameter names of a group (the "max-*" limits excluded).
func NICParamNames(group NICGroup) []string {
	var out []string
	for _, a := range nicSpecs[group].attrs {
		if len(a.name) < 4 || a.name[:4] != "max-" {
			out = append(out, a.name)
		}
	}
	slices.Sort(out)
	return out
}

// EthtoolNIC is the real NIC implementation: the kernel's ethtool generic netlink family, spoken
// through mdlayher/genetlink (mdlayher/ethtool v0.7.0 has no channels, rings or coalescing
// calls). Each call opens its own socket, so an EthtoolNIC is safe for concurrent use.
type EthtoolNIC struct {
	// NetNS is a file descriptor of the network namespace to operate in; 0 means the caller's.
	NetNS int
}

func (e *EthtoolNIC) exec(cmd uint8, data []byte, flags netlink.HeaderFlags) ([]genetlink.Message, error) {
	c, err := genetlink.Dial(&netlink.Config{NetNS: e.NetNS})
	if err != nil {
		return nil, fmt.Errorf("ethtool netlink: %w", err)
	}
	defer c.Close()
	fam, err := c.GetFamily("ethtool")
	if err != nil {
		return nil, fmt.Errorf("ethtool netlink family: %w", err)
	}
	return c.Execute(genetlink.Message{
		Header: genetlink.Header{Command: cmd, Version: fam.Version},
		Data:   data,
	}, fam.ID, flags)
}

func nicErr(ifname string, group NICGroup, op string, err error) error {
	if errors.Is(err, unix.EOPNOTSUPP) {
		return fmt.Errorf("%s %s %s: %w (the driver has no ethtool %s support): %v", ifname, op, group, ErrUnsupported, group, err)
	}
	if errors.Is(err, unix.ENODEV) {
		// Wrapping os.ErrNotExist lets the journal drop entries of interfaces that are gone.
		return fmt.Errorf("%s %s %s: no such interface: %w: %w", ifname, op, group, os.ErrNotExist, err)
	}
	return fmt.Errorf("%s %s %s: %w", ifname, op, group, err)
}

func encodeHeader(ae *netlink.AttributeEncoder, ifname string) {
	ae.Nested(ethtoolAHeader, func(nae *netlink.AttributeEncoder) error {
		nae.String(ethtoolAHeaderDevName, ifname)
		return nil
	})
}

// nicRequest checks the group and the interface name and starts a request's attributes with the
// interface's header.
func nicRequest(ifname string, group NICGroup) (nicGroupSpec, *netlink.AttributeEncoder, error) {
	spec, ok := nicSpecs[group]
	if !ok {
		return nicGroupSpec{}, nil, fmt.Errorf("NIC parameter group %q: use channels, rings or coalesce", group)
	}
	if err := checkIfname(ifname); err != nil {
		return nicGroupSpec{}, nil, err
	}
	ae := netlink.NewAttributeEncoder()
	encodeHeader(ae, ifname)
	return spec, ae, nil
}

// NICParams implements NIC.
func (e *EthtoolNIC) NICParams(ifname string, group NICGroup) (map[string]uint32, error) {
	spec, ae, err := nicRequest(ifname, group)
	if err != nil {
		return nil, err
	}
	b, err := ae.Encode()
	if err != nil {
		return nil, nicErr(ifname, group, "get", err)
	}
	msgs, err := e.exec(spec.get, b, netlink.Request)
	if err != nil {
		return nil, nicErr(ifname, group, "get", err)
	}
	if len(msgs) != 1 {
		return nil, fmt.Errorf("%s get %s: %d replies, want 1", ifname, group, len(msgs))
	}
	return decodeNICParams(spec, msgs[0].Data)
}

func decodeNICParams(spec nicGroupSpec, data []byte) (map[string]uint32, error) {
	ad, err := netlink.NewAttributeDecoder(data)
	if err != nil {
		return nil, err
	}
	out := map[string]uint32{}
	for ad.Next() {
		for _, a := range spec.attrs {
			if a.id != ad.Type() {
				continue
			}
			if a.u8 {
				out[a.name] = uint32(ad.Uint8())
			} else {
				out[a.name] = ad.Uint32()
			}
		}
	}
	return out, ad.Err()
}

// SetNICParams implements NIC: only the parameters in params are sent, the others keep their
// values.
func (e *EthtoolNIC) SetNICParams(ifname string, group NICGroup, params map[string]uint32) error {
	b, err := encodeNICSet(ifname, group, params)
	if err != nil {
		return err
	}
	if _, err := e.exec(nicSpecs[group].set, b, netlink.Request|netlink.Acknowledge); err != nil {
		return nicErr(ifname, group, "set", err)
	}
	return nil
}

func encodeNICSet(ifname string, group NICGroup, params map[string]uint32) ([]byte, error) {
	spec, ae, err := nicRequest(ifname, group)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(params))
	for n := range params {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		found := false
		for _, a := range spec.attrs {
			if a.name != n || (len(n) > 4 && n[:4] == "max-") {
				continue
			}
			found = true
			if a.u8 {
				ae.Uint8(a.id, uint8(params[n]))
			} else {
				ae.Uint32(a.id, params[n])
			}
		}
		if !found {
			return nil, fmt.Errorf("%s %s: unknown parameter %q (one of %v)", ifname, group, n, NICParamNames(group))
		}
	}
	return ae.Encode()
}

// nic returns h.NIC or an error wrapping ErrUnsupported when none is configured.
func (h *Host) nic() (NIC, error) {
	if h.NIC == nil {
		return nil, fmt.Errorf("NIC tuning: %w (no NIC implementation configured)", ErrUnsupported)
	}
	return h.NIC, nil
}

// NICParams reads a NIC parameter group through h.NIC.
func (h *Host) NICParams(ifname string, group NICGroup) (map[string]uint32, error) {
	n, err := h.nic()
	if err != nil {
		return nil, err
	}
	return n.NICParams(ifname, group)
}

// SetNICParams writes NIC parameters through h.NIC.
func (h *Host) SetNICParams(ifname string, group NICGroup, params map[string]uint32) error {
	n, err := h.nic()
	if err != nil {
		return err
	}
	return n.SetNICParams(ifname, group, params)
}
