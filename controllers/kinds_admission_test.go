package controllers_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/e2e/framework"
)

// kindSpec returns a spec of host with nothing of another kind set (no
// path), the base of the probe kinds' admission cases.
func kindSpec(host string) func(*webcheckerv1alpha1.WebCheckerSpec) {
	return func(s *webcheckerv1alpha1.WebCheckerSpec) { s.Host, s.Path = host, "" }
}

func then(base func(*webcheckerv1alpha1.WebCheckerSpec), more func(*webcheckerv1alpha1.WebCheckerSpec)) func(*webcheckerv1alpha1.WebCheckerSpec) {
	return func(s *webcheckerv1alpha1.WebCheckerSpec) { base(s); more(s) }
}

var (
	tcpHost = kindSpec("tcp://db.example.com:5432")
	dnsHost = then(kindSpec("dns://127.0.0.1"), func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.DNS = &webcheckerv1alpha1.DNSProbe{Name: "example.com"}
	})
)

// invalidKindSpecs are specs of the probe kinds that the API server must
// reject, each with (part of) the message that says why.
var invalidKindSpecs = map[string]struct {
	mutate func(*webcheckerv1alpha1.WebCheckerSpec)
	want   string
}{
	"unknown scheme":       {kindSpec("udp://example.com:53"), "host must use one of the schemes http, https, tcp, tls, grpc, grpcs or dns"},
	"tcp without a port":   {kindSpec("tcp://db.example.com"), "a tcp, tls, grpc or grpcs host needs a port"},
	"grpcs without a port": {kindSpec("grpcs://api.example.com"), "needs a port"},
	"path on tcp":          {then(tcpHost, func(s *webcheckerv1alpha1.WebCheckerSpec) { s.Path = "/x" }), "path is only for http and https targets"},
	"method on tcp":        {then(tcpHost, func(s *webcheckerv1alpha1.WebCheckerSpec) { s.Method = "GET" }), "method is only for http and https targets"},
	"headers on grpc": {then(kindSpec("grpc://api:9000"), func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.Headers = []webcheckerv1alpha1.HTTPHeader{{Name: "X-A", Value: "1"}}
	}), "headers are only for http and https targets"},
	"bodyMatch on tls": {then(kindSpec("tls://mail:465"), func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.BodyMatch = &webcheckerv1alpha1.BodyMatch{Regex: "ok"}
	}), "bodyMatch is only for http and https targets"},
	"status codes on dns":     {then(dnsHost, func(s *webcheckerv1alpha1.WebCheckerSpec) { s.ExpectedStatusCodes = []int32{200} }), "expectedStatusCodes is only for http and https targets"},
	"followRedirects on tcp":  {then(tcpHost, func(s *webcheckerv1alpha1.WebCheckerSpec) { s.FollowRedirects = ptr.To(true) }), "followRedirects is only for http and https targets"},
	"reuseConnections on tcp": {then(tcpHost, func(s *webcheckerv1alpha1.WebCheckerSpec) { s.ReuseConnections = true }), "reuseConnections is only for http and https targets"},
	"bearer token on dns": {then(dnsHost, func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.BearerTokenSecretRef = secretKey("token", "token")
	}), "bearerTokenSecretRef is only for http and https targets"},
	// One rule judges the http-only fields (see BenchmarkStatusWriteValidation):
	// it names the first one set.
	"path and body on tcp": {then(tcpHost, func(s *webcheckerv1alpha1.WebCheckerSpec) { s.Path, s.Body = "/x", "ping" }), "path is only for http and https targets"},
	"basic auth on tcp": {then(tcpHost, func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.BasicAuthSecretRef = &webcheckerv1alpha1.SecretReference{Name: "basic"}
	}), "basicAuthSecretRef is only for http and https targets"},
	"tls on plain http": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.TLS = &webcheckerv1alpha1.TLSOptions{ServerName: "x"}
	}, "tls is only for https, tls and grpcs targets"},
	"tls on tcp": {then(tcpHost, func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.TLS = &webcheckerv1alpha1.TLSOptions{ServerName: "x"}
	}), "tls is only for https, tls and grpcs targets"},
	"client certificate on tcp": {then(tcpHost, func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.TLS = &webcheckerv1alpha1.TLSOptions{ClientCertSecretRef: &webcheckerv1alpha1.SecretReference{Name: "client"}}
	}), "tls is only for https, tls and grpcs targets"},
	"client certificate without a name": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.Host = "https://example.com"
		s.TLS = &webcheckerv1alpha1.TLSOptions{ClientCertSecretRef: &webcheckerv1alpha1.SecretReference{}}
	}, "spec.tls.clientCertSecretRef.name"},
	"oauth2 on tcp": {then(tcpHost, func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.OAuth2 = &webcheckerv1alpha1.OAuth2{TokenURL: "https://auth.example.com/token", CredentialsSecretRef: webcheckerv1alpha1.SecretReference{Name: "oauth"}}
	}), "oauth2 is only for http and https targets"},
	"oauth2 with a bearer token": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.OAuth2 = &webcheckerv1alpha1.OAuth2{TokenURL: "https://auth.example.com/token", CredentialsSecretRef: webcheckerv1alpha1.SecretReference{Name: "oauth"}}
		s.BearerTokenSecretRef = secretKey("token", "token")
	}, "not with basicAuthSecretRef, bearerTokenSecretRef or an Authorization header"},
	"oauth2 with an Authorization header": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.OAuth2 = &webcheckerv1alpha1.OAuth2{TokenURL: "https://auth.example.com/token", CredentialsSecretRef: webcheckerv1alpha1.SecretReference{Name: "oauth"}}
		s.Headers = []webcheckerv1alpha1.HTTPHeader{{Name: "authorization", Value: "Bearer x"}}
	}, "not with basicAuthSecretRef, bearerTokenSecretRef or an Authorization header"},
	"oauth2 token URL with credentials": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.OAuth2 = &webcheckerv1alpha1.OAuth2{TokenURL: "https://u:p@auth.example.com/token", CredentialsSecretRef: webcheckerv1alpha1.SecretReference{Name: "oauth"}}
	}, "spec.oauth2.tokenURL"},
	"oauth2 token URL not http": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.OAuth2 = &webcheckerv1alpha1.OAuth2{TokenURL: "ftp://auth.example.com/token", CredentialsSecretRef: webcheckerv1alpha1.SecretReference{Name: "oauth"}}
	}, "spec.oauth2.tokenURL"},
	"oauth2 scope with a space": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.OAuth2 = &webcheckerv1alpha1.OAuth2{TokenURL: "https://auth.example.com/token", CredentialsSecretRef: webcheckerv1alpha1.SecretReference{Name: "oauth"},
			Scopes: []webcheckerv1alpha1.OAuth2Scope{"a b"}}
	}, "spec.oauth2.scopes[0]"},
	"tcp on http": {func(s *webcheckerv1alpha1.WebCheckerSpec) { s.TCP = &webcheckerv1alpha1.TCPProbe{Send: "x"} }, "tcp is only for tcp and tls targets"},
	"grpc on tcp": {then(tcpHost, func(s *webcheckerv1alpha1.WebCheckerSpec) { s.GRPC = &webcheckerv1alpha1.GRPCProbe{} }), "grpc is only for grpc and grpcs targets"},
	"dns on http": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.DNS = &webcheckerv1alpha1.DNSProbe{Name: "example.com"}
	}, "dns is only for dns targets"},
	"dns target without dns": {kindSpec("dns://127.0.0.1:53"), "a dns target needs dns"},
	"dns target through proxy": {then(dnsHost, func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.Proxy = &webcheckerv1alpha1.ProxySpec{URL: "http://proxy:3128"}
	}), "a dns target cannot use a proxy"},
	"unknown record type": {then(dnsHost, func(s *webcheckerv1alpha1.WebCheckerSpec) { s.DNS.Type = "ANY" }), `supported values: "A", "AAAA"`},
	"unknown rcode":       {then(dnsHost, func(s *webcheckerv1alpha1.WebCheckerSpec) { s.DNS.ValidRcodes = []string{"YXDOMAIN"} }), "spec.dns.validRcodes[0]"},
	"invalid dns name":    {then(dnsHost, func(s *webcheckerv1alpha1.WebCheckerSpec) { s.DNS.Name = "exa mple.com" }), "spec.dns.name"},
	"invalid answerMatch": {then(dnsHost, func(s *webcheckerv1alpha1.WebCheckerSpec) { s.DNS.AnswerMatch = []string{"(x"} }), "answerMatch entries must be valid RE2 regular expressions"},
	"invalid expect": {then(tcpHost, func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.TCP = &webcheckerv1alpha1.TCPProbe{Expect: "(?=x)"}
	}), "expect must be a valid RE2 regular expression"},
	"huge maxReplyBytes": {then(tcpHost, func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.TCP = &webcheckerv1alpha1.TCPProbe{Expect: "x", MaxReplyBytes: ptr.To[int64](2 << 20)}
	}), "should be less than or equal to 1048576"},
	"empty condition": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.Conditions = []webcheckerv1alpha1.ResponseCondition{{}}
	}, "spec.conditions[0].expression"},
	"condition too long": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.Conditions = []webcheckerv1alpha1.ResponseCondition{{Expression: strings.Repeat("x", webcheckerv1alpha1.MaxConditionExpressionBytes+1)}}
	}, "spec.conditions[0].expression: Too long"},
	"too many conditions": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
		for range webcheckerv1alpha1.MaxConditions + 1 {
			s.Conditions = append(s.Conditions, webcheckerv1alpha1.ResponseCondition{Expression: "true"})
		}
	}, "spec.conditions: Too many"},
	"proxy with another scheme": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.Proxy = &webcheckerv1alpha1.ProxySpec{URL: "socks5://proxy:1080"}
	}, "proxy url must be http://host:port or https://host:port"},
	"proxy with credentials": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.Proxy = &webcheckerv1alpha1.ProxySpec{URL: "http://u:p@proxy:3128"}
	}, "proxy url must not contain credentials"},
	"proxy with a path": {func(s *webcheckerv1alpha1.WebCheckerSpec) {
		s.Proxy = &webcheckerv1alpha1.ProxySpec{URL: "http://proxy:3128/x"}
	}, "without a path or query"},
}

