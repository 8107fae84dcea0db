package checkspec

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/lru"

	"github.com/networkio/webchecker/probing"
)

// TargetCache keeps the Target last built for each checker, so that a
// checker's target is parsed, validated and built (its CA pool included)
// once per change of what it is built from, not on every reconcile: a
// reconcile that finds the same TargetSpec reuses the Target the
// scheduler already probes. It is safe for concurrent use; a nil
// *TargetCache builds on every call.
type TargetCache struct {
	mu    sync.Mutex
	cache *lru.Cache
}

// targetCacheSize bounds a TargetCache. An entry shares its Target with
// the scheduler's Check, so it costs only its key; a checker pushed out
// is built again on its next reconcile. The reconciler keeps only the
// targets of the checkers its replica probes (see Forget).
const targetCacheSize = 100_000

// NewTargetCache returns an empty TargetCache.
func NewTargetCache() *TargetCache { return &TargetCache{cache: lru.New(targetCacheSize)} }

// target returns the Target of checker key built from spec: the one kept
// when it was built from an equal spec, else a new one (see
// probing.NewTarget), kept when it builds.
func (c *TargetCache) target(key types.NamespacedName, spec probing.TargetSpec) (probing.Target, error) {
	if c == nil {
		return probing.NewTarget(spec)
	}
	c.mu.Lock()
	kept, ok := c.cache.Get(key)
	c.mu.Unlock()
	if ok && kept.(probing.Target).BuiltFrom(spec) {
		return kept.(probing.Target), nil
	}
	t, err := probing.NewTarget(spec)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.cache.Remove(key)
		return probing.Target{}, err
	}
	c.cache.Add(key, t)
	return t, nil
}

// Forget drops the Target kept for checker key, if any: the checker is
// gone, or its replica no longer probes it and keeps no target for it.
// A nil *TargetCache keeps nothing.
func (c *TargetCache) Forget(key types.NamespacedName) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cache.Remove(key)
}
