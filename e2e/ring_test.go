package e2e_test

import (
	"bufio"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/networkio/webchecker/e2e/framework"
)

// replicaRing is a replica's view of its ring, as its metrics export it.
type replicaRing struct {
	// Members are the live members it sees (webchecker_shard_member),
	// sorted.
	Members []string
	// Fenced is webchecker_shard_fenced: it probes and writes nothing.
	Fenced bool
	// Fencings is webchecker_shard_fencings_total: how often it fenced
	// itself since it joined.
	Fencings float64
	// Changed is webchecker_shard_ring_changed_timestamp_seconds: when
	// this view last changed, on the replica's clock.
	Changed time.Time
}

func (r replicaRing) String() string {
	return fmt.Sprintf("%v fenced=%t fencings=%v", r.Members, r.Fenced, r.Fencings)
}

// ringOf scrapes a replica's metrics endpoint for its view of the ring.
// Only the webchecker_shard_ families are parsed: the per-checker series
// of a thousand checkers are of no use here.
func ringOf(ctx context.Context, m *framework.Manager) (replicaRing, error) {
	text, err := scrape(ctx, m)
	if err != nil {
		return replicaRing{}, err
	}
	var shard strings.Builder
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		name := strings.TrimPrefix(strings.TrimPrefix(line, "# HELP "), "# TYPE ")
		if strings.HasPrefix(name, "webchecker_shard_") {
			shard.WriteString(line)
			shard.WriteByte('\n')
		}
	}
	if err := sc.Err(); err != nil {
		return replicaRing{}, fmt.Errorf("reading the metrics of %s: %w", m.Options.ShardID, err)
	}
	fams, err := families(shard.String())
	if err != nil {
		return replicaRing{}, fmt.Errorf("%s: %w", m.Options.ShardID, err)
	}
	var r replicaRing
	for _, s := range fams["webchecker_shard_member"].GetMetric() {
		for _, l := range s.GetLabel() {
			if l.GetName() == "member" && s.GetGauge().GetValue() == 1 {
				r.Members = append(r.Members, l.GetValue())
			}
		}
	}
	slices.Sort(r.Members)
	fenced, ok := gaugeValue(fams, "webchecker_shard_fenced")
	if !ok {
		return replicaRing{}, fmt.Errorf("%s exports no webchecker_shard_fenced", m.Options.ShardID)
	}
	r.Fenced = fenced != 0
	f, ok := fams["webchecker_shard_fencings_total"]
	if !ok || len(f.GetMetric()) != 1 || f.GetMetric()[0].GetCounter() == nil {
		return replicaRing{}, fmt.Errorf("%s exports no webchecker_shard_fencings_total", m.Options.ShardID)
	}
	r.Fencings = f.GetMetric()[0].GetCounter().GetValue()
	changed, ok := gaugeValue(fams, "webchecker_shard_ring_changed_timestamp_seconds")
	if !ok {
		return replicaRing{}, fmt.Errorf("%s exports no webchecker_shard_ring_changed_timestamp_seconds", m.Options.ShardID)
	}
	if changed > 0 {
		r.Changed = time.Unix(0, int64(changed*1e9))
	}
	return r, nil
}

// agrees reports whether the replica sees an unfenced ring of exactly
// members.
func (r replicaRing) agrees(members []string) bool {
	return !r.Fenced && slices.Equal(r.Members, slices.Sorted(slices.Values(members)))
}
