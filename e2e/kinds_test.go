package e2e_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/probing/probetest"
)

// kindCase is one checker of TestProbeKinds: its spec, and what turns its
// server from answering as expected to not.
type kindCase struct {
	name string
	spec webcheckerv1alpha1.WebCheckerSpec
	// breakIt changes the server so that the probe fails with reason.
	breakIt func()
	reason  string
}

// TestProbeKinds runs the built manager with a checker of every probe kind
// (tcp, tls, grpc, dns, http with CEL conditions, http through a proxy)
// against loopback servers: each turns Ready True, then False with the
// reason of its kind once its server changes. A condition that does not
// compile is Ready False InvalidCondition from the start.
func TestProbeKinds(t *testing.T) {
	const (
		ns      = "e2e-kinds"
		leaseNS = "e2e-kinds-leases"
		within  = 20 * time.Second
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := testClient(t, ctx, ns, leaseNS)

	cases := []kindCase{tcpCase(t), tlsCase(t, ctx, c, ns), grpcCase(t), dnsCase(t), conditionsCase(t), proxyCase(t)}

	startManager(t, ctx, "kinds-0", ns, leaseNS)

	for _, tc := range cases {
		tc.spec.Interval = &metav1.Duration{Duration: time.Second}
		tc.spec.Timeout = &metav1.Duration{Duration: 500 * time.Millisecond}
		require.NoError(t, c.Create(ctx, &webcheckerv1alpha1.WebChecker{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tc.name}, Spec: tc.spec}), tc.name)
	}
	invalid := &webcheckerv1alpha1.WebChecker{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "invalid-condition"}, Spec: webcheckerv1alpha1.WebCheckerSpec{
		Host:       "tcp://127.0.0.1:9",
		Conditions: []webcheckerv1alpha1.ResponseCondition{{Expression: "response.code == 200"}},
	}}
	require.NoError(t, c.Create(ctx, invalid))

	for _, tc := range cases {
		awaitReady(t, ctx, c, ns, tc.name, metav1.ConditionTrue, "ProbeSucceeded", within)
	}
	cond := awaitReady(t, ctx, c, ns, invalid.Name, metav1.ConditionFalse, "InvalidCondition", within)
	require.Contains(t, cond.Message, "response", "the compiler's message: %s", cond.Message)

	for _, tc := range cases {
		tc.breakIt()
	}
	for _, tc := range cases {
		cond := awaitReady(t, ctx, c, ns, tc.name, metav1.ConditionFalse, tc.reason, within)
		t.Logf("%s: %s %s: %s", tc.name, cond.Status, cond.Reason, cond.Message)
	}
}

// awaitReady waits until the checker's Ready condition has status and
// reason, and returns it.
func awaitReady(t *testing.T, ctx context.Context, c client.Client, ns, name string, status metav1.ConditionStatus, reason string, within time.Duration) metav1.Condition {
	t.Helper()
	var last metav1.Condition
	reached := assert.Eventually(t, func() bool {
		wc := &webcheckerv1alpha1.WebChecker{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, wc); err != nil {
			return false
		}
		if cond := meta.FindStatusCondition(wc.Status.Conditions, webcheckerv1alpha1.ConditionReady); cond != nil {
			last = *cond
		}
		return last.Status == status && last.Reason == reason
	}, within, 100*time.Millisecond)
	require.True(t, reached, "%s: want Ready %s %s, have %s %s: %s", name, status, reason, last.Status, last.Reason, last.Message)
	return last
}

// tcpCase: a banner server; closed, the probe cannot connect.
func tcpCase(t *testing.T) kindCase {
	server := probetest.NewTestBannerServer(t, probetest.BannerOptions{Banner: "220 ready\r\n", Close: true})
	return kindCase{
		name:    "tcp",
		spec:    webcheckerv1alpha1.WebCheckerSpec{Host: "tcp://" + server.Addr(), TCP: &webcheckerv1alpha1.TCPProbe{Expect: "^220 "}},
		breakIt: func() { _ = server.Close() },
		reason:  "ConnectionFailed",
	}
}

