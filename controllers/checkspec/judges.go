package checkspec

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"k8s.io/utils/lru"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/conditions"
	"github.com/networkio/webchecker/probing/pattern"
)

// ConditionError is a spec.conditions entry that does not compile or
// type-check: the checker is not probed, and Ready says why (reason
// InvalidCondition) until the spec changes.
type ConditionError struct {
	Message string
}

func (e *ConditionError) Error() string { return e.Message }

// JudgeCache keeps compiled spec.conditions, so that a checker's
// conditions are compiled once per change of its spec (and once for every
// checker with the same conditions), never per reconcile or probe. It is
// safe for concurrent use; a nil *JudgeCache compiles on every call.
type JudgeCache struct {
	mu    sync.Mutex
	cache *lru.Cache
}

// judgeCacheSize bounds a JudgeCache: checkers in use keep their Judge in
// the scheduler's Check anyway, the cache only spares compiling again.
const judgeCacheSize = 4096

// NewJudgeCache returns an empty JudgeCache.
func NewJudgeCache() *JudgeCache { return &JudgeCache{cache: lru.New(judgeCacheSize)} }

// compiled is a cache entry: a Judge or the error compiling gave.
type compiled struct {
	judge probing.Judge
	err   error
}

// judge returns the Judge of conds for targets of kind (nil without
// conditions), or a *ConditionError (a *RegexTooComplexError for a
// pattern of matches() over the pattern package's bounds).
func (c *JudgeCache) judge(kind probing.Kind, conds []webcheckerv1alpha1.ResponseCondition) (probing.Judge, error) {
	if len(conds) == 0 {
		return nil, nil
	}
	if c == nil {
		return compileConditions(kind, conds)
	}
	var key strings.Builder
	key.WriteString(string(kind))
	for _, cond := range conds {
		key.WriteString("\x00" + cond.Expression + "\x00" + cond.Message)
	}
	c.mu.Lock()
	v, ok := c.cache.Get(key.String())
	c.mu.Unlock()
	if ok {
		e := v.(compiled)
		return e.judge, e.err
	}
	judge, err := compileConditions(kind, conds)
	c.mu.Lock()
	c.cache.Add(key.String(), compiled{judge: judge, err: err})
	c.mu.Unlock()
	return judge, err
}

// compileConditions compiles conds for targets of kind.
func compileConditions(kind probing.Kind, conds []webcheckerv1alpha1.ResponseCondition) (probing.Judge, error) {
	in := make([]conditions.Condition, len(conds))
	for i, c := range conds {
		in[i] = conditions.Condition{Expression: c.Expression, Message: c.Message}
	}
	judge, err := conditions.Compile(kind, in)
	if err != nil {
		var ce *conditions.CompileError
		if errors.As(err, &ce) {
			// Named as the API server names fields: spec.conditions[0].expression.
			msg := probing.BoundMessage(fmt.Sprintf("spec.conditions[%d].%s: %v", ce.Index, ce.Field, err))
			if errors.Is(err, pattern.ErrTooComplex) {
				return nil, &RegexTooComplexError{Message: msg}
			}
			return nil, &ConditionError{Message: msg}
		}
		return nil, &ConditionError{Message: probing.BoundMessage("spec.conditions: " + err.Error())}
	}
	return judge, nil
}
