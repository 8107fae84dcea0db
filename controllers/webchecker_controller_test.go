package controllers_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/e2e/framework"
	"github.com/networkio/webchecker/probing/probetest"
)

const (
	interval = time.Second
	// poll is how often Eventually-style waits look again.
	poll = 50 * time.Millisecond
)

func newChecker(ns, name, host, path string) *webcheckerv1alpha1.WebChecker {
	return &webcheckerv1alpha1.WebChecker{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: webcheckerv1alpha1.WebCheckerSpec{
			Host:     host,
			Path:     path,
			Interval: &metav1.Duration{Duration: interval},
			Timeout:  &metav1.Duration{Duration: 500 * time.Millisecond},
		},
	}
}

func getChecker(t *testing.T, key types.NamespacedName) *webcheckerv1alpha1.WebChecker {
	t.Helper()
	wc := &webcheckerv1alpha1.WebChecker{}
	require.NoError(t, k8sClient.Get(context.Background(), key, wc))
	return wc
}

// waitReady waits until the Ready condition has status (and reason, when
// given) and returns the object as then stored.
func waitReady(t *testing.T, key types.NamespacedName, status metav1.ConditionStatus, reason string, within time.Duration) *webcheckerv1alpha1.WebChecker {
	t.Helper()
	return waitCondition(t, key, webcheckerv1alpha1.ConditionReady, status, reason, within)
}

// waitCondition waits until the condition of type cond has status (and
// reason, when given) and returns the object as then stored.
func waitCondition(t *testing.T, key types.NamespacedName, cond string, status metav1.ConditionStatus, reason string, within time.Duration) *webcheckerv1alpha1.WebChecker {
	t.Helper()
	var last *webcheckerv1alpha1.WebChecker
	reached := assert.Eventually(t, func() bool {
		wc := &webcheckerv1alpha1.WebChecker{}
		if err := k8sClient.Get(context.Background(), key, wc); err != nil {
			return false
		}
		last = wc
		c := meta.FindStatusCondition(wc.Status.Conditions, cond)
		return c != nil && c.Status == status && (reason == "" || c.Reason == reason)
	}, within, poll)
	if !reached {
		// The last status is known only now: testify formats its message
		// before it polls.
		t.Fatalf("%s never became %s/%s; last status: %+v", cond, status, reason, statusOf(last))
	}
	return last
}

func condition(wc *webcheckerv1alpha1.WebChecker, cond string) metav1.Condition {
	c := meta.FindStatusCondition(wc.Status.Conditions, cond)
	if c == nil {
		return metav1.Condition{}
	}
	return *c
}

func statusOf(wc *webcheckerv1alpha1.WebChecker) any {
	if wc == nil {
		return nil
	}
	return wc.Status
}

func ready(wc *webcheckerv1alpha1.WebChecker) metav1.Condition {
	c := meta.FindStatusCondition(wc.Status.Conditions, webcheckerv1alpha1.ConditionReady)
	if c == nil {
		return metav1.Condition{}
	}
	return *c
}

