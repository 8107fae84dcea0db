package clusternet

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/networkio/webchecker/probing/egress"
)

// The Watcher reads the cluster's networks, never writes them.
// +kubebuilder:rbac:groups=networking.k8s.io,resources=servicecidrs,verbs=list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=list;watch
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=list;watch,namespace=default

const (
	// APIServerNamespace and APIServerService name the Service of the API
	// server, whose EndpointSlices hold its addresses.
	APIServerNamespace = "default"
	APIServerService   = "kubernetes"

	// DefaultMinInterval is the shortest time between two updates of the
	// policy: a cluster of thousands of Nodes reports changes many times a
	// second, and each update rebuilds every range.
	DefaultMinInterval = time.Second
	// DefaultLogInterval is how often a Watcher whose watches have not
	// synced says so.
	DefaultLogInterval = 30 * time.Second
)

// Options configure a Watcher. Config, Scheme and Policy are required.
type Options struct {
	// Config and HTTPClient reach the API server (HTTPClient may be nil).
	Config     *rest.Config
	HTTPClient *http.Client
	// Scheme knows core/v1, discovery/v1 and networking/v1.
	Scheme *runtime.Scheme
	// Policy receives the ranges.
	Policy *egress.Policy
	// MinInterval is the shortest time between two updates of the policy
	// (DefaultMinInterval when zero).
	MinInterval time.Duration
	// LogInterval is how often unsynced watches are logged
	// (DefaultLogInterval when zero).
	LogInterval time.Duration
	// Logger logs updates and failures.
	Logger logr.Logger
}

// Watcher watches the cluster's networks and keeps Options.Policy's cluster
// networks current (see the package documentation). It is a
// manager.Runnable that runs on every replica.
type Watcher struct {
	opts    Options
	changed chan struct{}
	listed  chan struct{}
	once    sync.Once
}

// New returns a Watcher; it does nothing until started.
func New(opts Options) (*Watcher, error) {
	switch {
	case opts.Config == nil:
		return nil, errors.New("cluster networks: Config is required")
	case opts.Scheme == nil:
		return nil, errors.New("cluster networks: Scheme is required")
	case opts.Policy == nil:
		return nil, errors.New("cluster networks: Policy is required")
	}
	if opts.MinInterval <= 0 {
		opts.MinInterval = DefaultMinInterval
	}
	if opts.LogInterval <= 0 {
		opts.LogInterval = DefaultLogInterval
	}
	return &Watcher{opts: opts, changed: make(chan struct{}, 1), listed: make(chan struct{})}, nil
}

// NeedLeaderElection is false: every replica probes, so every replica
// needs the cluster's networks.
func (w *Watcher) NeedLeaderElection() bool { return false }

// Listed blocks until the policy has the cluster's networks (the first
// complete listing), or ctx is done.
func (w *Watcher) Listed(ctx context.Context) error {
	select {
	case <-w.listed:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for the cluster networks to be listed: %w", ctx.Err())
	}
}

// Start watches until ctx is done.
func (w *Watcher) Start(ctx context.Context) error {
	serviceCIDRs, err := w.servesServiceCIDRs(ctx)
	if err != nil || ctx.Err() != nil {
		return err
	}
	if !serviceCIDRs {
		w.opts.Logger.Info("The API server does not serve networking.k8s.io/v1 ServiceCIDRs: Service addresses are not denied unless --deny-cidrs holds them")
	}
	c, err := w.newCache()
	if err != nil {
		return err
	}
	objects := []client.Object{&discoveryv1.EndpointSlice{}, &corev1.Node{}}
	if serviceCIDRs {
		objects = append(objects, &networkingv1.ServiceCIDR{})
	}
	synced, names, err := w.watch(ctx, c, objects)
	if err != nil {
		return err
	}
	// The cache runs until ctx is done; if it fails, so does the Watcher.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 1)
	go func() {
		errs <- c.Start(ctx)
		cancel()
	}()
	if w.waitSynced(ctx, synced, names) {
		w.follow(ctx, c, serviceCIDRs)
	}
	cancel()
	if err := <-errs; err != nil {
		return fmt.Errorf("running the cluster networks cache: %w", err)
	}
	return nil
}

