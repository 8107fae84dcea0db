package main

import (
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"github.com/networkio/webchecker/controllers"
	"github.com/networkio/webchecker/controllers/checkspec"
	"github.com/networkio/webchecker/probing/scheduler"
	"github.com/networkio/webchecker/sharding/membership"
	"github.com/networkio/webchecker/sharding/ring"
)

// options are the manager's command-line settings. defaultOptions holds
// every default in one place.
type options struct {
	metricsAddr   string
	metricsSecure bool
	probeAddr     string
	// pprofAddr is where the runtime profiles (/debug/pprof) are served;
	// "0" disables them (manager.Options.PprofBindAddress).
	pprofAddr string
	// probeWorkers, when positive, bounds the probes in flight besides
	// the memory budget (scheduler.Options.Workers); memoryLimit is the
	// process's memory limit the budget is derived from (GOMEMLIMIT, as
	// debug.SetMemoryLimit(-1) reports it: math.MaxInt64 when unset).
	probeWorkers int
	memoryLimit  int64
	// kubeAPIQPS and kubeAPIBurst pace this replica's requests to the API
	// server (rest.Config QPS and Burst); reconcileWorkers is the number of
	// checkers reconciled at once (controller MaxConcurrentReconciles).
	kubeAPIQPS       float64
	kubeAPIBurst     int
	reconcileWorkers int
	// probeNamespaceShare is the share of the probe workers one namespace
	// may hold at once (scheduler.Options.NamespaceShare).
	probeNamespaceShare float64
	// reconcileNamespaceShare is the share of the reconcile workers and of
	// the API budget one namespace may use; statusMessagePeriod bounds a
	// checker's writes that change only a message (see
	// controllers.NamespaceLimits).
	reconcileNamespaceShare float64
	statusMessagePeriod     time.Duration
	shardID                 string
	zone                    string
	dnsServer               string
	proxyURL                string
	noProxy                 string
	// proxyCredentialsDir holds the files username and password of
	// proxyURL's credentials (see defaultProxy).
	proxyCredentialsDir string

	leaseNamespace     string
	ringName           string
	leaseDuration      time.Duration
	leaseRenewInterval time.Duration
	// handOverLead is how long a replica asked to stop goes on probing
	// after it announced when it leaves (see leaveRing).
	handOverLead time.Duration
	virtualNodes int

	secretAccess        bool
	denyCIDRs           string
	allowCIDRs          string
	denyPrivateNetworks bool
	// denyClusterNetworks watches the cluster's own networks and denies
	// them (see clusternet).
	denyClusterNetworks bool

	watchNamespaces   string
	namespaceSelector string
	secretSelector    string

	// metricLabelsAllowlist lists the WebChecker labels copied onto the
	// per-checker series.
	metricLabelsAllowlist string
}

// The client-side API budget of one replica. It is sized for 10,000
// checkers across 3 replicas (about 3,400 each): a replica writes a
// status only when it changes, one write per new checker, so creating or
// taking over its whole share costs about 3,400 writes, 34s at 100
// requests/s instead of 170s at client-go's default of 20 (burst 30). The
// limit only paces this one client; what protects the API server is its
// API Priority and Fairness, which queues (and at worst rejects with 429,
// which client-go retries) the requests of the operator's service account
// within its priority level, whatever the replicas ask for.
const (
	defaultKubeAPIQPS   = 100
	defaultKubeAPIBurst = 200
)

// defaultHandOverLead is how long a stopping replica goes on probing after
// it announced when it leaves: longer than a Lease event took to reach the
// replicas of the benchmarks when they were loaded (about 2 s at 50,000
// checkers on ten replicas sharing two CPUs, 3 s for a replica probing
// 1,000 times a second beside them), and short enough that a rolling
// restart of a few replicas is not slowed much (see leaveRing).
// maxHandOverLead stays well within the chart's terminationGracePeriodSeconds
// (30 s), which also covers the release of the Lease after it.
const (
	defaultHandOverLead = 5 * time.Second
	maxHandOverLead     = 20 * time.Second
)