func TestInvalidKindSpecsAreRejectedByTheAPIServer(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	i := 0
	for name, tc := range invalidKindSpecs {
		i++
		t.Run(name, func(t *testing.T) {
			assertRejected(t, newChecker(ns, fmt.Sprintf("invalid-kind-%d", i), "http://example.com", "/"), tc.mutate, tc.want)
		})
	}
}

// assertRejected checks that the API server refuses wc once mutate changed
// its spec, as Invalid, with want in the message.
func assertRejected(t *testing.T, wc *webcheckerv1alpha1.WebChecker, mutate func(*webcheckerv1alpha1.WebCheckerSpec), want string) {
	t.Helper()
	mutate(&wc.Spec)
	err := k8sClient.Create(context.Background(), wc, client.DryRunAll)
	require.Error(t, err, "the API server accepted %+v", wc.Spec)
	assert.True(t, apierrors.IsInvalid(err), "want an Invalid error, got %v", err)
	assert.Contains(t, err.Error(), want)
}

// TestValidKindSpecsAreAcceptedAndDefaulted checks a spec of every kind with
// every option of its kind, and the defaults the API server applies (none
// of the HTTP-only ones on other kinds).
func TestValidKindSpecsAreAcceptedAndDefaulted(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	conditions := []webcheckerv1alpha1.ResponseCondition{{Expression: "latency < duration('1s')", Message: "too slow"}}
	proxy := &webcheckerv1alpha1.ProxySpec{URL: "http://proxy.example.com:3128", CredentialsSecretRef: &webcheckerv1alpha1.SecretReference{Name: "proxy"}}
	valid := map[string]func(*webcheckerv1alpha1.WebCheckerSpec){
		"http with conditions and proxy": func(s *webcheckerv1alpha1.WebCheckerSpec) { s.Conditions, s.Proxy = conditions, proxy },
		"tcp": then(tcpHost, func(s *webcheckerv1alpha1.WebCheckerSpec) {
			s.TCP = &webcheckerv1alpha1.TCPProbe{Send: "PING\r\n", Expect: `^\+PONG`}
			s.Conditions, s.Proxy = conditions, proxy
		}),
		"tls": then(kindSpec("tls://mail.example.com:465"), func(s *webcheckerv1alpha1.WebCheckerSpec) {
			s.TCP = &webcheckerv1alpha1.TCPProbe{Expect: "^220 "}
			s.TLS = &webcheckerv1alpha1.TLSOptions{ServerName: "mail.example.com", MinVersion: "1.2"}
		}),
		"grpc": then(kindSpec("grpc://api.example.com:9000"), func(s *webcheckerv1alpha1.WebCheckerSpec) { s.GRPC = &webcheckerv1alpha1.GRPCProbe{Service: "a.b.C"} }),
		"grpcs": then(kindSpec("grpcs://[::1]:9443"), func(s *webcheckerv1alpha1.WebCheckerSpec) {
			s.TLS = &webcheckerv1alpha1.TLSOptions{InsecureSkipVerify: true}
		}),
		"dns": then(dnsHost, func(s *webcheckerv1alpha1.WebCheckerSpec) {
			s.DNS.ValidRcodes, s.DNS.AnswerMatch = []string{"NOERROR", "NXDOMAIN"}, []string{`IN A 10\.0\.0\.1$`}
			s.Conditions = []webcheckerv1alpha1.ResponseCondition{{Expression: "dns.answers.size() > 0"}}
		}),
		"dns with a port and a root name": then(dnsHost, func(s *webcheckerv1alpha1.WebCheckerSpec) {
			s.Host, s.DNS.Name, s.DNS.Type, s.DNS.Transport = "dns://ns1.example.com:5353", ".", "NS", "tcp"
		}),
	}
	i := 0
	for name, mutate := range valid {
		i++
		t.Run(name, func(t *testing.T) {
			wc := newChecker(ns, fmt.Sprintf("valid-kind-%d", i), "http://example.com", "")
			mutate(&wc.Spec)
			require.NoError(t, k8sClient.Create(context.Background(), wc, client.DryRunAll))
			assert.Empty(t, wc.Spec.Method, "no HTTP default")
			assert.Nil(t, wc.Spec.FollowRedirects, "no HTTP default")
			if wc.Spec.TCP != nil {
				assert.Equal(t, ptr.To(webcheckerv1alpha1.DefaultMaxReplyBytes), wc.Spec.TCP.MaxReplyBytes)
			}
			if d := wc.Spec.DNS; d != nil {
				assert.NotEmpty(t, d.Type)
				assert.NotEmpty(t, d.Transport)
				assert.Equal(t, ptr.To(webcheckerv1alpha1.DefaultDNSRecursionDesired), d.RecursionDesired)
			}
		})
	}
}

// TestEverySampleIsAccepted sends every manifest of config/samples to the
// API server as kubectl would (dry run): each kind's sample is valid.
func TestEverySampleIsAccepted(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	root, err := framework.RepoRoot()
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join(root, "config", "samples", "*.yaml"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 6)
	hosts := map[string]bool{}
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		dec := yaml.NewYAMLOrJSONDecoder(strings.NewReader(string(data)), 4096)
		for {
			obj := &unstructured.Unstructured{}
			if err := dec.Decode(&obj.Object); err != nil {
				require.ErrorIs(t, err, io.EOF)
				break
			}
			obj.SetNamespace(ns)
			require.NoError(t, k8sClient.Create(context.Background(), obj, client.DryRunAll), "%s: %s", filepath.Base(file), obj.GetName())
			host, _, _ := unstructured.NestedString(obj.Object, "spec", "host")
			scheme, _, found := strings.Cut(host, "://")
			hosts[map[bool]string{true: scheme, false: "http"}[found]] = true
		}
	}
	for _, scheme := range []string{"http", "https", "tcp", "tls", "grpcs", "dns"} {
		assert.True(t, hosts[scheme], "no sample of %s", scheme)
	}
}