// TestReadyFollowsTheTarget follows a target on a replica on a fake
// clock: Ready is True from the first probe, turns False at the first
// failed one and True at the first good one again (the thresholds default
// to 1), each time stamped with the probe that moved it; the stamp stays
// put while the target stays broken. One Event per transition; the first
// result, True, is none.
func TestReadyFollowsTheTarget(t *testing.T) {
	t.Parallel()
	c := startClockedReplica(t)
	target := probetest.NewTarget()
	defer target.Close()
	wc := newChecker(c.namespace, "lifecycle", target.URL(), "/health")
	key := client.ObjectKeyFromObject(wc)

	require.NoError(t, k8sClient.Create(context.Background(), wc))
	up := waitReady(t, key, metav1.ConditionTrue, "ProbeSucceeded", waitFor)
	upCond := ready(up)
	assert.Equal(t, "WebChecker is ready", upCond.Message)
	assert.Equal(t, up.Generation, upCond.ObservedGeneration)
	assert.Equal(t, up.Generation, up.Status.ObservedGeneration)
	assert.EqualValues(t, http.StatusOK, up.Status.HTTPStatusCode)
	assert.Equal(t, "clocked-replica", up.Status.Shard)
	stamped(t, t0, upCond, "the first result")
	cert := condition(up, webcheckerv1alpha1.ConditionCertificateValid)
	assert.Equal(t, metav1.ConditionUnknown, cert.Status, "plain HTTP has no certificate")
	assert.Equal(t, "NotApplicable", cert.Reason)

	// The target breaks: Ready turns False at the next probe.
	target.SetStatus(http.StatusInternalServerError)
	broke := c.step(t, key)
	down := waitReady(t, key, metav1.ConditionFalse, "UnexpectedStatus", waitFor)
	downCond := ready(down)
	assert.Contains(t, downCond.Message, "500")
	assert.EqualValues(t, http.StatusInternalServerError, down.Status.HTTPStatusCode)
	stamped(t, broke, downCond, "True->False")

	// While it stays broken the transition time stays put.
	c.step(t, key)
	c.step(t, key)
	assertStatusStays(t, key, down.ResourceVersion, "the status was rewritten while the target stayed broken")
	stamped(t, broke, ready(getChecker(t, key)), "a failure after the first one")

	// It recovers.
	target.SetStatus(http.StatusOK)
	recovered := c.step(t, key)
	again := waitReady(t, key, metav1.ConditionTrue, "ProbeSucceeded", waitFor)
	stamped(t, recovered, ready(again), "False->True")

	// One Event per transition; the first result, True, is none.
	require.Eventually(t, func() bool {
		reasons := eventReasons(t, c.namespace, wc.Name)
		return strings.Count(reasons, "ProbeFailed") >= 1 && strings.Count(reasons, "ProbeSucceeded") >= 1
	}, waitFor, poll, "events: %s", eventReasons(t, c.namespace, wc.Name))
	reasons := eventReasons(t, c.namespace, wc.Name)
	assert.Equal(t, 1, strings.Count(reasons, "ProbeFailed"), reasons)
	assert.Equal(t, 1, strings.Count(reasons, "ProbeSucceeded"), reasons)
}

// TestEventOnEveryChangeOfFailureClass moves a failing target from one
// failure class to another and back, a probe at a time on a replica on a
// fake clock: each change records one Event that names the old and the
// new class, and nothing is recorded while the class stays the same.
func TestEventOnEveryChangeOfFailureClass(t *testing.T) {
	t.Parallel()
	c := startClockedReplica(t)
	target, wc, key := c.startChecker(t, "failure-classes", "/")
	ns := wc.Namespace

	target.SetStatus(http.StatusServiceUnavailable)
	c.step(t, key)
	waitReady(t, key, metav1.ConditionFalse, "UnexpectedStatus", waitFor)
	// Slower than the 500ms timeout: the same target now times out.
	target.SetDelay(900 * time.Millisecond)
	c.step(t, key)
	waitReady(t, key, metav1.ConditionFalse, "Timeout", waitFor)
	// Three more timeouts change nothing.
	for range 3 {
		c.step(t, key)
	}
	target.SetDelay(0)
	c.step(t, key)
	waitReady(t, key, metav1.ConditionFalse, "UnexpectedStatus", waitFor)

	want := "ProbeFailed,ProbeFailureChanged,ProbeFailureChanged" // the first success records none
	require.Eventually(t, func() bool { return sortedReasons(t, ns, wc.Name) == sortedList(want) }, waitFor, poll,
		"events: %s", eventReasons(t, ns, wc.Name))
	notes := eventNotes(t, ns, wc.Name, "ProbeFailureChanged")
	require.Len(t, notes, 2)
	assert.ElementsMatch(t, []string{"Timeout (was UnexpectedStatus)", "UnexpectedStatus (was Timeout)"},
		[]string{strings.SplitN(notes[0], ":", 2)[0], strings.SplitN(notes[1], ":", 2)[0]})
	// Nothing more comes while the class stays.
	c.step(t, key)
	c.step(t, key)
	assert.Never(t, func() bool { return sortedReasons(t, ns, wc.Name) != sortedList(want) }, settle, poll, "an Event while the class stayed")
}

