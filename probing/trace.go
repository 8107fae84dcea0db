package probing

import (
	"context"
	"crypto/tls"
	"iter"
	"net/http/httptrace"
	"slices"
	"sync"
	"time"
)

// Phase is one step of an HTTP probe, as measured by phaseTracer.
// The names follow the blackbox exporter's probe_http_duration_seconds.
type Phase string

const (
	// PhaseDNS is the host name lookup.
	PhaseDNS Phase = "dns"
	// PhaseConnect is the TCP connection set-up.
	PhaseConnect Phase = "connect"
	// PhaseTLS is the TLS handshake.
	PhaseTLS Phase = "tls"
	// PhaseProcessing is from the request written to the first response
	// byte: the server's think time plus one round trip.
	PhaseProcessing Phase = "processing"
	// PhaseTransfer is from the first response byte to the end of the part
	// of the body that is read.
	PhaseTransfer Phase = "transfer"
)

// Phases lists every Phase in the order a request goes through them.
var Phases = slices.Clone(phaseOrder[:])

// phaseOrder is Phases where nothing can change it: PhaseTimings is
// indexed by it (see Phase.index).
var phaseOrder = [...]Phase{PhaseDNS, PhaseConnect, PhaseTLS, PhaseProcessing, PhaseTransfer}

// phaseCount is the number of phases.
const phaseCount = len(phaseOrder)

// index is p's position in phaseOrder, or -1 for a string that names no
// phase.
func (p Phase) index() int { return slices.Index(phaseOrder[:], p) }

// PhaseTimings holds how long each phase of a probe took, summed over the
// requests of a redirect chain. A phase that did not happen is absent: no
// DNS for an IP literal, no TLS for http, and no DNS, connect or TLS on a
// kept-alive connection (only for targets with ReuseConnections).
//
// It is a value of fixed size, with no allocation per probe: every
// scheduled check keeps the result of its last probe, phases included.
// The zero value holds no phase.
type PhaseTimings struct {
	durations [phaseCount]time.Duration // by Phase.index
	happened  uint8                     // bit i: phaseOrder[i] happened
}

// Add adds d to phase p, which has then happened. A Phase that Phases does
// not list is ignored.
func (t *PhaseTimings) Add(p Phase, d time.Duration) {
	if i := p.index(); i >= 0 {
		t.durations[i] += d
		t.happened |= 1 << i
	}
}

// Get returns how long phase p took, and whether it happened.
func (t PhaseTimings) Get(p Phase) (time.Duration, bool) {
	i := p.index()
	if i < 0 || t.happened&(1<<i) == 0 {
		return 0, false
	}
	return t.durations[i], true
}

// All yields the phases that happened with their durations, in the order
// of Phases.
func (t PhaseTimings) All() iter.Seq2[Phase, time.Duration] {
	return func(yield func(Phase, time.Duration) bool) {
		for i, p := range phaseOrder {
			if t.happened&(1<<i) != 0 && !yield(p, t.durations[i]) {
				return
			}
		}
	}
}

// Happened lists the phases that happened, in the order of Phases.
func (t PhaseTimings) Happened() []Phase {
	var phases []Phase
	for p := range t.All() {
		phases = append(phases, p)
	}
	return phases
}

// phaseTracer measures the phases of one probe. Its callbacks may run on
// the transport's goroutines (a dial can go on after the request failed),
// so every field is guarded by mu.
type phaseTracer struct {
	mu      sync.Mutex
	timings PhaseTimings
	// Start times of the phases in progress (zero when none).
	dnsStart, connectStart, tlsStart, wroteRequest, firstByte time.Time
	// gotAnswer is set once the current request got its first response byte.
	gotAnswer bool
	// done is set by finish: later callbacks of abandoned dials are ignored.
	done bool
	// resolved notes the addresses the target's host name resolved to
	// (see resolution); it has a lock of its own.
	resolved resolution
}

// tracerOf returns the phase tracer of a probe's request context, or a
// tracer of its own for a request that no probe made.
func tracerOf(ctx context.Context) *phaseTracer {
	if pc := probeContextOf(ctx); pc != nil {
		return &pc.tracer
	}
	return &phaseTracer{}
}

// clientTrace returns the httptrace hooks that feed t, for requests that
// net/http's own transport sends (see tracedTransport).
func (t *phaseTracer) clientTrace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		DNSStart:             t.dnsStarted,
		DNSDone:              t.dnsDone,
		ConnectStart:         func(string, string) { t.connectStarted() },
		ConnectDone:          func(_, _ string, err error) { t.connectDone(err) },
		TLSHandshakeStart:    func() { t.start(&t.tlsStart) },
		TLSHandshakeDone:     func(tls.ConnectionState, error) { t.end(&t.tlsStart, PhaseTLS) },
		GotConn:              func(httptrace.GotConnInfo) { t.requestStarted() },
		WroteHeaders:         t.wroteHeaders,
		WroteRequest:         func(httptrace.WroteRequestInfo) { t.wroteRequestDone() },
		GotFirstResponseByte: t.gotFirstResponseByte,
	}
}

