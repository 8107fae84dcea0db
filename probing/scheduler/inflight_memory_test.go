package scheduler_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/pattern"
	"github.com/networkio/webchecker/probing/probetest"
	"github.com/networkio/webchecker/probing/scheduler"
)

// The memory one probe in flight costs, by kind: what the in-flight bound
// is derived from (scheduler.InFlightBytes). Each case holds
// inFlightProbes probes of one kind in flight, through probing.NewProber,
// against a loopback server that accepts and never answers, and reads the
// growth of the live heap and of the goroutine stacks after a collection.
// The servers hold their end of each connection without a goroutine (the
// TLS ones after the handshake, the reused HTTP one after its first
// answer), so the figure is the prober's side plus a socket's server side:
// an upper bound.

const inFlightProbes = 200

// silentServer accepts TCP connections on loopback and never answers:
// each connection is held, with no goroutine, until the server closes.
// handshake, when set, runs on every connection first (in a goroutine that
// then returns).
type silentServer struct {
	ln        net.Listener
	handshake func(net.Conn) net.Conn
	accepted  atomic.Int64

	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func newSilentServer(t *testing.T, handshake func(net.Conn) net.Conn) *silentServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &silentServer{ln: ln, handshake: handshake}
	s.wg.Go(s.serve)
	t.Cleanup(s.close)
	return s
}

func (s *silentServer) serve() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		if s.handshake == nil {
			s.hold(c)
			continue
		}
		s.wg.Go(func() { s.hold(s.handshake(c)) })
	}
}

func (s *silentServer) hold(c net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conns = append(s.conns, c)
	s.accepted.Add(1)
}

func (s *silentServer) close() {
	_ = s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		_ = c.Close()
	}
	s.conns = nil
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *silentServer) addr() string { return s.ln.Addr().String() }

// tlsHandshake shakes hands as a server with cert.
func tlsHandshake(cert tls.Certificate) func(net.Conn) net.Conn {
	config := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}}
	return func(c net.Conn) net.Conn {
		tc := tls.Server(c, config)
		_ = tc.Handshake()
		return tc
	}
}

// answerer answers the HTTP requests of its connections with an empty
// 200 until it is quiesced: its connections are then kept alive, with no
// goroutine reading them, for reused probes to wait on.
type answerer struct {
	mu       sync.Mutex
	conns    []net.Conn
	quiesced bool
	serving  sync.WaitGroup
}

// serve answers c until quiesce; it is a silentServer handshake.
func (a *answerer) serve(c net.Conn) net.Conn {
	a.mu.Lock()
	if a.quiesced {
		a.mu.Unlock()
		return c // a new connection of a probe that found none to reuse
	}
	a.conns = append(a.conns, c)
	a.serving.Add(1)
	a.mu.Unlock()
	defer a.serving.Done()
	br := bufio.NewReader(c)
	for {
		if _, err := http.ReadRequest(br); err != nil {
			return c // quiesced (or closed)
		}
		if _, err := c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")); err != nil {
			return c
		}
	}
}

// quiesce stops reading every connection and waits until no goroutine
// serves one.
func (a *answerer) quiesce() {
	a.mu.Lock()
	a.quiesced = true
	for _, c := range a.conns {
		_ = c.SetReadDeadline(time.Now())
	}
	a.mu.Unlock()
	a.serving.Wait()
}

// silentUDP is a UDP socket on loopback that reads and drops every
// datagram, counting them.
type silentUDP struct {
	pc       net.PacketConn
	received atomic.Int64
	done     chan struct{}
}

func newSilentUDP(t *testing.T) *silentUDP {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	require.NoError(t, err)
	u := &silentUDP{pc: pc, done: make(chan struct{})}
	go func() {
		defer close(u.done)
		buf := make([]byte, 1500)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
			u.received.Add(1)
		}
	}()
	t.Cleanup(func() { _ = pc.Close(); <-u.done })
	return u
}

// liveBytes is the live heap and the goroutine stacks in use, after a
// collection.
func liveBytes() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc) + int64(ms.StackInuse)
}

// holdInFlight starts n probes of target with prober, waits until started
// reports n of them at the server (and a little more, for the clients to
// block on their reads), and returns the growth of liveBytes per probe.
func holdInFlight(t *testing.T, prober probing.Prober, target probing.Target, n int, started func() int64) int64 {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	before := liveBytes()
	for range n {
		wg.Go(func() { prober.Probe(ctx, target) })
	}
	require.Eventually(t, func() bool { return started() >= int64(n) }, 30*time.Second, time.Millisecond, "probes reaching the server")
	time.Sleep(200 * time.Millisecond) // the clients write and block on their reads
	return (liveBytes() - before) / int64(n)
}

