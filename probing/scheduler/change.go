package scheduler

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/maphash"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/networkio/webchecker/probing"
)

// What the probes of a check saw of its target's identity (the addresses
// its name resolved to, its certificate, its final redirect location),
// and its changes.

// ChangeHorizon is how long a change of a check's target is mentioned in
// the message of the failure streak that starts after it: a failure within
// the hour after a certificate rotation is likely its consequence, one a
// day later is likely not.
const ChangeHorizon = time.Hour

// TargetParts is a set of the parts of a target's identity.
type TargetParts uint8

const (
	// TargetAddresses is the set of addresses the target's name resolved
	// to (probing.Result.ResolvedAddresses).
	TargetAddresses TargetParts = 1 << iota
	// TargetCertificate is the server's own certificate, by its SHA-256
	// fingerprint (probing.Result.Certificate). Its issuer is not compared
	// apart: the fingerprint covers all of the certificate.
	TargetCertificate
	// TargetRedirect is the URL of the final response of an http or https
	// probe (probing.Result.FinalURL).
	TargetRedirect
)

// targetPartNames names the parts of TargetParts, by bit.
var targetPartNames = [...]string{"addresses", "certificate", "redirect"}

// targetPartWords are the parts in a failure message, by bit.
var targetPartWords = [...]string{"addresses", "certificate", "redirect location"}

// Has reports whether p holds every part of q.
func (p TargetParts) Has(q TargetParts) bool { return p&q == q }

// Names lists the parts of p, in the order of their constants:
// "addresses", "certificate", "redirect".
func (p TargetParts) Names() []string {
	var names []string
	for i, name := range targetPartNames {
		if p&(1<<i) != 0 {
			names = append(names, name)
		}
	}
	return names
}

// String is the names of p joined with ",".
func (p TargetParts) String() string { return strings.Join(p.Names(), ",") }

