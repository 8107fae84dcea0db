package membership

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// Defaults of HeartbeatOptions.
const (
	DefaultLeaseDuration = 10 * time.Second
	DefaultRenewInterval = 2 * time.Second
	// DefaultSafetyMargin is how long before its Lease could expire in the
	// eyes of the others that a replica fences itself.
	DefaultSafetyMargin = 2 * time.Second
	// releaseTimeout bounds the Lease deletion on shutdown.
	releaseTimeout = 5 * time.Second
	// probingStopWait bounds the wait for HeartbeatOptions.ProbingStopped
	// on shutdown.
	probingStopWait = 2 * time.Second
)

// HeartbeatOptions configure a Heartbeat.
type HeartbeatOptions struct {
	// Client reaches the Leases. Required.
	Client coordinationv1client.LeasesGetter
	// Namespace holds the ring's Leases. Required.
	Namespace string
	// ID is this replica's shard id: the Lease's name and holderIdentity.
	// Required.
	ID string
	// RingName is the value of the LabelRing label. Required.
	RingName string
	// Zone is this replica's zone, the value of the LabelZone label, which
	// every creation and renewal of the Lease writes (and removes when
	// Zone is empty, the zone unknown). It must be a valid label value.
	// Optional.
	Zone string
	// LeaseDuration is written as leaseDurationSeconds (whole seconds, at
	// least 1s). Default DefaultLeaseDuration.
	LeaseDuration time.Duration
	// RenewInterval is the time between renewals; it must be well below
	// LeaseDuration - SafetyMargin. Default DefaultRenewInterval.
	RenewInterval time.Duration
	// SafetyMargin: the replica is fenced once LeaseDuration - SafetyMargin
	// has passed since the start of its last successful renewal. Default
	// DefaultSafetyMargin.
	SafetyMargin time.Duration
	// Clock stamps renewals and times fencing. Default the real clock.
	Clock clock.WithTickerAndDelayedExecution
	// Logger logs renewals failures and fencing changes.
	Logger logr.Logger
	// BeforeJoin, when set, is waited for before the Lease is first
	// written (the replica stays fenced, and the others do not count it,
	// until then): a replica joins its ring once it is ready to take its
	// share. An error is logged and the replica joins anyway.
	BeforeJoin func(ctx context.Context) error
	// ProbingStopped, when set, is called on shutdown, before the replica
	// is fenced: it waits (within ctx) for the replica to stop starting
	// probes and returns the instant from which it started none, every
	// turn due before it having been started; ok false means unknown. The
	// instant is written on the released Lease (AnnotationProbingStopped),
	// so that the others take over from exactly there. Without it, they
	// take over from shortly before they saw the Lease deleted, and may
	// probe again some turns this replica probed last.
	ProbingStopped func(ctx context.Context) (at time.Time, ok bool)
}

func (o *HeartbeatOptions) defaults() error {
	if o.LeaseDuration == 0 {
		o.LeaseDuration = DefaultLeaseDuration
	}
	if o.RenewInterval == 0 {
		o.RenewInterval = DefaultRenewInterval
	}
	if o.SafetyMargin == 0 {
		o.SafetyMargin = DefaultSafetyMargin
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	var errs []error
	if o.Client == nil {
		errs = append(errs, errors.New("Client is required"))
	}
	if o.Namespace == "" || o.ID == "" || o.RingName == "" {
		errs = append(errs, errors.New("Namespace, ID and RingName are required"))
	}
	if msgs := validation.IsValidLabelValue(o.Zone); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("zone %q is not a valid label value: %s", o.Zone, strings.Join(msgs, "; ")))
	}
	if o.LeaseDuration < time.Second || o.LeaseDuration%time.Second != 0 {
		errs = append(errs, fmt.Errorf("lease duration %s must be a whole number of seconds, at least 1s", o.LeaseDuration))
	}
	if o.SafetyMargin <= 0 || o.RenewInterval <= 0 || o.RenewInterval >= o.LeaseDuration-o.SafetyMargin {
		errs = append(errs, fmt.Errorf("renew interval %s must be positive and less than lease duration %s minus safety margin %s",
			o.RenewInterval, o.LeaseDuration, o.SafetyMargin))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("invalid heartbeat options: %w", err)
	}
	return nil
}

