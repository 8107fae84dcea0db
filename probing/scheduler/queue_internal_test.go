package scheduler

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
)

// TestDueQueueOrder: items come off the queue by due time, whatever order
// (and with whatever ties) they were pushed and popped in, and push reports
// an item due before every queued one.
func TestDueQueueOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Unix(1_700_000_000, 0)
	var q dueQueue
	var want []time.Time // what is queued, sorted
	for i := range 5000 {
		if len(want) > 0 && rng.IntN(3) == 0 {
			require.Equal(t, want[0], q[0].due, "top after %d operations", i)
			q.pop()
			want = want[1:]
			continue
		}
		due := base.Add(time.Duration(rng.IntN(200)) * time.Millisecond) // many ties
		earliest := len(want) == 0 || due.Before(want[0])
		assert.Equal(t, earliest, q.push(due, types.NamespacedName{Name: "c"}, uint64(i)))
		pos, _ := slices.BinarySearchFunc(want, due, func(a, b time.Time) int { return a.Compare(b) })
		want = slices.Insert(want, pos, due)
	}
	for len(want) > 0 {
		require.Equal(t, want[0], q[0].due)
		q.pop()
		want = want[1:]
	}
	assert.Empty(t, q)
}
