package bmc

import (
	"testing"

	"github.com/tickstack/tickstack/internal/testutil"
)

// emulator is the test's sushy-tools Redfish emulator (testutil.StartRedfishEmulator).
type emulator struct {
	url string
	ca  []byte
}

// startSushy starts an emulator with TLS and basic auth for one test.
func startSushy(t *testing.T, user, password string) *emulator {
	t.Helper()
	e := testutil.StartRedfishEmulator(t, user, password)
	return &emulator{url: e.URL, ca: e.CA}
}
