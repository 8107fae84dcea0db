package controllers_test

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers"
	"github.com/networkio/webchecker/probing/probetest"
)

// secretTimeout bounds how long a Secret change takes to show in the
// status: the watch event, a reconcile and a probe after the initial
// jitter.
const secretTimeout = 5 * time.Second

func putSecret(t *testing.T, ns, name string, data map[string]string) {
	t.Helper()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	ctx := context.Background()
	err := k8sClient.Get(ctx, client.ObjectKeyFromObject(secret), secret)
	secret.Data = map[string][]byte{}
	for k, v := range data {
		secret.Data[k] = []byte(v)
	}
	if err == nil {
		require.NoError(t, k8sClient.Update(ctx, secret))
		return
	}
	require.NoError(t, client.IgnoreNotFound(err))
	require.NoError(t, k8sClient.Create(ctx, secret))
}

func secretKey(name, key string) *webcheckerv1alpha1.SecretKeySelector {
	return &webcheckerv1alpha1.SecretKeySelector{Name: name, Key: key}
}

// startTLS starts a TLS server answering 200, with cert (httptest's own
// when nil).
func startTLS(t *testing.T, cert *probetest.Certificate) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // handshake failures are expected
	if cert != nil {
		srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert.TLS}}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func TestCAFromSecret(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	srv := startTLS(t, nil)

	withCA := newChecker(ns, "with-ca", srv.URL, "/")
	withCA.Spec.TLS = &webcheckerv1alpha1.TLSOptions{CASecretRef: secretKey("ca", "ca.crt")}
	withoutCA := newChecker(ns, "without-ca", srv.URL, "/")
	require.NoError(t, k8sClient.Create(context.Background(), withCA))
	require.NoError(t, k8sClient.Create(context.Background(), withoutCA))

	missing := waitReady(t, client.ObjectKeyFromObject(withCA), metav1.ConditionFalse, "SecretUnavailable", secretTimeout)
	assert.Equal(t, `spec.tls.caSecretRef: Secret "ca" not found`, ready(missing).Message)
	selfSigned := waitReady(t, client.ObjectKeyFromObject(withoutCA), metav1.ConditionFalse, "TLSError", secretTimeout)
	assert.Contains(t, ready(selfSigned).Message, "certificate signed by unknown authority")
	require.NotNil(t, selfSigned.Status.CertificateExpiry, "the expiry of an untrusted certificate is still reported")
	assert.True(t, selfSigned.Status.CertificateExpiry.Time.Equal(srv.Certificate().NotAfter))
	assert.Equal(t, webcheckerv1alpha1.ReasonCertificateNotVerified, condition(selfSigned, webcheckerv1alpha1.ConditionCertificateValid).Reason, "an untrusted certificate is not Valid")

	putSecret(t, ns, "ca", map[string]string{"ca.crt": "not a certificate"})
	bad := waitReady(t, client.ObjectKeyFromObject(withCA), metav1.ConditionFalse, "SecretUnavailable", secretTimeout)
	require.Eventually(t, func() bool {
		return strings.Contains(ready(getChecker(t, client.ObjectKeyFromObject(withCA))).Message, "holds no PEM-encoded certificate")
	}, secretTimeout, poll, "last: %s", ready(bad).Message)

	putSecret(t, ns, "ca", map[string]string{"ca.crt": string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))})
	up := waitReady(t, client.ObjectKeyFromObject(withCA), metav1.ConditionTrue, "ProbeSucceeded", secretTimeout)
	assert.Equal(t, "Valid", condition(up, webcheckerv1alpha1.ConditionCertificateValid).Reason)
	require.NotNil(t, up.Status.CertificateExpiry)
	assert.True(t, up.Status.CertificateExpiry.Time.Equal(srv.Certificate().NotAfter), "certificateExpiry %s, want %s", up.Status.CertificateExpiry, srv.Certificate().NotAfter)
}

