package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/e2e/bench/tlsca"
)

// TestTargets serves one checker of each kind and checks what each
// answers, what is recorded, and that closing ends a held request.
func TestTargets(t *testing.T) {
	ca, err := tlsca.New()
	require.NoError(t, err)
	kinds := []targetKind{kindHTTP, kindHTTPS, kindHang}
	tg, err := startTargets(targetsConfig{kinds: kinds, delay: newLatency(1, 2*time.Millisecond, 10*time.Millisecond, 20*time.Millisecond), ca: ca})
	require.NoError(t, err)
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = tg.close()
		}
	})
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(ca.CAPEM))
	client := &http.Client{Timeout: 300 * time.Millisecond,
		Transport: &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{RootCAs: roots}, DisableKeepAlives: true}}
	get := func(i int, path string) (int, error) {
		resp, err := client.Get(tg.hostOf(i) + path)
		if err != nil {
			return 0, err
		}
		_ = resp.Body.Close()
		return resp.StatusCode, nil
	}

	tests := map[string]struct {
		checker    int
		path       string
		failing    bool
		wantStatus int
		wantErr    bool
	}{
		"http":                  {checker: 0, path: pathOf(0), wantStatus: http.StatusOK},
		"http, failing":         {checker: 0, path: pathOf(0), failing: true, wantStatus: http.StatusInternalServerError},
		"https, the CA trusted": {checker: 1, path: pathOf(1), wantStatus: http.StatusOK},
		"never answers":         {checker: 2, path: pathOf(2), wantErr: true},
		"no checker's path":     {checker: 0, path: "/other", wantStatus: http.StatusNotFound},
		"no such checker":       {checker: 0, path: "/c/3", wantStatus: http.StatusNotFound},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			tg.setFailing(tt.checker, tt.failing)
			status, err := get(tt.checker, tt.path)
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantStatus, status)
		})
	}
	assert.Len(t, tg.probesOf(0), 2)
	assert.Len(t, tg.probesOf(1), 1)
	assert.Len(t, tg.probesOf(2), 1, "a held request is a probe too")
	assert.Equal(t, 2, tg.strayCount())
	assert.Contains(t, tg.hostOf(1), "https://127.0.0.1:")
	assert.Contains(t, tg.hostOf(0), "http://127.0.0.1:")

	// A request held with no client timeout ends when the targets close.
	ended := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, tg.hostOf(2)+pathOf(2), nil)
		resp, err := (&http.Client{Transport: &http.Transport{Proxy: nil}}).Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		ended <- err
	}()
	require.Eventually(t, func() bool { return len(tg.probesOf(2)) == 2 }, 5*time.Second, 10*time.Millisecond)
	start := time.Now()
	closed = true
	require.NoError(t, tg.close())
	assert.Less(t, time.Since(start), 4*time.Second, "closing does not wait for the hold bound")
	select {
	case err := <-ended:
		assert.Error(t, err, "dropped without an answer")
	case <-time.After(5 * time.Second):
		t.Fatal("the held request did not end")
	}
}