func defaultOptions() options {
	return options{
		metricsAddr:             ":8080",
		probeAddr:               ":8081",
		pprofAddr:               "0",
		memoryLimit:             debug.SetMemoryLimit(-1),
		kubeAPIQPS:              defaultKubeAPIQPS,
		kubeAPIBurst:            defaultKubeAPIBurst,
		reconcileWorkers:        controllers.DefaultReconcileWorkers,
		probeNamespaceShare:     scheduler.DefaultNamespaceShare,
		reconcileNamespaceShare: controllers.DefaultReconcileNamespaceShare,
		statusMessagePeriod:     controllers.DefaultMessagePeriod,
		shardID:                 envOr("POD_NAME", hostname()),
		zone:                    os.Getenv("POD_ZONE"),
		leaseNamespace:          envOr("POD_NAMESPACE", "default"),
		ringName:                "webchecker",
		leaseDuration:           membership.DefaultLeaseDuration,
		leaseRenewInterval:      membership.DefaultRenewInterval,
		handOverLead:            defaultHandOverLead,
		virtualNodes:            ring.DefaultVirtualNodes,
		secretAccess:            true,
		denyClusterNetworks:     true,
	}
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

func hostname() string {
	if host, err := os.Hostname(); err == nil {
		return host
	}
	return "webchecker"
}

func (o *options) bindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", o.metricsAddr, "Address the Prometheus metrics endpoint binds to; \"0\" disables it.")
	fs.BoolVar(&o.metricsSecure, "metrics-secure", o.metricsSecure, "Serve metrics over HTTPS (self-signed certificate) and admit only clients whose bearer token the API server authenticates (TokenReview) and authorizes for GET on the non-resource URL /metrics (SubjectAccessReview). False serves plain HTTP to anyone who can reach the port.")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", o.probeAddr, "Address the /healthz and /readyz endpoints bind to.")
	fs.StringVar(&o.pprofAddr, "pprof-bind-address", o.pprofAddr, "Address the Go runtime profiles (/debug/pprof/) bind to; \"0\" disables them. Profiles reveal internals: bind to localhost or keep disabled.")
	fs.IntVar(&o.probeWorkers, "probe-workers", o.probeWorkers, fmt.Sprintf("Maximum number of probes running at once; 0 bounds them by memory only: the probes in flight hold at most %.0f%% of GOMEMLIMIT (%d MiB when it is unset), each what its kind costs (24 KiB for http, 76 KiB for https, up to 152 KiB for grpcs).", scheduler.MemoryShare*100, scheduler.DefaultMemoryBudget>>20))
	fs.Float64Var(&o.kubeAPIQPS, "kube-api-qps", o.kubeAPIQPS, "Requests per second this replica may send to the API server on average (client-side; the API server's Priority and Fairness is what protects it). Each new checker costs one status write, each change of a checker's status another.")
	fs.IntVar(&o.kubeAPIBurst, "kube-api-burst", o.kubeAPIBurst, "Requests this replica may send to the API server at once above --kube-api-qps; at least --kube-api-qps.")
	fs.IntVar(&o.reconcileWorkers, "reconcile-workers", o.reconcileWorkers, "Number of WebCheckers reconciled (and status writes in flight) at once; one checker is never reconciled twice at the same time.")
	fs.Float64Var(&o.probeNamespaceShare, "probe-namespace-share", o.probeNamespaceShare, "Share of the bound on probes in flight that the WebCheckers of one namespace may hold at once, in (0, 1]: at most share × the memory budget, and with --probe-workers at most max(1, ceil(share × workers)) probes of a namespace run at the same time, so one namespace whose targets hang cannot delay the others. 1 lets one namespace use the whole bound.")
	fs.Float64Var(&o.reconcileNamespaceShare, "reconcile-namespace-share", o.reconcileNamespaceShare, "Share, in (0, 1], of --reconcile-workers that the WebCheckers of one namespace may hold at once (at least 1), and of --kube-api-qps and --kube-api-burst that their status writes may use. Beyond its share a namespace borrows only what the others leave (idle workers but the last share×workers, the write budget but its last share×burst writes), and otherwise waits while the others proceed. One namespace also records at most 25 Events at once, then one per 10s (the others are dropped; the conditions keep the state). 1 lets one namespace use everything.")
	fs.DurationVar(&o.statusMessagePeriod, "status-message-period", o.statusMessagePeriod, "Least time between two status writes of one checker that change only a message (of Ready, CertificateValid or a vantage point), the HTTP status code or the certificate expiry; a change of status or reason is written at once. 0 writes every change at once.")
	fs.StringVar(&o.shardID, "shard-id", o.shardID, "Identity of this replica: its Lease's name, written to status.shard (default: $POD_NAME, else the host name).")
	fs.StringVar(&o.dnsServer, "dns-server", o.dnsServer, "DNS server (host:port) that probes resolve host names with; empty uses the system resolver.")
	fs.StringVar(&o.proxyURL, "proxy-url", o.proxyURL, "HTTP proxy (http(s)://host:port) of every checker without spec.proxy, dns checkers excepted; empty means none. Never taken from HTTP_PROXY and the like. The egress policy then judges the proxy's address. A URL with credentials is refused (a command line is readable in /proc/<pid>/cmdline and /debug/pprof/cmdline): see --proxy-credentials-dir.")
	fs.StringVar(&o.proxyCredentialsDir, "proxy-credentials-dir", o.proxyCredentialsDir, "Directory holding the files username and password (a kubernetes.io/basic-auth Secret mounted as a volume) of --proxy-url's basic credentials, sent as Proxy-Authorization; read at start. Empty means none.")
	fs.StringVar(&o.noProxy, "no-proxy", o.noProxy, "Comma-separated hosts (and their subdomains; .domain for subdomains only), IP addresses, CIDR ranges or * that --proxy-url does not apply to, as NO_PROXY (loopback is not exempted implicitly).")
	fs.StringVar(&o.leaseNamespace, "lease-namespace", o.leaseNamespace, "Namespace of the replicas' Leases (default: $POD_NAMESPACE, else \"default\").")
	fs.StringVar(&o.zone, "zone", o.zone, "Zone of this replica, published on its Lease: a checker with spec.vantagePoints above 1 is probed from replicas in different zones where the zones allow (default: $POD_ZONE, which the chart fills from the pod's topology.kubernetes.io/zone label; empty means unknown).")
	fs.StringVar(&o.ringName, "ring-name", o.ringName, "Name of the ring; replicas with the same ring name and lease namespace share the checkers.")
	fs.DurationVar(&o.leaseDuration, "lease-duration", o.leaseDuration, "How long a replica's Lease stays valid without renewal (whole seconds). A crashed replica's checkers are taken over after at most this long.")
	fs.DurationVar(&o.leaseRenewInterval, "lease-renew-interval", o.leaseRenewInterval, "How often a replica renews its Lease.")
	fs.DurationVar(&o.handOverLead, "handover-lead", o.handOverLead, "How long a replica asked to stop (SIGTERM) goes on probing after it has written on its Lease the instant it leaves the ring: the others take its checkers over at that instant on their own timers, so a Lease event that reaches them up to this late costs no turn. 0 stops at once (the others take over when they see the Lease deleted). The pod's terminationGracePeriodSeconds must leave room for it.")
	fs.IntVar(&o.virtualNodes, "virtual-nodes", o.virtualNodes, "Tokens per replica on the consistent-hash ring; all replicas must use the same value.")
	fs.BoolVar(&o.secretAccess, "secret-access", o.secretAccess, "Let checkers read header values, credentials and CA bundles from Secrets in their own namespace. When false no Secret is read or watched (the secrets RBAC rule can be dropped) and checkers that refer to one report SecretAccessDisabled.")
	fs.StringVar(&o.denyCIDRs, "deny-cidrs", o.denyCIDRs, "Comma-separated address ranges probes must never connect to, besides the defaults (unspecified, loopback, link-local and the clouds' metadata addresses, always denied), checked on the resolved address of every connection (redirects included).")
	fs.StringVar(&o.allowCIDRs, "allow-cidrs", o.allowCIDRs, "Comma-separated address ranges probes may connect to even inside a denied range: the defaults, --deny-cidrs, --deny-private-networks and the cluster's networks. A namespace's annotation "+checkspec.EgressAllowAnnotation+" (set by cluster admins) allows its checkers more.")
	fs.BoolVar(&o.denyClusterNetworks, "deny-cluster-networks", o.denyClusterNetworks, "Deny the cluster's own networks, kept current from watches: its Service CIDRs (ServiceCIDR objects), the API server's endpoints (EndpointSlices of Service default/kubernetes) and every Node's addresses and pod CIDRs. Needs list/watch on servicecidrs, nodes and (in namespace default) endpointslices. Until they are first listed, every address outside --allow-cidrs is denied.")
	fs.StringVar(&o.watchNamespaces, "watch-namespaces", o.watchNamespaces, "Comma-separated namespaces whose WebCheckers (and Secrets) are watched and served; empty means all.")
	fs.StringVar(&o.namespaceSelector, "namespace-selector", o.namespaceSelector, "Label selector (such as team=platform) of the namespaces whose WebCheckers are served; empty means all. Needs list/watch on namespaces.")
	fs.StringVar(&o.secretSelector, "secret-selector", o.secretSelector, "Label selector of the Secrets checkers may use; only those are cached. Empty means all Secrets (in the watched namespaces).")
	fs.StringVar(&o.metricLabelsAllowlist, "metric-labels-allowlist", o.metricLabelsAllowlist, "Comma-separated WebChecker label names (such as team,severity) copied onto every per-checker metric as label_<name>, with characters outside [a-zA-Z0-9_] replaced by _ (as kube-state-metrics does); a checker without the label gets it empty. Empty copies none.")
	fs.BoolVar(&o.denyPrivateNetworks, "deny-private-networks", o.denyPrivateNetworks, "Also deny every range of the IANA IPv4 and IPv6 special-purpose address registries (RFC 1918 private, carrier-grade NAT, benchmarking, documentation, reserved 240.0.0.0/4, IPv6 unique local, ...) and multicast. The IPv4 address inside a NAT64, 6to4, Teredo or IPv4-compatible address is judged as that address.")
}
