package bmc

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tickstack/tickstack/internal/testutil"
)

// TestSushy runs the whole BIOS flow against a real Redfish server: sushy-tools 2.2.0 with libvirt's
// in-memory test:///default driver, over TLS with basic auth. One emulator serves the ordered
// subtests; each subtest leaves the BIOS in the state the next one expects.
//
// What sushy's libvirt driver does (read from sushy_tools/emulator/resources/systems/libvirtdriver.py
// and checked here): a PATCH to BIOS/Settings writes the attributes into the domain's XML metadata at
// once, and both BIOS and BIOS/Settings serve that same stored set. So a PATCHed value shows in the
// settings object and in the current attributes immediately, nothing is ever "pending" in the
// current-vs-settings sense, and a ComputerSystem.Reset (domain reboot/destroy+create) neither
// applies nor discards anything: the values survive it. Real BMCs stage the values and apply them at
// the reset; the pending logic is covered by the table tests in plan_test.go.
func TestSushy(t *testing.T) {
	const user = "tickstack-admin"
	password := "Sushy-" + rand.Text() // unique: any appearance in logs or errors is a leak
	e := startSushy(t, user, password)
	// every log line, to check that no credential is ever logged
	logs := &testutil.LogLines{}
	var errs []error // every error the package returned, checked for the password at the end
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	cfg := Config{Endpoint: e.url, Credentials: Credentials{Username: user, Password: password}, CABundle: e.ca,
		Timeout: 20 * time.Second, Log: logs.Logger(10)}
	c, err := Connect(ctx, cfg)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer c.Close()
	if c.Vendor() != VendorSushy || c.SystemID() == "" {
		t.Fatalf("system %q vendor %q", c.SystemID(), c.Vendor())
	}

	t.Run("registry and current values", func(t *testing.T) {
		st, err := c.ReadBIOS(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Registry == nil {
			t.Fatalf("no registry: %s", st.RegistryNote)
		}
		if st.RegistryID != "BiosAttributeRegistryP89.v1_0_0" || st.Registry.ID != st.RegistryID {
			t.Errorf("registry %q / %q", st.RegistryID, st.Registry.ID)
		}
		turbo := st.Registry.Attributes["ProcTurboMode"]
		if turbo.Type != TypeEnumeration || strings.Join(turbo.Values, ",") != "Enabled,Disabled" {
			t.Errorf("ProcTurboMode in registry: %+v", turbo)
		}
		if !st.Registry.Attributes["NumCores"].ReadOnly {
			t.Error("NumCores should be read-only in the registry")
		}
		if st.Current["ProcTurboMode"] != "Enabled" || st.Current["BootMode"] != "Uefi" {
			t.Errorf("current attributes %v", st.Current)
		}
		if !strings.HasSuffix(st.SettingsURI, "/BIOS/Settings") || len(st.Pending) != 0 {
			t.Errorf("settings %q pending %v", st.SettingsURI, st.Pending)
		}
	})

	t.Run("no registry: names checked against current attributes", func(t *testing.T) {
		// The emulator always has its registry; ask it for one it does not publish, as a Bios
		// resource naming a missing registry would.
		api, err := c.session(ctx, "test")
		if err != nil {
			t.Fatal(err)
		}
		reg, note, err := c.findRegistry(api, "BiosAttributeRegistryX1.v9_9_9")
		if err != nil || reg != nil || !strings.Contains(note, "is attribute registry BiosAttributeRegistryX1.v9_9_9") {
			t.Fatalf("registry %v, note %q, err %v", reg, note, err)
		}
		st, err := c.ReadBIOS(ctx)
		if err != nil {
			t.Fatal(err)
		}
		st.Registry, st.RegistryNote = nil, note
		if _, err := ComputePlan(st, Attributes{"ProcCStates": "Disabled"}); err == nil ||
			!strings.Contains(err.Error(), "publishes no attribute registry") {
			t.Errorf("unknown name without registry: %v", err)
		}
		if p, err := ComputePlan(st, Attributes{"ProcTurboMode": "Disabled"}); err != nil || !p.NeedsPatch() {
			t.Errorf("known name without registry: %v", err)
		}
	})

	t.Run("validation refuses before anything changes", func(t *testing.T) {
		_, err := c.Plan(ctx, Attributes{
			"ProcTurboMode": "Off",       // not in the enumeration
			"ProcCStates":   "Disabled",  // not in this BIOS
			"NumCores":      "12",        // read-only
			"QuietBoot":     "sometimes", // not a Boolean
		})
		errs = append(errs, err)
		t.Logf("validation: %v", err)
		var ve *ValidationError
		if !errors.As(err, &ve) || len(ve.Problems) != 4 {
			t.Fatalf("want 4 problems, got %v", err)
		}
		for _, want := range []string{
			`"ProcTurboMode": value "Off" is not allowed; allowed: Enabled, Disabled`,
			`"ProcCStates": unknown attribute`, `"NumCores": read-only`, `"QuietBoot": wrong type`,
			"BiosAttributeRegistryP89.v1_0_0",
		} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%q lacks %q", err, want)
			}
		}
		// The vendor preset for real servers names attributes this BIOS lacks: refused the same way.
		dell, _ := PresetFor(VendorDell)
		attrs, _ := dell.LowLatencyAttributes()
		if _, err := c.Plan(ctx, attrs); !errors.As(err, &ve) || !strings.Contains(err.Error(), `"ProcC1E": unknown attribute`) {
			t.Errorf("Dell preset on the emulator: %v", err)
		}
		st, err := c.ReadBIOS(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Current["ProcTurboMode"] != "Enabled" || st.Current["QuietBoot"] != "true" {
			t.Errorf("a refused plan changed the BIOS: %v", st.Current)
		}
	})

	wanted := Attributes{"QuietBoot": false}
	sushyPreset, _ := PresetFor(VendorSushy)
	turboOff, err := sushyPreset.Attributes(map[Knob]Setting{KnobTurbo: SettingDisabled})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range turboOff {
		wanted[k] = v
	}

	t.Run("patch shows in BIOS settings", func(t *testing.T) {
		p, err := c.Plan(ctx, wanted)
		if err != nil {
			t.Fatal(err)
		}
		if !p.NeedsPatch() || !p.ResetRequired || p.Changes[0].Action != ActionSet || p.Changes[1].Action != ActionSet {
			t.Fatalf("plan %s", p.Summary())
		}
		if err := c.Apply(ctx, p); err != nil {
			t.Fatal(err)
		}
		st, err := c.ReadBIOS(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Settings["ProcTurboMode"] != "Disabled" || st.Settings["QuietBoot"] != "false" {
			t.Errorf("BIOS/Settings after PATCH: %v", st.Settings)
		}
		// sushy applies at once (see the test's comment): current already shows it, nothing pending.
		if st.Current["ProcTurboMode"] != "Disabled" || len(st.Pending) != 0 {
			t.Errorf("current %v pending %v", st.Current, st.Pending)
		}
	})

	t.Run("reset", func(t *testing.T) {
		if err := c.Reset(ctx, ""); err != nil {
			t.Fatalf("GracefulRestart: %v", err)
		}
		err := c.Reset(ctx, "Bogus")
		errs = append(errs, err)
		if err == nil || !strings.Contains(err.Error(), `reset type "Bogus" not supported`) || !strings.Contains(err.Error(), "GracefulRestart") {
			t.Errorf("unsupported reset type: %v", err)
		}
		// A hard power cycle really acts on the libvirt domain: Off, then On again.
		if err := c.Reset(ctx, "ForceOff"); err != nil {
			t.Fatal(err)
		}
		waitPower(ctx, t, c, "Off")
		if err := c.Reset(ctx, "On"); err != nil {
			t.Fatal(err)
		}
		waitPower(ctx, t, c, "On")
	})

	t.Run("verify after reset", func(t *testing.T) {
		v, err := c.Verify(ctx, wanted)
		if err != nil {
			t.Fatal(err)
		}
		if !v.AllApplied() || len(v.Results) != 2 {
			t.Fatalf("verification %+v", v.Results)
		}
		for _, r := range v.Results {
			if r.Desired != r.Observed {
				t.Errorf("%+v", r)
			}
		}
		p, err := c.Plan(ctx, wanted)
		if err != nil || !p.InSync() {
			t.Errorf("plan after apply should be in sync (no second reboot): %v %v", p.Summary(), err)
		}
	})

	t.Run("drift", func(t *testing.T) {
		// Someone changes turbo behind the operator's back, with a plain Redfish PATCH.
		rawPatch(t, e, user, password, c.SystemID(), `{"Attributes":{"ProcTurboMode":"Enabled"}}`)
		v, err := c.Verify(ctx, wanted)
		if err != nil {
			t.Fatal(err)
		}
		d := v.Drifted()
		if v.AllApplied() || len(d) != 1 || d[0].Attribute != "ProcTurboMode" || d[0].Observed != "Enabled" || d[0].State != StateMismatch {
			t.Errorf("drift %+v", d)
		}
	})

	t.Run("TLS failure with the wrong CA", func(t *testing.T) {
		bad := cfg
		bad.CABundle = otherCA(t)
		_, err := Connect(ctx, bad)
		errs = append(errs, err)
		t.Logf("wrong CA: %v", err)
		var be *Error
		if !errors.Is(err, ErrTLS) || !errors.As(err, &be) || be.Kind != KindTLS {
			t.Fatalf("want a TLS error, got %v", err)
		}
		if !strings.Contains(err.Error(), "unknown authority") || !strings.Contains(err.Error(), e.url) {
			t.Errorf("message %q", err)
		}
	})

	t.Run("explicit trust choices and system selection", func(t *testing.T) {
		insecure := cfg
		insecure.CABundle, insecure.InsecureSkipVerify = nil, true
		ci, err := Connect(ctx, insecure)
		if err != nil {
			t.Fatalf("InsecureSkipVerify: %v", err)
		}
		ci.Close()
		none := cfg
		none.CABundle = nil
		_, err = Connect(ctx, none)
		errs = append(errs, err)
		if !errors.Is(err, ErrConfig) {
			t.Errorf("no trust choice: %v", err)
		}
		byID := cfg
		byID.SystemID = c.SystemID()
		if cs, err := Connect(ctx, byID); err != nil || cs.SystemID() != c.SystemID() {
			t.Errorf("system by Id: %v", err)
		}
		byID.SystemID = "no-such-system"
		_, err = Connect(ctx, byID)
		errs = append(errs, err)
		if err == nil || !strings.Contains(err.Error(), c.SystemID()) {
			t.Errorf("unknown system should list the real ones: %v", err)
		}
	})

	t.Run("401 with a wrong password", func(t *testing.T) {
		bad := cfg
		bad.Credentials.Password = password + "-wrong"
		_, err := Connect(ctx, bad)
		errs = append(errs, err)
		t.Logf("wrong password: %v", err)
		var be *Error
		if !errors.Is(err, ErrAuth) || !errors.As(err, &be) || be.StatusCode != 401 {
			t.Fatalf("want an authentication error with 401, got %v", err)
		}
		if strings.Contains(err.Error(), bad.Credentials.Password) {
			t.Errorf("error shows the wrong password: %q", err)
		}
	})

	t.Run("unreachable", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		_ = l.Close()
		bad := cfg
		bad.Endpoint = "https://" + addr
		_, err = Connect(ctx, bad)
		errs = append(errs, err)
		t.Logf("unreachable: %v", err)
		if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "connection refused") {
			t.Fatalf("want unreachable, got %v", err)
		}
	})

	// Credentials never appear in logs or errors.
	if len(logs.Lines()) == 0 {
		t.Error("nothing was logged: the capture is not wired")
	}
	all := strings.Join(logs.Lines(), "\n")
	for _, err := range errs {
		if err != nil {
			all += "\n" + err.Error()
		}
	}
	for _, secret := range []string{password, basicAuthToken(user, password)} {
		if strings.Contains(all, secret) {
			t.Errorf("a credential appears in logs or errors:\n%s", all)
		}
	}
}

func waitPower(ctx context.Context, t *testing.T, c *Client, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, err := c.PowerState(ctx)
		if err == nil && got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("power state %q (%v), want %q", got, err, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// rawPatch changes BIOS settings without this package, as an administrator would.
func rawPatch(t *testing.T, e *emulator, user, password, system, body string) {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(e.ca)
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	req, err := http.NewRequest(http.MethodPatch, e.url+"/redfish/v1/Systems/"+system+"/BIOS/Settings", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(user, password)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("raw PATCH: %s", resp.Status)
	}
}

// otherCA is a CA that did not sign the emulator's certificate.
func otherCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "not the BMC's CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
