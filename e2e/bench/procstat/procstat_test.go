package procstat

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseStatCPU(t *testing.T) {
	tests := []struct {
		name    string
		stat    string
		want    time.Duration
		wantErr bool
	}{
		{
			name: "plain command",
			stat: "42 (manager) S 1 42 42 0 -1 4194560 1 0 0 0 250 130 0 0 20 0 9 0 1 1 1",
			want: 3800 * time.Millisecond,
		},
		{
			name: "command with spaces and parentheses",
			stat: "42 (a (b) c) S 1 42 42 0 -1 4194560 1 0 0 0 7 3 0 0 20 0 9 0 1 1 1",
			want: 100 * time.Millisecond,
		},
		{name: "truncated", stat: "42 (x) S 1 2 3", wantErr: true},
		{name: "no command", stat: "42 x S", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatCPU([]byte(tt.stat))
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestParseStatusMemory(t *testing.T) {
	rss, peak, err := parseStatusMemory([]byte("Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\nThreads:\t3\n"))
	require.NoError(t, err)
	assert.Equal(t, uint64(1024*1024), rss)
	assert.Equal(t, uint64(2048*1024), peak)

	_, _, err = parseStatusMemory([]byte("Name:\tx\nVmRSS:\t1 kB\n"))
	assert.Error(t, err)
}

func TestReadSelfSeesCPUAndMemory(t *testing.T) {
	before, err := Read(Self)
	require.NoError(t, err)
	deadline := time.Now().Add(5 * time.Second)
	x := 0
	for {
		for i := range 1_000_000 {
			x += i
		}
		after, err := Read(Self)
		require.NoError(t, err)
		if after.CPUSince(before) > 0 {
			assert.NotZero(t, after.RSS)
			assert.GreaterOrEqual(t, after.PeakRSS, after.RSS)
			break
		}
		require.True(t, time.Now().Before(deadline), "no CPU time counted after 5 s of work (%d)", x)
	}
	_, err = Read(os.Getpid())
	assert.NoError(t, err)
}

func TestReadCPUOfSelf(t *testing.T) {
	s, err := ReadCPU(Self)
	require.NoError(t, err)
	assert.NotZero(t, s.CPU)
	assert.Zero(t, s.RSS)
	_, err = ReadCPU(-1)
	assert.Error(t, err)
}
