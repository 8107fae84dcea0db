package e2e_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/e2e/bench/procstat"
	"github.com/networkio/webchecker/e2e/framework"
)

// Settings of TestHostileTenant. The limits are the acceptance criteria of
// issue 22 (tenant isolation).
const (
	hostileReplicas       = 3
	goodNamespace         = "good"
	evilNamespace         = "evil"
	hostileLeaseNamespace = "e2e-hostile-leases"
	goodCheckers          = 100
	goodInterval          = 5 * time.Second
	goodTimeout           = 2 * time.Second
	evilInterval          = 5 * time.Second
	evilTimeout           = 2 * time.Second
	goodReadyWithin       = 30 * time.Second
	// hostileObservation is how long evil's checkers are probed before the
	// replicas' memory is read again and everything is judged.
	hostileObservation = 45 * time.Second
	// maxMemoryGrowth bounds how much each replica's resident memory, its
	// peak (VmHWM) and its current size (VmRSS), grows from the baseline
	// taken once good is Ready.
	maxMemoryGrowth = 48 << 20
	// maxGoodGap bounds how long a checker of good goes unprobed while evil
	// does its worst.
	maxGoodGap = goodInterval + 2*time.Second
	// hostileControlWindow is the time good is watched before evil's
	// objects are created (not judged: a measure of the machine).
	hostileControlWindow = 3 * goodInterval
	// maxProbeOverrun is how much longer than its timeout a probe may
	// take (webchecker_probe_duration_seconds): scheduling, not matching.
	maxProbeOverrun = time.Second

	// egressAllowAnnotation is the namespace annotation that lets a cluster
	// admin allow one namespace more egress than the flags do.
	egressAllowAnnotation = "webchecker.test.network.io/egress-allow-cidrs"
	// goodAllowCIDRs lets good reach its loopback targets; evilAllowCIDRs
	// lets evil reach its hostile servers and nothing else on loopback:
	// the API server, the operator's ports and its resolver listen on
	// 127.0.0.1.
	goodAllowCIDRs = "127.0.0.0/8"
	evilAllowCIDRs = "127.0.0.2/32,127.0.0.3/32,127.0.0.4/32"

	// regexCopies is how many checkers carry an oversized regex in
	// bodyMatch and in tcp.expect (one more carries eight in
	// dns.answerMatch).
	regexCopies = 2
	// regexInputBytes is what the targets of the oversized regexes send:
	// enough to be matched, little enough not to burn the machine's CPU
	// on today's unbounded match (the CEL bombs are the CPU attack).
	regexInputBytes = 4096
	// celBombBodyBytes is the body of the CEL bombs: 10,000 bytes times
	// the 993 instructions of [ab]{990}c stay under the 10 M steps a
	// matches() call may take.
	celBombBodyBytes = 10_000
)

// hugeRegex is the pattern: valid RE2 of 1,021 bytes whose
// program has about 145,000 instructions (145 copies of .{1000} and a
// tail). The CRD refuses it before the API server's own check compiles it.
func hugeRegex(tail byte) string {
	return strings.Repeat(".{1000}", 145) + string(tail) + "{1,2}"
}

// worstAdmittedRegex is a pattern the CRD admits whose program is over the
// operator's bound: a group of 248 literals repeated 9 times, about 2,234
// instructions (the bound is 2,000), in 255 bytes; tail tells copies apart.
func worstAdmittedRegex(tail byte) string {
	return "(?:" + strings.Repeat("a", 247) + string(tail) + "){9}"
}

const (
	celBomb       = `[1,2,3,4,5,6,7,8,9,10].exists(i, response.body.matches('[ab]{990}c'))`
	celBombNested = `[1,2,3,4,5,6,7,8,9,10].exists(i, [1,2,3,4,5,6,7,8,9,10].exists(j, response.body.matches('[ab]{990}c')))`
	echoMapKey    = `{'x': 0}[response.body] == 0`
	echoTimestamp = `timestamp(response.body) > now`
)

// evilCase is one kind of checker of namespace evil: its spec (copy i of
// copies) and the Ready reason it must end with (status False).
type evilCase struct {
	name   string
	copies int
	reason string
	spec   func(e *hostileEnv, i int) webcheckerv1alpha1.WebCheckerSpec
}

