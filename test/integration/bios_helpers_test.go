package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	tsv1 "github.com/tickstack/tickstack/api/v1alpha1"
	"github.com/tickstack/tickstack/controllers/bios"
	"github.com/tickstack/tickstack/internal/bench"
	"github.com/tickstack/tickstack/internal/bmc"
	"github.com/tickstack/tickstack/internal/testutil"
)

// biosName names a test object tsbios<pid>-<suffix>.
func biosName(suffix string) string { return fmt.Sprintf("tsbios%d-%s", os.Getpid(), suffix) }

// biosProfile is profile biosName(suffix) over the nodes labelled tickstack.io/role=role, with the
// BIOS attributes attrs and nothing else.
func biosProfile(suffix, role string, attrs ...tsv1.BIOSAttribute) *tsv1.LatencyProfile {
	return &tsv1.LatencyProfile{
		ObjectMeta: metav1.ObjectMeta{Name: biosName(suffix)},
		Spec: tsv1.LatencyProfileSpec{
			NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tickstack.io/role": role}},
			BIOS:         &tsv1.BIOSSpec{Attributes: attrs},
		},
	}
}

// emulator is a sushy-tools Redfish emulator (libvirt test:///default) started by
// hack/sushy/sushy.sh on a free loopback port, with TLS and basic auth.
type emulator struct {
	url      string
	ca       []byte
	user     string
	password string
}

// startSushy starts an emulator (testutil.StartRedfishEmulator) for the test.
func startSushy(t *testing.T, user, password string) *emulator {
	t.Helper()
	e := testutil.StartRedfishEmulator(t, user, password)
	return &emulator{url: e.URL, ca: e.CA, user: user, password: password}
}

// connect opens a session to the emulator as the operator would, for 30 seconds at the most;
// the caller calls done when it is through with it.
func (e *emulator) connect(t *testing.T) (ctx context.Context, c *bmc.Client, done func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	c, err := bmc.Connect(ctx, bmc.Config{Endpoint: e.url, Credentials: bmc.Credentials{Username: e.user, Password: e.password}, CABundle: e.ca})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	return ctx, c, func() { c.Close(); cancel() }
}

// read returns the emulator's BIOS as the operator would see it (the test's own view).
func (e *emulator) read(t *testing.T) *bmc.BIOSState {
	t.Helper()
	ctx, c, done := e.connect(t)
	defer done()
	st, err := c.ReadBIOS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// set stages attrs on the emulator directly (someone at the BMC's web page: drift).
func (e *emulator) set(t *testing.T, attrs bmc.Attributes) {
	t.Helper()
	ctx, c, done := e.connect(t)
	defer done()
	p, err := c.Plan(ctx, attrs)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(ctx, p); err != nil {
		t.Fatal(err)
	}
}

// other returns the value of the emulator's ProcTurboMode that is not the current one.
func (e *emulator) otherTurbo(t *testing.T) (current, other string) {
	t.Helper()
	cur := fmt.Sprint(e.read(t).Current["ProcTurboMode"])
	if cur == "Enabled" {
		return cur, "Disabled"
	}
	return cur, "Enabled"
}

// startOperator runs the operator's controllers (SetupControllers) in a manager whose every log
// line (down to the most verbose) goes to logs, with the BIOS controller's periods set to periods;
// it stops when the test ends.
func startOperator(t *testing.T, logs *bench.SyncBuffer, periods time.Duration) client.WithWatch {
	t.Helper()
	c, err := client.NewWithWatch(restCfg, client.Options{Scheme: operatorScheme()})
	if err != nil {
		t.Fatal(err)
	}
	mgr := newOperator(t, c, ctrl.Options{
		Logger: zap.New(zap.WriteTo(logs), zap.UseDevMode(true), zap.Level(zapcore.Level(-10))),
	}, bios.BIOSReconciler{VerifyPeriod: periods, RetryPeriod: periods, Timeout: 20 * time.Second})
	// Registered first, so it runs once the operator has stopped.
	t.Cleanup(func() {
		if t.Failed() {
			var lines []string
			for _, l := range strings.Split(logs.String(), "\n") {
				if strings.Contains(l, "bios") || strings.Contains(l, "ERROR") {
					lines = append(lines, l)
				}
			}
			t.Logf("operator log (BIOS and errors, tail):\n%s", strings.Join(lines[max(0, len(lines)-40):], "\n"))
		}
	})
	testutil.RunInBackground(t, context.Background(), "operator", mgr.Start)
	return c
}

// bmcFor creates the credentials Secret and the BMC object of node, trusting ca.
func bmcFor(t *testing.T, c client.Client, node, ns string, e *emulator, user, password string, tls tsv1.BMCTLS) {
	t.Helper()
	ctx := context.Background()
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: node + "-bmc"},
		Data: map[string][]byte{"username": []byte(user), "password": []byte(password)}}
	b := &tsv1.BMC{ObjectMeta: metav1.ObjectMeta{Name: node}, Spec: tsv1.BMCSpec{
		Endpoint: e.url, CredentialsSecret: tsv1.SecretKeyReference{Namespace: ns, Name: sec.Name}, TLS: &tls,
	}}
	for _, o := range []client.Object{sec, b} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), o) })
	}
}

