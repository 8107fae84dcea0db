package e2e_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/dns/dnsmessage"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/e2e/bench/procstat"
	"github.com/networkio/webchecker/e2e/framework"
	"github.com/networkio/webchecker/probing/probetest"
	"github.com/networkio/webchecker/sharding/membership"
)

// hostileEnv is the state of TestHostileTenant: the client, the secret
// markers, the hostile servers of namespace evil, the target of namespace
// good and the replicas.
type hostileEnv struct {
	t    *testing.T
	ctx  context.Context
	c    client.Client
	ring string

	// markers are the secrets, by what they stand for: bytes that must
	// never reach a status, an Event, a log line or a metric.
	markers map[string]string

	evilHTTP  *hostileHTTPServer // 127.0.0.2: secret, CEL bomb, header echo
	banner    *probetest.BannerServer
	downgrade *downgradeServer // 127.0.0.3: https and http on one port
	evilDNS   string           // 127.0.0.4: a DNS server (UDP)
	apiServer *url.URL         // the control plane's API server, on 127.0.0.1

	good      *probetest.Target // 127.0.0.1: one path per checker of good
	goodNames []string
	goodPath  map[string]string

	fleet *framework.Fleet
}

func newHostileEnv(t *testing.T) *hostileEnv {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	scheme, err := framework.NewScheme()
	require.NoError(t, err)
	cfg := *cp.Config
	cfg.QPS, cfg.Burst = 200, 400 // 100 creations and polls of them
	c, err := client.New(&cfg, client.Options{Scheme: scheme})
	require.NoError(t, err)
	apiServer, err := url.Parse(cp.Config.Host)
	require.NoError(t, err)
	require.True(t, net.ParseIP(apiServer.Hostname()).IsLoopback(), "the API server listens on %s", apiServer.Host)

	e := &hostileEnv{
		t: t, ctx: ctx, c: c,
		ring:      fmt.Sprintf("e2e-hostile-%d", time.Now().UnixNano()),
		apiServer: apiServer,
		goodPath:  map[string]string{},
		markers: map[string]string{
			"body secret":          newMarker(t, "TOP-SECRET"),
			"header secret":        newMarker(t, "HEADER-SECRET"),
			"basic auth password":  newMarker(t, "PASSWORD-SECRET"),
			"downgraded X-Api-Key": newMarker(t, "KEY-SECRET"),
		},
	}

	// Hostile servers, on loopback addresses other than 127.0.0.1, which
	// only namespace evil is allowed (evilAllowCIDRs).
	e.evilHTTP = startHostileHTTP(t, "127.0.0.2", e.markers["body secret"])
	e.banner = probetest.NewTestBannerServer(t, probetest.BannerOptions{IP: "127.0.0.2", Banner: strings.Repeat("a", regexInputBytes), Close: true})
	e.downgrade = startDowngradeServer(t, "127.0.0.3")
	e.evilDNS = startDNSResponder(t, "127.0.0.4")

	e.good = probetest.NewTarget()
	t.Cleanup(e.good.Close)
	for i := range goodCheckers {
		name := fmt.Sprintf("good-%03d", i)
		e.goodNames = append(e.goodNames, name)
		e.goodPath[name] = "/good/" + strconv.Itoa(i)
	}

	e.createNamespaces()
	e.createSecrets()
	// Runs after the replicas' cleanups (registered later, run first).
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer ccancel()
		for _, ns := range []string{goodNamespace, evilNamespace} {
			_ = c.DeleteAllOf(cctx, &webcheckerv1alpha1.WebChecker{}, client.InNamespace(ns))
		}
		_ = c.DeleteAllOf(cctx, &coordinationv1.Lease{}, client.InNamespace(hostileLeaseNamespace), client.MatchingLabels{membership.LabelRing: e.ring})
	})
	return e
}

// newMarker returns prefix and 16 random hex digits: a secret no spec
// holds, so that finding it anywhere proves a leak.
func newMarker(t *testing.T, prefix string) string {
	b := make([]byte, 8)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return prefix + "-" + hex.EncodeToString(b)
}

// redact replaces the markers in s by their names, for the test's own
// output.
func (e *hostileEnv) redact(s string) string {
	for what, m := range e.markers {
		s = strings.ReplaceAll(s, m, "<"+what+">")
	}
	return s
}

