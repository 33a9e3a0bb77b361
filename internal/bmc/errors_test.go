package bmc

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"

	"github.com/stmcginnis/gofish/common"
)

const testSecret = "pa55-W0rd!zz"

func TestClassify(t *testing.T) {
	s := newScrubber("admin", testSecret)
	redfish401 := common.ConstructError(401, []byte(`{"error":{"message":"Authorization required"}}`))
	redfish400 := common.ConstructError(400, []byte(`{"error":{"message":"bad value `+testSecret+`"}}`))
	coll := common.NewCollectionError()
	coll.Failures["/redfish/v1/Systems/2"] = redfish401
	coll.Failures["/redfish/v1/Systems/1"] = redfish401
	tests := []struct {
		name     string
		err      error
		kind     ErrorKind
		sentinel error
		contains string
	}{
		{"401", redfish401, KindAuth, ErrAuth, "authentication failed (HTTP 401)"},
		{"unknown CA", &url.Error{Op: "Get", URL: "https://x/redfish/v1/", Err: x509.UnknownAuthorityError{}}, KindTLS, ErrTLS, "unknown authority"},
		{"not TLS", &url.Error{Op: "Get", URL: "https://x/", Err: tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}}, KindTLS, ErrTLS, "does not answer TLS"},
		{"refused", &url.Error{Op: "Get", URL: "https://x/", Err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}}, KindUnreachable, ErrUnreachable, "connection refused"},
		{"401 inside a collection", coll, KindAuth, ErrAuth, "HTTP 401"},
		{"protocol error scrubbed", redfish400, KindProtocol, ErrProtocol, "HTTP 400: bad value <redacted>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := classify("https://x", "op", fmt.Errorf("wrapped: %w", tt.err), s)
			var e *Error
			if !errors.As(err, &e) || e.Kind != tt.kind {
				t.Fatalf("got %T %v, want kind %s", err, err, tt.kind)
			}
			if !errors.Is(err, tt.sentinel) {
				t.Errorf("errors.Is(%v, %v) is false", err, tt.sentinel)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("%q lacks %q", err, tt.contains)
			}
			if strings.Contains(err.Error(), testSecret) {
				t.Errorf("error shows the password: %q", err)
			}
		})
	}
}

func TestCheckConfig(t *testing.T) {
	creds := Credentials{Username: "admin", Password: testSecret}
	tests := []struct {
		name     string
		cfg      Config
		contains string
	}{
		{"no trust choice", Config{Endpoint: "https://bmc", Credentials: creds}, "exactly one of CABundle"},
		{"two trust choices", Config{Endpoint: "https://bmc", Credentials: creds, SystemRoots: true, InsecureSkipVerify: true}, "exactly one"},
		{"plain http", Config{Endpoint: "http://bmc", Credentials: creds}, "AllowPlainHTTP"},
		{"credentials in URL", Config{Endpoint: "https://admin:" + testSecret + "@bmc", Credentials: creds, SystemRoots: true}, "must not carry credentials"},
		{"no password", Config{Endpoint: "https://bmc", Credentials: Credentials{Username: "admin"}, SystemRoots: true}, "password"},
		{"not a URL", Config{Endpoint: "bmc-7", Credentials: creds, SystemRoots: true}, "absolute"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := checkConfig(tt.cfg)
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.contains) {
				t.Fatalf("got %v, want a config error containing %q", err, tt.contains)
			}
			if strings.Contains(err.Error(), testSecret) {
				t.Errorf("error shows the password: %q", err)
			}
		})
	}
	if ep, err := checkConfig(Config{Endpoint: "https://bmc:8443/", Credentials: creds, InsecureSkipVerify: true}); err != nil || ep != "https://bmc:8443" {
		t.Errorf("valid config: %q, %v", ep, err)
	}
}

func TestCredentialsNeverPrint(t *testing.T) {
	cfg := Config{Endpoint: "https://bmc", Credentials: Credentials{Username: "admin", Password: testSecret}}
	for _, out := range []string{fmt.Sprint(cfg), fmt.Sprintf("%v %+v %#v %s", cfg, cfg, cfg, cfg.Credentials)} {
		if strings.Contains(out, testSecret) {
			t.Errorf("formatted config shows the password: %s", out)
		}
		if !strings.Contains(out, "admin") {
			t.Errorf("formatted config lost the user name: %s", out)
		}
	}
}
