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

func TestReadyFollowsTheTarget(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	target := probetest.NewTarget()
	defer target.Close()
	wc := newChecker(ns, "lifecycle", target.URL(), "/health")
	key := client.ObjectKeyFromObject(wc)

	// The clock starts when the object exists: the first write to a fresh
	// namespace can take the API server itself a couple of seconds.
	start := time.Now()
	require.NoError(t, k8sClient.Create(context.Background(), wc))
	created := time.Now()
	up := waitReady(t, key, metav1.ConditionTrue, "ProbeSucceeded", 3*time.Second)
	t.Logf("create -> Ready=True in %s (create request: %s)", time.Since(created).Round(time.Millisecond), created.Sub(start).Round(time.Millisecond))
	upCond := ready(up)
	assert.Equal(t, "WebChecker is ready", upCond.Message)
	assert.Equal(t, up.Generation, upCond.ObservedGeneration)
	assert.Equal(t, up.Generation, up.Status.ObservedGeneration)
	assert.EqualValues(t, http.StatusOK, up.Status.HTTPStatusCode)
	assert.Equal(t, testShardID, up.Status.Shard)
	cert := condition(up, webcheckerv1alpha1.ConditionCertificateValid)
	assert.Equal(t, metav1.ConditionUnknown, cert.Status, "plain HTTP has no certificate")
	assert.Equal(t, "NotApplicable", cert.Reason)

	// The target breaks: Ready turns False within two intervals. Times in
	// the status have whole seconds: break it in a later second than the
	// one Ready turned True in, so that the transition can be seen to move.
	time.Sleep(time.Until(upCond.LastTransitionTime.Add(time.Second)))
	target.SetStatus(http.StatusInternalServerError)
	down := waitReady(t, key, metav1.ConditionFalse, "UnexpectedStatus", 2*interval+time.Second)
	downCond := ready(down)
	assert.Contains(t, downCond.Message, "500")
	assert.EqualValues(t, http.StatusInternalServerError, down.Status.HTTPStatusCode)
	assert.True(t, downCond.LastTransitionTime.After(upCond.LastTransitionTime.Time),
		"lastTransitionTime must move on True->False: %s then %s", upCond.LastTransitionTime, downCond.LastTransitionTime)

	// While it stays broken the transition time stays put.
	probed := target.Count("/health")
	require.Eventually(t, func() bool { return target.Count("/health") >= probed+2 }, 2*interval+5*time.Second, poll)
	assert.Equal(t, downCond.LastTransitionTime, ready(getChecker(t, key)).LastTransitionTime)

	// It recovers.
	target.SetStatus(http.StatusOK)
	again := waitReady(t, key, metav1.ConditionTrue, "ProbeSucceeded", 2*interval+time.Second)
	assert.True(t, ready(again).LastTransitionTime.After(downCond.LastTransitionTime.Time))

	// One Event per transition; the first result, True, is none.
	require.Eventually(t, func() bool {
		reasons := eventReasons(t, ns, wc.Name)
		return strings.Count(reasons, "ProbeFailed") >= 1 && strings.Count(reasons, "ProbeSucceeded") >= 1
	}, 5*time.Second, poll, "events: %s", eventReasons(t, ns, wc.Name))
	reasons := eventReasons(t, ns, wc.Name)
	assert.Equal(t, 1, strings.Count(reasons, "ProbeFailed"), reasons)
	assert.Equal(t, 1, strings.Count(reasons, "ProbeSucceeded"), reasons)
}

