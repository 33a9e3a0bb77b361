// Package certs keeps the admission webhooks' serving certificate: a CA and a serving certificate
// in one Secret, the CA bundle patched into the webhook configurations, both renewed before they
// expire. The webhook server takes the current certificate from memory (GetCertificate), so a
// renewal needs no restart and no file watching. When cert-manager manages the certificate instead
// (config/certmanager), none of this runs.
package certs

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// Keys of the Secret.
const (
	// KeyCACert is the current CA certificate.
	KeyCACert = "ca.crt"
	// KeyCAKey is the current CA's private key.
	KeyCAKey = "ca.key"
	// KeyBundle is every CA the API server should trust: the current one and, during a CA
	// rotation, the previous one until it expires (so certificates it signed stay trusted).
	KeyBundle = "ca-bundle.crt"
	// KeyCert is the serving certificate (corev1.TLSCertKey).
	KeyCert = corev1.TLSCertKey
	// KeyKey is the serving certificate's key (corev1.TLSPrivateKeyKey).
	KeyKey = corev1.TLSPrivateKeyKey
)

// Options say what to issue and where to publish it.
type Options struct {
	// Namespace and SecretName locate the Secret.
	Namespace, SecretName string
	// ServiceName is the webhook Service; the certificate names it as <svc>, <svc>.<ns>,
	// <svc>.<ns>.svc and <svc>.<ns>.svc.cluster.local.
	ServiceName string
	// ExtraDNSNames and IPAddresses are added to the serving certificate (tests serve on 127.0.0.1).
	ExtraDNSNames []string
	IPAddresses   []string
	// MutatingWebhooks and ValidatingWebhooks name the webhook configurations whose caBundle is kept.
	MutatingWebhooks, ValidatingWebhooks []string
	// CALifetime and CertLifetime are how long new CAs and serving certificates last (default 5 years
	// and 90 days). Each is renewed when less than a third of its lifetime remains.
	CALifetime, CertLifetime time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Manager issues, renews and publishes the certificate. It runs in every replica (each serves
// webhooks); they share the Secret through optimistic concurrency.
type Manager struct {
	Client  client.Client
	Options Options

	mu      sync.RWMutex
	current *tls.Certificate
}

// NeedLeaderElection is false: every replica's webhook server needs the certificate.
func (m *Manager) NeedLeaderElection() bool { return false }

// GetCertificate hands the webhook server the current certificate (tls.Config.GetCertificate).
func (m *Manager) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.current == nil {
		return nil, errors.New("the webhook serving certificate is not issued yet")
	}
	return m.current, nil
}

// Ready is a readiness check: nil once a certificate is being served.
func (m *Manager) Ready(*http.Request) error {
	_, err := m.GetCertificate(nil)
	return err
}

func (m *Manager) now() time.Time {
	if m.Options.Now != nil {
		return m.Options.Now()
	}
	return time.Now()
}

func (m *Manager) lifetimes() (ca, cert time.Duration) {
	ca, cert = m.Options.CALifetime, m.Options.CertLifetime
	if ca <= 0 {
		ca = 5 * 365 * 24 * time.Hour
	}
	if cert <= 0 {
		cert = 90 * 24 * time.Hour
	}
	return ca, cert
}

// Start keeps the certificate fresh until ctx ends: it ensures it now, then again when the next
// renewal is due (or after a short back-off on errors).
func (m *Manager) Start(ctx context.Context) error {
	log := logf.FromContext(ctx).WithName("certs")
	for {
		next, err := m.Ensure(ctx)
		wait := time.Until(next)
		if err != nil {
			log.Error(err, "keeping the webhook certificate")
			wait = min(5*time.Second, max(wait, time.Second))
		}
		if wait < 100*time.Millisecond {
			wait = 100 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// renewAt is when a certificate valid until notAfter, issued for lifetime, is renewed.
func renewAt(notAfter time.Time, lifetime time.Duration) time.Time {
	return notAfter.Add(-lifetime / 3)
}

// Ensure issues what is missing or due, stores it, serves it and patches the caBundles. It returns
// when it should run next.
func (m *Manager) Ensure(ctx context.Context) (time.Time, error) {
	now := m.now()
	caLife, certLife := m.lifetimes()
	secret := &corev1.Secret{}
	key := types.NamespacedName{Namespace: m.Options.Namespace, Name: m.Options.SecretName}
	exists := true
	if err := m.Client.Get(ctx, key, secret); err != nil {
		if !apierrors.IsNotFound(err) {
			return now, fmt.Errorf("reading Secret %s: %w", key, err)
		}
		exists = false
		secret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}, Type: corev1.SecretTypeTLS}
	}
	data := map[string][]byte{}
	for k, v := range secret.Data {
		data[k] = v
	}

	ca, caKey, err := parsePair(data[KeyCACert], data[KeyCAKey])
	var bundle []*x509.Certificate
	if err != nil || !ca.IsCA || !now.Before(renewAt(ca.NotAfter, caLife)) {
		if err == nil && now.Before(ca.NotAfter) {
			bundle = append(bundle, ca) // the old CA stays trusted until it expires
		}
		if ca, caKey, err = newCA(now, caLife); err != nil {
			return now, err
		}
		if data[KeyCACert], data[KeyCAKey], err = encodePair(ca, caKey); err != nil {
			return now, err
		}
	}
	for _, old := range parseCerts(data[KeyBundle]) {
		if !old.Equal(ca) && now.Before(old.NotAfter) && !slices.ContainsFunc(bundle, old.Equal) {
			bundle = append(bundle, old)
		}
	}
	bundle = append([]*x509.Certificate{ca}, bundle...)
	data[KeyBundle] = encodeCerts(bundle)

	dns := m.dnsNames()
	// A serving certificate signed by a CA still in the bundle is kept until its own renewal: after
	// a CA renewal the API server may take a moment to see the new bundle, so the first certificate
	// of the new CA is only served at the next regular renewal.
	cert, _, err := parsePair(data[KeyCert], data[KeyKey])
	if err != nil || !signedByAny(cert, bundle) || !now.Before(renewAt(cert.NotAfter, certLife)) ||
		!slices.Equal(cert.DNSNames, dns) || !sameIPs(cert, m.Options.IPAddresses) {
		life := min(certLife, ca.NotAfter.Sub(now))
		var certKey crypto.Signer
		if cert, certKey, err = newServing(now, life, ca, caKey, dns, m.Options.IPAddresses); err != nil {
			return now, err
		}
		if data[KeyCert], data[KeyKey], err = encodePair(cert, certKey); err != nil {
			return now, err
		}
	}

	if !exists || !sameData(secret.Data, data) {
		secret.Data = data
		if exists {
			err = m.Client.Update(ctx, secret)
		} else {
			err = m.Client.Create(ctx, secret)
		}
		if err != nil {
			// Another replica got there first: next round reads its result.
			return now, fmt.Errorf("storing Secret %s: %w", key, err)
		}
	}
	// Trust first, then serve: the bundle reaches the webhook configurations before a certificate
	// that needs it is handed out.
	if err := m.patchBundles(ctx, data[KeyBundle]); err != nil {
		return now, err
	}
	pair, err := tls.X509KeyPair(data[KeyCert], data[KeyKey])
	if err != nil {
		return now, fmt.Errorf("loading the serving certificate: %w", err)
	}
	m.mu.Lock()
	m.current = &pair
	m.mu.Unlock()
	next := renewAt(cert.NotAfter, certLife)
	if t := renewAt(ca.NotAfter, caLife); t.Before(next) {
		next = t
	}
	return next, nil
}

func (m *Manager) dnsNames() []string {
	s, ns := m.Options.ServiceName, m.Options.Namespace
	var names []string
	if s != "" {
		names = []string{s, s + "." + ns, s + "." + ns + ".svc", s + "." + ns + ".svc.cluster.local"}
	}
	return append(names, m.Options.ExtraDNSNames...)
}

// clientConfigs is the clientConfig of every webhook of a configuration (mutating or validating).
func clientConfigs[W any](webhooks []W, of func(*W) *admissionregistrationv1.WebhookClientConfig) []*admissionregistrationv1.WebhookClientConfig {
	out := make([]*admissionregistrationv1.WebhookClientConfig, len(webhooks))
	for i := range webhooks {
		out[i] = of(&webhooks[i])
	}
	return out
}

// patchBundles sets caBundle on every webhook of the named configurations.
func (m *Manager) patchBundles(ctx context.Context, bundle []byte) error {
	var errs []error
	for _, name := range m.Options.MutatingWebhooks {
		cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
		errs = append(errs, m.patchBundle(ctx, "MutatingWebhookConfiguration", name, cfg, bundle, func() []*admissionregistrationv1.WebhookClientConfig {
			return clientConfigs(cfg.Webhooks, func(w *admissionregistrationv1.MutatingWebhook) *admissionregistrationv1.WebhookClientConfig {
				return &w.ClientConfig
			})
		}))
	}
	for _, name := range m.Options.ValidatingWebhooks {
		cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		errs = append(errs, m.patchBundle(ctx, "ValidatingWebhookConfiguration", name, cfg, bundle, func() []*admissionregistrationv1.WebhookClientConfig {
			return clientConfigs(cfg.Webhooks, func(w *admissionregistrationv1.ValidatingWebhook) *admissionregistrationv1.WebhookClientConfig {
				return &w.ClientConfig
			})
		}))
	}
	return errors.Join(errs...)
}

// patchBundle reads one webhook configuration into cfg and patches the caBundle of each of its
// client configs (clientConfigs lists them in cfg) that differs from bundle.
func (m *Manager) patchBundle(ctx context.Context, kind, name string, cfg client.Object, bundle []byte, clientConfigs func() []*admissionregistrationv1.WebhookClientConfig) error {
	if err := m.Client.Get(ctx, types.NamespacedName{Name: name}, cfg); err != nil {
		return fmt.Errorf("reading %s %s: %w", kind, name, err)
	}
	orig := cfg.DeepCopyObject().(client.Object)
	changed := false
	for _, cc := range clientConfigs() {
		if !bytes.Equal(cc.CABundle, bundle) {
			cc.CABundle, changed = bundle, true
		}
	}
	if !changed {
		return nil
	}
	if err := m.Client.Patch(ctx, cfg, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("patching the caBundle of %s %s: %w", kind, name, err)
	}
	return nil
}

func signedByAny(c *x509.Certificate, cas []*x509.Certificate) bool {
	for _, ca := range cas {
		if c.CheckSignatureFrom(ca) == nil {
			return true
		}
	}
	return false
}

func sameData(a, b map[string][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !bytes.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

func sameIPs(c *x509.Certificate, ips []string) bool {
	if len(c.IPAddresses) != len(ips) {
		return false
	}
	for i, ip := range c.IPAddresses {
		if ip.String() != ips[i] {
			return false
		}
	}
	return true
}

func serial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("drawing a serial number: %w", err)
	}
	return n, nil
}

func newKey() (*ecdsa.PrivateKey, error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating a key: %w", err)
	}
	return k, nil
}

func newCA(now time.Time, life time.Duration) (*x509.Certificate, crypto.Signer, error) {
	return issue("CA", &x509.Certificate{
		Subject:               pkix.Name{CommonName: fmt.Sprintf("tickstack-webhook-ca@%d", now.Unix())},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}, now, life, nil, nil)
}

func newServing(now time.Time, life time.Duration, ca *x509.Certificate, caKey crypto.Signer, dns, ipStrs []string) (*x509.Certificate, crypto.Signer, error) {
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: firstOr(dns, "tickstack-webhook")},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    dns,
	}
	for _, s := range ipStrs {
		ip := net.ParseIP(s)
		if ip == nil {
			return nil, nil, fmt.Errorf("webhook certificate IP address %q is not an IP address", s)
		}
		tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
	}
	return issue("serving certificate", tmpl, now, life, ca, caKey)
}