func sortedList(csv string) string {
	l := strings.Split(csv, ",")
	slices.Sort(l)
	return strings.Join(l, ",")
}

func sortedReasons(t *testing.T, ns, name string) string {
	t.Helper()
	return sortedList(eventReasons(t, ns, name))
}

// eventNotes lists the notes of the Events about one WebChecker with reason.
func eventNotes(t *testing.T, ns, name, reason string) []string {
	t.Helper()
	var list eventsv1.EventList
	require.NoError(t, k8sClient.List(context.Background(), &list, client.InNamespace(ns)))
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.Name == name && e.Reason == reason {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

// eventRecorded reports whether an Event about one WebChecker with reason
// is stored: the recorder writes Events asynchronously, after the status
// that caused them. A failed list counts as not yet.
func eventRecorded(ns, name, reason string) bool {
	var list eventsv1.EventList
	if err := k8sClient.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		return false
	}
	for _, e := range list.Items {
		if e.Regarding.Name == name && e.Reason == reason {
			return true
		}
	}
	return false
}

// eventReasons lists the reasons of the Events about one WebChecker,
// repeated by their count.
func eventReasons(t *testing.T, ns, name string) string {
	t.Helper()
	var list eventsv1.EventList
	require.NoError(t, k8sClient.List(context.Background(), &list, client.InNamespace(ns)))
	var reasons []string
	for _, e := range list.Items {
		if e.Regarding.Name != name {
			continue
		}
		n := 1
		if e.Series != nil {
			n = int(e.Series.Count)
		}
		for range n {
			reasons = append(reasons, e.Reason)
		}
	}
	return strings.Join(reasons, ",")
}

// startChecker creates, in a namespace of its own, a WebChecker probing
// path on a new Target, and waits until it is Ready.
func startChecker(t *testing.T, name, path string) (*probetest.Target, *webcheckerv1alpha1.WebChecker, types.NamespacedName) {
	t.Helper()
	target := probetest.NewTarget()
	t.Cleanup(target.Close)
	wc := newChecker(newNamespace(t), name, target.URL(), path)
	key := client.ObjectKeyFromObject(wc)
	require.NoError(t, k8sClient.Create(context.Background(), wc))
	waitReady(t, key, metav1.ConditionTrue, "", 3*time.Second)
	return target, wc, key
}

// TestNoStatusWritesWhileNothingChanges probes an unchanged target three
// more times on a replica on a fake clock: none of the probes writes the
// status.
func TestNoStatusWritesWhileNothingChanges(t *testing.T) {
	t.Parallel()
	c := startClockedReplica(t)
	_, _, key := c.startChecker(t, "steady", "/")
	stable := getChecker(t, key)

	for range 3 {
		c.step(t, key)
	}
	assertStatusStays(t, key, stable.ResourceVersion, "status was rewritten although nothing changed")
}

// TestDeleteStopsProbes deletes a checker on a replica on a fake clock: it
// leaves the scheduler, and no probe comes at the next grid points.
func TestDeleteStopsProbes(t *testing.T) {
	t.Parallel()
	c := startClockedReplica(t)
	target, wc, key := c.startChecker(t, "deleted", "/gone")

	require.NoError(t, k8sClient.Delete(context.Background(), wc))
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(k8sClient.Get(context.Background(), key, &webcheckerv1alpha1.WebChecker{}))
	}, waitFor, poll)
	require.Eventually(t, func() bool { return c.sched.Len() == 0 }, waitFor, poll, "a deleted checker is still scheduled")
	after := target.Count("/gone")
	c.idle(2)
	assert.Never(t, func() bool { return target.Count("/gone") != after }, settle, poll, "probes continued after delete")
}