// newCache makes the cache of what the Watcher reads: the API server's
// EndpointSlices, the Nodes (only their networks) and the ServiceCIDRs.
func (w *Watcher) newCache() (cache.Cache, error) {
	c, err := cache.New(w.opts.Config, cache.Options{
		HTTPClient: w.opts.HTTPClient,
		Scheme:     w.opts.Scheme,
		ByObject: map[client.Object]cache.ByObject{
			&discoveryv1.EndpointSlice{}: {
				Namespaces: map[string]cache.Config{APIServerNamespace: {}},
				Label:      labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: APIServerService}),
			},
			// A Node is large (images, conditions): only what is read
			// is kept.
			&corev1.Node{}: {Transform: nodeNetworks},
		},
		DefaultTransform: cache.TransformStripManagedFields(),
	})
	if err != nil {
		return nil, fmt.Errorf("creating the cluster networks cache: %w", err)
	}
	return c, nil
}

// watch asks c for an informer of each of objects whose every change
// wakes the Watcher, and returns whether each has synced, with its name.
func (w *Watcher) watch(ctx context.Context, c cache.Cache, objects []client.Object) ([]toolscache.InformerSynced, []string, error) {
	var synced []toolscache.InformerSynced
	var names []string
	for _, obj := range objects {
		inf, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
		if err != nil {
			return nil, nil, fmt.Errorf("watching %T: %w", obj, err)
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { w.notify() },
			UpdateFunc: func(any, any) { w.notify() },
			DeleteFunc: func(any) { w.notify() },
		}); err != nil {
			return nil, nil, fmt.Errorf("watching %T: %w", obj, err)
		}
		synced = append(synced, inf.HasSynced)
		names = append(names, fmt.Sprintf("%T", obj))
	}
	return synced, names, nil
}

// follow updates the denied networks from c, at once and then after every
// change, at most once per MinInterval, until ctx is done.
func (w *Watcher) follow(ctx context.Context, c cache.Cache, serviceCIDRs bool) {
	last := time.Time{}
	for {
		if wait := time.Until(last.Add(w.opts.MinInterval)); wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		last = time.Now()
		if err := w.update(ctx, c, serviceCIDRs); err != nil {
			w.opts.Logger.Error(err, "Cannot read the cluster networks from the cache")
		}
		select {
		case <-ctx.Done():
			return
		case <-w.changed:
		}
	}
}

// servesServiceCIDRs asks the API server's discovery whether it serves
// networking.k8s.io/v1 servicecidrs, retrying until it answers.
func (w *Watcher) servesServiceCIDRs(ctx context.Context) (bool, error) {
	dc, err := w.discovery()
	if err != nil {
		return false, err
	}
	for {
		resources, err := dc.ServerResourcesForGroupVersion(networkingv1.SchemeGroupVersion.String())
		switch {
		case err == nil:
			return slices.ContainsFunc(resources.APIResources, func(r metav1.APIResource) bool { return r.Name == "servicecidrs" }), nil
		case apierrors.IsNotFound(err):
			return false, nil
		}
		w.opts.Logger.Error(err, "Cannot ask the API server whether it serves ServiceCIDRs; retrying")
		select {
		case <-ctx.Done():
			return false, nil
		case <-time.After(w.opts.MinInterval):
		}
	}
}

func (w *Watcher) discovery() (*discovery.DiscoveryClient, error) {
	var (
		dc  *discovery.DiscoveryClient
		err error
	)
	if w.opts.HTTPClient != nil {
		dc, err = discovery.NewDiscoveryClientForConfigAndClient(w.opts.Config, w.opts.HTTPClient)
	} else {
		dc, err = discovery.NewDiscoveryClientForConfig(w.opts.Config)
	}
	if err != nil {
		return nil, fmt.Errorf("creating a discovery client: %w", err)
	}
	return dc, nil
}