func (c evilCase) checkerName(i int) string {
	if c.copies == 0 {
		return c.name
	}
	return fmt.Sprintf("%s-%d", c.name, i)
}

// evilCases are the worst objects namespace evil creates, with the Ready
// reason each must show. ConditionFailed is what today's code gives a
// condition that is false or cannot be evaluated; adjust a reason here
// when a fix gives it one of its own.
var evilCases = []evilCase{
	// Regular expressions at the CRD's limits: their programs must be
	// refused before they are built.
	{name: "regex-body", copies: regexCopies, reason: "RegexTooComplex", spec: func(e *hostileEnv, i int) webcheckerv1alpha1.WebCheckerSpec {
		return webcheckerv1alpha1.WebCheckerSpec{Host: e.evilHTTP.URL(), Path: "/filler", BodyMatch: &webcheckerv1alpha1.BodyMatch{Regex: worstAdmittedRegex('a' + byte(i))}}
	}},
	{name: "regex-tcp", copies: regexCopies, reason: "RegexTooComplex", spec: func(e *hostileEnv, i int) webcheckerv1alpha1.WebCheckerSpec {
		return webcheckerv1alpha1.WebCheckerSpec{Host: "tcp://" + e.banner.Addr(), TCP: &webcheckerv1alpha1.TCPProbe{Expect: worstAdmittedRegex('k' + byte(i))}}
	}},
	{name: "regex-dns", reason: "RegexTooComplex", spec: func(e *hostileEnv, _ int) webcheckerv1alpha1.WebCheckerSpec {
		var answers []string
		for i := range 8 { // the CRD's maxItems
			answers = append(answers, worstAdmittedRegex('r'+byte(i)))
		}
		return webcheckerv1alpha1.WebCheckerSpec{Host: "dns://" + e.evilDNS, DNS: &webcheckerv1alpha1.DNSProbe{Name: "www.evil.test", AnswerMatch: answers}}
	}},
	// CEL cost bombs: ten (a hundred) matches() of 9.9 M steps each.
	{name: "cel-bomb", reason: "ConditionFailed", spec: func(e *hostileEnv, _ int) webcheckerv1alpha1.WebCheckerSpec {
		return webcheckerv1alpha1.WebCheckerSpec{Host: e.evilHTTP.URL(), Path: "/bomb", Conditions: []webcheckerv1alpha1.ResponseCondition{{Expression: celBomb}}}
	}},
	{name: "cel-bomb-nested", reason: "ConditionFailed", spec: func(e *hostileEnv, _ int) webcheckerv1alpha1.WebCheckerSpec {
		return webcheckerv1alpha1.WebCheckerSpec{Host: e.evilHTTP.URL(), Path: "/bomb", Conditions: []webcheckerv1alpha1.ResponseCondition{{Expression: celBombNested}}}
	}},
	// Echo conditions: their evaluation errors must not quote the body.
	{name: "echo-map-key", reason: "ConditionFailed", spec: func(e *hostileEnv, _ int) webcheckerv1alpha1.WebCheckerSpec {
		return webcheckerv1alpha1.WebCheckerSpec{Host: e.evilHTTP.URL(), Path: "/secret", Conditions: []webcheckerv1alpha1.ResponseCondition{{Expression: echoMapKey}}}
	}},
	{name: "echo-timestamp", reason: "ConditionFailed", spec: func(e *hostileEnv, _ int) webcheckerv1alpha1.WebCheckerSpec {
		return webcheckerv1alpha1.WebCheckerSpec{Host: e.evilHTTP.URL(), Path: "/secret", Conditions: []webcheckerv1alpha1.ResponseCondition{{Expression: echoTimestamp}}}
	}},
	// A target that echoes the request's headers, one from a Secret.
	{name: "echo-headers", reason: "ConditionFailed", spec: func(e *hostileEnv, _ int) webcheckerv1alpha1.WebCheckerSpec {
		return webcheckerv1alpha1.WebCheckerSpec{
			Host: e.evilHTTP.URL(), Path: "/echo-headers",
			Headers: []webcheckerv1alpha1.HTTPHeader{{Name: "X-Api-Key", ValueFrom: &webcheckerv1alpha1.HeaderValueSource{
				SecretKeyRef: webcheckerv1alpha1.SecretKeySelector{Name: "echoed-header", Key: "value"},
			}}},
			Conditions: []webcheckerv1alpha1.ResponseCondition{{Expression: echoMapKey}},
		}
	}},
	// https -> http on the same port: the credentials must stay behind,
	// and the plain side answers 401 without them.
	{name: "downgrade", reason: "UnexpectedStatus", spec: func(e *hostileEnv, _ int) webcheckerv1alpha1.WebCheckerSpec {
		return webcheckerv1alpha1.WebCheckerSpec{
			Host:               e.downgrade.URL(),
			TLS:                &webcheckerv1alpha1.TLSOptions{InsecureSkipVerify: true},
			BasicAuthSecretRef: &webcheckerv1alpha1.SecretReference{Name: "downgrade-auth"},
			Headers: []webcheckerv1alpha1.HTTPHeader{{Name: "X-Api-Key", ValueFrom: &webcheckerv1alpha1.HeaderValueSource{
				SecretKeyRef: webcheckerv1alpha1.SecretKeySelector{Name: "downgrade-key", Key: "value"},
			}}},
		}
	}},
	// The operator's own ports (every replica's), its resolver and the
	// API server, all on 127.0.0.1, which evil is not allowed.
	{name: "operator-metrics", copies: hostileReplicas, reason: "EgressDenied", spec: func(e *hostileEnv, i int) webcheckerv1alpha1.WebCheckerSpec {
		return webcheckerv1alpha1.WebCheckerSpec{Host: "http://" + e.fleet.Replicas[i].MetricsAddr, Path: "/metrics"}
	}},
	{name: "operator-health", copies: hostileReplicas, reason: "EgressDenied", spec: func(e *hostileEnv, i int) webcheckerv1alpha1.WebCheckerSpec {
		return webcheckerv1alpha1.WebCheckerSpec{Host: "http://" + e.fleet.Replicas[i].HealthAddr, Path: "/healthz"}
	}},
	{name: "operator-resolver", reason: "EgressDenied", spec: func(e *hostileEnv, _ int) webcheckerv1alpha1.WebCheckerSpec {
		return webcheckerv1alpha1.WebCheckerSpec{Host: "dns://" + dns.Addr(), DNS: &webcheckerv1alpha1.DNSProbe{Name: "kubernetes.default.svc"}}
	}},
	{name: "apiserver-https", reason: "EgressDenied", spec: func(e *hostileEnv, _ int) webcheckerv1alpha1.WebCheckerSpec {
		return webcheckerv1alpha1.WebCheckerSpec{Host: "https://" + e.apiServer.Host, Path: "/version", TLS: &webcheckerv1alpha1.TLSOptions{InsecureSkipVerify: true}}
	}},
	{name: "apiserver-tcp", reason: "EgressDenied", spec: func(e *hostileEnv, _ int) webcheckerv1alpha1.WebCheckerSpec {
		return webcheckerv1alpha1.WebCheckerSpec{Host: "tcp://" + e.apiServer.Host}
	}},
}