// Heartbeat keeps this replica's Lease alive. It is a controller-runtime
// Runnable that runs on every replica.
type Heartbeat struct {
	opts  HeartbeatOptions
	log   logr.Logger // opts.Logger, with the Lease
	lease *leaseWriter
	// fencingChanges has capacity 1: a pending signal stands for every
	// change since it was sent.
	fencingChanges chan struct{}
	// leaves takes the requests of Leave to the renewal loop, which alone
	// writes the Lease.
	leaves chan leaveRequest

	mu          sync.Mutex
	fenced      bool
	fencedSince time.Time   // when fenced last became true (the deadline, when it passed)
	fencings    uint64      // times fenced became true after a renewal
	lastRenew   time.Time   // start of the last successful renewal
	fenceTimer  clock.Timer // fences the replica at fenceAt(), unless renewed before
	acquired    time.Time

	// written is true while lease holds the Lease as we last wrote it;
	// only the Start goroutine uses it.
	written bool
}

// NewHeartbeat validates opts and returns a Heartbeat. The replica is fenced
// until its first successful renewal.
func NewHeartbeat(opts HeartbeatOptions) (*Heartbeat, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	return &Heartbeat{
		opts:           opts,
		log:            opts.Logger.WithValues("lease", opts.Namespace+"/"+opts.ID),
		fenced:         true,
		fencingChanges: make(chan struct{}, 1),
		leaves:         make(chan leaveRequest),
		lease: &leaseWriter{
			client:    opts.Client,
			namespace: opts.Namespace,
			name:      opts.ID,
			ringName:  opts.RingName,
			zone:      opts.Zone,
		},
	}, nil
}

// NeedLeaderElection returns false: every replica keeps its own Lease.
func (h *Heartbeat) NeedLeaderElection() bool { return false }

// Start waits for BeforeJoin, if set, then renews the Lease every
// RenewInterval (and at once when Leave asks) until ctx is done, then
// waits for ProbingStopped, if set, fences the replica and releases the
// Lease (see release) so that the others take over at once.
//
// Fencing does not wait for this loop: a timer fences the replica at
// lastRenew + LeaseDuration - SafetyMargin even while a renewal is stuck.
func (h *Heartbeat) Start(ctx context.Context) error {
	log := h.log
	if h.opts.BeforeJoin != nil {
		start := h.opts.Clock.Now()
		if err := h.opts.BeforeJoin(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			log.Error(err, "Not ready to join the ring; joining anyway")
		}
		log.Info("Joining the ring", "waited", h.opts.Clock.Since(start))
	}
	ticker := h.opts.Clock.NewTicker(h.opts.RenewInterval)
	defer ticker.Stop()
	for {
		_ = h.renew(ctx, log)
		if !h.untilTick(ctx, log, ticker.C()) {
			stopped := h.probingStopped(log)
			h.mu.Lock()
			if h.fenceTimer != nil {
				h.fenceTimer.Stop()
			}
			h.mu.Unlock()
			h.setFenced(true)
			h.release(log, stopped)
			return nil
		}
	}
}

// untilTick serves the requests of Leave until the next renewal is due
// (true) or ctx is done (false). A request renews the Lease at once, out
// of the ticker's rhythm, which goes on.
func (h *Heartbeat) untilTick(ctx context.Context, log logr.Logger, tick <-chan time.Time) bool {
	for {
		select {
		case req := <-h.leaves:
			h.lease.leavingAt = req.at
			req.done <- h.renew(ctx, log)
		case <-ctx.Done():
			return false
		case <-tick:
			return true
		}
	}
}

