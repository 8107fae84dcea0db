package e2e_test

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/e2e/framework"
	"github.com/networkio/webchecker/sharding/membership"
)

// Settings of TestFailureWindowTripsWhereThresholdsDoNot.
const (
	windowNamespace      = "e2e-window"
	windowLeaseNamespace = "e2e-window-leases"
	windowReplicas       = 3
	windowInterval       = time.Second
	// windowFailures of windowProbes: a target that fails one probe in
	// three has 2 failures in every 6 probes in a row.
	windowFailures, windowProbes = 2, 6
	// windowTripsWithin: the window trips at the 6th probe, 6 intervals
	// after the first (within the 1 s first-probe jitter), with 2 s for
	// the status write and a hand-over at start.
	windowTripsWithin = windowProbes*windowInterval + time.Second + 2*time.Second + 5*time.Second
	// windowWatch is how long both checkers are watched once the window
	// tripped: every probe of it closes a window of 2 failures of 6.
	windowWatch = 12 * windowInterval
)

// everyThird is an HTTP server on loopback that answers 503 to every
// third request of each path (the 3rd, 6th, ...) and 200 to the others,
// as a farm of three backends behind round-robin with one of them bad.
type everyThird struct {
	server *httptest.Server
	mu     sync.Mutex
	count  map[string]int
	failed map[string]int
}

func newEveryThird() *everyThird {
	e := &everyThird{count: map[string]int{}, failed: map[string]int{}}
	e.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.count[r.URL.Path]++
		fail := e.count[r.URL.Path]%3 == 0
		if fail {
			e.failed[r.URL.Path]++
		}
		e.mu.Unlock()
		if fail {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	return e
}

// served returns how many requests for path it answered, and how many of
// them with 503.
func (e *everyThird) served(path string) (requests, failed int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.count[path], e.failed[path]
}

// TestFailureWindowTripsWhereThresholdsDoNot runs three replicas and a
// target that fails one probe in three: the checker with a failure window
// of 2 of 6 turns Ready False with a message that counts the failures and
// stays False, the one with failureThreshold 2 stays True throughout,
// and neither is written at every probe.
func TestFailureWindowTripsWhereThresholdsDoNot(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c := newWindowClient(t, ctx)
	ringName := fmt.Sprintf("e2e-window-%d", time.Now().UnixNano())
	managers := startWindowReplicas(t, ctx, ringName)
	waitWindowLeases(t, ctx, c, ringName)

	target := newEveryThird()
	t.Cleanup(target.server.Close)
	rec, err := framework.StartStatusRecorder(ctx, c, windowNamespace)
	require.NoError(t, err)
	t.Cleanup(rec.Stop)

	createWindowChecker(t, ctx, c, "windowed", target.server.URL, func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.FailureWindow = &webcheckerv1alpha1.FailureWindow{Failures: windowFailures, Probes: windowProbes}
	})
	createWindowChecker(t, ctx, c, "consecutive", target.server.URL, func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.FailureThreshold = ptr.To[int32](2)
	})
	created := time.Now()

	var down metav1.Condition
	require.True(t, poll(windowTripsWithin, 100*time.Millisecond, func() bool {
		down = framework.ReadyCondition(getWindowChecker(t, ctx, c, "windowed"))
		return down.Status == metav1.ConditionFalse
	}), "the window of %d of %d did not trip within %s: Ready %s %s", windowFailures, windowProbes, windowTripsWithin, down.Status, down.Message)
	tripped := time.Since(created)
	assert.Equal(t, "UnexpectedStatus", down.Reason)
	assert.True(t, strings.HasPrefix(down.Message, fmt.Sprintf("%d of the last %d probes failed (latest: ", windowFailures, windowProbes)), down.Message)
	assert.Contains(t, down.Message, "503")

	// Watched for a while: the window stays tripped, the threshold never
	// trips, and a status changing only in its details is not rewritten
	// at every probe (MessagePeriod).
	mark := rec.Len()
	time.Sleep(windowWatch)
	windowedWrites := 0
	for _, ev := range rec.Since(mark) {
		if ev.Name == "windowed" {
			windowedWrites++
			assert.Equal(t, metav1.ConditionFalse, ev.Ready, "the window healed while one probe in three failed")
		}
	}
	for _, ev := range rec.Snapshot() {
		if ev.Name == "consecutive" {
			assert.NotEqual(t, metav1.ConditionFalse, ev.Ready, "failureThreshold 2 tripped on one failure in three")
		}
	}
	assert.Empty(t, rec.Errors(), "the watch was interrupted: events may be missing")
	assert.Equal(t, metav1.ConditionFalse, framework.ReadyOf(getWindowChecker(t, ctx, c, "windowed")))
	assert.Equal(t, metav1.ConditionTrue, framework.ReadyOf(getWindowChecker(t, ctx, c, "consecutive")))
	assert.LessOrEqual(t, windowedWrites, 1, "status writes of the windowed checker in %s of probes", windowWatch)

	// Both targets really failed one probe in three, often enough for a
	// threshold of 2 to have had its chances.
	for _, name := range []string{"windowed", "consecutive"} {
		requests, failed := target.served("/" + name)
		assert.GreaterOrEqual(t, failed, 4, "%s: %d of %d probes failed", name, failed, requests)
		t.Logf("%s: %d probes, %d failed", name, requests, failed)
	}
	shard := getWindowChecker(t, ctx, c, "windowed").Status.Shard
	assert.Contains(t, managers, shard, "written by one of the replicas")
	t.Logf("window of %d of %d tripped %s after creation (limit %s); %d status writes in %s of probes after",
		windowFailures, windowProbes, tripped.Round(time.Millisecond), windowTripsWithin, windowedWrites, windowWatch)
}