// TestProbeInFlightMemory measures the bytes one probe in flight holds,
// per kind, and checks that scheduler.InFlightBytes, which the in-flight
// bound is derived from, covers each of them. Run it with -v to
// read the figures.
func TestProbeInFlightMemory(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector shadows every allocation: heap figures mean nothing under it")
	}
	cert := probetest.Chain(probetest.NewCertificate(t, "127.0.0.1", time.Now().Add(-time.Hour), time.Now().Add(time.Hour)))
	reply := &probing.TCPOptions{Send: "PING\r\n", Expect: pattern.MustCompile("PONG"), MaxBytes: 64}
	const timeout = 30 * time.Second
	warm := new(answerer)

	cases := map[string]struct {
		target func(t *testing.T) (probing.Target, func() int64)
		// warm, when set, is quiesced after inFlightProbes answered probes
		// ran at once, which leaves connections alive to reuse.
		warm *answerer
	}{
		"http fresh": {target: func(t *testing.T) (probing.Target, func() int64) {
			s := newSilentServer(t, nil)
			return mustBuild(probing.TargetSpec{URL: "http://" + s.addr() + "/", Method: http.MethodGet, Timeout: timeout}), s.accepted.Load
		}},
		"http reused": {warm: warm, target: func(t *testing.T) (probing.Target, func() int64) {
			s := newSilentServer(t, warm.serve)
			t.Cleanup(func() { t.Logf("http reused: %d connections for %d probes", s.accepted.Load(), inFlightProbes) })
			return mustBuild(probing.TargetSpec{URL: "http://" + s.addr() + "/", Method: http.MethodGet, Timeout: timeout, ReuseConnections: true}), s.accepted.Load
		}},
		"https fresh": {target: func(t *testing.T) (probing.Target, func() int64) {
			s := newSilentServer(t, tlsHandshake(cert))
			return mustBuild(probing.TargetSpec{URL: "https://" + s.addr() + "/", Method: http.MethodGet, Timeout: timeout,
				TLS: probing.TLSOptions{InsecureSkipVerify: true}}), s.accepted.Load
		}},
		"tcp": {target: func(t *testing.T) (probing.Target, func() int64) {
			s := newSilentServer(t, nil)
			return mustBuild(probing.TargetSpec{URL: "tcp://" + s.addr(), Timeout: timeout, TCP: reply}), s.accepted.Load
		}},
		"tls": {target: func(t *testing.T) (probing.Target, func() int64) {
			s := newSilentServer(t, tlsHandshake(cert))
			return mustBuild(probing.TargetSpec{URL: "tls://" + s.addr(), Timeout: timeout, TCP: reply,
				TLS: probing.TLSOptions{InsecureSkipVerify: true}}), s.accepted.Load
		}},
		"dns udp": {target: func(t *testing.T) (probing.Target, func() int64) {
			u := newSilentUDP(t)
			return mustBuild(probing.TargetSpec{URL: "dns://" + u.pc.LocalAddr().String(), Timeout: timeout,
				DNS: &probing.DNSOptions{Name: "example.test", Type: "A", Transport: "udp"}}), u.received.Load
		}},
		"grpc": {target: func(t *testing.T) (probing.Target, func() int64) {
			s := newSilentServer(t, nil)
			return mustBuild(probing.TargetSpec{URL: "grpc://" + s.addr(), Timeout: timeout}), s.accepted.Load
		}},
		"grpcs": {target: func(t *testing.T) (probing.Target, func() int64) {
			s := newSilentServer(t, tlsHandshake(cert))
			return mustBuild(probing.TargetSpec{URL: "grpcs://" + s.addr(), Timeout: timeout,
				TLS: probing.TLSOptions{InsecureSkipVerify: true}}), s.accepted.Load
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			prober := probing.NewProber(probing.ProberOptions{MaxIdleConns: inFlightProbes, MaxIdleConnsPerHost: inFlightProbes})
			t.Cleanup(prober.CloseIdleConnections)
			target, started := tc.target(t)
			if tc.warm != nil {
				var wg sync.WaitGroup
				for range inFlightProbes {
					wg.Go(func() {
						res := prober.Probe(t.Context(), target)
						assert.True(t, res.Success, "warm-up probe: %+v", res)
					})
				}
				wg.Wait()
				tc.warm.quiesce()
				// Each probe reuses a kept connection, on which the server
				// no longer reads, or (the pool kept fewer) makes a new one.
				kept := started()
				started = func() int64 { return kept + max(0, int64(inFlightProbes)-kept) }
			}
			perProbe := holdInFlight(t, prober, target, inFlightProbes, started)
			t.Logf("%s: %d bytes per probe in flight (%d probes); the budget counts %d", name, perProbe, inFlightProbes, scheduler.InFlightBytes(target))
			assert.LessOrEqual(t, perProbe, scheduler.InFlightBytes(target), "one %s probe in flight costs more than the memory budget counts", name)
		})
	}
}
