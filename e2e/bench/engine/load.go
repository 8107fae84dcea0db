package main

import (
	"sync"
	"sync/atomic"
	"time"
)

// counts are the outcomes of a closed loop.
type counts struct {
	ok, failed int64
}

// closedLoop runs workers goroutines that each call op back to back until
// d has passed (a call in progress then is let finish and counted), and
// counts the calls by what op returned.
func closedLoop(workers int, d time.Duration, op func() bool) counts {
	var ok, failed atomic.Int64
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				if op() {
					ok.Add(1)
				} else {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return counts{ok: ok.Load(), failed: failed.Load()}
}
