package controllers

import (
	"crypto/tls"
	"fmt"
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
	// DefaultCertExpiryWarning is spec.tls.certExpiryWarning's default.
	DefaultCertExpiryWarning = 14 * 24 * time.Hour
)

// tlsVersions maps spec.tls.minVersion to crypto/tls.
var tlsVersions = map[string]uint16{
	"1.0": tls.VersionTLS10, "1.1": tls.VersionTLS11, "1.2": tls.VersionTLS12, "1.3": tls.VersionTLS13,
}

// CheckFor translates a WebChecker's spec into the scheduler's Check.
// secrets reads the Secret values the spec refers to; nil means Secret
// access is turned off. Errors reading Secrets are a *SecretError.
func CheckFor(wc *webcheckerv1alpha1.WebChecker, secrets SecretValues) (scheduler.Check, error) {
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
		method = webcheckerv1alpha1.DefaultMethod
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
	codes, err := probing.ParseStatusCodes(spec.ExpectedStatusCodes)
	if err != nil {
		return scheduler.Check{}, fmt.Errorf("invalid target: expectedStatusCodes: %w", err)
	}
	target := probing.Target{
		URL:                 url,
		Method:              method,
		Timeout:             timeout,
		ExpectedStatusCodes: codes,
		FollowRedirects:     spec.FollowRedirects == nil || *spec.FollowRedirects,
		Body:                spec.Body,
		CertExpiryWarning:   DefaultCertExpiryWarning,
	}
	switch spec.IPFamily {
	case webcheckerv1alpha1.IPFamilyIPv4:
		target.IPFamily = probing.IPFamilyIPv4
	case webcheckerv1alpha1.IPFamilyIPv6:
		target.IPFamily = probing.IPFamilyIPv6
	}
	if m := spec.BodyMatch; m != nil {
		maxBytes := webcheckerv1alpha1.DefaultMaxBodyBytes
		if m.MaxBodyBytes != nil {
			maxBytes = *m.MaxBodyBytes
		}
		if target.BodyMatch, err = probing.NewBodyMatch(m.Regex, m.Invert, maxBytes); err != nil {
			return scheduler.Check{}, fmt.Errorf("invalid target: bodyMatch: %w", err)
		}
	}
	if o := spec.TLS; o != nil {
		target.TLS = probing.TLSOptions{InsecureSkipVerify: o.InsecureSkipVerify, ServerName: o.ServerName}
		if o.MinVersion != "" {
			v, ok := tlsVersions[o.MinVersion]
			if !ok {
				return scheduler.Check{}, fmt.Errorf("invalid target: unknown tls.minVersion %q", o.MinVersion)
			}
			target.TLS.MinVersion = v
		}
		if o.CertExpiryWarning != nil {
			target.CertExpiryWarning = o.CertExpiryWarning.Duration
		}
	}
	if err := resolveSecrets(wc, secrets, &target); err != nil {
		return scheduler.Check{}, err
	}
	return scheduler.Check{
		Key:        types.NamespacedName{Namespace: wc.Namespace, Name: wc.Name},
		Generation: wc.Generation,
		Interval:   interval,
		Target:     target,
	}, nil
}