// TestEventOnEveryChangeOfFailureClass moves a failing target from one
// failure class to another and back: each change records one Event that
// names the old and the new class, and nothing is recorded while the
// class stays the same.
func TestEventOnEveryChangeOfFailureClass(t *testing.T) {
	t.Parallel()
	target, wc, key := startChecker(t, "failure-classes", "/")
	ns := wc.Namespace

	target.SetStatus(http.StatusServiceUnavailable)
	waitReady(t, key, metav1.ConditionFalse, "UnexpectedStatus", 2*interval+time.Second)
	// Slower than the 500ms timeout: the same target now times out.
	target.SetDelay(900 * time.Millisecond)
	waitReady(t, key, metav1.ConditionFalse, "Timeout", 2*interval+time.Second)
	// Three more timeouts change nothing.
	probed := target.Count("/")
	require.Eventually(t, func() bool { return target.Count("/") >= probed+3 }, 3*interval+5*time.Second, poll)
	target.SetDelay(0)
	waitReady(t, key, metav1.ConditionFalse, "UnexpectedStatus", 2*interval+time.Second)

	want := "ProbeFailed,ProbeFailureChanged,ProbeFailureChanged" // the first success records none
	require.Eventually(t, func() bool { return sortedReasons(t, ns, wc.Name) == sortedList(want) }, 5*time.Second, poll,
		"events: %s", eventReasons(t, ns, wc.Name))
	notes := eventNotes(t, ns, wc.Name, "ProbeFailureChanged")
	require.Len(t, notes, 2)
	assert.ElementsMatch(t, []string{"Timeout (was UnexpectedStatus)", "UnexpectedStatus (was Timeout)"},
		[]string{strings.SplitN(notes[0], ":", 2)[0], strings.SplitN(notes[1], ":", 2)[0]})
	// Nothing more comes while the class stays.
	probed = target.Count("/")
	require.Eventually(t, func() bool { return target.Count("/") >= probed+2 }, 2*interval+5*time.Second, poll)
	assert.Equal(t, sortedList(want), sortedReasons(t, ns, wc.Name))
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

func TestNoStatusWritesWhileNothingChanges(t *testing.T) {
	t.Parallel()
	target, _, key := startChecker(t, "steady", "/")
	stable := getChecker(t, key)

	probed := target.Count("/")
	// Wait for three more probes of the unchanged target, then check that
	// none of them wrote anything.
	require.Eventually(t, func() bool { return target.Count("/") >= probed+3 }, 3*interval+5*time.Second, poll)
	assert.Equal(t, stable.ResourceVersion, getChecker(t, key).ResourceVersion, "status was rewritten although nothing changed")
}

func TestDeleteStopsProbes(t *testing.T) {
	t.Parallel()
	target, wc, key := startChecker(t, "deleted", "/gone")

	require.NoError(t, k8sClient.Delete(context.Background(), wc))
	deleted := time.Now()
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(k8sClient.Get(context.Background(), key, &webcheckerv1alpha1.WebChecker{}))
	}, 5*time.Second, poll)

	// Give the watch event time to arrive, then no probe may come for two
	// more intervals.
	time.Sleep(500 * time.Millisecond)
	after := target.Count("/gone")
	time.Sleep(2*interval + 500*time.Millisecond)
	assert.Equal(t, after, target.Count("/gone"), "probes continued after delete")
	for _, h := range target.Hits() {
		assert.False(t, h.Time.After(deleted.Add(time.Second)), "probe at %s, %s after the delete", h.Time, h.Time.Sub(deleted))
	}
}

func TestSpecChangeMovesTheProbe(t *testing.T) {
	t.Parallel()
	target, _, key := startChecker(t, "moving", "/old")

	latest := getChecker(t, key)
	patch := client.MergeFrom(latest.DeepCopy())
	latest.Spec.Path = "/new"
	require.NoError(t, k8sClient.Patch(context.Background(), latest, patch))

	require.Eventually(t, func() bool { return target.Count("/new") > 0 }, 3*time.Second, poll, "the new path was never probed")
	require.Eventually(t, func() bool { return getChecker(t, key).Status.ObservedGeneration == latest.Generation }, 3*time.Second, poll)
	old := target.Count("/old")
	require.Eventually(t, func() bool { return target.Count("/new") >= 3 }, 5*interval, poll)
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
// yet the failure is the same, so the status is written once.
func TestRoundRobinFailureWritesOnce(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	_, port, err := net.SplitHostPort(closed.Addr().String())
	require.NoError(t, err)
	require.NoError(t, closed.Close()) // nothing listens on the port, on either address

	wc := newChecker(ns, "round-robin", "http://round-robin.test:"+port, "/")
	require.NoError(t, k8sClient.Create(context.Background(), wc))
	key := client.ObjectKeyFromObject(wc)
	failed := waitReady(t, key, metav1.ConditionFalse, "ConnectionFailed", 3*time.Second)
	assert.Contains(t, ready(failed).Message, "round-robin.test:"+port, "the message names what the user wrote")

	failures := func() float64 { return checkerSeries(t, "webchecker_probes_total", key)["result=failure"] }
	seen := failures()
	require.Eventually(t, func() bool { return failures() >= seen+4 }, 4*interval+5*time.Second, poll, "four more probes")
	assert.Equal(t, failed.ResourceVersion, getChecker(t, key).ResourceVersion, "the status was rewritten as the DNS answer rotated")
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
