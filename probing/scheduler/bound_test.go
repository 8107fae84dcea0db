package scheduler_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// TestInFlightBytesCountsEveryAddress: a probe of every address of a name
// takes of the memory budget what probing.MaxAddresses probes of its kind
// take, in every mode but First: a namespace editor cannot hold 16 times
// the budget by asking for every address.
func TestInFlightBytesCountsEveryAddress(t *testing.T) {
	specs := map[string]probing.TargetSpec{
		"http":  {URL: "http://multi.test/", Method: http.MethodGet, Timeout: time.Second},
		"https": {URL: "https://multi.test/", Method: http.MethodGet, Timeout: time.Second},
		"tcp":   {URL: "tcp://multi.test:5432", Timeout: time.Second},
		"grpcs": {URL: "grpcs://multi.test:443", Timeout: time.Second},
	}
	for name, spec := range specs {
		t.Run(name, func(t *testing.T) {
			first, err := probing.NewTarget(spec)
			require.NoError(t, err)
			one := scheduler.InFlightBytes(first)
			for _, mode := range []probing.AddressMode{probing.AddressesAny, probing.AddressesAll, probing.AddressesMajority} {
				spec.Addresses = mode
				every, err := probing.NewTarget(spec)
				require.NoError(t, err)
				assert.Equal(t, probing.MaxAddresses*one, scheduler.InFlightBytes(every), "%s", mode)
			}
		})
	}
}
