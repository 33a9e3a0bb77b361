package bmc

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/redfish"
)

// Credentials are the BMC account used for HTTP basic authentication. Their String and GoString
// methods hide the password, so printing a Config or Credentials with %v or %#v is safe.
type Credentials struct {
	// Username is the BMC account name.
	Username string
	// Password is the account's password. It is sent only in the Authorization header of requests
	// to the configured endpoint's host, and never logged nor put into errors.
	Password string
}

// String implements fmt.Stringer without the password.
func (c Credentials) String() string {
	return fmt.Sprintf("{Username:%s Password:<redacted>}", c.Username)
}

// GoString implements fmt.GoStringer without the password.
func (c Credentials) GoString() string { return "bmc.Credentials" + c.String() }

// Config says how to reach one BMC. The TLS trust choice is explicit for https endpoints: exactly one
// of CABundle, SystemRoots or InsecureSkipVerify must be set.
type Config struct {
	// Endpoint is the BMC's base URL, for example https://bmc-7.example or https://127.0.0.1:8443.
	// It must not carry credentials or a query.
	Endpoint string
	// SystemID picks the ComputerSystem by Id or @odata.id when the BMC manages more than one; empty
	// means the only one.
	SystemID string
	// Credentials authenticate every request except the service root.
	Credentials Credentials
	// CABundle is PEM: the CA certificates that sign the BMC's certificate.
	CABundle []byte
	// SystemRoots trusts the host's CA store instead of CABundle.
	SystemRoots bool
	// InsecureSkipVerify accepts any certificate: only for lab BMCs with throw-away certificates.
	InsecureSkipVerify bool
	// AllowPlainHTTP permits an http:// endpoint, whose basic-auth password crosses the wire in clear.
	AllowPlainHTTP bool
	// Timeout bounds each HTTP request; zero means 60 s (BMCs are slow).
	Timeout time.Duration
	// Log receives progress at V(1) and below; the zero Logger discards. Credentials are never logged.
	Log logr.Logger
}

// DefaultTimeout bounds each request when Config.Timeout is zero.
const DefaultTimeout = 60 * time.Second

// Client talks to one BMC and one ComputerSystem on it. It is safe for concurrent use; each call
// opens its own Redfish session object (a service-root GET) bound to the call's context.
type Client struct {
	endpoint   string
	systemID   string
	systemPath string
	vendor     Vendor
	http       *http.Client
	scrub      scrubber
	log        logr.Logger

	mu       sync.Mutex
	registry map[string]*Registry // by attribute registry Id, read once per Client
}

// Connect checks cfg, connects to the BMC, authenticates and finds the system. Nothing is changed.
func Connect(ctx context.Context, cfg Config) (*Client, error) {
	endpoint, err := checkConfig(cfg)
	if err != nil {
		return nil, err
	}
	httpClient, err := newHTTPClient(cfg, endpoint)
	if err != nil {
		return nil, err
	}
	c := &Client{
		endpoint: endpoint,
		http:     httpClient,
		scrub:    newScrubber(cfg.Credentials.Username, cfg.Credentials.Password),
		log:      cfg.Log.WithValues("bmc", endpoint),
		registry: map[string]*Registry{},
	}
	api, err := c.session(ctx, "connect")
	if err != nil {
		return nil, err
	}
	systems, err := api.Service.Systems()
	if err != nil {
		return nil, c.fail("list systems", err)
	}
	sys, err := pickSystem(systems, cfg.SystemID)
	if err != nil {
		return nil, &Error{Kind: KindProtocol, Endpoint: endpoint, Op: "find system", Detail: err.Error()}
	}
	c.systemID = sys.ID
	c.systemPath = sys.ODataID
	c.vendor = VendorOf(sys.Manufacturer)
	c.log.V(1).Info("connected", "system", sys.ID, "user", cfg.Credentials.Username)
	return c, nil
}

// SystemID is the Id of the ComputerSystem this client works on.
func (c *Client) SystemID() string { return c.systemID }

// Vendor is the vendor guessed from the system's Manufacturer ("" when unknown), for PresetFor.
func (c *Client) Vendor() Vendor { return c.vendor }

// Endpoint is the BMC's base URL.
func (c *Client) Endpoint() string { return c.endpoint }

// Close releases idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

func checkConfig(cfg Config) (string, error) {
	bad := func(detail string) error {
		return &Error{Kind: KindConfig, Endpoint: redactEndpoint(cfg.Endpoint), Op: "connect", Detail: detail}
	}
	u, err := url.Parse(cfg.Endpoint)
	if err != nil || u.Host == "" {
		return "", bad("endpoint must be an absolute http(s) URL")
	}
	if u.User != nil {
		return "", bad("endpoint must not carry credentials; use Config.Credentials")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", bad("endpoint must not have a query or fragment")
	}
	switch u.Scheme {
	case "https":
		n := 0
		for _, set := range []bool{len(cfg.CABundle) > 0, cfg.SystemRoots, cfg.InsecureSkipVerify} {
			if set {
				n++
			}
		}
		if n != 1 {
			return "", bad("choose exactly one of CABundle, SystemRoots and InsecureSkipVerify for an https endpoint")
		}
	case "http":
		if !cfg.AllowPlainHTTP {
			return "", bad("http endpoint sends the password in clear; use https or set AllowPlainHTTP")
		}
	default:
		return "", bad("endpoint scheme must be https or http")
	}
	if cfg.Credentials.Username == "" || cfg.Credentials.Password == "" {
		return "", bad("credentials need a user name and a password")
	}
	return strings.TrimRight(u.Scheme+"://"+u.Host+u.Path, "/"), nil
}