// words says the parts of p in words: "certificate", "addresses and
// certificate", "addresses, certificate and redirect location".
func (p TargetParts) words() string {
	var words []string
	for i, word := range targetPartWords {
		if p&(1<<i) != 0 {
			words = append(words, word)
		}
	}
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// TargetChange is a change of what the probes of a check saw of its
// target: a part observed by a probe differs from what the latest probe
// that observed it saw. A part is compared only when both probes observed
// it (an address set of a probe that resolved nothing, a certificate of a
// probe that shook no hands, are no change), and the first observation
// of a part is none. It is never changed once an Outcome carries it.
type TargetChange struct {
	// Seq numbers the changes a Scheduler saw, from 1 up, across all its
	// checks: a caller that reports changes remembers, per check, the
	// latest it reported.
	Seq uint64
	// At is when the probe that saw the change finished (its Outcome.Time).
	At time.Time
	// What says which parts changed.
	What TargetParts
	// OldAddresses and NewAddresses are the address sets before and after
	// the change, when What has TargetAddresses.
	OldAddresses, NewAddresses []netip.Addr
	// OldCertificate and NewCertificate are the SHA-256 fingerprints of the
	// server's certificate before and after the change, when What has
	// TargetCertificate.
	OldCertificate, NewCertificate [sha256.Size]byte
}

// targetState is what the probes of one revision of a check saw of its
// target. Every check this replica probes has one, so it holds hashes
// and fixed-size values, not copies: the address set is shared with the
// Result that saw it (no Result's slice is ever changed), the final URL
// is a hash.
type targetState struct {
	// seen is the parts some probe observed; addrs, cert and url hold the
	// latest observation of each.
	seen  TargetParts
	addrs []netip.Addr
	cert  [sha256.Size]byte
	url   uint64
	// latest is the latest change, on every Outcome from then on.
	latest *TargetChange
	// pending is the latest change no failure streak has both mentioned
	// and ended since: a success after a streak that mentioned it
	// consumes it.
	pending *TargetChange
	// suffix is what the failures of the current streak end with ("" for
	// nothing), computed for suffixOf at the streak's first failure.
	suffix   string
	suffixOf *TargetChange
}

// urlSeed seeds the hashes of final URLs: they are compared within this
// process only.
var urlSeed = maphash.MakeSeed()

// identity is what r observed of its target: the parts it observed and
// their values.
func identity(r *probing.Result) (seen TargetParts, addrs []netip.Addr, cert [sha256.Size]byte, url uint64) {
	if r.ResolvedAddresses != nil {
		seen |= TargetAddresses
		addrs = r.ResolvedAddresses
	}
	if c := r.Certificate; c != nil && hex.DecodedLen(len(c.FingerprintSHA256)) == sha256.Size {
		if _, err := hex.Decode(cert[:], []byte(c.FingerprintSHA256)); err == nil {
			seen |= TargetCertificate
		}
	}
	if r.FinalURL != "" {
		seen |= TargetRedirect
		url = maphash.String(urlSeed, r.FinalURL)
	}
	return seen, addrs, cert, url
}

// watchTarget compares what o, the outcome of a probe of e's check about
// to be stored after prev (nil for none), saw of the target with what the
// probes before it saw, and sets o.Change to the check's latest change, a
// new one (numbered from *seq) when o saw one. A failure that starts a
// streak, or the first failure after a change, mentions the latest
// change within ChangeHorizon at the end of its message ("(certificate
// changed 4m before)"); the other failures of its streak repeat that
// ending, so that a steady failure keeps a steady message. o's FinalURL is
// cleared: the state keeps its hash only.
func (e *entry) watchTarget(o *Outcome, prev *Outcome, seq *uint64) {
	seen, addrs, cert, url := identity(&o.Result)
	o.Result.FinalURL = ""
	st := e.target
	if st == nil {
		if seen == 0 {
			return
		}
		st = &targetState{}
		e.target = st
	}
	var changed TargetParts
	both := seen & st.seen
	if both.Has(TargetAddresses) && !slices.Equal(addrs, st.addrs) {
		changed |= TargetAddresses
	}
	if both.Has(TargetCertificate) && cert != st.cert {
		changed |= TargetCertificate
	}
	if both.Has(TargetRedirect) && url != st.url {
		changed |= TargetRedirect
	}
	if changed != 0 {
		*seq++
		c := &TargetChange{Seq: *seq, At: o.Time, What: changed}
		if changed.Has(TargetAddresses) {
			c.OldAddresses, c.NewAddresses = st.addrs, addrs
		}
		if changed.Has(TargetCertificate) {
			c.OldCertificate, c.NewCertificate = st.cert, cert
		}
		st.latest, st.pending = c, c
	}
	if seen.Has(TargetAddresses) {
		st.addrs = addrs
	}
	if seen.Has(TargetCertificate) {
		st.cert = cert
	}
	if seen.Has(TargetRedirect) {
		st.url = url
	}
	st.seen |= seen
	o.Change = st.latest
	st.mention(o, prev)
}

// mention keeps the ending of the failure messages of the check's
// current streak, and ends o's message with it (see watchTarget). A
// success ends the streak; when the streak mentioned the pending change,
// the success consumes it.
func (st *targetState) mention(o *Outcome, prev *Outcome) {
	if o.Result.Success {
		if st.suffix != "" && st.suffixOf == st.pending {
			st.pending = nil
		}
		st.suffix, st.suffixOf = "", nil
		return
	}
	starts := prev == nil || prev.Result.Success
	if starts || st.pending != st.suffixOf {
		if c := st.pending; c != nil && o.Time.Sub(c.At) > ChangeHorizon {
			st.pending = nil // too old to mention, ever
		}
		st.suffix, st.suffixOf = "", st.pending
		if c := st.pending; c != nil {
			st.suffix = changeSuffix(c, o.Time.Sub(c.At), c.At.Equal(o.Time))
		}
	}
	if st.suffix != "" {
		o.Result.Message = probing.BoundMessage(o.Result.Message + " " + st.suffix)
	}
}

// changeSuffix is the ending of a failure message after c, age before:
// "(certificate changed 4m before)", or "(certificate changed since the
// previous probe)" when the failing probe is the one that saw it (its age
// is then zero, and says nothing).
func changeSuffix(c *TargetChange, age time.Duration, sameProbe bool) string {
	if sameProbe {
		return "(" + c.What.words() + " changed since the previous probe)"
	}
	return fmt.Sprintf("(%s changed %s before)", c.What.words(), inWords(age))
}

// inWords says d rounded down in its largest unit: seconds under a
// minute, minutes under an hour, hours.
func inWords(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	}
	return fmt.Sprintf("%dh", int(d/time.Hour))
}