// renew creates or renews the Lease once. On success it moves the fencing
// deadline and lifts fencing; a failure is logged and returned.
func (h *Heartbeat) renew(ctx context.Context, log logr.Logger) error {
	start := h.opts.Clock.Now()
	// A renewal is worth waiting for as long as it would still hold the
	// replica in the ring once it succeeds: until the fencing deadline it
	// sets (lease duration − safety margin after its start). When the API
	// server is slow, one slow renewal that succeeds keeps the replica in
	// the ring, where giving up after a renew interval would fence it.
	// Fencing does not wait for it (see Start).
	ctx, cancel := context.WithTimeout(ctx, max(h.opts.RenewInterval, h.opts.LeaseDuration-h.opts.SafetyMargin))
	defer cancel()
	if err := h.tryRenew(ctx, start); err != nil {
		if ctx.Err() == nil || !errors.Is(err, context.Canceled) {
			log.Error(err, "Renewing lease failed")
		}
		return err
	}
	h.mu.Lock()
	h.lastRenew = start
	if h.fenceTimer != nil {
		h.fenceTimer.Stop()
	}
	// The callback runs in a goroutine of its own: some clocks (the fake
	// one of k8s.io/utils) call it with their lock held, and fenceIfDue
	// reads the clock.
	h.fenceTimer = h.opts.Clock.AfterFunc(h.fenceAt().Sub(h.opts.Clock.Now()), func() { go h.fenceIfDue() })
	h.mu.Unlock()
	h.setFenced(false)
	return nil
}

// leaveRequest is a call of Leave on its way to the renewal loop.
type leaveRequest struct {
	at   time.Time
	done chan error // capacity 1
}

// Leave announces on the Lease that this replica leaves the ring at the
// instant at (AnnotationLeavingAt; every later renewal keeps it): it goes
// on probing until then, and the others take its checkers over from then
// on their own timers, whenever the Lease event reaches them before it.
// The caller stops the replica at at (Start then releases the Lease as
// usual). Leave writes the Lease at once and returns when it is written.
// It fails, and the others learn nothing, when the replica is fenced (it
// has not joined yet, or lost its Lease: it probes nothing then), when the
// write fails, or when ctx ends first: the caller should then stop at once,
// to be taken over when its Lease is released.
func (h *Heartbeat) Leave(ctx context.Context, at time.Time) error {
	if h.Fenced() {
		return errors.New("not leaving the ring: fenced")
	}
	req := leaveRequest{at: at, done: make(chan error, 1)}
	select {
	case h.leaves <- req:
	case <-ctx.Done():
		return fmt.Errorf("announcing that the replica leaves: %w", ctx.Err())
	}
	select {
	case err := <-req.done:
		if err != nil {
			return fmt.Errorf("announcing that the replica leaves: %w", err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("announcing that the replica leaves: %w", ctx.Err())
	}
}

func (h *Heartbeat) tryRenew(ctx context.Context, now time.Time) error {
	if h.acquired.IsZero() {
		h.acquired = now
	}
	spec := coordinationv1.LeaseSpec{
		HolderIdentity:       ptr.To(h.opts.ID),
		LeaseDurationSeconds: ptr.To(int32(h.opts.LeaseDuration / time.Second)),
		AcquireTime:          ptr.To(metav1.NewMicroTime(h.acquired)),
		RenewTime:            ptr.To(metav1.NewMicroTime(now)),
	}
	// The writer remembers the Lease (and its resourceVersion) from our
	// last successful write, so a renewal is one update. Only when that
	// failed (a conflict, the Lease deleted, the API unreachable) is it
	// read again first, or created. The writer's errors name the request.
	if h.written {
		if err := h.lease.update(ctx, spec); err != nil {
			h.written = false
			return err
		}
		return nil
	}
	if err := h.lease.get(ctx); err != nil {
		if !apierrors.IsNotFound(err) {
			return err
		}
		if err := h.lease.create(ctx, spec); err != nil {
			return err
		}
		h.written = true
		return nil
	}
	if err := h.lease.update(ctx, spec); err != nil {
		return err
	}
	h.written = true
	return nil
}
