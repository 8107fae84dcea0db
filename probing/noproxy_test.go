package probing_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
)

// TestNoProxy matches hosts as curl reads NO_PROXY, without exempting
// loopback implicitly.
func TestNoProxy(t *testing.T) {
	n, err := probing.ParseNoProxy("Internal, .corp.example, 10.0.0.0/8, 192.0.2.7, [2001:db8::1], proxy.test:3128,")
	require.NoError(t, err)
	for host, want := range map[string]bool{
		"internal":        true,
		"db.sub.internal": true, // subdomains too
		"DB.Internal.":    true, // case and a trailing dot do not matter
		"notinternal":     false,
		"corp.example":    false, // .corp.example: subdomains only
		"x.corp.example":  true,
		"10.1.2.3":        true,
		"::ffff:10.1.2.3": true, // an IPv4-mapped address is its IPv4 one
		"192.0.2.7":       true,
		"192.0.2.8":       false,
		"2001:db8::1":     true,
		"proxy.test":      true, // the port is ignored
		"127.0.0.1":       false,
		"localhost":       false,
		"api.example.com": false,
	} {
		assert.Equal(t, want, n.Matches(host), host)
	}
	all, err := probing.ParseNoProxy(" * ")
	require.NoError(t, err)
	assert.True(t, all.Matches("anything.example"))
	assert.False(t, probing.NoProxy{}.Matches("anything.example"), "the zero value matches nothing")

	_, err = probing.ParseNoProxy("10.0.0.0/33")
	assert.ErrorContains(t, err, `"10.0.0.0/33"`)
}
