package framework

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Proxy is a TCP proxy on 127.0.0.1 in front of another address, for
// simulating a network partition: Cut closes every connection through it and
// refuses new ones until Restore.
type Proxy struct {
	listener net.Listener
	target   string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// NewProxy starts a proxy forwarding to target (host:port).
func NewProxy(target string) (*Proxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("starting proxy: %w", err)
	}
	p := &Proxy{listener: l, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// ProxyToAPIServer starts a Proxy in front of the API server of cfg,
// closed when the test ends, and returns it with a copy of cfg that goes
// through it: Cut then partitions whatever uses that copy from the API
// server.
func ProxyToAPIServer(t testing.TB, cfg *rest.Config) (*Proxy, *rest.Config) {
	t.Helper()
	apiURL, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatalf("parsing the API server's URL %q: %v", cfg.Host, err)
	}
	p, err := NewProxy(apiURL.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	viaProxy := rest.CopyConfig(cfg)
	viaProxy.Host = "https://" + p.Addr()
	return p, viaProxy
}

// ProxyKubeconfig starts a Proxy in front of the API server of the
// kubeconfig file at path (its current context's cluster) and writes to
// out a copy of that file that goes through it: Cut then partitions a
// process that uses the copy from the API server. The caller closes the
// Proxy.
func ProxyKubeconfig(path, out string) (*Proxy, error) {
	config, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", path, err)
	}
	kubeContext, ok := config.Contexts[config.CurrentContext]
	if !ok || config.Clusters[kubeContext.Cluster] == nil {
		return nil, fmt.Errorf("kubeconfig %s: no cluster for its current context %q", path, config.CurrentContext)
	}
	cluster := config.Clusters[kubeContext.Cluster]
	apiURL, err := url.Parse(cluster.Server)
	if err != nil {
		return nil, fmt.Errorf("parsing the API server's URL %q: %w", cluster.Server, err)
	}
	p, err := NewProxy(apiURL.Host)
	if err != nil {
		return nil, err
	}
	cluster.Server = "https://" + p.Addr()
	if err := clientcmd.WriteToFile(*config, out); err != nil {
		return nil, errors.Join(fmt.Errorf("writing the proxied kubeconfig: %w", err), p.Close())
	}
	return p, nil
}

// ProxiedKubeconfig is ProxyKubeconfig for a test: the copy is in a
// temporary directory of t, and the Proxy closed when t ends.
func ProxiedKubeconfig(t testing.TB, path string) (*Proxy, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "kubeconfig")
	p, err := ProxyKubeconfig(path, out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p, out
}

// Addr is the proxy's address.
func (p *Proxy) Addr() string { return p.listener.Addr().String() }

// Cut breaks every open connection and makes new ones fail at once.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		_ = c.Close()
	}
}

// Restore lets connections through again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

// Close stops the proxy and waits for its goroutines.
func (p *Proxy) Close() error {
	err := p.listener.Close()
	p.Cut()
	p.wg.Wait()
	return err
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.listener.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.forward(c)
		}()
	}
}

// track registers c, or closes it and returns false when the proxy is cut.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		_ = c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
	_ = c.Close()
}

func (p *Proxy) forward(client net.Conn) {
	if !p.track(client) {
		return
	}
	defer p.untrack(client)
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	if !p.track(server) {
		return
	}
	defer p.untrack(server)
	done := make(chan struct{}, 2)
	copyHalf := func(dst, src net.Conn) {
		_, err := io.Copy(dst, src)
		if err != nil && !errors.Is(err, net.ErrClosed) {
			_ = dst.Close()
		}
		done <- struct{}{}
	}
	go copyHalf(server, client)
	go copyHalf(client, server)
	<-done
	// One direction ended: end both, so that a half-open connection never
	// lingers.
	_ = client.Close()
	_ = server.Close()
	<-done
}
