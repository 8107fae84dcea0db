package framework

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// RunInTest starts r (a manager, a cache, any Runnable) in this process
// and, when the test ends, stops it and fails the test if Start returned an
// error.
func RunInTest(t testing.TB, r manager.Runnable) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- r.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-stopped)
	})
}
