package controllers_test

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers"
	"github.com/networkio/webchecker/probing/probetest"
)

// rotatingServer is an https server on 127.0.0.1 whose certificate, and
// the answer of its handler, the test changes while it runs.
type rotatingServer struct {
	cert    atomic.Pointer[tls.Certificate]
	handler atomic.Pointer[http.HandlerFunc]
	url     string
}

// startRotatingServer serves over TLS with cert, answering with handle.
// It is its own TLS listener: a server that sets tls.Config.Certificates
// (as httptest's StartTLS does) would never ask GetCertificate for a
// client that sends no server name, as a probe of an IP address does.
func startRotatingServer(t *testing.T, cert probetest.Certificate, handle http.HandlerFunc) *rotatingServer {
	t.Helper()
	s := &rotatingServer{}
	s.serve(cert, handle)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ln = tls.NewListener(ln, &tls.Config{
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return s.cert.Load(), nil },
	})
	srv := &http.Server{
		Handler:           http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*s.handler.Load())(w, r) }),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	s.url = "https://" + ln.Addr().String()
	return s
}

// serve makes the server present cert and answer with handle.
func (s *rotatingServer) serve(cert probetest.Certificate, handle http.HandlerFunc) {
	chain := probetest.Chain(cert)
	s.cert.Store(&chain)
	s.handler.Store(&handle)
}

func answer(code int) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }
}

// fingerprintStart is the start of cert's SHA-256 fingerprint, as a
// TargetChanged note shows it.
func fingerprintStart(cert probetest.Certificate) string {
	sum := sha256.Sum256(cert.X509.Raw)
	return hex.EncodeToString(sum[:8])
}

// reasonCount counts the Events about one WebChecker with reason, by
// their series.
func reasonCount(t *testing.T, ns, name, reason string) int {
	t.Helper()
	n := 0
	for _, r := range strings.Split(eventReasons(t, ns, name), ",") {
		if r == reason {
			n++
		}
	}
	return n
}

// successfulWrites is the number of status writes that succeeded of the
// replica whose metrics g gathers.
func successfulWrites(t *testing.T, g prometheus.Gatherer) float64 {
	t.Helper()
	families, err := g.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "webchecker_status_writes_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == "success" {
					return metricValue(m)
				}
			}
		}
	}
	return 0
}

// TestCertificateRotatedWhileProbing: the server's certificate is rotated
// (same expiry) between two probes of a Ready checker: its owner records
// one TargetChanged Event naming the start of both fingerprints, and
// writes no status for it; the probes after it, and the reconciles they
// cause, record nothing more.
func TestCertificateRotatedWhileProbing(t *testing.T) {
	t.Parallel()
	c := startClockedReplica(t)
	notBefore, notAfter := time.Now().Add(-time.Hour), time.Now().Add(90*24*time.Hour)
	first := probetest.NewCertificate(t, "rotating.test", notBefore, notAfter)
	second := probetest.NewCertificate(t, "rotating.test", notBefore, notAfter)
	srv := startRotatingServer(t, first, answer(http.StatusOK))
	wc := newChecker(c.namespace, "rotated", srv.url, "/")
	wc.Spec.TLS = &webcheckerv1alpha1.TLSOptions{InsecureSkipVerify: true}
	key := client.ObjectKeyFromObject(wc)
	require.NoError(t, k8sClient.Create(context.Background(), wc))
	waitReady(t, key, metav1.ConditionTrue, "ProbeSucceeded", waitFor)
	c.step(t, key) // the same certificate again
	rv := getChecker(t, key).ResourceVersion
	writes := successfulWrites(t, c.registry)
	assert.Zero(t, reasonCount(t, c.namespace, wc.Name, controllers.EventReasonTargetChanged), "a first certificate is no change")

	srv.serve(second, answer(http.StatusOK))
	c.step(t, key)

	require.Eventually(t, func() bool {
		return reasonCount(t, c.namespace, wc.Name, controllers.EventReasonTargetChanged) > 0
	}, waitFor, poll, "no TargetChanged Event")
	assert.Equal(t, []string{"The target changed: certificate SHA-256 " + fingerprintStart(first) + "… → " + fingerprintStart(second) + "…"},
		eventNotes(t, c.namespace, wc.Name, controllers.EventReasonTargetChanged))
	c.step(t, key)
	c.step(t, key)
	assertStatusStays(t, key, rv, "the rotation wrote the status")
	assert.Equal(t, 1, reasonCount(t, c.namespace, wc.Name, controllers.EventReasonTargetChanged), "TargetChanged Events")
	assert.Equal(t, writes, successfulWrites(t, c.registry), "status writes")
}