// redactEndpoint keeps scheme and host of a possibly malformed endpoint, dropping user info.
func redactEndpoint(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparsable endpoint>"
	}
	u.User = nil
	return u.Scheme + "://" + u.Host
}

func newHTTPClient(cfg Config, endpoint string) (*http.Client, error) {
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: cfg.InsecureSkipVerify} //nolint:gosec // explicit opt-in
	if len(cfg.CABundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(cfg.CABundle) {
			return nil, &Error{Kind: KindConfig, Endpoint: endpoint, Op: "connect", Detail: "CABundle holds no PEM certificate"}
		}
		tlsCfg.RootCAs = pool
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	base := &http.Transport{
		Proxy:                 nil, // BMC networks are not reached through the cluster's proxy
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:       tlsCfg,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: timeout,
		MaxIdleConns:          4,
		IdleConnTimeout:       30 * time.Second,
	}
	u, _ := url.Parse(endpoint)
	return &http.Client{
		Transport: &basicAuth{base: base, host: u.Host, user: cfg.Credentials.Username, password: cfg.Credentials.Password},
		Timeout:   timeout,
	}, nil
}

// basicAuth adds the Authorization header to requests for the BMC's own host only, so a redirect
// elsewhere never carries the credentials.
type basicAuth struct {
	base           http.RoundTripper
	host           string
	user, password string
}

// RoundTrip implements http.RoundTripper.
func (b *basicAuth) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host != b.host {
		return b.base.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	r.SetBasicAuth(b.user, b.password)
	return b.base.RoundTrip(r)
}

func basicAuthToken(user, password string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
}

// session opens a gofish client bound to ctx. The credentials stay in our transport: gofish never
// sees them, so its dumps and errors cannot contain them.
func (c *Client) session(ctx context.Context, op string) (*gofish.APIClient, error) {
	api, err := gofish.ConnectContext(ctx, gofish.ClientConfig{Endpoint: c.endpoint, HTTPClient: c.http})
	if err != nil {
		return nil, c.fail(op+": read service root", err)
	}
	return api, nil
}

func (c *Client) fail(op string, err error) error {
	return classify(c.endpoint, op, err, c.scrub)
}

func pickSystem(systems []*redfish.ComputerSystem, want string) (*redfish.ComputerSystem, error) {
	ids := make([]string, 0, len(systems))
	for _, s := range systems {
		if want != "" && (s.ID == want || s.ODataID == want) {
			return s, nil
		}
		ids = append(ids, s.ID)
	}
	switch {
	case want != "":
		return nil, fmt.Errorf("no system %q; the BMC has %s", want, strings.Join(ids, ", "))
	case len(systems) == 1:
		return systems[0], nil
	case len(systems) == 0:
		return nil, fmt.Errorf("the BMC lists no computer system")
	default:
		return nil, fmt.Errorf("the BMC manages %d systems (%s): set SystemID", len(systems), strings.Join(ids, ", "))
	}
}

func (c *Client) system(ctx context.Context, op string) (*gofish.APIClient, *redfish.ComputerSystem, error) {
	api, err := c.session(ctx, op)
	if err != nil {
		return nil, nil, err
	}
	sys, err := redfish.GetComputerSystem(api, c.systemPath)
	if err != nil {
		return nil, nil, c.fail(op+": read system", err)
	}
	return api, sys, nil
}

// ResetType is a Redfish ComputerSystem.Reset type, for example GracefulRestart or ForceRestart.
type ResetType string

// DefaultResetType is used when Reset is given an empty type: the OS shuts down cleanly first.
const DefaultResetType ResetType = "GracefulRestart"

// Reset restarts the system so pending BIOS settings take effect. The coordinator calls it inside
// the node's reboot slot, after draining. An empty resetType means DefaultResetType. A type the
// system does not advertise is refused before anything is sent.
func (c *Client) Reset(ctx context.Context, resetType ResetType) error {
	if resetType == "" {
		resetType = DefaultResetType
	}
	op := "reset system " + string(resetType)
	_, sys, err := c.system(ctx, op)
	if err != nil {
		return err
	}
	if allowed := sys.SupportedResetTypes; len(allowed) > 0 && !slices.Contains(allowed, redfish.ResetType(resetType)) {
		names := make([]string, len(allowed))
		for i, a := range allowed {
			names[i] = string(a)
		}
		return &Error{Kind: KindProtocol, Endpoint: c.endpoint, Op: op,
			Detail: fmt.Sprintf("reset type %q not supported; the system allows %s", resetType, strings.Join(names, ", "))}
	}
	c.log.Info("resetting system", "system", c.systemID, "resetType", resetType)
	if err := sys.Reset(redfish.ResetType(resetType)); err != nil {
		return c.fail(op, err)
	}
	return nil
}

// PowerState reads the system's power state (On, Off, PoweringOn, PoweringOff).
func (c *Client) PowerState(ctx context.Context) (string, error) {
	_, sys, err := c.system(ctx, "read power state")
	if err != nil {
		return "", err
	}
	return string(sys.PowerState), nil
}

// getJSON GETs uri and decodes it into out with numbers kept as json.Number. It returns the ETag.
func (c *Client) getJSON(api *gofish.APIClient, op, uri string, out any) (string, error) {
	resp, err := api.Get(uri)
	if err != nil {
		return "", c.fail(op, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return "", c.fail(op, err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		return "", &Error{Kind: KindProtocol, Endpoint: c.endpoint, Op: op, Detail: "body is not the expected JSON: " + c.scrub.scrub(err.Error())}
	}
	return resp.Header.Get("ETag"), nil
}
