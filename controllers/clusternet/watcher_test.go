package clusternet_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/go-logr/logr/testr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/networkio/webchecker/controllers/clusternet"
	"github.com/networkio/webchecker/e2e/framework"
	"github.com/networkio/webchecker/probing/egress"
)

var (
	cp     *framework.ControlPlane
	scheme = runtime.NewScheme()
)

func TestMain(m *testing.M) {
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(func() int {
		var err error
		if cp, err = framework.StartEmptyControlPlane(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer func() {
			if err := cp.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
		}()
		return m.Run()
	}())
}

// within bounds how long the policy may take to follow a change.
const within = 10 * time.Second

// startWatcher starts a Watcher of policy, stopped when the test ends.
func startWatcher(t *testing.T, policy *egress.Policy) *clusternet.Watcher {
	t.Helper()
	w, err := clusternet.New(clusternet.Options{
		Config: cp.Config, Scheme: scheme, Policy: policy, MinInterval: 50 * time.Millisecond, Logger: testr.New(t),
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return w
}

// deniedBy is the rule that denies addr ("" when allowed).
func deniedBy(policy *egress.Policy, addr string) string {
	var denied *egress.DeniedError
	if err := policy.Check(netip.MustParseAddr(addr)); errors.As(err, &denied) {
		return denied.Rule.String()
	}
	return ""
}

// eventually waits until addr is denied by want ("" allowed).
func eventually(t *testing.T, policy *egress.Policy, addr, want string) {
	t.Helper()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, want, deniedBy(policy, addr), addr)
	}, within, 20*time.Millisecond)
}

// The API server of envtest serves ServiceCIDRs and creates the default
// one, "kubernetes", from its --service-cluster-ip-range, and the
// EndpointSlice of the Service kubernetes with its own address.
func TestDefaultServiceCIDRAndAPIServer(t *testing.T) {
	c, err := client.New(cp.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	var def networkingv1.ServiceCIDR
	require.EventuallyWithT(t, func(c2 *assert.CollectT) {
		assert.NoError(c2, c.Get(t.Context(), client.ObjectKey{Name: "kubernetes"}, &def))
	}, within, 100*time.Millisecond)
	require.NotEmpty(t, def.Spec.CIDRs)
	var slices discoveryv1.EndpointSliceList
	require.EventuallyWithT(t, func(c2 *assert.CollectT) {
		assert.NoError(c2, c.List(t.Context(), &slices, client.InNamespace("default"), client.MatchingLabels{discoveryv1.LabelServiceName: "kubernetes"}))
		assert.NotEmpty(c2, slices.Items)
	}, within, 100*time.Millisecond)
	apiAddr := slices.Items[0].Endpoints[0].Addresses[0]

	policy := egress.NewPolicy(egress.Options{AwaitClusterNetworks: true})
	assert.Equal(t, "cluster networks not listed yet (every address is denied until they are)", deniedBy(policy, "192.0.2.1"))
	w := startWatcher(t, policy)
	ctx, cancel := context.WithTimeout(t.Context(), within)
	defer cancel()
	require.NoError(t, w.Listed(ctx))

	prefix := netip.MustParsePrefix(def.Spec.CIDRs[0]).Masked()
	inside := prefix.Addr().Next().Next().String() // not the kubernetes Service itself
	assert.Equal(t, fmt.Sprintf("Service CIDR %s (ServiceCIDR kubernetes)", prefix), deniedBy(policy, inside))
	assert.Equal(t, fmt.Sprintf("API server endpoint %s (EndpointSlice kubernetes)", apiAddr), deniedBy(policy, apiAddr))
	assert.Equal(t, "", deniedBy(policy, "192.0.2.1"), "listed: an outside address is allowed")
}

func TestServiceCIDRs(t *testing.T) {
	c, err := client.New(cp.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	policy := egress.NewPolicy(egress.Options{AwaitClusterNetworks: true})
	startWatcher(t, policy)

	sc := &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "extra"}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"198.51.100.0/24"}}}
	require.NoError(t, c.Create(t.Context(), sc))
	eventually(t, policy, "198.51.100.7", "Service CIDR 198.51.100.0/24 (ServiceCIDR extra)")
	eventually(t, policy, "64:ff9b::c633:6407", "Service CIDR 198.51.100.0/24 (ServiceCIDR extra)") // NAT64 of 198.51.100.7

	// spec.cidrs is immutable: a second ServiceCIDR adds a range, and
	// deleting the first removes it.
	sc2 := &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "extra-v6"}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{"2001:db8:5::/112"}}}
	require.NoError(t, c.Create(t.Context(), sc2))
	eventually(t, policy, "2001:db8:5::10", "Service CIDR 2001:db8:5::/112 (ServiceCIDR extra-v6)")
	require.NoError(t, c.Delete(t.Context(), sc))
	require.NoError(t, c.Delete(t.Context(), sc2))
	// A ServiceCIDR goes once no Service uses it (its finalizer).
	eventually(t, policy, "198.51.100.7", "")
	eventually(t, policy, "2001:db8:5::10", "")
}