// TestCertificateExpiring: a server that answers with a certificate that
// expires within the warning period is up (Ready True, probe_success 1);
// the CertificateValid condition turns False (ExpiringSoon) with one
// Warning Event, and the expiry metric is there for an alert of its own.
func TestCertificateExpiring(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	now := time.Now()
	cert := probetest.NewCertificate(t, "soon.test", now.Add(-time.Hour), now.Add(72*time.Hour))
	srv := startTLS(t, &cert)
	putSecret(t, ns, "ca", map[string]string{"ca.crt": string(cert.PEM)})

	wc := newChecker(ns, "expiring", srv.URL, "/")
	wc.Spec.TLS = &webcheckerv1alpha1.TLSOptions{CASecretRef: secretKey("ca", "ca.crt")}
	require.NoError(t, k8sClient.Create(context.Background(), wc))
	key := client.ObjectKeyFromObject(wc)

	got := waitCondition(t, key, webcheckerv1alpha1.ConditionCertificateValid, metav1.ConditionFalse, "ExpiringSoon", secretTimeout)
	assert.Equal(t, `the server's certificate expires at `+cert.X509.NotAfter.UTC().Format(time.RFC3339)+", in less than 336h0m0s",
		condition(got, webcheckerv1alpha1.ConditionCertificateValid).Message)
	up := ready(got)
	assert.Equal(t, metav1.ConditionTrue, up.Status, "an expiring certificate is no reason to call the server down")
	assert.Equal(t, "ProbeSucceeded", up.Reason)
	assert.Equal(t, "WebChecker is ready", up.Message)
	require.NotNil(t, got.Status.CertificateExpiry)
	assert.True(t, got.Status.CertificateExpiry.Time.Equal(cert.X509.NotAfter))
	assert.EqualValues(t, http.StatusOK, got.Status.HTTPStatusCode)
	// The metrics say the same: the server is up, and the expiry is
	// exported as the blackbox exporter's probe_ssl_earliest_cert_expiry.
	assert.Equal(t, map[string]float64{"": float64(cert.X509.NotAfter.Unix())}, checkerSeries(t, "webchecker_probe_ssl_earliest_cert_expiry", key))
	assert.Equal(t, map[string]float64{"": 1}, checkerSeries(t, "webchecker_probe_success", key))
	require.Eventually(t, func() bool {
		return eventReasons(t, ns, wc.Name) == "CertificateExpiringSoon" // a first success records none
	}, 5*time.Second, poll,
		"events: %s", eventReasons(t, ns, wc.Name))
	notes := eventNotes(t, ns, wc.Name, "CertificateExpiringSoon")
	assert.Equal(t, []string{condition(got, webcheckerv1alpha1.ConditionCertificateValid).Message}, notes)

	// A shorter warning period makes the certificate valid again.
	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.TLS.CertExpiryWarning = &metav1.Duration{Duration: 24 * time.Hour}
	require.NoError(t, k8sClient.Patch(context.Background(), got, patch))
	valid := waitCondition(t, key, webcheckerv1alpha1.ConditionCertificateValid, metav1.ConditionTrue, "Valid", secretTimeout)
	assert.Equal(t, metav1.ConditionTrue, ready(valid).Status)
	require.Eventually(t, func() bool { return strings.Contains(eventReasons(t, ns, wc.Name), "CertificateRenewed") }, 5*time.Second, poll)
	assert.Zero(t, strings.Count(eventReasons(t, ns, wc.Name), "ProbeSucceeded"), "Ready never changed")
}

// TestExpiredCertificateWithoutVerification: a probe that skips
// verification still reaches a server whose certificate has expired; it is
// up, and its certificate is Expired. (With verification the handshake
// fails, and Ready says TLSError: see TestCAFromSecret.)
func TestExpiredCertificateWithoutVerification(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	now := time.Now()
	cert := probetest.NewCertificate(t, "gone.test", now.Add(-48*time.Hour), now.Add(-time.Hour))
	srv := startTLS(t, &cert)

	wc := newChecker(ns, "expired", srv.URL, "/")
	wc.Spec.TLS = &webcheckerv1alpha1.TLSOptions{InsecureSkipVerify: true}
	require.NoError(t, k8sClient.Create(context.Background(), wc))
	key := client.ObjectKeyFromObject(wc)

	got := waitCondition(t, key, webcheckerv1alpha1.ConditionCertificateValid, metav1.ConditionFalse, "Expired", secretTimeout)
	assert.Equal(t, "The certificate chain expired at "+cert.X509.NotAfter.UTC().Format(time.RFC3339),
		condition(got, webcheckerv1alpha1.ConditionCertificateValid).Message)
	assert.Equal(t, metav1.ConditionTrue, ready(got).Status)
	require.Eventually(t, func() bool { return strings.Contains(eventReasons(t, ns, wc.Name), "CertificateExpired") }, 5*time.Second, poll,
		"events: %s", eventReasons(t, ns, wc.Name))
}

