package framework

// HitsSince returns a copy of the requests received after the first n, in
// the order they arrived: a test that polls a busy Target can read only
// what is new (n is the number of hits it has already read).
func (t *Target) HitsSince(n int) []Hit {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n < 0 {
		n = 0
	}
	if n >= len(t.hits) {
		return nil
	}
	return append([]Hit(nil), t.hits[n:]...)
}
