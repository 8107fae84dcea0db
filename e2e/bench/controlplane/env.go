package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/e2e/bench/procstat"
	"github.com/networkio/webchecker/e2e/bench/tlsca"
	"github.com/networkio/webchecker/e2e/framework"
	"github.com/networkio/webchecker/probing/probetest"
)

const (
	// checkerNamespace holds the WebCheckers, leaseNamespace the replicas'
	// Leases.
	checkerNamespace = "bench"
	leaseNamespace   = "bench-leases"
	ringName         = "bench"
	// caSecretName and caSecretKey hold the bench CA's certificate, which
	// the https checkers trust (spec.tls.caSecretRef).
	caSecretName = "bench-ca"
	caSecretKey  = "ca.crt"
)

// env is one size's world: a fresh control plane, the DNS stub, the
// targets, a client, a watch recording every write, and the replicas.
type env struct {
	opts *options
	size int

	cp      *framework.ControlPlane
	dns     *probetest.DNSServer
	targets *targets
	// ca serves the https targets (nil when there are none).
	ca *tlsca.CA
	c  client.WithWatch
	// creators are the clients the checkers are created through, each its
	// own connection.
	creators []client.Client
	kube     kubernetes.Interface
	rec      *framework.StatusRecorder
	// who are the identities the replicas and the creates connect as.
	who identities

	// cpPids are the pids of the control plane's processes, by
	// controlPlaneProcs' names.
	cpPids map[string]int

	ids      []string // replica ids, "replica-a", ...
	managers map[string]*framework.Manager
	// partition stands between the API server and the replica the failure
	// sequence partitions (partitioned), whose kubeconfig goes through it
	// (kubeconfigs); nil without the failure sequence.
	partition   *framework.Proxy
	kubeconfigs map[string]string
	tmpDir      string // holds the proxied kubeconfig
	// healthy tells, per checker index, whether its target answers 200.
	healthy []bool
	mu      sync.Mutex
	// logs are the managers' log files, closed with the environment.
	logs []*os.File
	// marks are the moments that start the periods double probes are
	// counted by (see doubleProbes), in order.
	marks []mark
}

// mark names the period of the run that starts at.
type mark struct {
	name string
	at   time.Time
}

// startEnv starts everything but the checkers. On error everything it
// started is stopped again.
func startEnv(ctx context.Context, o *options, size int) (e *env, err error) {
	e = &env{opts: o, size: size, managers: map[string]*framework.Manager{}, healthy: make([]bool, size)}
	defer func() {
		if err != nil {
			err = errors.Join(err, e.close(false))
		}
	}()
	if e.dns, err = probetest.NewDNSServer(map[string][]net.IP{}); err != nil {
		return nil, fmt.Errorf("starting the DNS stub: %w", err)
	}
	cfg := targetsConfig{kinds: make([]targetKind, size), delay: o.latencyOf()}
	for i := range size {
		cfg.kinds[i] = o.kindOf(i)
		if cfg.kinds[i] == kindHTTPS && e.ca == nil {
			if e.ca, err = tlsca.New(); err != nil {
				return nil, err
			}
			cfg.ca = e.ca
		}
	}
	if e.targets, err = startTargets(cfg); err != nil {
		return nil, err
	}
	for i := range size {
		e.healthy[i] = !o.failsFromStart(i) && cfg.kinds[i] != kindHang
		e.targets.setFailing(i, o.failsFromStart(i))
	}
	if e.cp, err = framework.StartControlPlane(); err != nil {
		return nil, err
	}
	if err = e.findControlPlane(); err != nil {
		return nil, err
	}
	if err = e.connect(ctx); err != nil {
		return nil, err
	}
	if e.rec, err = framework.StartStatusRecorder(ctx, e.c, checkerNamespace); err != nil {
		return nil, err
	}
	for i := range o.replicas {
		e.ids = append(e.ids, "replica-"+string(rune('a'+i)))
	}
	if o.profile == profileRealistic {
		if err = e.proxyPartitioned(); err != nil {
			return nil, err
		}
	}
	if err = e.startReplicas(ctx, e.ids...); err != nil {
		return nil, err
	}
	return e, nil
}

// partitioned is the replica the failure sequence cuts off from the API
// server.
func (e *env) partitioned() string { return e.ids[2] }

// proxyPartitioned has the partitioned replica reach the API server
// through a proxy of its own (e.partition).
func (e *env) proxyPartitioned() error {
	dir, err := os.MkdirTemp("", "bench-partition-")
	if err != nil {
		return fmt.Errorf("creating a directory for the proxied kubeconfig: %w", err)
	}
	e.tmpDir = dir
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if e.partition, err = framework.ProxyKubeconfig(e.who.replicaKubeconfig, kubeconfig); err != nil {
		return err
	}
	e.kubeconfigs = map[string]string{e.partitioned(): kubeconfig}
	return nil
}

// findControlPlane finds the control plane's processes: envtest starts
// them as children of this process.
func (e *env) findControlPlane() error {
	e.cpPids = map[string]int{}
	for _, name := range controlPlaneProcs {
		pid, err := procstat.FindChild(procstat.Self, name)
		if err != nil {
			return fmt.Errorf("finding the control plane's %s: %w", name, err)
		}
		e.cpPids[name] = pid
	}
	return nil
}