func newWindowClient(t *testing.T, ctx context.Context) client.WithWatch {
	t.Helper()
	scheme, err := framework.NewScheme()
	require.NoError(t, err)
	c, err := client.NewWithWatch(cp.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	for _, ns := range []string{windowNamespace, windowLeaseNamespace} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
	}
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer ccancel()
		_ = c.DeleteAllOf(cctx, &webcheckerv1alpha1.WebChecker{}, client.InNamespace(windowNamespace))
	})
	return c
}

// startWindowReplicas starts the replicas of the ring ringName, each
// killed when the test ends, and returns them by shard id.
func startWindowReplicas(t *testing.T, ctx context.Context, ringName string) map[string]*framework.Manager {
	t.Helper()
	managers := map[string]*framework.Manager{}
	for i := range windowReplicas {
		id := fmt.Sprintf("window-%d", i)
		m, err := framework.StartManager(ctx, framework.ManagerOptions{
			Binary: managerPath, Kubeconfig: cp.KubeconfigPath, ShardID: id, DNSServer: dns.Addr(),
			Args: []string{
				"--lease-namespace=" + windowLeaseNamespace,
				"--ring-name=" + ringName,
				"--lease-duration=5s",
				"--lease-renew-interval=1s",
				"--zap-log-level=" + cmp.Or(os.Getenv("WEBCHECKER_E2E_LOG_LEVEL"), "info"),
			},
		})
		require.NoError(t, err)
		managers[id] = m
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("----- last lines of manager %s -----\n%s", id, tail(m.Log(), 40))
			}
			if !m.Exited() {
				_ = m.Kill()
			}
		})
	}
	return managers
}

// waitWindowLeases waits until every replica holds a live Lease of the
// ring, so that the checkers are not handed over while the test watches.
func waitWindowLeases(t *testing.T, ctx context.Context, c client.Client, ringName string) {
	t.Helper()
	require.True(t, poll(30*time.Second, 100*time.Millisecond, func() bool {
		var leases coordinationv1.LeaseList
		if c.List(ctx, &leases, client.InNamespace(windowLeaseNamespace), client.MatchingLabels{membership.LabelRing: ringName}) != nil {
			return false
		}
		live, _ := membership.Live(leases.Items, time.Now())
		return len(live) == windowReplicas
	}), "%d replicas on the ring", windowReplicas)
}

// createWindowChecker creates the checker name probing url/name every
// windowInterval, its spec changed by mutate.
func createWindowChecker(t *testing.T, ctx context.Context, c client.Client, name, url string, mutate func(*webcheckerv1alpha1.WebCheckerSpec)) {
	t.Helper()
	wc := &webcheckerv1alpha1.WebChecker{
		ObjectMeta: metav1.ObjectMeta{Namespace: windowNamespace, Name: name},
		Spec: webcheckerv1alpha1.WebCheckerSpec{
			Host: url, Path: "/" + name,
			Interval: &metav1.Duration{Duration: windowInterval},
			Timeout:  &metav1.Duration{Duration: 500 * time.Millisecond},
		},
	}
	mutate(&wc.Spec)
	require.NoError(t, c.Create(ctx, wc), "creating %s", name)
}

func getWindowChecker(t *testing.T, ctx context.Context, c client.Client, name string) *webcheckerv1alpha1.WebChecker {
	t.Helper()
	wc := &webcheckerv1alpha1.WebChecker{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: windowNamespace, Name: name}, wc))
	return wc
}
