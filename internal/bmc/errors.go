package bmc

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"

	"github.com/stmcginnis/gofish/common"
)

// ErrorKind classifies a failure to talk to a BMC.
type ErrorKind string

const (
	// KindTLS means the BMC's certificate could not be verified: unknown CA, wrong host name, expired.
	KindTLS ErrorKind = "TLS"
	// KindAuth means the BMC refused the credentials (HTTP 401) or the account's privileges (HTTP 403).
	KindAuth ErrorKind = "Authentication"
	// KindUnreachable means no answer: connection refused, no route, DNS failure, timeout.
	KindUnreachable ErrorKind = "Unreachable"
	// KindProtocol means the BMC answered but not as Redfish expects: an HTTP error status, a missing
	// resource, a body that does not parse.
	KindProtocol ErrorKind = "Protocol"
	// KindConfig means the Config given to Connect is unusable; nothing was sent.
	KindConfig ErrorKind = "Config"
)

// Sentinel errors, one per ErrorKind, so callers can write errors.Is(err, bmc.ErrAuth).
var (
	ErrTLS         = errors.New("BMC TLS verification failed")
	ErrAuth        = errors.New("BMC authentication failed")
	ErrUnreachable = errors.New("BMC unreachable")
	ErrProtocol    = errors.New("BMC protocol error")
	ErrConfig      = errors.New("BMC configuration invalid")
)

// Error is a failure talking to a BMC. Its text names the endpoint, the operation and what went
// wrong, never the password: the underlying error is kept only as scrubbed text.
type Error struct {
	// Kind classifies the failure.
	Kind ErrorKind
	// Endpoint is the BMC's base URL.
	Endpoint string
	// Op is what was being done, for example "list systems" or "patch BIOS settings".
	Op string
	// StatusCode is the HTTP status when the BMC answered with an error status, else 0.
	StatusCode int
	// Detail is the scrubbed text of the underlying error.
	Detail string
	// Hint says what to do about it, when there is something to say.
	Hint string
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "BMC %s: %s: ", e.Endpoint, e.Op)
	switch e.Kind {
	case KindTLS:
		b.WriteString("TLS certificate not trusted")
	case KindAuth:
		fmt.Fprintf(&b, "authentication failed (HTTP %d)", e.StatusCode)
	case KindUnreachable:
		b.WriteString("unreachable")
	case KindConfig:
		b.WriteString("invalid configuration")
	default:
		if e.StatusCode != 0 {
			fmt.Fprintf(&b, "HTTP %d", e.StatusCode)
		} else {
			b.WriteString("unexpected answer")
		}
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	if e.Hint != "" {
		b.WriteString(" (")
		b.WriteString(e.Hint)
		b.WriteString(")")
	}
	return b.String()
}

// Unwrap returns the sentinel of the error's kind.
func (e *Error) Unwrap() error {
	switch e.Kind {
	case KindTLS:
		return ErrTLS
	case KindAuth:
		return ErrAuth
	case KindUnreachable:
		return ErrUnreachable
	case KindConfig:
		return ErrConfig
	default:
		return ErrProtocol
	}
}

// scrubber removes secrets from text. It holds the password and the forms it takes on the wire.
type scrubber struct {
	secrets []string
}

func newScrubber(username, password string) scrubber {
	if password == "" {
		return scrubber{}
	}
	s := scrubber{secrets: []string{password, url.QueryEscape(password), basicAuthToken(username, password)}}
	return s
}

func (s scrubber) scrub(text string) string {
	for _, secret := range s.secrets {
		if secret != "" {
			text = strings.ReplaceAll(text, secret, "<redacted>")
		}
	}
	return text
}

// classify turns an error from gofish or net/http into an *Error with the right kind. It never keeps
// the original error value, only its scrubbed text, so nothing downstream can print a secret.
func classify(endpoint, op string, err error, s scrubber) error {
	if err == nil {
		return nil
	}
	var already *Error
	if errors.As(err, &already) {
		return err
	}
	// gofish reports a failed collection member as a CollectionError holding each member's error:
	// classify the first one (in link order), which carries the HTTP status or transport error.
	var collErr *common.CollectionError
	if errors.As(err, &collErr) && len(collErr.Failures) > 0 {
		links := make([]string, 0, len(collErr.Failures))
		for link := range collErr.Failures {
			links = append(links, link)
		}
		sort.Strings(links)
		return classify(endpoint, op, collErr.Failures[links[0]], s)
	}
	e := &Error{Kind: KindProtocol, Endpoint: endpoint, Op: op}

	var (
		redfishErr  *common.Error
		unknownCA   x509.UnknownAuthorityError
		hostErr     x509.HostnameError
		invalidCert x509.CertificateInvalidError
		netErr      net.Error
		opErr       *net.OpError
		dnsErr      *net.DNSError
		urlErr      *url.Error
		recordErr   tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &redfishErr):
		e.StatusCode = redfishErr.HTTPReturnedStatusCode
		e.Detail = redfishMessage(redfishErr)
		switch e.StatusCode {
		case 401:
			e.Kind = KindAuth
			e.Detail = ""
			e.Hint = "check the user name and password in the BMC credentials"
		case 403:
			e.Kind = KindAuth
			e.Hint = "the account lacks the privilege for this operation"
		}
	case errors.As(err, &unknownCA):
		e.Kind = KindTLS
		e.Detail = "certificate signed by unknown authority"
		e.Hint = "give the CA bundle that signed the BMC's certificate, or set InsecureSkipVerify explicitly"
	case errors.As(err, &hostErr):
		e.Kind = KindTLS
		e.Detail = hostErr.Error()
		e.Hint = "the certificate does not name the endpoint's host"
	case errors.As(err, &invalidCert):
		e.Kind = KindTLS
		e.Detail = invalidCert.Error()
	case errors.As(err, &recordErr):
		e.Kind = KindTLS
		e.Detail = "the endpoint does not answer TLS"
		e.Hint = "is it an http:// endpoint or the wrong port?"
	case errors.As(err, &dnsErr), errors.As(err, &opErr):
		e.Kind = KindUnreachable
		e.Detail = stripURL(err)
	case errors.As(err, &netErr) && netErr.Timeout():
		e.Kind = KindUnreachable
		e.Detail = "timed out"
	case errors.As(err, &urlErr):
		e.Detail = stripURL(err)
	default:
		e.Detail = err.Error()
	}
	e.Detail = s.scrub(e.Detail)
	return e
}

// stripURL returns the innermost message of a *url.Error chain, without the request URL (which the
// Error already names through Endpoint).
func stripURL(err error) string {
	var urlErr *url.Error
	if errors.As(err, &urlErr) && urlErr.Err != nil {
		return urlErr.Err.Error()
	}
	return err.Error()
}

// redfishMessage picks the human part of a Redfish error body.
func redfishMessage(e *common.Error) string {
	msgs := []string{}
	if e.Message != "" {
		msgs = append(msgs, e.Message)
	}
	for _, info := range e.ExtendedInfos {
		if info.Message != "" && info.Message != e.Message {
			msgs = append(msgs, info.Message)
		}
	}
	text := strings.Join(msgs, "; ")
	const maxLen = 600
	if len(text) > maxLen {
		text = text[:maxLen] + "..."
	}
	return text
}