func TestAuthFromSecretsFollowsSecretUpdates(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, password, ok := r.BasicAuth()
		switch {
		case ok && user == "alice" && password == "pw-1":
		case r.Header.Get("Authorization") == "Bearer tok-1":
		default:
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	t.Cleanup(srv.Close)

	putSecret(t, ns, "basic", map[string]string{"username": "alice", "password": "pw-1"})
	putSecret(t, ns, "bearer", map[string]string{"token": "tok-1\n"}) // as kubectl --from-file leaves it
	basic := newChecker(ns, "basic", srv.URL, "/")
	basic.Spec.BasicAuthSecretRef = &webcheckerv1alpha1.SecretReference{Name: "basic"}
	bearer := newChecker(ns, "bearer", srv.URL, "/")
	bearer.Spec.BearerTokenSecretRef = secretKey("bearer", "token")
	require.NoError(t, k8sClient.Create(context.Background(), basic))
	require.NoError(t, k8sClient.Create(context.Background(), bearer))
	waitReady(t, client.ObjectKeyFromObject(basic), metav1.ConditionTrue, "ProbeSucceeded", secretTimeout)
	waitReady(t, client.ObjectKeyFromObject(bearer), metav1.ConditionTrue, "ProbeSucceeded", secretTimeout)

	// The password changes (no restart, no spec change): the next probes
	// use it.
	putSecret(t, ns, "basic", map[string]string{"username": "alice", "password": "pw-2"})
	denied := waitReady(t, client.ObjectKeyFromObject(basic), metav1.ConditionFalse, "UnexpectedStatus", secretTimeout)
	assert.EqualValues(t, http.StatusUnauthorized, denied.Status.HTTPStatusCode)
	putSecret(t, ns, "basic", map[string]string{"username": "alice"})
	missing := waitReady(t, client.ObjectKeyFromObject(basic), metav1.ConditionFalse, "SecretUnavailable", secretTimeout)
	assert.Equal(t, `spec.basicAuthSecretRef: Secret "basic" has no key "password"`, ready(missing).Message)
	putSecret(t, ns, "basic", map[string]string{"username": "alice", "password": "pw-1"})
	waitReady(t, client.ObjectKeyFromObject(basic), metav1.ConditionTrue, "ProbeSucceeded", secretTimeout)

	require.NoError(t, k8sClient.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bearer"}}))
	gone := waitReady(t, client.ObjectKeyFromObject(bearer), metav1.ConditionFalse, "SecretUnavailable", secretTimeout)
	assert.Equal(t, `spec.bearerTokenSecretRef: Secret "bearer" not found`, ready(gone).Message)
}

// headerEcho answers with the X-Api-Key header it received, in the body and
// in a response header, with a settable status.
type headerEcho struct {
	*httptest.Server
	status atomic.Int32
	mu     sync.Mutex
	seen   []string
}

func newHeaderEcho(t *testing.T) *headerEcho {
	e := &headerEcho{}
	e.status.Store(http.StatusServiceUnavailable)
	e.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := r.Header.Get("X-Api-Key")
		e.mu.Lock()
		e.seen = append(e.seen, v)
		e.mu.Unlock()
		w.Header().Set("X-Echo", v)
		w.WriteHeader(int(e.status.Load()))
		_, _ = io.WriteString(w, "you sent "+v)
	}))
	t.Cleanup(e.Close)
	return e
}

func (e *headerEcho) saw(v string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range e.seen {
		if s == v {
			return true
		}
	}
	return false
}

func randomValue(t *testing.T) string {
	t.Helper()
	return "s3cr3t-" + rand.Text()
}

func TestHeaderValuesFromSecretsNeverShow(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	echo := newHeaderEcho(t)
	first, second := randomValue(t), randomValue(t)

	putSecret(t, ns, "api", map[string]string{"other": first})
	wc := newChecker(ns, "secret-header", echo.URL, "/")
	wc.Spec.Headers = []webcheckerv1alpha1.HTTPHeader{{Name: "X-Api-Key", ValueFrom: &webcheckerv1alpha1.HeaderValueSource{SecretKeyRef: *secretKey("api", "key")}}}
	wc.Spec.BodyMatch = &webcheckerv1alpha1.BodyMatch{Regex: "healthy"}
	require.NoError(t, k8sClient.Create(context.Background(), wc))
	key := client.ObjectKeyFromObject(wc)

	noKey := waitReady(t, key, metav1.ConditionFalse, "SecretUnavailable", secretTimeout)
	assert.Equal(t, `spec.headers[X-Api-Key]: Secret "api" has no key "key"`, ready(noKey).Message)

	putSecret(t, ns, "api", map[string]string{"key": first})
	waitReady(t, key, metav1.ConditionFalse, "UnexpectedStatus", secretTimeout)
	require.Eventually(t, func() bool { return echo.saw(first) }, secretTimeout, poll, "the header never reached the server")

	// An update of the Secret takes effect without a restart.
	putSecret(t, ns, "api", map[string]string{"key": second})
	require.Eventually(t, func() bool { return echo.saw(second) }, secretTimeout, poll, "the updated header never reached the server")
	echo.status.Store(http.StatusOK)
	got := waitReady(t, key, metav1.ConditionFalse, "BodyMismatch", secretTimeout)
	assert.Equal(t, `response body does not match "healthy"`, ready(got).Message)

	// Neither value shows in the status, the Events or the logs. The
	// Event of the mismatch is written after the status.
	require.Eventually(t, func() bool { return eventRecorded(ns, key.Name, controllers.EventReasonFailureChanged) }, secretTimeout, poll,
		"no %s Event recorded", controllers.EventReasonFailureChanged)
	stored, err := json.Marshal(getChecker(t, key))
	require.NoError(t, err)
	var events eventsv1.EventList
	require.NoError(t, k8sClient.List(context.Background(), &events, client.InNamespace(ns)))
	require.NotEmpty(t, events.Items)
	recorded, err := json.Marshal(events)
	require.NoError(t, err)
	lines := logs.Lines()
	require.NotEmpty(t, lines)
	for _, v := range []string{first, second} {
		assert.NotContains(t, string(stored), v, "a Secret value in the WebChecker")
		assert.NotContains(t, string(recorded), v, "a Secret value in an Event")
		for _, line := range lines {
			if !assert.NotContains(t, line, v, "a Secret value in the logs") {
				break
			}
		}
	}
	assert.True(t, logsMention(lines, key), "the logs recorded nothing about the checker: the check above proves nothing")
}