// waitSynced waits until every watch has synced, logging those that have
// not every LogInterval; false when ctx ended first.
func (w *Watcher) waitSynced(ctx context.Context, synced []toolscache.InformerSynced, names []string) bool {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	lastLog := time.Now()
	for {
		var pending []string
		for i, s := range synced {
			if !s() {
				pending = append(pending, names[i])
			}
		}
		if len(pending) == 0 {
			return true
		}
		if time.Since(lastLog) >= w.opts.LogInterval {
			lastLog = time.Now()
			w.opts.Logger.Info("Cluster networks not listed yet: probes are denied every address outside the allowed ranges (RBAC for nodes, servicecidrs and endpointslices?)", "waitingFor", pending)
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}

func (w *Watcher) notify() {
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// update lists the watched objects from c and hands their ranges to the
// policy.
func (w *Watcher) update(ctx context.Context, c cache.Cache, serviceCIDRs bool) error {
	var (
		cidrs     networkingv1.ServiceCIDRList
		endpoints discoveryv1.EndpointSliceList
		nodes     corev1.NodeList
	)
	if serviceCIDRs {
		if err := c.List(ctx, &cidrs, client.UnsafeDisableDeepCopy); err != nil {
			return fmt.Errorf("listing ServiceCIDRs: %w", err)
		}
	}
	if err := c.List(ctx, &endpoints, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing EndpointSlices: %w", err)
	}
	if err := c.List(ctx, &nodes, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing Nodes: %w", err)
	}
	rules := Rules(cidrs.Items, endpoints.Items, nodes.Items)
	w.opts.Policy.SetClusterNetworks(rules)
	first := false
	w.once.Do(func() { first = true; close(w.listed) })
	w.opts.Logger.V(boolLevel(!first)).Info("Cluster networks updated", "ranges", len(rules),
		"serviceCIDRs", len(cidrs.Items), "apiServerEndpointSlices", len(endpoints.Items), "nodes", len(nodes.Items))
	return nil
}

// boolLevel is log level 1 (debug) when debug, else 0.
func boolLevel(debug bool) int {
	if debug {
		return 1
	}
	return 0
}

// Rules are the denied ranges of the given objects, each named after its
// object. A value that is not an address or range (a Node's Hostname
// address, a malformed CIDR) is skipped.
func Rules(serviceCIDRs []networkingv1.ServiceCIDR, apiServer []discoveryv1.EndpointSlice, nodes []corev1.Node) []egress.Rule {
	var rules []egress.Rule
	for i := range serviceCIDRs {
		sc := &serviceCIDRs[i]
		for _, cidr := range sc.Spec.CIDRs {
			if p, err := netip.ParsePrefix(cidr); err == nil {
				rules = append(rules, egress.Rule{Prefix: p, Name: "Service CIDR " + p.Masked().String(), Origin: "ServiceCIDR " + sc.Name})
			}
		}
	}
	for i := range apiServer {
		es := &apiServer[i]
		for _, ep := range es.Endpoints {
			for _, a := range ep.Addresses {
				if addr, err := netip.ParseAddr(a); err == nil {
					rules = append(rules, egress.Rule{Prefix: netip.PrefixFrom(addr, addr.BitLen()), Name: "API server endpoint " + addr.String(), Origin: "EndpointSlice " + es.Name})
				}
			}
		}
	}
	for i := range nodes {
		n := &nodes[i]
		for _, a := range n.Status.Addresses {
			if addr, err := netip.ParseAddr(a.Address); err == nil {
				rules = append(rules, egress.Rule{Prefix: netip.PrefixFrom(addr, addr.BitLen()), Name: "address of node " + n.Name})
			}
		}
		for _, cidr := range n.Spec.PodCIDRs {
			if p, err := netip.ParsePrefix(cidr); err == nil {
				rules = append(rules, egress.Rule{Prefix: p, Name: "pod CIDR " + p.Masked().String(), Origin: "node " + n.Name})
			}
		}
	}
	return rules
}

// nodeNetworks keeps of a Node only its name, addresses and pod CIDRs.
func nodeNetworks(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	return &corev1.Node{
		TypeMeta: n.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion,
		},
		Spec:   corev1.NodeSpec{PodCIDR: n.Spec.PodCIDR, PodCIDRs: n.Spec.PodCIDRs},
		Status: corev1.NodeStatus{Addresses: n.Status.Addresses},
	}, nil
}