// TestSpecChangeMovesTheProbe changes the path of a checker on a replica
// on a fake clock: the new path is probed before the clock moves, then at
// every grid point, and the old one never again.
func TestSpecChangeMovesTheProbe(t *testing.T) {
	t.Parallel()
	c := startClockedReplica(t)
	target, _, key := c.startChecker(t, "moving", "/old")

	latest := getChecker(t, key)
	patch := client.MergeFrom(latest.DeepCopy())
	latest.Spec.Path = "/new"
	require.NoError(t, k8sClient.Patch(context.Background(), latest, patch))

	require.Eventually(t, func() bool { return target.Count("/new") > 0 }, waitFor, poll, "the new path was not probed at once")
	require.Eventually(t, func() bool { return getChecker(t, key).Status.ObservedGeneration == latest.Generation }, waitFor, poll)
	old := target.Count("/old")
	c.step(t, key)
	c.step(t, key)
	assert.Equal(t, 3, target.Count("/new"))
	assert.Equal(t, old, target.Count("/old"), "the old path is still probed")
	assert.Equal(t, latest.Generation, ready(getChecker(t, key)).ObservedGeneration)
}

func TestDNSFailureUsesTheLoopbackResolver(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	target := probetest.NewTarget()
	defer target.Close()
	_, port, err := net.SplitHostPort(target.Host())
	require.NoError(t, err)

	// A name the stub resolver knows reaches the target...
	known := newChecker(ns, "known", "http://target.test:"+port, "/")
	require.NoError(t, k8sClient.Create(context.Background(), known))
	waitReady(t, client.ObjectKeyFromObject(known), metav1.ConditionTrue, "", 3*time.Second)

	// ...an unknown one fails with DNSFailed.
	unknown := newChecker(ns, "unknown", "http://nowhere.test:"+port, "/")
	require.NoError(t, k8sClient.Create(context.Background(), unknown))
	got := waitReady(t, client.ObjectKeyFromObject(unknown), metav1.ConditionFalse, "DNSFailed", 3*time.Second)
	assert.Contains(t, ready(got).Message, "nowhere.test")
	assert.Zero(t, got.Status.HTTPStatusCode)
}

// TestRoundRobinFailureWritesOnce probes a name whose DNS answers rotate
// between two closed addresses: every probe dials another address first,
// yet the failure is the same, so the status is written once over five
// probes on a replica on a fake clock.
func TestRoundRobinFailureWritesOnce(t *testing.T) {
	t.Parallel()
	c := startClockedReplica(t)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, port, err := net.SplitHostPort(closed.Addr().String())
	require.NoError(t, err)
	require.NoError(t, closed.Close()) // nothing listens on the port, on either address

	wc := newChecker(c.namespace, "round-robin", "http://round-robin.test:"+port, "/")
	require.NoError(t, k8sClient.Create(context.Background(), wc))
	key := client.ObjectKeyFromObject(wc)
	failed := waitReady(t, key, metav1.ConditionFalse, "ConnectionFailed", waitFor)
	assert.Contains(t, ready(failed).Message, "round-robin.test:"+port, "the message names what the user wrote")

	for range 4 {
		c.step(t, key)
	}
	assert.Equal(t, map[string]float64{"result=failure": 5, "result=success": 0}, checkerSeriesIn(t, c.registry, "webchecker_probes_total", key), "five probes, all failed")
	assertStatusStays(t, key, failed.ResourceVersion, "the status was rewritten as the DNS answer rotated")
}