// tlsCase: a TLS server with a banner, trusted through a CA bundle from a
// Secret; closed, the probe cannot connect.
func tlsCase(t *testing.T, ctx context.Context, c client.Client, ns string) kindCase {
	cert := probetest.NewCertificate(t, "127.0.0.1", time.Now().Add(-time.Hour), time.Now().Add(90*24*time.Hour))
	tlsCert := probetest.Chain(cert)
	server := probetest.NewTestBannerServer(t, probetest.BannerOptions{TLS: &tlsCert, Banner: "* OK IMAP ready\r\n", Close: true})
	require.NoError(t, c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tls-ca"}, Data: map[string][]byte{"ca.crt": cert.PEM}}))
	return kindCase{
		name: "tls",
		spec: webcheckerv1alpha1.WebCheckerSpec{
			Host: "tls://" + server.Addr(),
			TLS:  &webcheckerv1alpha1.TLSOptions{CASecretRef: &webcheckerv1alpha1.SecretKeySelector{Name: "tls-ca", Key: "ca.crt"}},
			TCP:  &webcheckerv1alpha1.TCPProbe{Expect: `^\* OK`},
		},
		breakIt: func() { _ = server.Close() },
		reason:  "ConnectionFailed",
	}
}

// grpcCase: a gRPC server with the standard health service, which turns
// NOT_SERVING.
func grpcCase(t *testing.T) kindCase {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	server := grpc.NewServer()
	healthServer := health.NewServer()
	healthpb.RegisterHealthServer(server, healthServer)
	healthServer.SetServingStatus("shop.Payments", healthpb.HealthCheckResponse_SERVING)
	go func() { _ = server.Serve(ln) }()
	t.Cleanup(server.Stop)
	return kindCase{
		name: "grpc",
		spec: webcheckerv1alpha1.WebCheckerSpec{Host: "grpc://" + ln.Addr().String(), GRPC: &webcheckerv1alpha1.GRPCProbe{Service: "shop.Payments"}},
		breakIt: func() {
			healthServer.SetServingStatus("shop.Payments", healthpb.HealthCheckResponse_NOT_SERVING)
		},
		reason: "NotServing",
	}
}

// dnsCase: a DNS server queried directly, whose answer changes.
func dnsCase(t *testing.T) kindCase {
	server := probetest.NewTestDNSServer(t, map[string][]net.IP{"www.shop.test": {net.ParseIP("192.0.2.10")}})
	return kindCase{
		name: "dns",
		spec: webcheckerv1alpha1.WebCheckerSpec{Host: "dns://" + server.Addr(), DNS: &webcheckerv1alpha1.DNSProbe{
			Name: "www.shop.test", AnswerMatch: []string{`IN\s+A\s+192\.0\.2\.10$`},
		}},
		breakIt: func() {
			require.NoError(t, server.SetRecords(map[string][]net.IP{"www.shop.test": {net.ParseIP("192.0.2.99")}}))
		},
		reason: "AnswerMismatch",
	}
}

// conditionsCase: an HTTP server whose JSON status turns from ok to
// degraded, judged by CEL conditions.
func conditionsCase(t *testing.T) kindCase {
	var status atomic.Value
	status.Store("ok")
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"status":%q,"checks":[{"name":"db","healthy":true}]}`, status.Load())
	}))
	t.Cleanup(server.Close)
	return kindCase{
		name: "conditions",
		spec: webcheckerv1alpha1.WebCheckerSpec{Host: server.URL, Path: "/status", Conditions: []webcheckerv1alpha1.ResponseCondition{
			{Expression: `response.headers["content-type"].startsWith("application/json")`},
			{Expression: `response.json.status == "ok" && response.json.checks.all(c, c.healthy)`, Message: "the service reports itself unhealthy"},
		}},
		breakIt: func() { status.Store("degraded") },
		reason:  "ConditionFailed",
	}
}

// proxyCase: an http target reached through a proxy, which goes away.
func proxyCase(t *testing.T) kindCase {
	target := probetest.NewTarget()
	t.Cleanup(target.Close)
	proxy := probetest.NewTestProxy(t, probetest.ProxyOptions{})
	return kindCase{
		name: "proxy",
		spec: webcheckerv1alpha1.WebCheckerSpec{Host: target.URL(), Path: "/via-proxy", Proxy: &webcheckerv1alpha1.ProxySpec{URL: proxy.URL()}},
		breakIt: func() {
			require.Positive(t, proxy.Requests(), "the probes went through the proxy")
			require.True(t, strings.HasPrefix(proxy.ForwardedURLs()[0], target.URL()), "forwarded %v", proxy.ForwardedURLs())
			_ = proxy.Close()
		},
		reason: "ProxyFailed",
	}
}
