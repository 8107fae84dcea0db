package controllers_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
)

// TestAddressesAdmission: the API server defaults spec.addresses to
// First, accepts the four modes on every kind, and refuses another value,
// and a mode other than First with a proxy or with reuseConnections, each
// with its own message.
func TestAddressesAdmission(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	ctx := context.Background()

	defaulted := newChecker(ns, "addresses-default", "http://example.com", "/")
	require.NoError(t, k8sClient.Create(ctx, defaulted, client.DryRunAll))
	require.Equal(t, webcheckerv1alpha1.AddressesFirst, defaulted.Spec.Addresses)

	hosts := []string{"http://example.com", "https://example.com", "tcp://example.com:5432", "tls://example.com:443", "grpc://example.com:50051", "dns://ns.example.com"}
	for i, mode := range []webcheckerv1alpha1.AddressMode{webcheckerv1alpha1.AddressesFirst, webcheckerv1alpha1.AddressesAny, webcheckerv1alpha1.AddressesAll, webcheckerv1alpha1.AddressesMajority} {
		for j, host := range hosts {
			t.Run(fmt.Sprintf("%s %s", mode, host), func(t *testing.T) {
				wc := newChecker(ns, fmt.Sprintf("addresses-%d-%d", i, j), host, "")
				if host == "http://example.com" || host == "https://example.com" {
					wc.Spec.Path = "/"
				}
				if host == "dns://ns.example.com" {
					wc.Spec.DNS = &webcheckerv1alpha1.DNSProbe{Name: "example.com"}
				}
				wc.Spec.Addresses = mode
				require.NoError(t, k8sClient.Create(ctx, wc, client.DryRunAll))
			})
		}
	}

	refused := map[string]struct {
		mutate func(*webcheckerv1alpha1.WebCheckerSpec)
		want   string
	}{
		"unknown mode": {func(s *webcheckerv1alpha1.WebCheckerSpec) { s.Addresses = "Most" }, `spec.addresses: Unsupported value: "Most"`},
		"lower case":   {func(s *webcheckerv1alpha1.WebCheckerSpec) { s.Addresses = "all" }, `spec.addresses: Unsupported value: "all"`},
		"with a proxy": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
			s.Addresses, s.Proxy = webcheckerv1alpha1.AddressesAll, &webcheckerv1alpha1.ProxySpec{URL: "http://proxy.example.com:3128"}
		}, "addresses Any, All and Majority cannot be used with a proxy"},
		"with reuseConnections": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
			s.Addresses, s.ReuseConnections = webcheckerv1alpha1.AddressesMajority, true
		}, "addresses Any, All and Majority cannot be used with reuseConnections"},
	}
	i := 0
	for name, tc := range refused {
		i++
		t.Run(name, func(t *testing.T) {
			assertRejected(t, newChecker(ns, fmt.Sprintf("addresses-refused-%d", i), "http://example.com", "/"), tc.mutate, tc.want)
		})
	}
}