// TestSampleManifestsApplyUnchanged applies config/samples exactly as
// shipped. No network is reachable from the tests, and the prober resolves
// through the loopback stub, so both end DNSFailed here.
func TestSampleManifestsApplyUnchanged(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	root, err := framework.RepoRoot()
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(root, "config", "samples", "test_v1alpha1_webchecker.yaml"))
	require.NoError(t, err)

	// Sent as they are, like kubectl does: no Go struct in between.
	dec := yaml.NewYAMLOrJSONDecoder(strings.NewReader(string(data)), 4096)
	var names []string
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			require.ErrorIs(t, err, io.EOF)
			break
		}
		obj.SetNamespace(ns)
		require.NoError(t, k8sClient.Create(context.Background(), obj), "sample %s rejected", obj.GetName())
		names = append(names, obj.GetName())
	}
	require.Equal(t, []string{"flant", "badnews"}, names)

	stored := getChecker(t, types.NamespacedName{Namespace: ns, Name: "flant"})
	assert.Equal(t, &metav1.Duration{Duration: 10 * time.Second}, stored.Spec.Interval)
	assert.Equal(t, &metav1.Duration{Duration: time.Second}, stored.Spec.Timeout)
	// The HTTP-only fields have no CRD default, so that other kinds are
	// not given one they must reject; CheckFor resolves them.
	assert.Empty(t, stored.Spec.Path)
	assert.Empty(t, stored.Spec.Method)
	assert.Nil(t, stored.Spec.FollowRedirects)

	bad := waitReady(t, types.NamespacedName{Namespace: ns, Name: "badnews"}, metav1.ConditionFalse, "DNSFailed", 5*time.Second)
	msg := ready(bad).Message
	assert.Contains(t, msg, `Get "http://badnews.me/"`)
	assert.Contains(t, msg, "lookup badnews.me")
	assert.Contains(t, msg, "no such host")
}

func secretHeader(name, key string) *webcheckerv1alpha1.HeaderValueSource {
	return &webcheckerv1alpha1.HeaderValueSource{SecretKeyRef: webcheckerv1alpha1.SecretKeySelector{Name: name, Key: key}}
}

