package framework_test

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/e2e/framework"
)

func TestReadMemory(t *testing.T) {
	before, err := framework.ReadMemory(os.Getpid())
	require.NoError(t, err)
	assert.Positive(t, before.RSS)
	assert.GreaterOrEqual(t, before.HWM, before.RSS, "the peak is at least the current size")

	// 64 MiB touched page by page raise both.
	block := make([]byte, 64<<20)
	for i := 0; i < len(block); i += 4096 {
		block[i] = 1
	}
	after, err := framework.ReadMemory(os.Getpid())
	require.NoError(t, err)
	assert.GreaterOrEqual(t, after.HWM, before.RSS+60<<20)
	assert.GreaterOrEqual(t, after.RSS, before.RSS+60<<20)
	_ = block[len(block)-1]

	_, err = framework.ReadMemory(-1)
	assert.Error(t, err)
}

func TestReadCPUTime(t *testing.T) {
	before, err := framework.ReadCPUTime(os.Getpid())
	require.NoError(t, err)
	// Spin until the kernel has charged this process 100 ms more.
	deadline := time.Now().Add(10 * time.Second)
	x := 0
	for {
		for i := range 1_000_000 {
			x += i
		}
		now, err := framework.ReadCPUTime(os.Getpid())
		require.NoError(t, err)
		if now-before >= 100*time.Millisecond {
			break
		}
		require.True(t, time.Now().Before(deadline), "CPU time stuck at %s", now)
	}
	_ = x

	_, err = framework.ReadCPUTime(-1)
	assert.Error(t, err)
}