func TestAPIServerEndpoints(t *testing.T) {
	c, err := client.New(cp.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	policy := egress.NewPolicy(egress.Options{AwaitClusterNetworks: true})
	startWatcher(t, policy)

	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: "kubernetes-extra", Namespace: "default",
			Labels: map[string]string{discoveryv1.LabelServiceName: "kubernetes"},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"203.0.113.5"}}},
		Ports:       []discoveryv1.EndpointPort{{Port: ptr.To[int32](6443)}},
	}
	require.NoError(t, c.Create(t.Context(), slice))
	eventually(t, policy, "203.0.113.5", "API server endpoint 203.0.113.5 (EndpointSlice kubernetes-extra)")

	slice.Endpoints[0].Addresses = []string{"203.0.113.6"}
	require.NoError(t, c.Update(t.Context(), slice))
	eventually(t, policy, "203.0.113.6", "API server endpoint 203.0.113.6 (EndpointSlice kubernetes-extra)")
	eventually(t, policy, "203.0.113.5", "")

	// Another Service's slice is not the API server's.
	other := slice.DeepCopy()
	other.ObjectMeta = metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}}
	other.Endpoints[0].Addresses = []string{"203.0.113.9"}
	require.NoError(t, c.Create(t.Context(), other))
	t.Cleanup(func() { _ = c.Delete(context.Background(), other) })

	require.NoError(t, c.Delete(t.Context(), slice))
	eventually(t, policy, "203.0.113.6", "")
	assert.Equal(t, "", deniedBy(policy, "203.0.113.9"), "another Service's endpoint")
}

func TestNodes(t *testing.T) {
	c, err := client.New(cp.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	policy := egress.NewPolicy(egress.Options{AwaitClusterNetworks: true})
	startWatcher(t, policy)

	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "worker-1"},
		Spec:       corev1.NodeSpec{PodCIDR: "10.244.1.0/24", PodCIDRs: []string{"10.244.1.0/24", "fd00:10:244:1::/64"}},
	}
	require.NoError(t, c.Create(t.Context(), node))
	t.Cleanup(func() { _ = c.Delete(context.Background(), node) })
	node.Status.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: "192.0.2.10"},
		{Type: corev1.NodeExternalIP, Address: "2001:db8::10"},
		{Type: corev1.NodeHostName, Address: "worker-1"},
	}
	require.NoError(t, c.Status().Update(t.Context(), node))

	eventually(t, policy, "192.0.2.10", "address of node worker-1")
	eventually(t, policy, "2001:db8::10", "address of node worker-1")
	eventually(t, policy, "10.244.1.9", "pod CIDR 10.244.1.0/24 (node worker-1)")
	eventually(t, policy, "fd00:10:244:1::9", "pod CIDR fd00:10:244:1::/64 (node worker-1)")
	eventually(t, policy, "2002:c000:20a::1", "address of node worker-1") // 6to4 of 192.0.2.10
	assert.Equal(t, "", deniedBy(policy, "192.0.2.11"))

	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.11"}}
	require.NoError(t, c.Status().Update(t.Context(), node))
	eventually(t, policy, "192.0.2.11", "address of node worker-1")
	eventually(t, policy, "192.0.2.10", "")

	require.NoError(t, c.Delete(t.Context(), node))
	eventually(t, policy, "192.0.2.11", "")
	eventually(t, policy, "10.244.1.9", "")
}