// dialTrace returns the httptrace hooks of a dial (name resolution and
// connection), which net.Dialer calls: http1Transport reports the rest of
// its requests to t itself.
func (t *phaseTracer) dialTrace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		DNSStart:     t.dnsStarted,
		DNSDone:      t.dnsDone,
		ConnectStart: func(string, string) { t.connectStarted() },
		ConnectDone:  func(_, _ string, err error) { t.connectDone(err) },
	}
}

func (t *phaseTracer) dnsStarted(info httptrace.DNSStartInfo) {
	t.start(&t.dnsStart)
	t.resolved.started(info.Host)
}

func (t *phaseTracer) dnsDone(info httptrace.DNSDoneInfo) {
	t.end(&t.dnsStart, PhaseDNS)
	t.resolved.done(info)
}

// connectStarted starts the connect phase. With several addresses a
// dialer may race connections (happy eyeballs): the phase runs from the
// first start to the first connection that succeeded.
func (t *phaseTracer) connectStarted() {
	t.mu.Lock()
	t.gotAnswer = false // a new connection: a request of a redirect chain not yet answered
	if t.connectStart.IsZero() {
		now := time.Now()
		t.closeTransferLocked(now) // the previous hop of a redirect chain
		t.connectStart = now
	}
	t.mu.Unlock()
}

func (t *phaseTracer) connectDone(err error) {
	if err == nil {
		t.end(&t.connectStart, PhaseConnect)
	}
}

// requestStarted marks a request about to be written on the connection
// it got: the previous hop of a redirect chain is over, and this request
// is not answered yet. The processing phase starts here until the
// transport says the request was written (see wroteHeaders).
func (t *phaseTracer) requestStarted() {
	t.mu.Lock()
	now := time.Now()
	t.closeTransferLocked(now) // the previous hop of a redirect chain
	t.wroteRequest, t.gotAnswer = now, false
	t.mu.Unlock()
}

// wroteHeaders moves the start of the processing phase to the instant the
// request's headers were written. Over HTTP/2 the transport reports them
// written after it flushed them, and its read loop may see the answer
// first: a report that comes after the answer changes nothing.
func (t *phaseTracer) wroteHeaders() { t.wroteRequestDone() }

// requestWritten is requestStarted for a request written in one go (see
// http1Conn.exchange), which reports no connection of its own.
func (t *phaseTracer) requestWritten() { t.requestStarted() }

// wroteRequestDone starts the processing phase, which runs from the
// request written to the first response byte. Over HTTP/2 the transport
// may report the request written after the answer came: then the phase
// keeps the start it had.
func (t *phaseTracer) wroteRequestDone() {
	t.mu.Lock()
	if !t.gotAnswer {
		t.wroteRequest = time.Now()
	}
	t.mu.Unlock()
}

// gotFirstResponseByte ends the processing phase and starts the transfer.
func (t *phaseTracer) gotFirstResponseByte() {
	t.mu.Lock()
	now := time.Now()
	t.endLocked(&t.wroteRequest, PhaseProcessing, now)
	t.firstByte, t.gotAnswer = now, true
	t.mu.Unlock()
}

// start starts a phase of connection set-up. A redirect's next hop sets up
// its own connection after the previous response was read, so the
// previous hop's transfer ends here: phases never overlap.
func (t *phaseTracer) start(at *time.Time) {
	t.mu.Lock()
	now := time.Now()
	t.closeTransferLocked(now)
	*at = now
	t.gotAnswer = false // as in connectStarted
	t.mu.Unlock()
}

func (t *phaseTracer) end(started *time.Time, p Phase) {
	t.mu.Lock()
	t.endLocked(started, p, time.Now())
	t.mu.Unlock()
}

// endLocked adds the time since *started to phase p and clears *started. A
// phase that was not started (or whose probe is finished) is ignored.
func (t *phaseTracer) endLocked(started *time.Time, p Phase, now time.Time) {
	if t.done || started.IsZero() {
		return
	}
	t.timings.Add(p, now.Sub(*started))
	*started = time.Time{}
}

// closeTransferLocked ends the transfer phase of the current response, if
// one is being read.
func (t *phaseTracer) closeTransferLocked(now time.Time) {
	t.endLocked(&t.firstByte, PhaseTransfer, now)
}

// finish ends the transfer phase and returns the timings. Later callbacks
// are ignored.
func (t *phaseTracer) finish() PhaseTimings {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closeTransferLocked(time.Now())
	t.done = true
	return t.timings
}

// answered reports whether the current request (the last of a redirect
// chain) got the first byte of its response. Each request of a chain
// starts unanswered at its first event: name resolution, connection, or
// (over a kept connection) the connection handed to it.
func (t *phaseTracer) answered() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.gotAnswer
}
