package main

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLatency(t *testing.T) {
	l := newLatency(delaySeed, delayMedian, delayP99, delayCap)
	const checkers, probes = 2000, 50
	var all []time.Duration
	for i := range checkers {
		for n := range probes {
			all = append(all, l.of(i, n))
		}
	}
	assert.Equal(t, l.of(17, 3), l.of(17, 3), "the same checker and probe get the same delay")
	assert.NotEqual(t, l.of(17, 3), l.of(17, 4), "another probe another")
	assert.NotEqual(t, l.of(17, 3), l.of(18, 3), "another checker another")
	slices.Sort(all)
	at := func(q float64) time.Duration { return all[int(q*float64(len(all)-1))] }
	assert.InDelta(t, delayMedian.Seconds(), at(0.5).Seconds(), 0.05*delayMedian.Seconds(), "median")
	assert.InDelta(t, delayP99.Seconds(), at(0.99).Seconds(), 0.1*delayP99.Seconds(), "99th percentile")
	assert.LessOrEqual(t, all[len(all)-1], delayCap, "capped")
	assert.Equal(t, delayCap, all[len(all)-1], "some reach the cap (p99.9 is above it)")
	assert.Positive(t, all[0])
}

func TestKinds(t *testing.T) {
	tests := map[string]struct {
		profile                      string
		size                         int
		wantHTTPS, wantHang, wantBad int
	}{
		"instant, all http":               {profile: profileInstant, size: 10000, wantBad: 500},
		"realistic, 20 % https, 1 % hang": {profile: profileRealistic, size: 10000, wantHTTPS: 2000, wantHang: 100, wantBad: 500},
		"realistic smoke, one of each":    {profile: profileRealistic, size: smokeRealisticSize, wantHTTPS: 12, wantHang: 1, wantBad: 3},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			o := defaultOptions()
			o.profile = tt.profile
			require.NoError(t, o.finish(map[string]bool{}))
			var https, hang, bad int
			for i := range tt.size {
				switch o.kindOf(i) {
				case kindHTTPS:
					https++
				case kindHang:
					hang++
					assert.False(t, o.failsFromStart(i), "a hanging target is not one of the failing ones")
				}
				if o.failsFromStart(i) {
					bad++
					assert.Equal(t, kindHTTP, o.kindOf(i), "the failing targets are plain http")
				}
			}
			assert.Equal(t, tt.wantHTTPS, https)
			assert.Equal(t, tt.wantHang, hang)
			assert.Equal(t, tt.wantBad, bad)
		})
	}
}

func TestFinish(t *testing.T) {
	tests := map[string]struct {
		args                  []string
		wantErr               string
		wantName              string
		wantTimeout, wantHang time.Duration
		wantSizes             []int
	}{
		"instant default": {wantName: "controlplane", wantTimeout: 2 * time.Second, wantHang: 2 * time.Second, wantSizes: []int{1000, 3000, 10000}},
		"realistic default": {args: []string{"--profile", "realistic"}, wantName: "controlplane-realistic",
			wantTimeout: 4 * time.Second, wantHang: 9 * time.Second, wantSizes: []int{10000}},
		"issue's size": {args: []string{"--profile", "realistic", "--sizes", "100000", "--replicas", "10", "--interval", "60s"},
			wantName: "controlplane-realistic-10x1m0s", wantTimeout: 4 * time.Second, wantHang: 10 * time.Second, wantSizes: []int{100000}},
		"realistic smoke": {args: []string{"--profile", "realistic", "--smoke"}, wantName: "controlplane-realistic-3x3s",
			wantTimeout: 2 * time.Second, wantHang: 2700 * time.Millisecond, wantSizes: []int{smokeRealisticSize}},
		"unknown profile":        {args: []string{"--profile", "slow"}, wantErr: "--profile"},
		"two replicas realistic": {args: []string{"--profile", "realistic", "--replicas", "2"}, wantErr: "--replicas"},
		"interval below timeout": {args: []string{"--profile", "realistic", "--interval", "4s"}, wantErr: "--interval"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			o, err := parseOptions(append([]string{"--manager", "m", "--out", "o"}, tt.args...), &strings.Builder{})
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantName, o.name)
			assert.Equal(t, tt.wantTimeout, o.timeout)
			assert.Equal(t, tt.wantHang, o.hangTimeout)
			assert.Equal(t, tt.wantSizes, o.sizes)
			assert.Less(t, o.hangTimeout, o.interval, "the API wants a timeout below the interval")
		})
	}
}

func TestParseSched(t *testing.T) {
	raw := `# HELP webchecker_scheduler_lag_seconds How late.
# TYPE webchecker_scheduler_lag_seconds histogram
webchecker_scheduler_lag_seconds_bucket{le="0.001"} 50
webchecker_scheduler_lag_seconds_bucket{le="0.01"} 90
webchecker_scheduler_lag_seconds_bucket{le="0.1"} 100
webchecker_scheduler_lag_seconds_bucket{le="+Inf"} 100
webchecker_scheduler_lag_seconds_sum 0.5
webchecker_scheduler_lag_seconds_count 100
webchecker_scheduler_inflight 7
webchecker_scheduler_inflight_bytes 172032
webchecker_scheduler_memory_budget_bytes 6.7108864e+07
webchecker_scheduler_workers 0
webchecker_scheduler_saturated 1
webchecker_scheduler_skipped_turns_total 3
webchecker_scheduler_delayed_turns_total{reason="bound"} 4
webchecker_scheduler_delayed_turns_total{reason="late"} 5
webchecker_probe_latency_seconds_count{result="success"} 1e6
webchecker_check_up{namespace="bench",name="wc-00001"} 1
`
	s, n, err := parseSched(strings.NewReader(raw))
	require.NoError(t, err)
	assert.Equal(t, int64(len(raw)), n)
	assert.Equal(t, schedSample{
		lag:      []bucket{{0.001, 50}, {0.01, 90}, {0.1, 100}, {math.Inf(1), 100}},
		inflight: 7, heldBytes: 172032, budget: 64 << 20, workers: 0, saturated: 1, skipped: 3, delayed: 9,
	}, s)

	earlier := schedSample{lag: []bucket{{0.001, 40}, {0.01, 40}, {0.1, 40}, {math.Inf(1), 40}}}
	window := s.lagSince(earlier)
	assert.Equal(t, []bucket{{0.001, 10}, {0.01, 50}, {0.1, 60}, {math.Inf(1), 60}}, window)
	assert.InDelta(t, 0.001+0.009*20/40, quantile(0.5, window), 1e-9, "linear within the bucket")
	assert.InDelta(t, 0.01+0.09*(59.4-50)/10, quantile(0.99, window), 1e-9)
	assert.True(t, math.IsNaN(quantile(0.5, nil)))
	assert.Equal(t, 0.1, quantile(0.99, []bucket{{0.1, 1}, {math.Inf(1), 100}}), "in +Inf: the largest finite bound")
}