// connect makes the clients, paced so that creating the checkers is not
// the bottleneck, and creates the namespaces, the identities (see
// identities) and the CA's Secret.
func (e *env) connect(ctx context.Context) error {
	scheme, err := framework.NewScheme()
	if err != nil {
		return err
	}
	cfg := *e.cp.Config
	cfg.QPS, cfg.Burst = e.opts.createQPS, 2*int(e.opts.createQPS)
	if e.c, err = client.NewWithWatch(&cfg, client.Options{Scheme: scheme}); err != nil {
		return fmt.Errorf("creating client: %w", err)
	}
	if e.kube, err = kubernetes.NewForConfig(&cfg); err != nil {
		return fmt.Errorf("creating clientset: %w", err)
	}
	for _, ns := range []string{checkerNamespace, leaseNamespace} {
		if err := e.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			return fmt.Errorf("creating namespace %s: %w", ns, err)
		}
	}
	e.who = e.adminIdentities()
	if !e.opts.admin {
		if e.who, err = e.ownIdentities(ctx); err != nil {
			return err
		}
	}
	creator := *e.who.creator
	creator.QPS, creator.Burst = cfg.QPS, cfg.Burst
	for range e.opts.createClients {
		own := creator
		// A config with its own dialer gets its own transport, and so its
		// own connection, instead of client-go's shared one.
		own.Dial = (&net.Dialer{Timeout: 30 * time.Second}).DialContext
		c, err := client.New(&own, client.Options{Scheme: scheme})
		if err != nil {
			return fmt.Errorf("creating a creating client: %w", err)
		}
		// Discover the API before the creates are timed.
		if _, err := c.IsObjectNamespaced(&webcheckerv1alpha1.WebChecker{}); err != nil {
			return fmt.Errorf("discovering the WebChecker API: %w", err)
		}
		e.creators = append(e.creators, c)
	}
	if e.ca == nil {
		return nil
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: checkerNamespace, Name: caSecretName},
		Data: map[string][]byte{caSecretKey: e.ca.CAPEM}}
	if err := e.c.Create(ctx, secret); err != nil {
		return fmt.Errorf("creating the CA's Secret: %w", err)
	}
	return nil
}

// startReplicas starts the manager processes ids at once and waits until
// each is ready.
func (e *env) startReplicas(ctx context.Context, ids ...string) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, id := range ids {
		wg.Go(func() {
			output, err := e.logFile(id)
			if err != nil {
				mu.Lock()
				defer mu.Unlock()
				errs = append(errs, err)
				return
			}
			m, err := framework.StartManager(ctx, framework.ManagerOptions{
				Binary:     e.opts.manager,
				Kubeconfig: cmp.Or(e.kubeconfigs[id], e.who.replicaKubeconfig),
				ShardID:    id,
				DNSServer:  e.dns.Addr(),
				Args:       e.managerArgs(id),
				Output:     output,
			})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("starting %s: %w", id, err))
				return
			}
			e.managers[id] = m
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// logFile opens the file replica id's output is appended to, or returns
// nil without --logs. It is closed with the environment.
func (e *env) logFile(id string) (io.Writer, error) {
	if e.opts.logs == "" {
		return nil, nil
	}
	if err := os.MkdirAll(e.opts.logs, 0o755); err != nil {
		return nil, fmt.Errorf("creating the logs directory: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(e.opts.logs, fmt.Sprintf("%d-%s.log", e.size, id)), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening the log of %s: %w", id, err)
	}
	e.mu.Lock()
	e.logs = append(e.logs, f)
	e.mu.Unlock()
	return f, nil
}

// writeLog writes lines to <size>-<name>.txt in the --logs directory, if
// one is set: diagnostics a table cannot hold.
func (e *env) writeLog(name string, lines []string) error {
	if e.opts.logs == "" {
		return nil
	}
	path := filepath.Join(e.opts.logs, fmt.Sprintf("%d-%s.txt", e.size, name))
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// managerArgs are the flags of replica id: only flags that older builds
// know too, its profiles' address with --pprof-port, then --manager-args.
func (e *env) managerArgs(id string) []string {
	args := []string{
		"--lease-namespace=" + leaseNamespace,
		"--ring-name=" + ringName,
		"--lease-duration=" + e.opts.leaseDuration.String(),
		"--lease-renew-interval=" + e.opts.renewInterval.String(),
	}
	if e.opts.pprofPort > 0 {
		args = append(args, fmt.Sprintf("--pprof-bind-address=127.0.0.1:%d", e.opts.pprofPort+slices.Index(e.ids, id)))
	}
	return append(args, e.opts.managerArgs...)
}

// close stops every process and server e started. With failed, it first
// prints the end of each replica's log.
func (e *env) close(failed bool) error {
	var errs []error
	for _, id := range e.ids {
		m := e.managers[id]
		if m == nil {
			continue
		}
		if failed {
			fmt.Fprintf(os.Stderr, "----- last lines of %s -----\n%s\n", id, tail(m.Log(), 30))
		}
		if !m.Exited() {
			errs = append(errs, m.Kill())
		}
	}
	for _, f := range e.logs {
		errs = append(errs, f.Close())
	}
	if e.partition != nil {
		errs = append(errs, e.partition.Close())
	}
	if e.tmpDir != "" {
		errs = append(errs, os.RemoveAll(e.tmpDir))
	}
	if e.rec != nil {
		e.rec.Stop()
	}
	if e.cp != nil {
		errs = append(errs, e.cp.Stop())
	}
	if e.targets != nil {
		errs = append(errs, e.targets.close())
	}
	if e.dns != nil {
		errs = append(errs, e.dns.Close())
	}
	return errors.Join(errs...)
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return fmt.Errorf("interrupted: %w", ctx.Err())
	case <-time.After(d):
		return nil
	}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