// invalidSpecs are specs the API server must reject, each with (part of)
// the message that says why.
var invalidSpecs = map[string]struct {
	mutate func(*webcheckerv1alpha1.WebCheckerSpec)
	want   string
}{
	"no host":             {func(s *webcheckerv1alpha1.WebCheckerSpec) { s.Host = "" }, "spec.host"},
	"unparseable URL":     {func(s *webcheckerv1alpha1.WebCheckerSpec) { s.Host = "http://exa mple.com" }, "host must be a valid URL"},
	"unparseable port":    {func(s *webcheckerv1alpha1.WebCheckerSpec) { s.Host = "example.com:http" }, "host must be a valid URL"},
	"ftp scheme":          {func(s *webcheckerv1alpha1.WebCheckerSpec) { s.Host = "ftp://example.com" }, "host must use one of the schemes"},
	"path in host":        {func(s *webcheckerv1alpha1.WebCheckerSpec) { s.Host = "http://example.com/health" }, "host must not contain a path"},
	"query in host":       {func(s *webcheckerv1alpha1.WebCheckerSpec) { s.Host = "http://example.com?x=1" }, "host must not contain a query or fragment"},
	"fragment in host":    {func(s *webcheckerv1alpha1.WebCheckerSpec) { s.Host = "http://example.com#top" }, "host must not contain a query or fragment"},
	"credentials in host": {func(s *webcheckerv1alpha1.WebCheckerSpec) { s.Host = "http://user:secret@example.com" }, "host must not contain credentials"},
	"double slash path":   {func(s *webcheckerv1alpha1.WebCheckerSpec) { s.Path = "//example.org/x" }, "path must start with a single /"},
	"fragment in path":    {func(s *webcheckerv1alpha1.WebCheckerSpec) { s.Path = "/x#frag" }, "path must not contain a fragment"},
	"relative path":       {func(s *webcheckerv1alpha1.WebCheckerSpec) { s.Path = "health" }, "path must start with a single /"},
	"timeout = interval":  {func(s *webcheckerv1alpha1.WebCheckerSpec) { s.Timeout = &metav1.Duration{Duration: 10 * time.Second} }, "timeout must be less than interval"},
	"timeout > interval":  {func(s *webcheckerv1alpha1.WebCheckerSpec) { s.Timeout = &metav1.Duration{Duration: time.Minute} }, "timeout must be less than interval"},
	// The rule reads both fields without has(): the API server defaults them first.
	"timeout over the default interval": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.Interval, s.Timeout = nil, &metav1.Duration{Duration: 15 * time.Second}
	}, "timeout must be less than interval"},
	"interval at the default timeout": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.Interval, s.Timeout = &metav1.Duration{Duration: time.Second}, nil
	}, "timeout must be less than interval"},
	"timeout above 60s": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.Interval.Duration = 10 * time.Minute
		s.Timeout.Duration = 61 * time.Second
	}, "timeout must be at most 60s"},
	"failureThreshold 0":        {func(s *webcheckerv1alpha1.WebCheckerSpec) { s.FailureThreshold = ptr.To[int32](0) }, "spec.failureThreshold: Invalid value: 0: spec.failureThreshold in body should be greater than or equal to 1"},
	"failureThreshold above 20": {func(s *webcheckerv1alpha1.WebCheckerSpec) { s.FailureThreshold = ptr.To[int32](21) }, "should be less than or equal to 20"},
	"no vantage point":          {func(s *webcheckerv1alpha1.WebCheckerSpec) { s.VantagePoints = ptr.To[int32](0) }, "spec.vantagePoints in body should be greater than or equal to 1"},
	"six vantage points":        {func(s *webcheckerv1alpha1.WebCheckerSpec) { s.VantagePoints = ptr.To[int32](6) }, "spec.vantagePoints in body should be less than or equal to 5"},
	"successThreshold 0":        {func(s *webcheckerv1alpha1.WebCheckerSpec) { s.SuccessThreshold = ptr.To[int32](0) }, "spec.successThreshold"},
	"successThreshold above 20": {func(s *webcheckerv1alpha1.WebCheckerSpec) { s.SuccessThreshold = ptr.To[int32](21) }, "should be less than or equal to 20"},
	"interval below 1s": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.Interval.Duration = 500 * time.Millisecond
		s.Timeout.Duration = 100 * time.Millisecond
	}, "interval must be at least 1s"},
	"status code below":     {func(s *webcheckerv1alpha1.WebCheckerSpec) { s.ExpectedStatusCodes = []int32{99} }, "should be greater than or equal to 100"},
	"status code above":     {func(s *webcheckerv1alpha1.WebCheckerSpec) { s.ExpectedStatusCodes = []int32{200, 600} }, "should be less than or equal to 599"},
	"unknown method":        {func(s *webcheckerv1alpha1.WebCheckerSpec) { s.Method = "TRACE" }, `supported values: "GET", "HEAD", "POST", "PUT", "OPTIONS"`},
	"duplicate status code": {func(s *webcheckerv1alpha1.WebCheckerSpec) { s.ExpectedStatusCodes = []int32{200, 200} }, "Duplicate value"},
	"body with GET":         {func(s *webcheckerv1alpha1.WebCheckerSpec) { s.Body = `{"ping":1}` }, "body requires method POST or PUT"},
	"body with OPTIONS": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.Method, s.Body = "OPTIONS", "x"
	}, "body requires method POST or PUT"},
	"bodyMatch with HEAD": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.Method, s.BodyMatch = "HEAD", &webcheckerv1alpha1.BodyMatch{Regex: "ok"}
	}, "bodyMatch cannot be used with method HEAD"},
	"unbalanced regex": {func(s *webcheckerv1alpha1.WebCheckerSpec) { s.BodyMatch = &webcheckerv1alpha1.BodyMatch{Regex: "(ok"} }, "regex must be a valid RE2 regular expression"},
	"lookahead regex": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.BodyMatch = &webcheckerv1alpha1.BodyMatch{Regex: "(?=ok)"}
	}, "regex must be a valid RE2 regular expression"},
	"empty regex": {func(s *webcheckerv1alpha1.WebCheckerSpec) { s.BodyMatch = &webcheckerv1alpha1.BodyMatch{} }, "spec.bodyMatch.regex"},
	"huge maxBodyBytes": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.BodyMatch = &webcheckerv1alpha1.BodyMatch{Regex: "ok", MaxBodyBytes: ptr.To[int64](2 << 20)}
	}, "should be less than or equal to 1048576"},
	"zero maxBodyBytes": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.BodyMatch = &webcheckerv1alpha1.BodyMatch{Regex: "ok", MaxBodyBytes: ptr.To[int64](0)}
	}, "should be greater than or equal to 1"},
	"header name with a space": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.Headers = []webcheckerv1alpha1.HTTPHeader{{Name: "X Api", Value: "1"}}
	}, "spec.headers[0].name"},
	"header value with CRLF": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.Headers = []webcheckerv1alpha1.HTTPHeader{{Name: "X-Api", Value: "1\r\nX-Injected: yes"}}
	}, "header values must not contain control characters"},
	"hop-by-hop header": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.Headers = []webcheckerv1alpha1.HTTPHeader{{Name: "Transfer-Encoding", Value: "chunked"}}
	}, "this header is set by the prober"},
	"header with value and valueFrom": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.Headers = []webcheckerv1alpha1.HTTPHeader{{Name: "X-Api", Value: "1", ValueFrom: secretHeader("api", "key")}}
	}, "a header needs exactly one of value or valueFrom"},
	"header without a value": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.Headers = []webcheckerv1alpha1.HTTPHeader{{Name: "X-Api"}}
	}, "a header needs exactly one of value or valueFrom"},
	"headers differing in case": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.Headers = []webcheckerv1alpha1.HTTPHeader{{Name: "X-Api", Value: "1"}, {Name: "x-api", Value: "2"}}
	}, "header names must be unique, ignoring case"},
	"header key with a slash": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.Headers = []webcheckerv1alpha1.HTTPHeader{{Name: "X-Api", ValueFrom: secretHeader("api", "a/b")}}
	}, "spec.headers[0].valueFrom.secretKeyRef.key"},
	"basic and bearer auth": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.BasicAuthSecretRef = &webcheckerv1alpha1.SecretReference{Name: "basic"}
		s.BearerTokenSecretRef = &webcheckerv1alpha1.SecretKeySelector{Name: "bearer", Key: "token"}
	}, "basicAuthSecretRef and bearerTokenSecretRef are mutually exclusive"},
	"Authorization header and bearer auth": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.Headers = []webcheckerv1alpha1.HTTPHeader{{Name: "authorization", Value: "Basic eDp5"}}
		s.BearerTokenSecretRef = &webcheckerv1alpha1.SecretKeySelector{Name: "bearer", Key: "token"}
	}, "an Authorization header cannot be combined with basicAuthSecretRef or bearerTokenSecretRef"},
	"invalid Secret name": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.BasicAuthSecretRef = &webcheckerv1alpha1.SecretReference{Name: "My_Secret"}
	}, "spec.basicAuthSecretRef.name"},
	"insecure with a CA": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.TLS = &webcheckerv1alpha1.TLSOptions{InsecureSkipVerify: true, CASecretRef: &webcheckerv1alpha1.SecretKeySelector{Name: "ca", Key: "ca.crt"}}
	}, "caSecretRef has no effect with insecureSkipVerify"},
	"unknown TLS version": {func(s *webcheckerv1alpha1.WebCheckerSpec) { s.TLS = &webcheckerv1alpha1.TLSOptions{MinVersion: "1.4"} }, `supported values: "1.0", "1.1", "1.2", "1.3"`},
	"invalid server name": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.TLS = &webcheckerv1alpha1.TLSOptions{ServerName: "exa mple.com"}
	}, "spec.tls.serverName"},
	"negative cert expiry": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.TLS = &webcheckerv1alpha1.TLSOptions{CertExpiryWarning: &metav1.Duration{Duration: -time.Hour}}
	}, "spec.tls.certExpiryWarning"},
	"unknown IP family": {func(s *webcheckerv1alpha1.WebCheckerSpec) { s.IPFamily = "IPv5" }, `supported values: "IPv4", "IPv6", "Any"`},
}

