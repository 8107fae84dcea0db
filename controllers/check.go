package controllers

import (
	"fmt"
	"net/http"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// Defaults for fields that the API server normally defaults. They matter
// only for objects stored before the CRD carried these defaults.
const (
	defaultInterval = 10 * time.Second
	defaultTimeout  = time.Second
)

// CheckFor translates a WebChecker's spec into the scheduler's Check.
func CheckFor(wc *webcheckerv1alpha1.WebChecker) (scheduler.Check, error) {
	spec := wc.Spec
	path := spec.Path
	if path == "" {
		path = "/"
	}
	url, err := probing.BuildURL(spec.Host, path)
	if err != nil {
		return scheduler.Check{}, fmt.Errorf("invalid target: %w", err)
	}
	method := spec.Method
	if method == "" {
		method = http.MethodGet
	}
	interval, timeout := defaultInterval, defaultTimeout
	if spec.Interval != nil {
		interval = spec.Interval.Duration
	}
	if spec.Timeout != nil {
		timeout = spec.Timeout.Duration
	}
	if interval < time.Second || timeout <= 0 {
		return scheduler.Check{}, fmt.Errorf("invalid target: interval %s must be at least 1s and timeout %s positive", interval, timeout)
	}
	if timeout >= interval {
		return scheduler.Check{}, fmt.Errorf("invalid target: timeout %s must be less than interval %s", timeout, interval)
	}
	codes := make([]int, 0, len(spec.ExpectedStatusCodes))
	for _, c := range spec.ExpectedStatusCodes {
		codes = append(codes, int(c))
	}
	// A set: the order in which the user listed the codes is not a change.
	slices.Sort(codes)
	return scheduler.Check{
		Key:        types.NamespacedName{Namespace: wc.Namespace, Name: wc.Name},
		Generation: wc.Generation,
		Interval:   interval,
		Target: probing.Target{
			URL:                 url,
			Method:              method,
			Timeout:             timeout,
			ExpectedStatusCodes: codes,
			FollowRedirects:     spec.FollowRedirects == nil || *spec.FollowRedirects,
		},
	}, nil
}
