package probing

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestPhaseIndex checks that every phase indexes its own place in
// phaseOrder, and that Phases lists the same phases in the same order.
func TestPhaseIndex(t *testing.T) {
	assert.Equal(t, phaseOrder[:], Phases)
	for i, p := range phaseOrder {
		assert.Equal(t, i, p.index(), p)
	}
	assert.Equal(t, -1, Phase("handshake").index())
}

func TestPhaseTimings(t *testing.T) {
	const ms = time.Millisecond
	type added struct {
		phase Phase
		d     time.Duration
	}
	tests := map[string]struct {
		add  []added
		want map[Phase]time.Duration
		// wantOrder is the order All and Happened list the phases in.
		wantOrder []Phase
	}{
		"none": {},
		"a plain http probe": {
			add:       []added{{PhaseConnect, ms}, {PhaseProcessing, 2 * ms}, {PhaseTransfer, 3 * ms}},
			want:      map[Phase]time.Duration{PhaseConnect: ms, PhaseProcessing: 2 * ms, PhaseTransfer: 3 * ms},
			wantOrder: []Phase{PhaseConnect, PhaseProcessing, PhaseTransfer},
		},
		"a redirect chain sums its hops, listed in the order of Phases": {
			add:       []added{{PhaseTransfer, ms}, {PhaseDNS, ms}, {PhaseConnect, ms}, {PhaseTransfer, 2 * ms}, {PhaseConnect, 3 * ms}},
			want:      map[Phase]time.Duration{PhaseDNS: ms, PhaseConnect: 4 * ms, PhaseTransfer: 3 * ms},
			wantOrder: []Phase{PhaseDNS, PhaseConnect, PhaseTransfer},
		},
		"an unknown phase is ignored": {
			add:       []added{{"handshake", ms}, {PhaseTLS, ms}},
			want:      map[Phase]time.Duration{PhaseTLS: ms},
			wantOrder: []Phase{PhaseTLS},
		},
		"a phase that took no measurable time happened": {
			add:       []added{{PhaseDNS, 0}},
			want:      map[Phase]time.Duration{PhaseDNS: 0},
			wantOrder: []Phase{PhaseDNS},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var timings PhaseTimings
			for _, a := range tc.add {
				timings.Add(a.phase, a.d)
			}
			assert.Equal(t, tc.wantOrder, timings.Happened())
			var order []Phase
			for p, d := range timings.All() {
				order = append(order, p)
				assert.Equal(t, tc.want[p], d, p)
			}
			assert.Equal(t, tc.wantOrder, order)
			for _, p := range append(slices.Clone(phaseOrder[:]), "handshake") {
				d, ok := timings.Get(p)
				want, happened := tc.want[p]
				assert.Equal(t, happened, ok, p)
				assert.Equal(t, want, d, p)
			}
		})
	}
}

// TestPhaseTracerEventOrder feeds the tracer the hooks in the orders the
// transports call them. HTTP/2 reports the headers written after it flushed
// them, so its read loop may see the answer first: the probe still has a
// processing phase, and its transfer runs to the end.
func TestPhaseTracerEventOrder(t *testing.T) {
	tests := map[string]struct {
		events []func(*phaseTracer)
		want   []Phase
	}{
		"HTTP/1.1 through net/http": {
			events: []func(*phaseTracer){
				(*phaseTracer).connectStarted, connected, (*phaseTracer).requestStarted,
				(*phaseTracer).wroteHeaders, (*phaseTracer).wroteRequestDone, (*phaseTracer).gotFirstResponseByte,
			},
			want: []Phase{PhaseConnect, PhaseProcessing, PhaseTransfer},
		},
		"HTTP/2 answered before it reports the headers written": {
			events: []func(*phaseTracer){
				(*phaseTracer).connectStarted, connected, (*phaseTracer).requestStarted,
				(*phaseTracer).gotFirstResponseByte, (*phaseTracer).wroteHeaders, (*phaseTracer).wroteRequestDone,
			},
			want: []Phase{PhaseConnect, PhaseProcessing, PhaseTransfer},
		},
		"a request written in one go on a kept connection": {
			events: []func(*phaseTracer){(*phaseTracer).requestWritten, (*phaseTracer).gotFirstResponseByte},
			want:   []Phase{PhaseProcessing, PhaseTransfer},
		},
		"no answer": {
			events: []func(*phaseTracer){(*phaseTracer).connectStarted, connected, (*phaseTracer).requestStarted},
			want:   []Phase{PhaseConnect},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var tracer phaseTracer
			for _, event := range tc.events {
				event(&tracer)
			}
			assert.Equal(t, tc.want, tracer.finish().Happened())
			assert.Equal(t, slices.Contains(tc.want, PhaseTransfer), tracer.answered())
		})
	}
}

// connected is a successful ConnectDone.
func connected(t *phaseTracer) { t.connectDone(nil) }