// leaks returns the names of the markers that s holds.
func (e *hostileEnv) leaks(s string) []string {
	var found []string
	for what, m := range e.markers {
		if strings.Contains(s, m) {
			found = append(found, what)
		}
	}
	slices.Sort(found)
	return found
}

func (e *hostileEnv) createNamespaces() {
	e.t.Helper()
	annotated := map[string]string{
		goodNamespace: goodAllowCIDRs,
		evilNamespace: evilAllowCIDRs,
	}
	for ns, cidrs := range annotated {
		obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Annotations: map[string]string{egressAllowAnnotation: cidrs}}}
		err := e.c.Create(e.ctx, obj)
		if apierrors.IsAlreadyExists(err) {
			err = e.c.Get(e.ctx, client.ObjectKey{Name: ns}, obj)
			if err == nil {
				if obj.Annotations == nil {
					obj.Annotations = map[string]string{}
				}
				obj.Annotations[egressAllowAnnotation] = cidrs
				err = e.c.Update(e.ctx, obj)
			}
		}
		require.NoError(e.t, err, "namespace %s", ns)
	}
	err := e.c.Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hostileLeaseNamespace}})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(e.t, err)
	}
}

func (e *hostileEnv) createSecrets() {
	e.t.Helper()
	secrets := []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "echoed-header"}, StringData: map[string]string{"value": e.markers["header secret"]}},
		{ObjectMeta: metav1.ObjectMeta{Name: "downgrade-auth"}, Type: corev1.SecretTypeBasicAuth, StringData: map[string]string{
			"username": "evil", "password": e.markers["basic auth password"],
		}},
		{ObjectMeta: metav1.ObjectMeta{Name: "downgrade-key"}, StringData: map[string]string{"value": e.markers["downgraded X-Api-Key"]}},
	}
	for _, s := range secrets {
		s.Namespace = evilNamespace
		err := e.c.Create(e.ctx, s)
		if apierrors.IsAlreadyExists(err) {
			err = e.c.Update(e.ctx, s)
		}
		require.NoError(e.t, err, "secret %s", s.Name)
	}
}

// ----------------------------------------------------------------------
// Replicas.

// startReplicas starts the replicas at once, loopback not allowed by
// their flags (--allow-cidrs= last: it wins), and waits until each has
// joined an unfenced ring of all of them.
func (e *hostileEnv) startReplicas() {
	e.t.Helper()
	e.fleet = &framework.Fleet{Replicas: make([]*framework.Manager, hostileReplicas)}
	e.t.Cleanup(func() {
		if e.t.Failed() {
			e.t.Log(e.redact(e.fleet.Logs(40)))
		}
		e.fleet.Stop()
	})
	errs := make([]error, hostileReplicas)
	var wg sync.WaitGroup
	for i := range hostileReplicas {
		wg.Go(func() {
			e.fleet.Replicas[i], errs[i] = framework.StartManager(e.ctx, framework.ManagerOptions{
				Binary:     managerPath,
				Kubeconfig: cp.KubeconfigPath,
				ShardID:    fmt.Sprintf("hostile-%d", i),
				DNSServer:  dns.Addr(),
				Args: []string{
					"--lease-namespace=" + hostileLeaseNamespace,
					"--ring-name=" + e.ring,
					"--watch-namespaces=" + goodNamespace + "," + evilNamespace,
					"--allow-cidrs=",
				},
			})
		})
	}
	wg.Wait()
	e.fleet.Replicas = slices.DeleteFunc(e.fleet.Replicas, func(m *framework.Manager) bool { return m == nil })
	require.NoError(e.t, errors.Join(errs...))

	var ids []string
	for _, m := range e.fleet.Replicas {
		ids = append(ids, m.Options.ShardID)
	}
	var views []string
	agreed := poll(30*time.Second, 100*time.Millisecond, func() bool {
		views = views[:0]
		ok := true
		for _, m := range e.fleet.Replicas {
			r, err := ringOf(e.ctx, m)
			if err != nil {
				views = append(views, err.Error())
				ok = false
				continue
			}
			views = append(views, m.Options.ShardID+": "+r.String())
			ok = ok && r.agrees(ids)
		}
		return ok
	})
	require.True(e.t, agreed, "replicas do not agree on ring %v: %v", ids, views)
}

