package checkspec_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers/checkspec"
	"github.com/networkio/webchecker/probing"
)

// TestCheckForKinds resolves a spec of every kind into its target: the
// URL, the options of its kind with their defaults, and nothing of HTTP.
func TestCheckForKinds(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		host   string
		mutate func(*webcheckerv1alpha1.WebCheckerSpec)
		check  func(t *testing.T, target probing.TargetSpec)
	}{
		"tcp with query and reply": {
			host: "tcp://db.example.com:6379",
			mutate: func(s *webcheckerv1alpha1.WebCheckerSpec) {
				s.TCP = &webcheckerv1alpha1.TCPProbe{Send: "PING\r\n", Expect: `^\+PONG`}
			},
			check: func(t *testing.T, target probing.TargetSpec) {
				assert.Equal(t, "tcp://db.example.com:6379", target.URL)
				require.NotNil(t, target.TCP)
				assert.Equal(t, "PING\r\n", target.TCP.Send)
				assert.Equal(t, `^\+PONG`, target.TCP.Expect.String())
				assert.Equal(t, webcheckerv1alpha1.DefaultMaxReplyBytes, target.TCP.MaxBytes)
			},
		},
		"tls with its options": {
			host: "tls://mail.example.com:465",
			mutate: func(s *webcheckerv1alpha1.WebCheckerSpec) {
				s.TLS = &webcheckerv1alpha1.TLSOptions{ServerName: "smtp.example.com"}
			},
			check: func(t *testing.T, target probing.TargetSpec) {
				assert.Equal(t, "tls://mail.example.com:465", target.URL)
				assert.Nil(t, target.TCP, "connects and shakes hands only")
				assert.Equal(t, "smtp.example.com", target.TLS.ServerName)
				assert.Equal(t, webcheckerv1alpha1.DefaultCertExpiryWarning, target.CertExpiryWarning)
			},
		},
		"grpc with a service": {
			host:   "grpc://api.example.com:9000",
			mutate: func(s *webcheckerv1alpha1.WebCheckerSpec) { s.GRPC = &webcheckerv1alpha1.GRPCProbe{Service: "a.B"} },
			check: func(t *testing.T, target probing.TargetSpec) {
				assert.Equal(t, probing.GRPCOptions{Service: "a.B"}, target.GRPC)
			},
		},
		"dns with defaults": {
			host:   "dns://127.0.0.1",
			mutate: func(s *webcheckerv1alpha1.WebCheckerSpec) { s.DNS = &webcheckerv1alpha1.DNSProbe{Name: "example.com"} },
			check: func(t *testing.T, target probing.TargetSpec) {
				assert.Equal(t, "dns://127.0.0.1", target.URL)
				require.NotNil(t, target.DNS)
				assert.Equal(t, probing.DNSOptions{Name: "example.com", Type: "A", Transport: "udp", RecursionDesired: true}, *target.DNS)
			},
		},
		"dns with every option": {
			host: "dns://ns1.example.com:5353",
			mutate: func(s *webcheckerv1alpha1.WebCheckerSpec) {
				s.DNS = &webcheckerv1alpha1.DNSProbe{Name: "example.com", Type: "TXT", Transport: "tcp", RecursionDesired: ptr.To(false),
					ValidRcodes: []string{"NOERROR", "NXDOMAIN"}, AnswerMatch: []string{"v=spf1"}}
			},
			check: func(t *testing.T, target probing.TargetSpec) {
				d := target.DNS
				assert.Equal(t, "TXT", d.Type)
				assert.Equal(t, "tcp", d.Transport)
				assert.False(t, d.RecursionDesired)
				assert.Equal(t, []string{"NOERROR", "NXDOMAIN"}, d.Rcodes)
				require.Len(t, d.AnswerMatch, 1)
				assert.Equal(t, "v=spf1", d.AnswerMatch[0].String())
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			wc := newChecker("ns", "kind", tc.host, "")
			tc.mutate(&wc.Spec)
			check, err := checkspec.CheckFor(wc, nil)
			require.NoError(t, err)
			scheme, _, _ := strings.Cut(tc.host, "://")
			kind, _ := probing.KindOfScheme(scheme)
			assert.Equal(t, kind, check.Target.Kind(), "built for the host's kind")
			target := check.Target.Spec()
			assert.Empty(t, target.Method, "no HTTP default on another kind")
			assert.False(t, target.FollowRedirects)
			tc.check(t, target)
		})
	}
}