// TestTargetChangeEchoesNothing: a hostile server whose certificate's
// issuer and redirect locations carry a marker rotates both, then fails:
// the TargetChanged Event, the failure that mentions the change, the
// status and the logs never show the marker.
func TestTargetChangeEchoesNothing(t *testing.T) {
	t.Parallel()
	const marker = "hostileMarker7731"
	c := startClockedReplica(t)
	notBefore, notAfter := time.Now().Add(-time.Hour), time.Now().Add(90*24*time.Hour)
	issue := func(issuer string) probetest.Certificate {
		ca := probetest.NewCertificate(t, issuer, notBefore, notAfter)
		return probetest.CertificateTemplate{Name: "hostile.test", NotBefore: notBefore, NotAfter: notAfter, Issuer: &ca, Leaf: true}.Issue(t)
	}
	redirect := func(to string, code int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/" {
				w.Header().Set("Location", to)
				w.WriteHeader(http.StatusFound)
				return
			}
			w.WriteHeader(code)
			_, _ = w.Write([]byte(marker))
		}
	}
	first, second := issue(marker+" CA one"), issue(marker+" CA two")
	srv := startRotatingServer(t, first, redirect("/one?"+marker, http.StatusOK))
	wc := newChecker(c.namespace, "hostile", srv.url, "/")
	wc.Spec.TLS = &webcheckerv1alpha1.TLSOptions{InsecureSkipVerify: true}
	wc.Spec.FollowRedirects = ptr.To(true)
	key := client.ObjectKeyFromObject(wc)
	require.NoError(t, k8sClient.Create(context.Background(), wc))
	waitReady(t, key, metav1.ConditionTrue, "ProbeSucceeded", waitFor)

	srv.serve(second, redirect("/two?"+marker, http.StatusOK))
	c.step(t, key)
	require.Eventually(t, func() bool {
		return reasonCount(t, c.namespace, wc.Name, controllers.EventReasonTargetChanged) > 0
	}, waitFor, poll, "no TargetChanged Event")
	srv.serve(second, redirect("/two?"+marker, http.StatusServiceUnavailable))
	c.step(t, key)
	down := waitReady(t, key, metav1.ConditionFalse, "UnexpectedStatus", waitFor)

	assert.Contains(t, ready(down).Message, "(certificate and redirect location changed 1s before)", "the failure mentions the change")
	notes := eventNotes(t, c.namespace, wc.Name, controllers.EventReasonTargetChanged)
	require.Len(t, notes, 1)
	assert.Equal(t, "The target changed: certificate SHA-256 "+fingerprintStart(first)+"… → "+fingerprintStart(second)+"…; the final redirect location changed", notes[0])
	status, err := json.Marshal(down.Status)
	require.NoError(t, err)
	assert.NotContains(t, string(status), marker, "the status")
	for _, reason := range []string{controllers.EventReasonTargetChanged, controllers.EventReasonProbeFailed} {
		for _, note := range eventNotes(t, c.namespace, wc.Name, reason) {
			assert.NotContains(t, note, marker, "a %s note", reason)
		}
	}
	for _, line := range logs.Lines() {
		assert.NotContains(t, line, marker, "a log line")
	}
}