// samples reads every replica's CPU time and resident memory.
func (e *hostileEnv) samples() []procstat.Sample {
	e.t.Helper()
	out := make([]procstat.Sample, len(e.fleet.Replicas))
	for i, m := range e.fleet.Replicas {
		s, err := procstat.Read(m.Pid())
		require.NoError(e.t, err, "replica %s", m.Options.ShardID)
		out[i] = s
	}
	return out
}

// scrape returns the text of a replica's metrics endpoint.
func scrape(ctx context.Context, m *framework.Manager) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+m.MetricsAddr+"/metrics", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("scraping %s: %w", m.Options.ShardID, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("scraping %s: %w", m.Options.ShardID, err)
	}
	return string(body), nil
}

// families parses a text exposition.
func families(text string) (map[string]*dto.MetricFamily, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("parsing metrics: %w", err)
	}
	return fams, nil
}

// gaugeValue returns the value of the unlabelled gauge name.
func gaugeValue(fams map[string]*dto.MetricFamily, name string) (float64, bool) {
	f, ok := fams[name]
	if !ok || len(f.GetMetric()) != 1 || f.GetMetric()[0].GetGauge() == nil {
		return 0, false
	}
	return f.GetMetric()[0].GetGauge().GetValue(), true
}

// checkerGauges returns the values of the per-checker gauge name of the
// checkers of namespace ns, by checker name.
func checkerGauges(fams map[string]*dto.MetricFamily, name, ns string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range fams[name].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["namespace"] == ns && m.GetGauge() != nil {
			out[labels["name"]] = m.GetGauge().GetValue()
		}
	}
	return out
}

// probeDurations keeps, per checker of evil, the longest latest-probe
// duration (webchecker_probe_duration_seconds) any replica exported.
type probeDurations map[string]time.Duration

// sample scrapes every replica and keeps the longest durations.
func (d probeDurations) sample(ctx context.Context, replicas []*framework.Manager) {
	for _, m := range replicas {
		if m.Exited() {
			continue
		}
		text, err := scrape(ctx, m)
		if err != nil {
			continue
		}
		fams, err := families(text)
		if err != nil {
			continue
		}
		for name, v := range checkerGauges(fams, "webchecker_probe_duration_seconds", evilNamespace) {
			d[name] = max(d[name], time.Duration(v*float64(time.Second)))
		}
	}
}

// ----------------------------------------------------------------------
// WebCheckers.

// createAll creates the WebCheckers concurrently.
func (e *hostileEnv) createAll(ns string, specs map[string]webcheckerv1alpha1.WebCheckerSpec) {
	e.t.Helper()
	names := slices.Sorted(maps.Keys(specs))
	require.NoError(e.t, createConcurrently(e.ctx, e.c, ns, 8, names, func(name string) webcheckerv1alpha1.WebCheckerSpec { return specs[name] }))
}

func (e *hostileEnv) goodSpecs() map[string]webcheckerv1alpha1.WebCheckerSpec {
	specs := map[string]webcheckerv1alpha1.WebCheckerSpec{}
	for _, name := range e.goodNames {
		specs[name] = webcheckerv1alpha1.WebCheckerSpec{
			Host:     e.good.URL(),
			Path:     e.goodPath[name],
			Interval: &metav1.Duration{Duration: goodInterval},
			Timeout:  &metav1.Duration{Duration: goodTimeout},
		}
	}
	return specs
}

// evilSpecs builds the specs of evilCases, named <name>-<i> for a case
// of several copies.
func (e *hostileEnv) evilSpecs() map[string]webcheckerv1alpha1.WebCheckerSpec {
	specs := map[string]webcheckerv1alpha1.WebCheckerSpec{}
	for _, ec := range evilCases {
		for i := range max(ec.copies, 1) {
			spec := ec.spec(e, i)
			spec.Interval = &metav1.Duration{Duration: evilInterval}
			spec.Timeout = &metav1.Duration{Duration: evilTimeout}
			specs[ec.checkerName(i)] = spec
		}
	}
	return specs
}

func (e *hostileEnv) list(ns string) []webcheckerv1alpha1.WebChecker {
	e.t.Helper()
	var list webcheckerv1alpha1.WebCheckerList
	require.NoError(e.t, e.c.List(e.ctx, &list, client.InNamespace(ns)))
	return list.Items
}