// TestHostileTenant runs three replicas of the built manager, without
// loopback allowed by their flags, while namespace good (allowed
// 127.0.0.0/8 by its egress annotation) has 100 checkers at 5s against a
// loopback target and namespace evil (allowed only the /32s of its own
// hostile servers) creates the worst objects it can (evilCases): regular
// expressions at the CRD's length limit in bodyMatch, tcp.expect and
// dns.answerMatch, CEL cost bombs, conditions that would echo a secret
// body, a target that echoes a Secret-sourced header, an https-to-http
// redirect on one port carrying credentials, and probes of the operator's
// own metrics, health and resolver ports and of the API server.
//
// It proves that one namespace cannot take the operator down or read
// through it: every replica's resident memory (peak and current, from
// /proc/<pid>/status) grows by at most maxMemoryGrowth from the baseline
// taken once good is Ready; no replica exits or fences itself (its
// webchecker_shard_fenced gauge and webchecker_shard_fencings_total
// counter); every checker of good is probed at
// least every maxGoodGap from evil's creation on; no probe of evil
// outlasts its timeout by more than maxProbeOverrun; no status, Event, log
// line or metric holds a secret marker; the plain side of the downgrade
// never receives the credentials; and every checker of evil is
// Ready=False with the reason of its evilCase.
//
// Evil's objects come after a control window in which good's gaps are
// measured too (not judged): a new checker's second probe falls on its
// phase grid, up to 1.5 intervals after its first, and a busy machine
// shows here rather than as evil's doing.
func TestHostileTenant(t *testing.T) {
	e := newHostileEnv(t)
	e.startReplicas()

	e.createAll(goodNamespace, e.goodSpecs())
	e.waitGoodReady(goodReadyWithin)
	// The control window: the same gap measure without evil's objects. It
	// also lets the baseline hold the steady state of good's probes.
	controlFrom := time.Now()
	time.Sleep(hostileControlWindow)
	control := e.goodGaps(controlFrom, time.Now())
	worst, worstName := longest(control)
	over := 0
	for _, g := range control {
		if g > maxGoodGap {
			over++
		}
	}
	t.Logf("MEASURED control window (%s, before %s's checkers): longest gap between probes of a checker of %s %s (%s); %d of %d over %s",
		hostileControlWindow, evilNamespace, goodNamespace, worst.Round(time.Millisecond), worstName, over, goodCheckers, maxGoodGap)
	base := e.samples()
	for i, m := range e.fleet.Replicas {
		t.Logf("baseline %s: VmRSS %.1f MiB, VmHWM %.1f MiB", m.Options.ShardID, mib(base[i].RSS), mib(base[i].PeakRSS))
	}

	e.checkHugeRegexRefused()
	from := time.Now()
	evil := e.evilSpecs()
	e.createAll(evilNamespace, evil)
	t.Logf("created %d checkers in %s in %s", len(evil), evilNamespace, time.Since(from).Round(time.Millisecond))

	// Watch the replicas while evil's checkers are probed.
	peakRSS := make([]uint64, len(e.fleet.Replicas))
	exited := map[string]time.Duration{}
	durations := probeDurations{}
	ticks := 0
	poll(hostileObservation, time.Second, func() bool {
		for i, m := range e.fleet.Replicas {
			if m.Exited() {
				if _, seen := exited[m.Options.ShardID]; !seen {
					exited[m.Options.ShardID] = time.Since(from)
				}
				continue
			}
			if mem, err := procstat.Read(m.Pid()); err == nil {
				peakRSS[i] = max(peakRSS[i], mem.RSS)
			}
		}
		if ticks++; ticks%2 == 0 {
			durations.sample(e.ctx, e.fleet.Replicas)
		}
		return time.Since(from) >= hostileObservation
	})
	to := time.Now()
	end := e.samples()
	for i, m := range e.fleet.Replicas {
		t.Logf("MEASURED %s: %.1f s of CPU in the %s after %s's checkers were created (%.0f%% of one core)",
			m.Options.ShardID, end[i].CPUSince(base[i]).Seconds(), to.Sub(from).Round(time.Second), evilNamespace, 100*end[i].CPUSince(base[i]).Seconds()/to.Sub(from).Seconds())
	}
	// Requests are recorded when they arrive: those sent at the very end
	// of the window arrive a little later.
	time.Sleep(500 * time.Millisecond)

	e.checkReplicas(base, peakRSS, exited)
	e.checkGoodProbed(from, to)
	e.checkEvilReasons()
	e.checkProbeDurations(durations)
	e.checkNoSecrets()
	e.checkDowngrade()
	t.Logf("evil's HTTP server received %v; the tcp banner server %d connections", e.evilHTTP.Hits(), e.banner.Accepted())
}

