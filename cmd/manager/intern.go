package main

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
)

// stringPool hands out one shared copy of each string it is given, so that
// the fields that repeat across the cached WebCheckers (apiVersion and
// kind, namespace, host, method, condition types, statuses, reasons and
// the common messages, the shard, the quorum)
// are held once instead of once per checker: every object the informer
// decodes comes with strings of its own. It keeps at most limit strings of
// at most maxLen bytes; beyond that a string is returned as given, so that
// checkers with messages of their own (a failure naming its address)
// cannot make it grow without bound. It is safe for concurrent use.
type stringPool struct {
	mu      sync.Mutex
	strings map[string]string
	limit   int
	maxLen  int
}

// Bounds of the cache's stringPool: 4,096 strings of at most 256 bytes
// (1 MiB at most), many more than the distinct values of the fields above
// in a fleet whose checkers mostly succeed.
const (
	poolLimit  = 4096
	poolMaxLen = 256
)

func newStringPool(limit, maxLen int) *stringPool {
	return &stringPool{strings: map[string]string{}, limit: limit, maxLen: maxLen}
}

// intern returns the pool's copy of s, adding s if there is room.
func (p *stringPool) intern(s string) string {
	if s == "" || len(s) > p.maxLen {
		return s
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if shared, ok := p.strings[s]; ok {
		return shared
	}
	if len(p.strings) < p.limit {
		p.strings[s] = s
	}
	return s
}

// internChecker replaces wc's repeating strings by the pool's copies.
func (p *stringPool) internChecker(wc *webcheckerv1alpha1.WebChecker) {
	wc.APIVersion, wc.Kind = p.intern(wc.APIVersion), p.intern(wc.Kind)
	wc.Namespace = p.intern(wc.Namespace)
	wc.Spec.Host = p.intern(wc.Spec.Host)
	wc.Spec.Method = p.intern(wc.Spec.Method)
	wc.Spec.IPFamily = webcheckerv1alpha1.IPFamily(p.intern(string(wc.Spec.IPFamily)))
	wc.Status.Shard, wc.Status.Quorum = p.intern(wc.Status.Shard), p.intern(wc.Status.Quorum)
	for i := range wc.Status.Conditions {
		c := &wc.Status.Conditions[i]
		c.Type, c.Reason, c.Message = p.intern(c.Type), p.intern(c.Reason), p.intern(c.Message)
		c.Status = metav1.ConditionStatus(p.intern(string(c.Status)))
	}
	for i := range wc.Status.VantagePoints {
		e := &wc.Status.VantagePoints[i]
		e.Shard, e.Zone, e.Reason, e.Message = p.intern(e.Shard), p.intern(e.Zone), p.intern(e.Reason), p.intern(e.Message)
		e.Ready = metav1.ConditionStatus(p.intern(string(e.Ready)))
	}
}
