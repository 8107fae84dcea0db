package e2e_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/probing/probetest"
)

// TestAddressesAll runs the built manager with checkers of a name that
// their own DNS server (spec.dnsServer) resolves to 127.0.0.1, 127.0.0.2
// and 127.0.0.3, where the last refuses connections: with addresses All
// the checker is Ready False naming the dead address, with Any it is
// Ready True naming it, and First hides it. status.addresses holds each
// address's result and is not rewritten while nothing changes; the
// per-address series carry an address label, for those checkers only.
// Once the name no longer resolves to the dead address, All turns Ready.
func TestAddressesAll(t *testing.T) {
	const (
		ns      = "e2e-addresses"
		leaseNS = "e2e-addresses-leases"
		within  = 20 * time.Second
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := testClient(t, ctx, ns, leaseNS)

	port, listeners := probetest.SharedPort(t, []string{"127.0.0.1", "127.0.0.2"}, []string{"127.0.0.3"})
	for _, ln := range listeners {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
		_ = srv.Listener.Close()
		srv.Listener = ln
		srv.Start()
		t.Cleanup(srv.Close)
	}
	three := []net.IP{net.IPv4(127, 0, 0, 1), net.IPv4(127, 0, 0, 2), net.IPv4(127, 0, 0, 3)}
	own := probetest.NewTestDNSServer(t, map[string][]net.IP{"multi.test": three})

	mgr := startManager(t, ctx, "addresses-0", ns, leaseNS)
	modes := map[string]webcheckerv1alpha1.AddressMode{"all": webcheckerv1alpha1.AddressesAll, "any": webcheckerv1alpha1.AddressesAny, "first": webcheckerv1alpha1.AddressesFirst}
	for name, mode := range modes {
		require.NoError(t, c.Create(ctx, &webcheckerv1alpha1.WebChecker{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: webcheckerv1alpha1.WebCheckerSpec{
			Host: "http://multi.test:" + port, Path: "/", Addresses: mode, DNSServer: own.Addr(),
			Interval: &metav1.Duration{Duration: time.Second}, Timeout: &metav1.Duration{Duration: 500 * time.Millisecond},
		}}))
	}

	const dead = "127.0.0.3: "
	all := awaitReady(t, ctx, c, ns, "all", metav1.ConditionFalse, "ConnectionFailed", within)
	assert.True(t, strings.HasPrefix(all.Message, "1 of 3 addresses failing ("+dead), all.Message)
	anyReady := awaitReady(t, ctx, c, ns, "any", metav1.ConditionTrue, "ProbeSucceeded", within)
	assert.True(t, strings.HasPrefix(anyReady.Message, "WebChecker is ready: 1 of 3 addresses failing ("+dead), anyReady.Message)
	first := awaitReady(t, ctx, c, ns, "first", metav1.ConditionTrue, "ProbeSucceeded", within)
	assert.Equal(t, "WebChecker is ready", first.Message)

	get := func(name string) *webcheckerv1alpha1.WebChecker {
		wc := &webcheckerv1alpha1.WebChecker{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, wc))
		return wc
	}
	wc := get("all")
	require.Len(t, wc.Status.Addresses, 3)
	for i, want := range []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionTrue, metav1.ConditionFalse} {
		assert.Equal(t, three[i].String(), wc.Status.Addresses[i].Address)
		assert.Equal(t, want, wc.Status.Addresses[i].Ready, wc.Status.Addresses[i].Message)
	}
	assert.Equal(t, "ConnectionFailed", wc.Status.Addresses[2].Reason)
	assert.Empty(t, get("first").Status.Addresses)

	// Three more probes change nothing: no status write.
	version := wc.ResourceVersion
	time.Sleep(3500 * time.Millisecond) // proving that nothing happens takes the time it covers
	assert.Equal(t, version, get("all").ResourceVersion, "status rewritten with nothing changed")

	text, err := scrape(ctx, mgr)
	require.NoError(t, err)
	for _, want := range []string{
		`webchecker_probe_address_success{address="127.0.0.1",name="all",namespace="` + ns + `"`,
		`webchecker_probe_address_success{address="127.0.0.3",name="any",namespace="` + ns + `"`,
	} {
		assert.Contains(t, text, want)
	}
	assert.Regexp(t, `webchecker_probe_address_success\{address="127\.0\.0\.3",name="all",[^}]*\} 0\n`, text)
	assert.Regexp(t, `webchecker_probe_address_success\{address="127\.0\.0\.2",name="all",[^}]*\} 1\n`, text)
	assert.NotRegexp(t, `webchecker_probe_address_[a-z_]+\{[^}]*name="first"`, text, "no per-address series for a checker that does not ask")

	require.NoError(t, own.SetRecords(map[string][]net.IP{"multi.test": three[:2]}))
	awaitReady(t, ctx, c, ns, "all", metav1.ConditionTrue, "ProbeSucceeded", within)
	require.Eventually(t, func() bool { return len(get("all").Status.Addresses) == 2 }, within, 100*time.Millisecond)
}