// waitGoodReady waits until every checker of good is Ready=True.
func (e *hostileEnv) waitGoodReady(within time.Duration) {
	e.t.Helper()
	summary := ""
	ok := poll(within, 250*time.Millisecond, func() bool {
		byState := map[string]int{}
		for _, wc := range e.list(goodNamespace) {
			c := framework.ReadyCondition(&wc)
			byState[string(c.Status)+"/"+c.Reason]++
		}
		summary = fmt.Sprint(byState)
		return byState["True/ProbeSucceeded"] == goodCheckers
	})
	require.True(e.t, ok, "the %d checkers of %s not all Ready within %s: %s", goodCheckers, goodNamespace, within, summary)
}

// goodGaps returns, for every checker of good, the longest time it went
// unprobed between from and to: from its last probe before from (or from)
// to the first in the window, between two probes in it, and from the
// last to to.
func (e *hostileEnv) goodGaps(from, to time.Time) map[string]time.Duration {
	byPath := map[string][]time.Time{}
	for _, h := range e.good.Hits() {
		byPath[h.Path] = append(byPath[h.Path], h.Time)
	}
	gaps := map[string]time.Duration{}
	for _, name := range e.goodNames {
		hits := byPath[e.goodPath[name]]
		sort.Slice(hits, func(i, j int) bool { return hits[i].Before(hits[j]) })
		prev := from
		for _, at := range hits {
			if at.After(to) {
				break
			}
			if at.After(from) {
				gaps[name] = max(gaps[name], at.Sub(prev))
			}
			prev = at
		}
		gaps[name] = max(gaps[name], to.Sub(prev))
	}
	return gaps
}

// event is an Event the test searches: its reason, the name of its
// object, and all of it as JSON.
type event struct {
	reason, object, json string
}

// events returns the Events of namespace ns.
func (e *hostileEnv) events(ns string) []event {
	e.t.Helper()
	var list corev1.EventList
	require.NoError(e.t, e.c.List(e.ctx, &list, client.InNamespace(ns)))
	out := make([]event, 0, len(list.Items))
	for _, ev := range list.Items {
		b, err := json.Marshal(ev)
		require.NoError(e.t, err)
		out = append(out, event{reason: ev.Reason, object: ev.InvolvedObject.Name, json: string(b)})
	}
	return out
}

// ----------------------------------------------------------------------
// Hostile servers.

// hostileHTTPServer is an HTTP server of namespace evil: /secret answers
// the secret, /bomb 10,000 bytes that make matches('[ab]{990}c') as slow
// as it may be, /echo-headers the request's headers (X-Api-Key first),
// anything else regexInputBytes bytes for the oversized body regexes.
type hostileHTTPServer struct {
	server *httptest.Server

	mu   sync.Mutex
	hits map[string]int
}

func startHostileHTTP(t *testing.T, ip, secret string) *hostileHTTPServer {
	t.Helper()
	s := &hostileHTTPServer{hits: map[string]int{}}
	bomb := strings.Repeat("ab", celBombBodyBytes/2)
	filler := strings.Repeat("a", regexInputBytes)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		s.mu.Unlock()
		switch r.URL.Path {
		case "/secret":
			_, _ = io.WriteString(w, secret)
		case "/bomb":
			_, _ = io.WriteString(w, bomb)
		case "/echo-headers":
			var b strings.Builder
			fmt.Fprintf(&b, "X-Api-Key: %s\n", r.Header.Get("X-Api-Key"))
			for _, name := range slices.Sorted(func(yield func(string) bool) {
				for k := range r.Header {
					if !yield(k) {
						return
					}
				}
			}) {
				fmt.Fprintf(&b, "%s: %s\n", name, strings.Join(r.Header[name], ", "))
			}
			_, _ = io.WriteString(w, b.String())
		default:
			_, _ = io.WriteString(w, filler)
		}
	})
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	require.NoError(t, err)
	s.server = httptest.NewUnstartedServer(handler)
	_ = s.server.Listener.Close()
	s.server.Listener = ln
	s.server.Start()
	t.Cleanup(func() {
		s.server.CloseClientConnections()
		s.server.Close()
	})
	return s
}

func (s *hostileHTTPServer) URL() string { return s.server.URL }

// Hits returns how many requests each path received.
func (s *hostileHTTPServer) Hits() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.hits))
	for k, v := range s.hits {
		out[k] = v
	}
	return out
}

