package checkspec_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers/checkspec"
	"github.com/networkio/webchecker/probing"
)

// TestCheckForAddresses: spec.addresses becomes the target's address
// mode (empty and First are the client's way); what the API server would
// refuse, an unknown mode or a mode other than First with a proxy, is an
// invalid target here too.
func TestCheckForAddresses(t *testing.T) {
	cases := []struct {
		mode    webcheckerv1alpha1.AddressMode
		proxy   bool
		want    probing.AddressMode
		invalid string
	}{
		{mode: "", want: probing.AddressesFirst},
		{mode: webcheckerv1alpha1.AddressesFirst, want: probing.AddressesFirst},
		{mode: webcheckerv1alpha1.AddressesAny, want: probing.AddressesAny},
		{mode: webcheckerv1alpha1.AddressesAll, want: probing.AddressesAll},
		{mode: webcheckerv1alpha1.AddressesMajority, want: probing.AddressesMajority},
		{mode: webcheckerv1alpha1.AddressesFirst, proxy: true, want: probing.AddressesFirst},
		{mode: "Most", invalid: `invalid target: unknown addresses "Most"`},
		{mode: webcheckerv1alpha1.AddressesAll, proxy: true, invalid: "addresses All cannot be probed through a proxy"},
	}
	for _, tc := range cases {
		t.Run(string(tc.mode), func(t *testing.T) {
			wc := newChecker("ns", "addresses", "https://example.com", "/")
			wc.Spec.Addresses = tc.mode
			if tc.proxy {
				wc.Spec.Proxy = &webcheckerv1alpha1.ProxySpec{URL: "http://proxy.example.com:3128"}
			}
			check, err := checkspec.CheckFor(wc, nil)
			if tc.invalid != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.invalid)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, check.Target.Spec().Addresses)
		})
	}
}