// checkHugeRegexRefused checks that the API server refuses the issue's
// pattern in each of the three regex fields, naming the field.
func (e *hostileEnv) checkHugeRegexRefused() {
	e.t.Helper()
	specs := map[string]webcheckerv1alpha1.WebCheckerSpec{
		"spec.bodyMatch.regex": {Host: e.evilHTTP.URL(), BodyMatch: &webcheckerv1alpha1.BodyMatch{Regex: hugeRegex('a')}},
		"spec.tcp.expect":      {Host: "tcp://" + e.banner.Addr(), TCP: &webcheckerv1alpha1.TCPProbe{Expect: hugeRegex('k')}},
		"spec.dns.answerMatch": {Host: "dns://" + e.evilDNS, DNS: &webcheckerv1alpha1.DNSProbe{Name: "www.evil.test", AnswerMatch: []string{hugeRegex('r')}}},
	}
	for _, field := range slices.Sorted(maps.Keys(specs)) {
		wc := &webcheckerv1alpha1.WebChecker{ObjectMeta: metav1.ObjectMeta{Namespace: evilNamespace, Name: "refused"}, Spec: specs[field]}
		err := e.c.Create(e.ctx, wc)
		if assert.Error(e.t, err, "the API server admitted the issue's pattern in %s", field) {
			assert.Contains(e.t, err.Error(), field, "the refusal names the field")
		}
	}
}

