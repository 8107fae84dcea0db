// Package scheduler decides when each checker is probed and runs the probes,
// each when it is due, up to a bound on the probes in flight derived from
// memory.
//
// # Model
//
// Callers describe every checker with a Check (key, generation, interval and
// resolved probing.Target) and keep the Scheduler in sync with Upsert and
// Remove. The Scheduler probes every known check once per Interval and keeps
// the latest Outcome of each one, readable with Latest. An Outcome carries
// its streak: how many consecutive probes, this one included, had its
// verdict (Outcome.Streak), as a kubelet prober worker counts them. When an
// Outcome differs from the previous one (its result, or whether the check's
// turns are kept: Overran, Behind) or is the first, or its streak
// reaches the threshold of its verdict (Check.Thresholds), or it changes
// the verdict of the check's failure window (Thresholds.Window: F of the
// latest N probes failed, held in Outcome.Recent), Options.Notify is
// called with the key so that the consumer (the reconciler) can write
// status; any other Outcome is stored silently, so status holds outcomes,
// not heartbeats.
//
// # Due-time heap
//
// The next due time of every check lives in a min-heap (container/heap)
// ordered by due time. Every Upsert that adds or changes a check gives it a
// new revision, taken from a scheduler-wide counter, and pushes a heap item
// carrying that revision. Heap items are never searched for or removed in
// place: an item whose key is gone (Remove) or whose revision is no longer
// the check's current one (changed by Upsert) is stale, and is dropped when
// it reaches the top of the heap. At any time each check has at most one
// current item in the heap.
//
// # Phase: where in its interval a check is probed
//
// Every check has a phase, an offset in [0, Interval) derived from its key
// (Options.Phase; by default HashPhase, the xxhash of "namespace/name"
// modulo Interval, as Prometheus derives a scrape offset from a target's
// hash). After its first probe a check is probed only at the points of its
// grid { Unix epoch + k·Interval + offset }, read on the scheduler's clock.
// Checks created together are therefore spread evenly over the interval
// instead of coming due in the same second of every interval, and since the
// phase depends on nothing but the key and the interval, every replica puts
// a check on the same grid: a hand-over keeps its rhythm (replicas' clocks
// agree to within NTP).
//
// The rule for a new or changed check: it is first due after a random delay
// in [0, min(InitialJitter, Interval/4)), so that it is probed soon after it
// appears, and so that many checks created at once (operator start, kubectl
// apply of a large file, a hand-over from another replica) do not hit the
// network in the same instant. The quarter interval bounds what the jitter
// adds to a checker's longest gap between probes: a checker handed over
// after a crash must be probed within interval + lease duration + 2s. From
// then on it is probed at its grid points: the first one used is the first
// at least Interval/2 after that first probe, so the gap after the first
// probe is between Interval/2 and 1.5·Interval, never two probes within
// half an interval.
//
// The same rule holds after every probe: the next turn is the first grid
// point at least Interval/2 after the probe started. A probe dispatched on
// time, or late by less than half an interval, is followed one interval
// after its grid point, free of drift however long probes take. A probe so
// late (saturated pool) that the next grid point is less than half an
// interval away stands in for the missed turns: the next turn is the grid
// point after that, and no burst of catch-up probes is fired. A turn that
// is skipped (previous probe still running, or not owned) moves to the
// first grid point after now, never off the grid.
//
// # Dispatcher
//
// Start runs a single dispatcher goroutine. It pops the earliest due items,
// and otherwise sleeps on a timer from the injected clock until the earliest
// due time, or until it is woken through a one-slot wake channel by an Upsert
// that created an earlier due time (or by the end of a cancelled probe, see
// below). There is no polling: an idle scheduler with an empty heap blocks
// without a timer.
//
// For each due check the dispatcher:
//
//   - skips the turn (next due: the next grid point) if the previous probe
//     of the same check is still running, so that one checker is never probed twice at
//     once;
//   - skips the turn if Options.Owns says this replica does not own the key
//     (the check stays scheduled; another shard probes it); Owns is asked
//     before, and when the bound was reached at once again after the
//     wait for it;
//   - sets the turn aside if the check's namespace already holds its share
//     of the bound (see below);
//   - otherwise takes its part of the bound (see below), schedules the next
//     turn, and starts a goroutine that probes with its own context, a
//     child of the Start context, stores the Outcome, calls Notify if it
//     must (see above), and only then gives its part back. A slow Notify
//     consumer therefore throttles probing instead of piling up goroutines.
//
// # The bound on probes in flight
//
// A probe is started when its turn is due, so the number in flight follows
// what is due: probes due per second × how long they take. What bounds it
// is memory: every probe in flight holds the bytes its kind costs
// (InFlightBytes, measured per kind: 24 KiB for http, 76 KiB for https,
// up to 152 KiB for grpcs; probing.MaxAddresses times that for a target
// that probes every address of its name) of a budget (a weighted semaphore of
// MemoryBudget(Options.MemoryLimit) bytes: a quarter of GOMEMLIMIT, 64 MiB
// when none is set). Options.Workers, when set, bounds their number as
// well. A due turn that finds the bound reached waits for a probe to end;
// the dispatcher waits with it, so turns are started in due order.
//
// # What cannot be kept is reported
//
// A turn skipped because the check's previous probe still runs, and a
// turn that waited for the bound (or was due while an earlier one waited),
// for its namespace's share, or started more than LateThreshold after it
// was due, are counted (Load) and marked on the Outcome (Overran, Behind),
// which keeps the mark for PaceHold intervals. A change of either mark is
// notified as any other change of the Outcome, so that the consumer can
// report it; the probes that keep their turns notify nothing more.
//
// # What changed at the target
//
// Each check remembers what its latest probes saw of the target's
// identity: the addresses its name resolved to, the SHA-256 fingerprint
// of the server's certificate and a hash of the final URL of an HTTP
// probe, each as the latest probe that observed it saw it (a probe that
// resolved nothing, shook no hands or got no response leaves it alone).
// A probe that sees a part differ makes a TargetChange, numbered across
// the scheduler, which every Outcome of the check carries from then on
// and whose arrival is notified although the outcome is otherwise the
// same (a certificate rotated with the same expiry). The failure streak
// that starts within ChangeHorizon after a change ends its messages with
// it ("(certificate changed 4m before)"), the same words for the whole
// streak; the success after such a streak consumes the change. None of
// it is kept beyond a few fixed-size values per check, and it is
// forgotten with the outcome.
//
// # Fairness between namespaces
//
// A namespace may hold at most Options.NamespaceShare of the bound at once
// (half of it by default): that share of the memory budget, and when
// Options.Workers is set at most max(1, ceil(NamespaceShare × Workers))
// probes, counted from the dispatch of a probe until its worker gives its
// part back; a namespace holding nothing may always start one probe.
// Without this, a namespace whose targets accept connections and never
// answer would take the whole bound until the probes time out, and every
// other namespace's probes would wait. A due turn of a namespace at its limit leaves the heap
// and is set aside, so the dispatcher goes on with the due turns of other
// namespaces and never spins on it; when a probe of the namespace ends, the
// dispatcher takes the oldest of its turns set aside before anything from
// the heap. A turn set aside is the check's only turn: once dispatched,
// its next turn is the first grid point at least half an interval after
// the probe, as for any late probe. A namespace alone on a
// replica is limited too: set NamespaceShare to 1 to let it use the whole
// bound (its turns then wait for the bound itself).
//
// A replica schedules every check, owned or not, so that a change of
// ownership needs no Upsert: a check gained is probed at its next grid
// point. Disown, called when a check is lost, cancels its probe in flight
// and forgets its Outcome but keeps it on the grid. With a Builder
// (SetBuilder) the checks a replica does not probe are kept without their
// targets, which are most of a check's memory: the dispatcher builds one
// when a turn finds its check owned, before it probes it. Once stopped, the
// scheduler tells from when it started no probe of a check it owned
// (StoppedProbing): a replica shutting down hands that instant to the
// others, who probe exactly the turns it did not (Gained).
//
// Remove, and an Upsert that changes a check, cancel the probe in flight for
// that key. Its late result is discarded because the revision it was started
// for is no longer current. Until that cancelled probe has actually returned,
// the new revision of the check is not probed: its due item is parked and
// re-queued, due at once, by the worker of the cancelled probe when it
// finishes, so the new target is probed promptly without ever overlapping the
// old probe.
//
// # Lock discipline
//
// One mutex guards the heap, the checks and the in-flight probes. It is held
// only for short, non-blocking bookkeeping. It is never held while waiting
// for the bound, while probing, while calling Options.Owns, while calling
// Notify, or while logging. This matters because the consumer of Notify
// calls Upsert, Remove and Latest: calling Notify with the lock held would
// deadlock as soon as that consumer is slower than the workers. The only
// foreign code called with the lock held is the clock and Options.Rand,
// which must not block. Wake-ups are sent (non-blocking) with the lock held
// and the dispatcher drains the wake channel with the lock held just before
// it reads the heap, so a pending wake-up always reports a change the
// dispatcher has not seen yet; this also keeps tests that step a fake clock
// free of races with the dispatcher arming its timer.
//
// # Metrics
//
// Options.Observer is told when each probe starts (with its lag behind the
// due time) and finishes (only probes whose Outcome was stored). Snapshot
// copies, under the lock, every check's latest Outcome and its success and
// failure counts, which survive Upsert but not Remove; InFlight counts the
// probes running, and Load tells the bound, what the probes in flight hold
// of it and the turns that could not be kept. Metrics read them at scrape
// time (controllers/metrics).
//
// # Shutdown
//
// When the context given to Start is done, Start cancels every probe in
// flight (their contexts are children of it) and waits for every goroutine it
// started, including workers blocked in Notify (Notify receives the same
// context and must return once it is done), before returning. Results of
// probes cancelled by shutdown are discarded.
package scheduler