// downgradeServer serves HTTPS and plain HTTP on one port (it looks at
// the first byte of each connection): an HTTPS request is redirected to
// http://<same host:port>/plain, a plain one answers 200 when it carries
// credentials (Authorization or X-Api-Key) and 401 otherwise, and is
// recorded.
type downgradeServer struct {
	server *http.Server
	addr   string

	mu           sync.Mutex
	redirected   int
	plain        int
	withCreds    int
	leakedHeader map[string]bool
}

func startDowngradeServer(t *testing.T, ip string) *downgradeServer {
	t.Helper()
	cert := probetest.NewCertificate(t, ip, time.Now().Add(-time.Hour), time.Now().Add(90*24*time.Hour))
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	require.NoError(t, err)
	s := &downgradeServer{addr: ln.Addr().String(), leakedHeader: map[string]bool{}}
	s.server = &http.Server{
		Handler:           http.HandlerFunc(s.serve),
		ReadHeaderTimeout: 5 * time.Second,
	}
	mux := &sniffListener{Listener: ln, tls: &tls.Config{Certificates: []tls.Certificate{probetest.Chain(cert)}}}
	go func() { _ = s.server.Serve(mux) }()
	t.Cleanup(func() { _ = s.server.Close() })
	return s
}

func (s *downgradeServer) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.TLS != nil {
		s.redirected++
		http.Redirect(w, r, "http://"+s.addr+"/plain", http.StatusFound)
		return
	}
	s.plain++
	creds := false
	for _, h := range []string{"Authorization", "X-Api-Key"} {
		if r.Header.Get(h) != "" {
			s.leakedHeader[h] = true
			creds = true
		}
	}
	if creds {
		s.withCreds++
		w.WriteHeader(http.StatusOK)
		return
	}
	w.WriteHeader(http.StatusUnauthorized)
}

// URL is the HTTPS URL of the server.
func (s *downgradeServer) URL() string { return "https://" + s.addr }

// counts returns the requests over TLS, over plain HTTP, the plain ones
// with credentials, and the names of the credential headers seen in plain.
func (s *downgradeServer) counts() (redirected, plain, withCreds int, leaked []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for h := range s.leakedHeader {
		leaked = append(leaked, h)
	}
	slices.Sort(leaked)
	return s.redirected, s.plain, s.withCreds, leaked
}

// sniffListener hands out TLS server connections for connections that
// start with a TLS handshake record (0x16) and plain ones otherwise.
type sniffListener struct {
	net.Listener
	tls *tls.Config
}

func (l *sniffListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	br := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	first, err := br.Peek(1)
	_ = c.SetReadDeadline(time.Time{})
	pc := &peekedConn{Conn: c, r: br}
	if err == nil && first[0] == 0x16 {
		return tls.Server(pc, l.tls), nil
	}
	return pc, nil
}

// peekedConn is a connection whose first bytes were read into r.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// startDNSResponder starts a UDP DNS server on ip that answers every A
// query with 192.0.2.1 (a documentation address, never connected to) and
// returns its address.
func startDNSResponder(t *testing.T, ip string) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", net.JoinHostPort(ip, "0"))
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if resp := dnsAnswer(buf[:n]); resp != nil {
				_, _ = pc.WriteTo(resp, from)
			}
		}
	}()
	t.Cleanup(func() {
		_ = pc.Close()
		<-done
	})
	return pc.LocalAddr().String()
}

// dnsAnswer answers query (nil when it does not parse).
func dnsAnswer(query []byte) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil
	}
	q, err := p.Question()
	if err != nil {
		return nil
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired})
	if b.StartQuestions() != nil || b.Question(q) != nil || b.StartAnswers() != nil {
		return nil
	}
	if q.Type == dnsmessage.TypeA {
		hdr := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 300}
		if b.AResource(hdr, dnsmessage.AResource{A: [4]byte{192, 0, 2, 1}}) != nil {
			return nil
		}
	}
	out, err := b.Finish()
	if err != nil {
		return nil
	}
	return out
}

// ----------------------------------------------------------------------
// Reporting.

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// growth is after - before, in bytes, negative when it shrank.
func growth(before, after uint64) int64 { return int64(after) - int64(before) }

// shorten abbreviates s to n bytes for a log line.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