// Without RBAC for the watched objects, nothing is listed: the policy keeps
// denying every address that is not allowed.
func TestNotListed(t *testing.T) {
	kubeconfig, err := cp.UserKubeconfig("nobody")
	require.NoError(t, err)
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	policy := egress.NewPolicy(egress.Options{AwaitClusterNetworks: true, Allow: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}})
	w, err := clusternet.New(clusternet.Options{Config: cfg, Scheme: scheme, Policy: policy, MinInterval: 50 * time.Millisecond, LogInterval: 200 * time.Millisecond, Logger: testr.New(t)})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Start(ctx) }()
	defer func() { cancel(); <-done }()

	wait, stop := context.WithTimeout(t.Context(), time.Second)
	defer stop()
	assert.Error(t, w.Listed(wait), "listed without RBAC")
	assert.Equal(t, "cluster networks not listed yet (every address is denied until they are)", deniedBy(policy, "198.51.100.1"))
	assert.Equal(t, "", deniedBy(policy, "192.0.2.1"), "the allowed ranges stay open")
}

// TestMinInterval: a burst of changes updates the policy at most once per
// MinInterval, and the last update holds them all.
func TestMinInterval(t *testing.T) {
	c, err := client.New(cp.Config, client.Options{Scheme: scheme})
	require.NoError(t, err)
	var updates atomic.Int64
	logger := funcr.New(func(_, args string) {
		if strings.Contains(args, `"Cluster networks updated"`) {
			updates.Add(1)
		}
	}, funcr.Options{Verbosity: 1})
	policy := egress.NewPolicy(egress.Options{AwaitClusterNetworks: true})
	const interval = time.Second
	w, err := clusternet.New(clusternet.Options{Config: cp.Config, Scheme: scheme, Policy: policy, MinInterval: interval, Logger: logger})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Start(ctx) }()
	defer func() { cancel(); require.NoError(t, <-done) }()
	listed, stop := context.WithTimeout(t.Context(), within)
	defer stop()
	require.NoError(t, w.Listed(listed))

	start := time.Now()
	const nodes = 20
	for i := range nodes {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("burst-%d", i)}, Spec: corev1.NodeSpec{PodCIDRs: []string{fmt.Sprintf("10.99.%d.0/24", i)}}}
		require.NoError(t, c.Create(t.Context(), node))
		t.Cleanup(func() { _ = c.Delete(context.Background(), node) })
	}
	eventually(t, policy, fmt.Sprintf("10.99.%d.1", nodes-1), fmt.Sprintf("pod CIDR 10.99.%d.0/24 (node burst-%d)", nodes-1, nodes-1))
	elapsed := time.Since(start)
	for i := range nodes {
		assert.Equal(t, fmt.Sprintf("pod CIDR 10.99.%d.0/24 (node burst-%d)", i, i), deniedBy(policy, fmt.Sprintf("10.99.%d.1", i)))
	}
	// The first listing, then at most one update per interval.
	assert.LessOrEqual(t, updates.Load(), int64(elapsed/interval)+2, "%d updates in %s for %d changes", updates.Load(), elapsed, nodes)
	t.Logf("%d updates in %s for %d changes", updates.Load(), elapsed, nodes)
}
