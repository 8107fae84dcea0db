package controllers

import (
	"encoding/hex"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/probing/scheduler"
)

// Changes of what a checker's probes reach (scheduler.TargetChange: the
// addresses its name resolves to, the server's certificate, the final
// redirect location), recorded as Events by the checker's owner. Nothing of
// it is written to the status: a rotated certificate is no less Ready, and
// the failure it may cause says so in its own message.

// EventReasonTargetChanged (Normal): what the checker's probes reach
// changed: the addresses its host name resolves to, the server's
// certificate, or the final location of its redirects.
const EventReasonTargetChanged = "TargetChanged"

// TargetChangePeriod is the least time between two TargetChanged Events of
// one checker: the changes seen in between are folded into the next one,
// so that a name whose answers rotate, or a pool of servers each with its
// own certificate, records one Event per period rather than one per probe.
const TargetChangePeriod = 5 * time.Minute

// maxNoteAddresses bounds the addresses a TargetChanged note lists on each
// side of a change.
const maxNoteAddresses = 8

// reportTargetChange records, for the checker wc that this replica owns and
// probes, whose latest own outcome is latest (nil for none), the Event of
// the changes of its target not recorded yet, at most one per
// TargetChangePeriod and within the namespace's share of Events (see
// event). It returns how long to wait before the changes held back may be
// recorded, zero when none are.
func (r *WebCheckerReconciler) reportTargetChange(wc *webcheckerv1alpha1.WebChecker, latest *scheduler.Outcome) time.Duration {
	var change *scheduler.TargetChange
	if latest != nil {
		change = latest.Change
	}
	key := client.ObjectKeyFromObject(wc)
	due, wait := r.ledger().targetChange(key, wc.Generation, change, r.now(), TargetChangePeriod)
	if due == nil {
		return wait
	}
	r.event(wc, corev1.EventTypeNormal, EventReasonTargetChanged, "%s", targetChangeNote(due))
	return 0
}

// targetChange takes change, the latest change of the checker's target at
// generation (nil for none), into account and returns the changes to
// record now, folded into one, or nil and how long to wait before those
// held back may be recorded (zero when none are held back). A change is
// taken into account once, by its number, however often the checker is
// reconciled; changes are recorded at most once per period, measured from
// the latest recorded at now.
func (l *ledger) targetChange(key types.NamespacedName, generation int64, change *scheduler.TargetChange, now time.Time, period time.Duration) (due *scheduler.TargetChange, wait time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.records[key]
	if change == nil && (c == nil || c.generation != generation || c.heldChange == nil) {
		return nil, 0 // most checkers never see a change: no record for them
	}
	c = l.of(key, generation)
	if change != nil && change.Seq > c.changeSeq {
		c.changeSeq = change.Seq
		c.heldChange = foldChange(c.heldChange, change)
	}
	if c.heldChange == nil {
		return nil, 0
	}
	if !c.changeRecorded.IsZero() {
		if wait := c.changeRecorded.Add(period).Sub(now); wait > 0 {
			return nil, wait
		}
	}
	due, c.heldChange, c.changeRecorded = c.heldChange, nil, now
	return due, 0
}

// foldChange returns the changes held (nil for none) followed by next, as
// one: for each part, from what it was before the first change of it to
// what it is after the last. A part back where it was is no change; nil
// when none is left. held is never changed.
func foldChange(held, next *scheduler.TargetChange) *scheduler.TargetChange {
	if held == nil {
		c := *next
		return &c
	}
	c := *held
	c.Seq, c.At = next.Seq, next.At
	if next.What.Has(scheduler.TargetAddresses) {
		if !c.What.Has(scheduler.TargetAddresses) {
			c.OldAddresses = next.OldAddresses
		}
		c.NewAddresses = next.NewAddresses
	}
	if next.What.Has(scheduler.TargetCertificate) {
		if !c.What.Has(scheduler.TargetCertificate) {
			c.OldCertificate = next.OldCertificate
		}
		c.NewCertificate = next.NewCertificate
	}
	c.What |= next.What
	if c.What.Has(scheduler.TargetAddresses) && slices.Equal(c.OldAddresses, c.NewAddresses) {
		c.What &^= scheduler.TargetAddresses
		c.OldAddresses, c.NewAddresses = nil, nil
	}
	if c.What.Has(scheduler.TargetCertificate) && c.OldCertificate == c.NewCertificate {
		c.What &^= scheduler.TargetCertificate
	}
	if c.What == 0 {
		return nil
	}
	return &c
}

// targetChangeNote is the note of the TargetChanged Event of c. It holds
// nothing the target or a DNS server chose but addresses, formatted here:
// a certificate by the start of its SHA-256 fingerprints (its names are
// the server's choice), a redirect location by the fact that it changed.
func targetChangeNote(c *scheduler.TargetChange) string {
	var parts []string
	if c.What.Has(scheduler.TargetAddresses) {
		parts = append(parts, "addresses "+addressList(c.OldAddresses)+" → "+addressList(c.NewAddresses))
	}
	if c.What.Has(scheduler.TargetCertificate) {
		parts = append(parts, fmt.Sprintf("certificate SHA-256 %s… → %s…",
			hex.EncodeToString(c.OldCertificate[:8]), hex.EncodeToString(c.NewCertificate[:8])))
	}
	if c.What.Has(scheduler.TargetRedirect) {
		parts = append(parts, "the final redirect location changed")
	}
	return "The target changed: " + strings.Join(parts, "; ")
}

// addressList lists addrs, at most maxNoteAddresses of them.
func addressList(addrs []netip.Addr) string {
	shown := addrs[:min(len(addrs), maxNoteAddresses)]
	list := make([]string, 0, len(shown)+1)
	for _, a := range shown {
		list = append(list, a.String())
	}
	if more := len(addrs) - len(shown); more > 0 {
		list = append(list, fmt.Sprintf("and %d more", more))
	}
	return strings.Join(list, ", ")
}