// node creates a labelled node whose kubelet reported bootID.
func makeNode(t *testing.T, c client.Client, name, role, bootID string) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"tickstack.io/role": role}}}
	if err := c.Create(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), n) })
	setBootID(t, c, name, bootID)
}

// setBootID plays the kubelet: status.nodeInfo.bootID.
func setBootID(t *testing.T, c client.Client, name, bootID string) {
	t.Helper()
	n := &corev1.Node{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: name}, n); err != nil {
		t.Fatal(err)
	}
	orig := n.DeepCopy()
	n.Status.NodeInfo.BootID = bootID
	if err := c.Status().Patch(context.Background(), n, client.MergeFrom(orig)); err != nil {
		t.Fatal(err)
	}
}

// namespace creates a namespace for the test's Secrets.
func namespace(t *testing.T, c client.Client, name string) {
	t.Helper()
	if err := c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
}

// foreignCA is the PEM of a CA that signed nothing the emulator presents.
func foreignCA(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "tsbios foreign CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// checkNoSecrets fails when a password, or a basic-auth token made from one, appears in the logs,
// in any event, or anywhere in the node states (spec, status, conditions).
func checkNoSecrets(t *testing.T, c client.Client, logs *bench.SyncBuffer, user string, passwords ...string) {
	t.Helper()
	ctx := context.Background()
	var haystack []string
	haystack = append(haystack, logs.String())
	var evs eventsv1.EventList
	if err := c.List(ctx, &evs); err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		haystack = append(haystack, e.Note, e.Reason, e.Action)
	}
	var core corev1.EventList
	if err := c.List(ctx, &core); err != nil {
		t.Fatal(err)
	}
	for _, e := range core.Items {
		haystack = append(haystack, e.Message, e.Reason)
	}
	var states tsv1.LatencyNodeStateList
	if err := c.List(ctx, &states); err != nil {
		t.Fatal(err)
	}
	for _, s := range states.Items {
		haystack = append(haystack, fmt.Sprintf("%+v", s))
	}
	all := strings.Join(haystack, "\n")
	if len(all) < 100 {
		t.Fatalf("captured only %d bytes of logs, events and node states: the check would prove nothing", len(all))
	}
	for _, p := range passwords {
		token := base64.StdEncoding.EncodeToString([]byte(user + ":" + p))
		for _, secret := range []string{p, token} {
			if strings.Contains(all, secret) {
				i := strings.Index(all, secret)
				t.Errorf("a credential appears in logs, events or node states: ...%s...", all[max(0, i-120):i])
			}
		}
	}
}