// checkReplicas checks that every replica still runs, never fenced itself
// and grew its memory by at most maxMemoryGrowth.
func (e *hostileEnv) checkReplicas(base []procstat.Sample, peakRSS []uint64, exited map[string]time.Duration) {
	e.t.Helper()
	for i, m := range e.fleet.Replicas {
		id := m.Options.ShardID
		if !assert.False(e.t, m.Exited(), "replica %s exited %s after evil's checkers were created", id, exited[id]) {
			continue
		}
		after, err := procstat.Read(m.Pid())
		if !assert.NoError(e.t, err) {
			continue
		}
		hwm, rss := growth(base[i].PeakRSS, after.PeakRSS), growth(base[i].RSS, after.RSS)
		e.t.Logf("MEASURED %s: VmHWM %.1f -> %.1f MiB (%+.1f), VmRSS %.1f -> %.1f MiB (%+.1f), highest VmRSS sampled %.1f MiB; limit +%d MiB",
			id, mib(base[i].PeakRSS), mib(after.PeakRSS), float64(hwm)/(1<<20), mib(base[i].RSS), mib(after.RSS), float64(rss)/(1<<20), mib(peakRSS[i]), maxMemoryGrowth>>20)
		assert.LessOrEqual(e.t, hwm, int64(maxMemoryGrowth), "replica %s: peak memory (VmHWM) grew by %.1f MiB", id, float64(hwm)/(1<<20))
		assert.LessOrEqual(e.t, rss, int64(maxMemoryGrowth), "replica %s: memory (VmRSS) grew by %.1f MiB", id, float64(rss)/(1<<20))

		text, err := scrape(e.ctx, m)
		if !assert.NoError(e.t, err) {
			continue
		}
		assert.Empty(e.t, e.leaks(text), "replica %s: secrets in its metrics", id)
		fams, err := families(text)
		if assert.NoError(e.t, err) {
			fenced, ok := gaugeValue(fams, "webchecker_shard_fenced")
			assert.True(e.t, ok && fenced == 0, "replica %s: webchecker_shard_fenced is %v (exported: %t)", id, fenced, ok)
			fencings, ok := fams["webchecker_shard_fencings_total"]
			assert.True(e.t, ok && len(fencings.GetMetric()) == 1 && fencings.GetMetric()[0].GetCounter().GetValue() == 0,
				"replica %s fenced itself since it joined (webchecker_shard_fencings_total): %v", id, fencings.GetMetric())
		}
	}
}

// checkProbeDurations checks that no probe of evil's checkers took longer
// than its timeout and maxProbeOverrun: matching work ends with the
// probe.
func (e *hostileEnv) checkProbeDurations(durations probeDurations) {
	e.t.Helper()
	var long []string
	for _, name := range slices.Sorted(maps.Keys(durations)) {
		if d := durations[name]; d > evilTimeout+maxProbeOverrun {
			long = append(long, fmt.Sprintf("%s: %s", name, d.Round(time.Millisecond)))
		}
	}
	e.t.Logf("MEASURED longest probe of each checker of %s seen in webchecker_probe_duration_seconds: %v", evilNamespace, durations)
	assert.Empty(e.t, long, "probes of %s longer than their timeout (%s) and %s", evilNamespace, evilTimeout, maxProbeOverrun)
}

// longest returns the longest of gaps and its checker.
func longest(gaps map[string]time.Duration) (time.Duration, string) {
	var worst time.Duration
	var worstName string
	for _, name := range slices.Sorted(maps.Keys(gaps)) {
		if gaps[name] > worst {
			worst, worstName = gaps[name], name
		}
	}
	return worst, worstName
}