// logsMention reports whether some log line names the checker key.
func logsMention(lines []string, key types.NamespacedName) bool {
	for _, line := range lines {
		if strings.Contains(line, key.Name) && strings.Contains(line, key.Namespace) {
			return true
		}
	}
	return false
}

func TestEgressDenied(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	var hits atomic.Int64
	ln, err := net.Listen("tcp", net.JoinHostPort(deniedAddr, "0"))
	require.NoError(t, err)
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) })}}
	srv.Start()
	t.Cleanup(srv.Close)
	_, port, err := net.SplitHostPort(ln.Addr().String())
	require.NoError(t, err)

	for name, host := range map[string]string{"by-address": srv.URL, "by-name": "http://denied.test:" + port} {
		wc := newChecker(ns, name, host, "/")
		require.NoError(t, k8sClient.Create(context.Background(), wc))
		got := waitReady(t, client.ObjectKeyFromObject(wc), metav1.ConditionFalse, "EgressDenied", secretTimeout)
		assert.Contains(t, ready(got).Message, "egress to 127.0.0.2 denied: denied range 127.0.0.2/32 (--deny-cidrs)")
	}
	assert.Zero(t, hits.Load(), "the denied server was reached")
}

// TestRenewedCertificateIsSeen rotates the certificate a target serves:
// every probe shakes hands anew, so status.certificateExpiry and the
// expiry metric follow within an interval (with connections kept alive,
// they stayed at the first handshake's value).
func TestRenewedCertificateIsSeen(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	now := time.Now()
	old := probetest.NewCertificate(t, "rotating.test", now.Add(-time.Hour), now.Add(30*24*time.Hour))
	renewed := probetest.NewCertificate(t, "rotating.test", now.Add(-time.Minute), now.Add(90*24*time.Hour))
	var serving atomic.Pointer[tls.Certificate]
	serving.Store(&old.TLS)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	// GetCertificate is not asked without SNI (probes of an IP send none).
	srv.TLS = &tls.Config{GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
		return &tls.Config{Certificates: []tls.Certificate{*serving.Load()}}, nil
	}}
	srv.StartTLS()
	t.Cleanup(srv.Close)

	wc := newChecker(ns, "rotating", srv.URL, "/")
	wc.Spec.TLS = &webcheckerv1alpha1.TLSOptions{InsecureSkipVerify: true} // the leaf's expiry counts
	require.NoError(t, k8sClient.Create(context.Background(), wc))
	key := client.ObjectKeyFromObject(wc)
	expiryIs := func(want time.Time) func(c *assert.CollectT) {
		return func(c *assert.CollectT) {
			got := getChecker(t, key).Status.CertificateExpiry
			if assert.NotNil(c, got, "status.certificateExpiry") {
				assert.Equal(c, want.UTC(), got.Time.UTC(), "status.certificateExpiry")
			}
			metric := checkerSeries(t, "webchecker_probe_ssl_earliest_cert_expiry", key)
			assert.Equal(c, map[string]float64{"": float64(want.Unix())}, metric, "webchecker_probe_ssl_earliest_cert_expiry")
		}
	}
	require.EventuallyWithT(t, expiryIs(old.X509.NotAfter), 3*interval+2*time.Second, poll, "the first certificate's expiry")

	serving.Store(&renewed.TLS)
	require.EventuallyWithT(t, expiryIs(renewed.X509.NotAfter), interval+2*time.Second, poll, "the renewed certificate's expiry within an interval")
}
