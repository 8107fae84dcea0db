package controllers_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
)

// TestDNSServerAdmission: the API server accepts an IP address with an
// optional port as spec.dnsServer and refuses anything else with one
// message.
func TestDNSServerAdmission(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	const want = "dnsServer must be an IP address with an optional port"
	cases := map[string]bool{
		"10.96.0.10":          true,
		"10.96.0.10:5353":     true,
		"2001:db8::53":        true,
		"[2001:db8::53]:5353": true,
		"dns.example.com":     false,
		"dns.example.com:53":  false,
		"10.96.0.10:0":        false,
		"10.96.0.10:65536":    false,
		"10.96.0.10:":         false,
		"fe80::1%eth0":        false,
		"[2001:db8::53]":      false,
		"10.96.0.10/32":       false,
		"http://10.96.0.10":   false,
		" 10.96.0.10":         false,
	}
	i := 0
	for server, valid := range cases {
		i++
		t.Run(server, func(t *testing.T) {
			wc := newChecker(ns, fmt.Sprintf("dns-server-%d", i), "http://example.com", "/")
			setServer := func(s *webcheckerv1alpha1.WebCheckerSpec) { s.DNSServer = server }
			if !valid {
				assertRejected(t, wc, setServer, want)
				return
			}
			setServer(&wc.Spec)
			require.NoError(t, k8sClient.Create(context.Background(), wc, client.DryRunAll))
		})
	}
}