// checkGoodProbed checks that no checker of good went unprobed for longer
// than maxGoodGap between from and to.
func (e *hostileEnv) checkGoodProbed(from, to time.Time) {
	e.t.Helper()
	gaps := e.goodGaps(from, to)
	worst, worstName := longest(gaps)
	var late []string
	for _, name := range e.goodNames {
		if g := gaps[name]; g > maxGoodGap {
			late = append(late, fmt.Sprintf("%s: %s", name, g.Round(time.Millisecond)))
		}
	}
	assert.Empty(e.t, late, "checkers of %s unprobed for longer than %s while %s did its worst", goodNamespace, maxGoodGap, evilNamespace)
	e.t.Logf("MEASURED longest gap between probes of a checker of %s: %s (%s; limit %s); %d of %d over the limit",
		goodNamespace, worst.Round(time.Millisecond), worstName, maxGoodGap, len(late), goodCheckers)
	notReady := 0
	for _, wc := range e.list(goodNamespace) {
		if framework.ReadyOf(&wc) != metav1.ConditionTrue {
			notReady++
		}
	}
	assert.Zero(e.t, notReady, "checkers of %s no longer Ready", goodNamespace)
}

// checkEvilReasons checks that every checker of evil is Ready=False with
// its case's reason.
func (e *hostileEnv) checkEvilReasons() {
	e.t.Helper()
	items := map[string]webcheckerv1alpha1.WebChecker{}
	for _, wc := range e.list(evilNamespace) {
		items[wc.Name] = wc
	}
	var wrong []string
	for _, ec := range evilCases {
		for i := range max(ec.copies, 1) {
			name := ec.checkerName(i)
			wc, ok := items[name]
			if !assert.True(e.t, ok, "checker %s/%s is gone", evilNamespace, name) {
				continue
			}
			c := framework.ReadyCondition(&wc)
			verdict := "ok"
			if c.Status != metav1.ConditionFalse || c.Reason != ec.reason {
				verdict = "WRONG"
				wrong = append(wrong, fmt.Sprintf("%s: %s/%s, want False/%s", name, c.Status, c.Reason, ec.reason))
			}
			e.t.Logf("%-5s %-20s Ready=%s %s (want False %s): %s", verdict, name, c.Status, c.Reason, ec.reason, shorten(e.redact(c.Message), 200))
		}
	}
	assert.Empty(e.t, wrong, "checkers of %s not Ready=False with the reason that says why", evilNamespace)
}

// checkNoSecrets checks that no status, Event, log line or metric holds a
// marker.
func (e *hostileEnv) checkNoSecrets() {
	e.t.Helper()
	var found []string
	for _, ns := range []string{goodNamespace, evilNamespace} {
		for _, wc := range e.list(ns) {
			status, err := json.Marshal(wc.Status)
			assert.NoError(e.t, err)
			if l := e.leaks(string(status)); len(l) > 0 {
				found = append(found, fmt.Sprintf("status of %s/%s: %v", ns, wc.Name, l))
			}
		}
		for _, ev := range e.events(ns) {
			if l := e.leaks(ev.json); len(l) > 0 {
				found = append(found, fmt.Sprintf("Event %s of %s/%s: %v", ev.reason, ns, ev.object, l))
			}
		}
	}
	for _, m := range e.fleet.Replicas {
		n := 0
		var kinds []string
		for line := range strings.Lines(m.Log()) {
			if l := e.leaks(line); len(l) > 0 {
				n++
				for _, k := range l {
					if !slices.Contains(kinds, k) {
						kinds = append(kinds, k)
					}
				}
			}
		}
		if n > 0 {
			found = append(found, fmt.Sprintf("log of %s: %d lines with %v", m.Options.ShardID, n, kinds))
		}
	}
	assert.Empty(e.t, found, "secrets in statuses, Events or logs")
}

// checkDowngrade checks that the plain side of the downgrade never
// received the credentials.
func (e *hostileEnv) checkDowngrade() {
	e.t.Helper()
	redirected, plain, withCreds, leaked := e.downgrade.counts()
	e.t.Logf("downgrade: %d https requests redirected, %d plain requests, %d of them with credentials %v", redirected, plain, withCreds, leaked)
	assert.Positive(e.t, redirected, "the downgrade checker was never probed")
	assert.Zero(e.t, withCreds, "credentials (%v) sent over plain HTTP after an https -> http redirect", leaked)
}