// issue gives tmpl a new key, a serial number and a validity of life from now (from a minute
// before, to tolerate small clock skew), and signs it with parentKey as parent, or with its own key
// when parent is nil (the CA); what names the certificate in errors.
func issue(what string, tmpl *x509.Certificate, now time.Time, life time.Duration, parent *x509.Certificate, parentKey crypto.Signer) (*x509.Certificate, crypto.Signer, error) {
	key, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	if tmpl.SerialNumber, err = serial(); err != nil {
		return nil, nil, err
	}
	tmpl.NotBefore, tmpl.NotAfter = now.Add(-time.Minute), now.Add(life)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), parentKey)
	if err != nil {
		return nil, nil, fmt.Errorf("signing the %s: %w", what, err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing the new %s: %w", what, err)
	}
	return c, key, nil
}

func firstOr(s []string, def string) string {
	if len(s) > 0 {
		return s[0]
	}
	return def
}

func encodePair(c *x509.Certificate, k crypto.Signer) (certPEM, keyPEM []byte, err error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding a private key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func encodeCerts(cs []*x509.Certificate) []byte {
	var b []byte
	for _, c := range cs {
		b = append(b, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})...)
	}
	return b
}

func parseCerts(b []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			return out
		}
		if c, err := x509.ParseCertificate(block.Bytes); err == nil {
			out = append(out, c)
		}
	}
}

func parsePair(certPEM, keyPEM []byte) (*x509.Certificate, crypto.Signer, error) {
	cs := parseCerts(certPEM)
	if len(cs) == 0 {
		return nil, nil, errors.New("no certificate")
	}
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, nil, errors.New("no key")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing the key: %w", err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, nil, errors.New("the key cannot sign")
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return nil, nil, fmt.Errorf("certificate and key do not match: %w", err)
	}
	return cs[0], signer, nil
}