func TestInvalidSpecsAreRejectedByTheAPIServer(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	for name, tc := range invalidSpecs {
		t.Run(name, func(t *testing.T) {
			wc := &webcheckerv1alpha1.WebChecker{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: strings.ToLower(strings.ReplaceAll(name, " ", "-"))},
				Spec: webcheckerv1alpha1.WebCheckerSpec{
					Host:     "http://example.com",
					Path:     "/",
					Interval: &metav1.Duration{Duration: 10 * time.Second},
					Timeout:  &metav1.Duration{Duration: time.Second},
				},
			}
			wc.Name = strings.ReplaceAll(wc.Name, "=", "eq")
			wc.Name = strings.ReplaceAll(wc.Name, ">", "gt")
			assertRejected(t, wc, tc.mutate, tc.want)
		})
	}
}

// TestValidSpecsAreAcceptedAndDefaulted checks that every option at once is
// accepted and defaulted, and so are the valid forms of host.
func TestValidSpecsAreAcceptedAndDefaulted(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	full := newChecker(ns, "every-option", "https://example.com", "/api")
	full.Spec.Method, full.Spec.Body = "POST", `{"ping":1}`
	full.Spec.Headers = []webcheckerv1alpha1.HTTPHeader{
		{Name: "Content-Type", Value: "application/json"},
		{Name: "X-Api-Key", ValueFrom: secretHeader("api", "key")},
	}
	full.Spec.BodyMatch = &webcheckerv1alpha1.BodyMatch{Regex: `"status":\s*"(ok|up)"`, Invert: false}
	full.Spec.TLS = &webcheckerv1alpha1.TLSOptions{ServerName: "api.example.com", MinVersion: "1.3", CASecretRef: &webcheckerv1alpha1.SecretKeySelector{Name: "ca", Key: "ca.crt"}}
	full.Spec.BearerTokenSecretRef = &webcheckerv1alpha1.SecretKeySelector{Name: "bearer", Key: "token"}
	full.Spec.IPFamily = webcheckerv1alpha1.IPFamilyIPv6
	require.NoError(t, k8sClient.Create(context.Background(), full, client.DryRunAll))
	assert.Equal(t, ptr.To(webcheckerv1alpha1.DefaultMaxBodyBytes), full.Spec.BodyMatch.MaxBodyBytes)
	assert.Equal(t, &metav1.Duration{Duration: webcheckerv1alpha1.DefaultCertExpiryWarning}, full.Spec.TLS.CertExpiryWarning)
	assert.Equal(t, ptr.To(webcheckerv1alpha1.DefaultFailureThreshold), full.Spec.FailureThreshold)
	assert.Equal(t, ptr.To(webcheckerv1alpha1.DefaultSuccessThreshold), full.Spec.SuccessThreshold)
	assert.Equal(t, ptr.To(webcheckerv1alpha1.DefaultVantagePoints), full.Spec.VantagePoints)

	// The longest timeout is accepted: the API server and CheckFor hold the
	// same limit (see TestCheckForRejectsALongTimeout).
	slowest := newChecker(ns, "slowest", "example.com", "/")
	slowest.Spec.Interval.Duration, slowest.Spec.Timeout.Duration = 10*time.Minute, webcheckerv1alpha1.MaxTimeout
	assert.NoError(t, k8sClient.Create(context.Background(), slowest, client.DryRunAll))

	for i, host := range []string{"example.com", "example.com:8080", "http://example.com/", "https://example.com:8443", "http://[::1]:8080", "http://127.0.0.1"} {
		wc := newChecker(ns, fmt.Sprintf("valid-%d", i), host, "/healthz?full=1")
		assert.NoError(t, k8sClient.Create(context.Background(), wc, client.DryRunAll), "host %q", host)
	}
}
