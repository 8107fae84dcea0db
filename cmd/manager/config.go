package main

// What the flags become: the settings of the replica, its REST config, its
// watch scope, metric labels and egress policy, and the checks of the
// flags' values.

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/networkio/webchecker/controllers"
	"github.com/networkio/webchecker/controllers/checkspec"
	"github.com/networkio/webchecker/controllers/metrics"
	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/egress"
	"github.com/networkio/webchecker/sharding/membership"
)

// replicaOptions are the settings of the replica that run wires, given by
// the flags and the egress policy and watch scope derived from them.
func (o options) replicaOptions(policy *egress.Policy, scope controllers.WatchScope) replicaOptions {
	return replicaOptions{
		shardID: o.shardID,
		zone:    o.zone,
		prober: probing.NewProber(probing.ProberOptions{
			DNSServer: o.dnsServer,
			UserAgent: "webchecker (shard " + o.shardID + ")",
			Egress:    policy,
		}),
		probeWorkers:     o.probeWorkers,
		memoryLimit:      o.memoryLimit,
		reconcileWorkers: o.reconcileWorkers,
		namespaceShare:   o.probeNamespaceShare,
		limits:           o.namespaceLimits(),
		leaseNamespace:   o.leaseNamespace,
		ringName:         o.ringName,
		leaseDuration:    o.leaseDuration,
		renewInterval:    o.leaseRenewInterval,
		safetyMargin:     o.safetyMargin(),
		virtualNodes:     o.virtualNodes,
		logger:           ctrl.Log,
		secretAccess:     o.secretAccess,
		scope:            scope,
	}
}

// namespaceLimits is what one namespace may take of the reconciler's
// shared workers, API budget and Event queue, given by the flags.
func (o options) namespaceLimits() controllers.NamespaceLimits {
	share := o.reconcileNamespaceShare
	return controllers.NamespaceLimits{
		ReconcileShare:   share,
		StatusWriteRate:  share * o.kubeAPIQPS,
		StatusWriteBurst: max(1, int(math.Ceil(share*float64(o.kubeAPIBurst)))),
		APIRate:          o.kubeAPIQPS,
		APIBurst:         o.kubeAPIBurst,
		EventInterval:    controllers.DefaultEventInterval,
		EventBurst:       controllers.DefaultEventBurst,
		MessagePeriod:    o.statusMessagePeriod,
	}
}

// restConfig returns a copy of cfg with the API budget of the flags.
func (o options) restConfig(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS = float32(o.kubeAPIQPS)
	cfg.Burst = o.kubeAPIBurst
	return cfg
}

// watchScope is the namespaces served and the Secrets used, given by the
// flags.
func (o options) watchScope() (controllers.WatchScope, error) {
	var scope controllers.WatchScope
	for _, ns := range strings.Split(o.watchNamespaces, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			scope.Namespaces = append(scope.Namespaces, ns)
		}
	}
	if o.namespaceSelector != "" {
		selector, err := labels.Parse(o.namespaceSelector)
		if err != nil {
			return scope, fmt.Errorf("--namespace-selector: %w", err)
		}
		scope.NamespaceSelector = selector
	}
	if o.secretSelector != "" {
		selector, err := labels.Parse(o.secretSelector)
		if err != nil {
			return scope, fmt.Errorf("--secret-selector: %w", err)
		}
		scope.SecretSelector = selector
	}
	return scope, nil
}

// metricLabels keeps the WebChecker labels of --metric-labels-allowlist for
// the per-checker metrics.
func (o options) metricLabels() (*metrics.CheckerLabels, error) {
	var names []string
	for _, name := range strings.Split(o.metricLabelsAllowlist, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		if errs := validation.IsQualifiedName(name); len(errs) > 0 {
			return nil, fmt.Errorf("--metric-labels-allowlist: %q is not a label name: %s", name, strings.Join(errs, "; "))
		}
		names = append(names, name)
	}
	labels, err := metrics.NewCheckerLabels(names)
	if err != nil {
		return nil, fmt.Errorf("--metric-labels-allowlist: %w", err)
	}
	return labels, nil
}

// egressPolicy is the probes' egress policy given by the flags.
func (o options) egressPolicy() (*egress.Policy, error) {
	deny, err := egress.ParseCIDRs(strings.Split(o.denyCIDRs, ","))
	if err != nil {
		return nil, fmt.Errorf("--deny-cidrs: %w", err)
	}
	allow, err := egress.ParseCIDRs(strings.Split(o.allowCIDRs, ","))
	if err != nil {
		return nil, fmt.Errorf("--allow-cidrs: %w", err)
	}
	return egress.NewPolicy(egress.Options{
		Deny: deny, Allow: allow, DenyPrivate: o.denyPrivateNetworks, AwaitClusterNetworks: o.denyClusterNetworks,
	}), nil
}

