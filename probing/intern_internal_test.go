package probing

import (
	"net/http"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing/probetest"
)

// TestTargetsShareTheirCABundle: targets built from equal CA bundles keep
// one copy of it, their transport key is the one keyOf gives, and Spec
// still hands out a copy of its own, which the caller may change without
// changing any target.
func TestTargetsShareTheirCABundle(t *testing.T) {
	pem := probetest.NewCertificate(t, "ca.test", time.Now().Add(-time.Hour), time.Now().Add(time.Hour)).PEM
	spec := func() TargetSpec {
		return TargetSpec{URL: "https://a.test/", Method: http.MethodGet, Timeout: time.Second, TLS: TLSOptions{RootCAs: append([]byte(nil), pem...)}}
	}
	a, err := NewTarget(spec())
	require.NoError(t, err)
	b, err := NewTarget(spec())
	require.NoError(t, err)
	assert.Same(t, unsafe.SliceData(a.b.TLS.RootCAs), unsafe.SliceData(b.b.TLS.RootCAs), "one copy of the bundle")
	assert.Equal(t, keyOf(&a.b.TargetSpec), a.b.transport, "the key a probe would have worked out")

	copied := a.Spec()
	copied.TLS.RootCAs[0] ^= 0xff
	assert.Equal(t, pem, a.b.TLS.RootCAs, "Spec's copy is the caller's")
	assert.Equal(t, pem, b.b.TLS.RootCAs)
}
