package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/networkio/webchecker/e2e/framework"
)

func TestParseAPICounts(t *testing.T) {
	raw := `# HELP apiserver_request_total Counter of apiserver requests.
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",group="test.network.io",resource="webcheckers",subresource="status",verb="PATCH",version="v1alpha1"} 7
apiserver_request_total{code="409",group="test.network.io",resource="webcheckers",subresource="status",verb="UPDATE",version="v1alpha1"} 1
apiserver_request_total{code="201",group="test.network.io",resource="webcheckers",subresource="",verb="POST",version="v1alpha1"} 30
apiserver_request_total{code="200",group="coordination.k8s.io",resource="leases",subresource="",verb="UPDATE",version="v1"} 12
# TYPE apiserver_flowcontrol_dispatched_requests_total counter
apiserver_flowcontrol_dispatched_requests_total{flow_schema="webchecker-leases",priority_level="leader-election"} 12
apiserver_flowcontrol_dispatched_requests_total{flow_schema="service-accounts",priority_level="workload-low"} 8
# TYPE apiserver_flowcontrol_rejected_requests_total counter
apiserver_flowcontrol_rejected_requests_total{flow_schema="global-default",priority_level="global-default",reason="queue-full"} 2
apiserver_flowcontrol_rejected_requests_total{flow_schema="webchecker-leases",priority_level="leader-election",reason="time-out"} 1
# TYPE other_total counter
other_total 99
`
	c, err := parseAPICounts([]byte(raw))
	require.NoError(t, err)
	assert.Equal(t, apiCounts{requests: 50, statusWrites: 8, leaseFlow: 12, rejected: 3}, c)
	assert.Equal(t, apiCounts{requests: 40, statusWrites: 1, leaseFlow: 2, rejected: 3},
		c.sub(apiCounts{requests: 10, statusWrites: 7, leaseFlow: 10}))

	_, err = parseAPICounts([]byte("other_total 1\n"))
	assert.Error(t, err)
}

func TestReflection(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	r := &reflection{want: readyWant{"a": metav1.ConditionTrue, "b": metav1.ConditionFalse}, matching: map[string]time.Time{}}
	r.consume([]framework.StatusEvent{
		{At: at(0), Type: watch.Added, Name: "a"},
		{At: at(1), Type: watch.Modified, Name: "a", Ready: metav1.ConditionTrue},
		{At: at(2), Type: watch.Modified, Name: "b", Ready: metav1.ConditionTrue},
		{At: at(3), Type: watch.Modified, Name: "other", Ready: metav1.ConditionTrue},
	})
	_, done := r.done()
	assert.False(t, done, "b is True, not False")
	assert.Equal(t, 4, r.read)

	r.consume([]framework.StatusEvent{
		{At: at(4), Type: watch.Modified, Name: "b", Ready: metav1.ConditionFalse},
		{At: at(5), Type: watch.Modified, Name: "a", Ready: metav1.ConditionTrue},
	})
	last, done := r.done()
	assert.True(t, done)
	assert.Equal(t, at(4), last, "a matched since 1, a later write that keeps it does not count")

	r.consume([]framework.StatusEvent{{At: at(6), Type: watch.Deleted, Name: "a", Ready: metav1.ConditionTrue}})
	_, done = r.done()
	assert.False(t, done, "a deleted checker shows nothing")
}

func TestLongestGap(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tg := &targets{probes: make([][]probe, 3), shards: []string{"a"}}
	tg.probes[0] = []probe{{at: at(0)}, {at: at(10000)}, {at: at(13000)}, {at: at(23000)}}
	tg.probes[1] = []probe{{at: at(8000)}}                  // never taken over
	tg.probes[2] = []probe{{at: at(9000)}, {at: at(40000)}} // after the end
	e := &env{targets: tg}
	g := e.longestGap([]int{0}, at(11000), at(25000), 12*time.Second)
	assert.Equal(t, gaps{median: 10 * time.Second, p99: 10 * time.Second, longest: 10 * time.Second}, g, "the gap across the stop and the ones after")
	g = e.longestGap([]int{0, 1, 2}, at(11000), at(25000), 12*time.Second)
	assert.Equal(t, gaps{median: 16 * time.Second, p99: 17 * time.Second, longest: 17 * time.Second, over: 2}, g)
}

func TestLastReadyRows(t *testing.T) {
	t0 := time.Unix(1000, 0)
	o := defaultOptions()
	o.profile = profileRealistic
	// 0 fails (failingEvery 20), 1 and 6 are https, 7 never answers, the
	// rest answer 200 over http.
	e := &env{opts: &o, size: 8, healthy: []bool{false, true, true, true, true, true, true, true}}
	r := &reflection{matching: map[string]time.Time{}}
	for i := range e.size {
		r.matching[nameOf(i)] = t0.Add(time.Duration(i) * time.Second)
	}
	rows := e.lastReadyRows(r, t0)
	require.Len(t, rows, 4)
	assert.Equal(t, "last Ready of the 4 answering 200 over http, after the last create", rows[0].Name)
	assert.Equal(t, []float64{5, 6, 0, 7}, []float64{rows[0].Value, rows[1].Value, rows[2].Value, rows[3].Value})

	delete(r.matching, nameOf(7))
	assert.Len(t, e.lastReadyRows(r, t0), 3, "no row for a class some of whose checkers show nothing yet")
}
