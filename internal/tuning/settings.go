package tuning

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tickstack/tickstack/internal/host/cpuset"
)

// Absent is the journaled original of a setting that did not exist (an unset irqbalance
// variable): restoring it removes the setting.
const Absent = "<absent>"

// setting is one value on the host, addressed by a stable name such as "sysctl/vm.stat_interval"
// or "irq/26". read returns the value in canonical form; inSync compares a desired value with
// an observed one (equality unless the setting says otherwise).
type setting struct {
	read   func() (string, error)
	write  func(string) error
	inSync func(desired, observed string) bool
	// canon puts a desired value in the form read returns.
	canon func(string) (string, error)
}

func equal(d, o string) bool { return d == o }

func identity(v string) (string, error) { return v, nil }

func canonList(v string) (string, error) {
	s, err := cpuset.Parse(v)
	if err != nil {
		return "", err
	}
	return s.String(), nil
}

func atoiSetting(read func() (int, error), write func(int) error) setting {
	return setting{
		read: func() (string, error) {
			n, err := read()
			return strconv.Itoa(n), err
		},
		write: func(v string) error {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("%q is not an integer", v)
			}
			return write(n)
		},
		inSync: equal,
		canon: func(v string) (string, error) {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			return strconv.Itoa(n), err
		},
	}
}

func setSetting(read func() (cpuset.Set, error), write func(cpuset.Set) error) setting {
	return setting{
		read: func() (string, error) {
			s, err := read()
			return s.String(), err
		},
		write: func(v string) error {
			s, err := cpuset.Parse(v)
			if err != nil {
				return err
			}
			return write(s)
		},
		inSync: equal,
		canon:  canonList,
	}
}