// safetyMargin is how long before its Lease could expire in the eyes of the
// others that a replica fences itself: 2s, or a quarter of the lease
// duration when that is shorter.
func (o options) safetyMargin() time.Duration {
	return min(membership.DefaultSafetyMargin, o.leaseDuration/4)
}

// config is the flags parsed and validated once (see parse): the options
// and what run builds from them.
type config struct {
	options
	policy       *egress.Policy
	scope        controllers.WatchScope
	metricLabels *metrics.CheckerLabels
	proxy        checkspec.DefaultProxy
}

// parse validates o and builds, once each, the default proxy, the egress
// policy, the watch scope and the metric labels the flags give. Its error
// joins every problem of the flags.
func (o options) parse() (config, error) {
	errs := o.checkValues()
	c := config{options: o}
	var err error
	if c.proxy, err = o.defaultProxy(); err != nil {
		errs = append(errs, err)
	}
	if c.policy, err = o.egressPolicy(); err != nil {
		errs = append(errs, err)
	}
	if c.scope, err = o.watchScope(); err != nil {
		errs = append(errs, err)
	}
	if c.metricLabels, err = o.metricLabels(); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return config{}, err
	}
	return c, nil
}

// validate reports every problem of the flags, as parse does.
func (o options) validate() error {
	_, err := o.parse()
	return err
}

// checkValues checks the flags that need no parsing: ranges and
// relations between them.
func (o options) checkValues() []error {
	var errs []error
	if o.probeWorkers < 0 {
		errs = append(errs, errors.New("--probe-workers must not be negative"))
	}
	if !(o.kubeAPIQPS > 0) {
		errs = append(errs, fmt.Errorf("--kube-api-qps %v must be greater than 0", o.kubeAPIQPS))
	}
	if o.kubeAPIBurst < 1 || float64(o.kubeAPIBurst) < o.kubeAPIQPS {
		errs = append(errs, fmt.Errorf("--kube-api-burst %d must be at least 1 and at least --kube-api-qps %v", o.kubeAPIBurst, o.kubeAPIQPS))
	}
	if o.reconcileWorkers < 1 {
		errs = append(errs, errors.New("--reconcile-workers must be at least 1"))
	}
	if !(o.probeNamespaceShare > 0 && o.probeNamespaceShare <= 1) {
		errs = append(errs, fmt.Errorf("--probe-namespace-share %v must be greater than 0 and at most 1", o.probeNamespaceShare))
	}
	if !(o.reconcileNamespaceShare > 0 && o.reconcileNamespaceShare <= 1) {
		errs = append(errs, fmt.Errorf("--reconcile-namespace-share %v must be greater than 0 and at most 1", o.reconcileNamespaceShare))
	}
	if o.statusMessagePeriod < 0 {
		errs = append(errs, fmt.Errorf("--status-message-period %s must not be negative", o.statusMessagePeriod))
	}
	if o.shardID == "" {
		errs = append(errs, errors.New("--shard-id must not be empty"))
	}
	if msgs := validation.IsValidLabelValue(o.zone); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--zone %q must be a valid label value: %s", o.zone, strings.Join(msgs, "; ")))
	}
	if o.leaseNamespace == "" || o.ringName == "" {
		errs = append(errs, errors.New("--lease-namespace and --ring-name must not be empty"))
	}
	if o.leaseDuration < time.Second || o.leaseDuration%time.Second != 0 {
		errs = append(errs, fmt.Errorf("--lease-duration %s must be a whole number of seconds, at least 1s", o.leaseDuration))
	}
	if o.leaseRenewInterval <= 0 || o.leaseRenewInterval >= o.leaseDuration-o.safetyMargin() {
		errs = append(errs, fmt.Errorf("--lease-renew-interval %s must be positive and less than --lease-duration minus %s", o.leaseRenewInterval, o.safetyMargin()))
	}
	if o.handOverLead < 0 || o.handOverLead > maxHandOverLead {
		errs = append(errs, fmt.Errorf("--handover-lead %s must be between 0 and %s", o.handOverLead, maxHandOverLead))
	}
	if o.virtualNodes < 1 {
		errs = append(errs, errors.New("--virtual-nodes must be at least 1"))
	}
	return errs
}
