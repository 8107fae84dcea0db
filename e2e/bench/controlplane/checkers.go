package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
)

// nameOf is the name of checker i.
func nameOf(i int) string { return fmt.Sprintf("wc-%05d", i) }

// creation is when the first create was sent and the last one returned.
type creation struct {
	first, last time.Time
}

func (c creation) took() time.Duration { return c.last.Sub(c.first) }

// createCheckers creates the size checkers with opts.createWorkers
// concurrent workers spread over the creating clients.
func (e *env) createCheckers(ctx context.Context) (creation, error) {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	work := make(chan int)
	for w := range e.opts.createWorkers {
		c := e.creators[w%len(e.creators)]
		wg.Go(func() {
			for i := range work {
				if err := c.Create(ctx, e.checker(i)); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("creating %s: %w", nameOf(i), err))
					mu.Unlock()
				}
			}
		})
	}
	c := creation{first: time.Now()}
	for i := range e.size {
		work <- i
	}
	close(work)
	wg.Wait()
	c.last = time.Now()
	if err := errors.Join(errs...); err != nil {
		return creation{}, err
	}
	return c, nil
}

// checker is the WebChecker of index i.
func (e *env) checker(i int) *webcheckerv1alpha1.WebChecker {
	wc := &webcheckerv1alpha1.WebChecker{
		ObjectMeta: metav1.ObjectMeta{Namespace: checkerNamespace, Name: nameOf(i)},
		Spec: webcheckerv1alpha1.WebCheckerSpec{
			Host:     e.targets.hostOf(i),
			Path:     pathOf(i),
			Interval: &metav1.Duration{Duration: e.opts.interval},
			Timeout:  &metav1.Duration{Duration: e.opts.timeoutOf(i)},
		},
	}
	if e.opts.kindOf(i) == kindHTTPS {
		wc.Spec.TLS = &webcheckerv1alpha1.TLSOptions{
			CASecretRef: &webcheckerv1alpha1.SecretKeySelector{Name: caSecretName, Key: caSecretKey},
		}
	}
	return wc
}