// TestCheckForRejectsFieldsOfAnotherKind: an object stored before the
// CRD's kind rules (or written around them) is reported, never probed with
// options it cannot use.
func TestCheckForRejectsFieldsOfAnotherKind(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		host   string
		mutate func(*webcheckerv1alpha1.WebCheckerSpec)
		want   string
	}{
		"path on tcp":      {"tcp://db:5432", func(s *webcheckerv1alpha1.WebCheckerSpec) { s.Path = "/x" }, "path is only for http and https targets"},
		"method on grpc":   {"grpc://api:9000", func(s *webcheckerv1alpha1.WebCheckerSpec) { s.Method = "GET" }, "method is only for http"},
		"dns on http":      {"http://example.com", func(s *webcheckerv1alpha1.WebCheckerSpec) { s.DNS = &webcheckerv1alpha1.DNSProbe{Name: "x"} }, "dns is required for dns targets, and only for them"},
		"dns target bare":  {"dns://127.0.0.1", func(*webcheckerv1alpha1.WebCheckerSpec) {}, "dns is required"},
		"tcp on grpc":      {"grpc://api:9000", func(s *webcheckerv1alpha1.WebCheckerSpec) { s.TCP = &webcheckerv1alpha1.TCPProbe{} }, "tcp is only for tcp and tls targets"},
		"grpc on tls":      {"tls://api:443", func(s *webcheckerv1alpha1.WebCheckerSpec) { s.GRPC = &webcheckerv1alpha1.GRPCProbe{} }, "grpc is only for grpc and grpcs targets"},
		"unknown scheme":   {"udp://x:53", func(*webcheckerv1alpha1.WebCheckerSpec) {}, `unsupported scheme "udp"`},
		"tcp without port": {"tcp://db", func(*webcheckerv1alpha1.WebCheckerSpec) {}, "missing port"},
		"invalid expect":   {"tcp://db:1", func(s *webcheckerv1alpha1.WebCheckerSpec) { s.TCP = &webcheckerv1alpha1.TCPProbe{Expect: "(x"} }, "tcp.expect"},
		"invalid dns regex": {"dns://127.0.0.1", func(s *webcheckerv1alpha1.WebCheckerSpec) {
			s.DNS = &webcheckerv1alpha1.DNSProbe{Name: "x", AnswerMatch: []string{"(x"}}
		}, "dns.answerMatch[0]"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			wc := newChecker("ns", "stale", tc.host, "")
			tc.mutate(&wc.Spec)
			_, err := checkspec.CheckFor(wc, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "invalid target")
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestCheckForProxy: spec.proxy with its credentials from a Secret, else
// the operator's default unless --no-proxy matches, never for dns.
func TestCheckForProxy(t *testing.T) {
	t.Parallel()
	secrets := fakeSecrets(map[string]map[string]string{"proxy": {"username": "u", "password": "p\n"}})
	wc := newChecker("ns", "proxied", "tcp://db.internal:5432", "")
	wc.Spec.Proxy = &webcheckerv1alpha1.ProxySpec{URL: "http://proxy.example.com:3128", CredentialsSecretRef: &webcheckerv1alpha1.SecretReference{Name: "proxy"}}
	assert.Equal(t, []string{"proxy"}, checkspec.SecretNames(&wc.Spec))

	def, err := checkspec.ParseDefaultProxy("http://default-proxy:8080", "internal, .corp.example, 10.0.0.0/8, 192.0.2.7", &probing.BasicAuth{Username: "admin", Password: "s3cret"})
	require.NoError(t, err)
	assert.Equal(t, "http://default-proxy:8080", def.String(), "no credentials in logs")
	builder := checkspec.CheckBuilder{Proxy: def}

	check, err := builder.CheckFor(wc, secrets)
	require.NoError(t, err)
	assert.Equal(t, &probing.Proxy{URL: "http://proxy.example.com:3128", Username: "u", Password: "p"}, check.Target.Spec().Proxy, "spec.proxy wins")

	_, err = builder.CheckFor(wc, nil)
	var secretErr *checkspec.SecretError
	require.ErrorAs(t, err, &secretErr, "the credentials need Secret access")
	assert.Equal(t, probing.ReasonSecretAccessDisabled, secretErr.Reason)

	for host, want := range map[string]bool{
		"https://api.example.com":         true,
		"tcp://db.internal:5432":          false, // the domain itself
		"tcp://db.sub.internal:5432":      false, // and its subdomains
		"https://corp.example":            true,  // .corp.example: subdomains only
		"https://x.corp.example":          false,
		"grpc://10.1.2.3:9000":            false,
		"grpc://192.0.2.7:9000":           false,
		"grpc://192.0.2.8:9000":           true,
		"http://127.0.0.1:8080":           true, // loopback is not exempted implicitly
		"tls://notinternal.example.com:1": true,
	} {
		wc := newChecker("ns", "default", host, "")
		check, err := builder.CheckFor(wc, nil)
		require.NoError(t, err, host)
		if want {
			assert.Equal(t, &probing.Proxy{URL: "http://default-proxy:8080", Username: "admin", Password: "s3cret"}, check.Target.Spec().Proxy, host)
		} else {
			assert.Nil(t, check.Target.Spec().Proxy, host)
		}
	}
	dns := newChecker("ns", "dns", "dns://127.0.0.1", "")
	dns.Spec.DNS = &webcheckerv1alpha1.DNSProbe{Name: "example.com"}
	check, err = builder.CheckFor(dns, nil)
	require.NoError(t, err)
	assert.Nil(t, check.Target.Spec().Proxy, "dns probes cannot use a proxy")
}

// TestCheckForConditions compiles spec.conditions for the checker's kind
// (once per distinct spec with a JudgeCache), and reports one that does
// not compile as a *ConditionError naming the field.
func TestCheckForConditions(t *testing.T) {
	t.Parallel()
	wc := newChecker("ns", "conditions", "https://api.example.com", "/status")
	wc.Spec.Conditions = []webcheckerv1alpha1.ResponseCondition{
		{Expression: `response.json.status == "ok"`, Message: "not ok"},
		{Expression: `tls.expiry - now > duration("336h")`},
	}
	check, err := checkspec.CheckFor(wc, nil)
	require.NoError(t, err)
	require.NotNil(t, check.Target.Spec().Judge)
	assert.True(t, check.Target.Spec().Judge.NeedsBody(), "response.json reads the body")

	cache := checkspec.NewJudgeCache()
	builder := checkspec.CheckBuilder{Judges: cache}
	first, err := builder.CheckFor(wc, nil)
	require.NoError(t, err)
	again, err := builder.CheckFor(wc.DeepCopy(), nil)
	require.NoError(t, err)
	assert.Same(t, first.Target.Spec().Judge, again.Target.Spec().Judge, "compiled once")
	assert.True(t, first.Target.Equal(check.Target), "a cached Judge judges alike")

	for name, tc := range map[string]struct {
		host string
		cond webcheckerv1alpha1.ResponseCondition
		want string
	}{
		"syntax":          {"https://x", webcheckerv1alpha1.ResponseCondition{Expression: "response.code =="}, "spec.conditions[0].expression: condition 1"},
		"not a bool":      {"https://x", webcheckerv1alpha1.ResponseCondition{Expression: "response.code"}, "spec.conditions[0].expression"},
		"another kind":    {"tcp://db:1", webcheckerv1alpha1.ResponseCondition{Expression: "response.code == 200"}, "response"},
		"type mismatch":   {"dns://127.0.0.1", webcheckerv1alpha1.ResponseCondition{Expression: `dns.rcode == 1`}, "spec.conditions[0].expression"},
		"message too big": {"https://x", webcheckerv1alpha1.ResponseCondition{Expression: "true", Message: strings.Repeat("m", 300)}, "spec.conditions[0].message"},
	} {
		t.Run(name, func(t *testing.T) {
			wc := newChecker("ns", "bad", tc.host, "")
			if strings.HasPrefix(tc.host, "dns://") {
				wc.Spec.DNS = &webcheckerv1alpha1.DNSProbe{Name: "example.com"}
			}
			wc.Spec.Conditions = []webcheckerv1alpha1.ResponseCondition{tc.cond}
			for _, b := range []checkspec.CheckBuilder{{}, builder} {
				_, err := b.CheckFor(wc, nil)
				var condErr *checkspec.ConditionError
				require.ErrorAs(t, err, &condErr)
				assert.Contains(t, condErr.Message, tc.want)
			}
		})
	}
}
