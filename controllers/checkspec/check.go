package checkspec

import (
	"cmp"
	"crypto/tls"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// tlsVersions maps spec.tls.minVersion to crypto/tls.
var tlsVersions = map[string]uint16{
	"1.0": tls.VersionTLS10, "1.1": tls.VersionTLS11, "1.2": tls.VersionTLS12, "1.3": tls.VersionTLS13,
}

// CheckFor translates a WebChecker's spec into the scheduler's Check, with
// every field resolved: a field the API server did not default (an object
// stored before the CRD carried the default) takes the default declared in
// api/v1alpha1. secrets reads the Secret values the spec refers to; nil
// means Secret access is turned off. A Secret that cannot be used is a
// *SecretError, a failed read that a retry may fix a *SecretReadError, a
// condition that does not compile a *ConditionError, a regular expression
// over the pattern package's bounds a *RegexTooComplexError (wrapped),
// and any other error an invalid spec. It compiles spec.conditions on every call and uses no
// default proxy: the reconciler uses a CheckBuilder.
func CheckFor(wc *webcheckerv1alpha1.WebChecker, secrets SecretValues) (scheduler.Check, error) {
	return CheckBuilder{}.CheckFor(wc, secrets)
}

// CheckBuilder builds Checks (see CheckFor) with the operator's settings.
// The zero value compiles conditions on every call and has no default
// proxy.
type CheckBuilder struct {
	// Judges caches compiled conditions; nil compiles them on every call.
	Judges *JudgeCache
	// Targets keeps each checker's built Target; nil builds one on every
	// call.
	Targets *TargetCache
	// Proxy is the proxy of the checkers without spec.proxy (--proxy-url,
	// --no-proxy).
	Proxy DefaultProxy
}

// CheckFor is CheckFor with b's settings.
func (b CheckBuilder) CheckFor(wc *webcheckerv1alpha1.WebChecker, secrets SecretValues) (scheduler.Check, error) {
	return b.CheckForIn(nil, wc, secrets)
}

// CheckForIn is CheckFor for a checker of the Namespace ns (nil when
// unknown): the target's EgressAllow is what ns's EgressAllowAnnotation
// allows. An annotation that does not parse is an *EgressAllowanceError.
func (b CheckBuilder) CheckForIn(ns *corev1.Namespace, wc *webcheckerv1alpha1.WebChecker, secrets SecretValues) (scheduler.Check, error) {
	check, err := ScheduleFor(wc)
	if err != nil {
		return scheduler.Check{}, err
	}
	spec := wc.Spec
	kind, err := kindOf(spec.Host)
	if err != nil {
		return scheduler.Check{}, err
	}
	path := ""
	if kind == probing.KindHTTP {
		path = cmp.Or(spec.Path, webcheckerv1alpha1.DefaultPath)
	}
	url, err := probing.BuildURL(spec.Host, path)
	if err != nil {
		return scheduler.Check{}, fmt.Errorf("invalid target: %w", err)
	}
	timeout := durationOr(spec.Timeout, webcheckerv1alpha1.DefaultTimeout)
	if timeout <= 0 {
		return scheduler.Check{}, fmt.Errorf("invalid target: timeout %s must be positive", timeout)
	}
	if timeout > webcheckerv1alpha1.MaxTimeout {
		return scheduler.Check{}, fmt.Errorf("invalid target: timeout %s must be at most %s", timeout, webcheckerv1alpha1.MaxTimeout)
	}
	if timeout >= check.Interval {
		return scheduler.Check{}, fmt.Errorf("invalid target: timeout %s must be less than interval %s", timeout, check.Interval)
	}
	target := probing.TargetSpec{
		URL:               url,
		Timeout:           timeout,
		CertExpiryWarning: webcheckerv1alpha1.DefaultCertExpiryWarning,
	}
	if target.DNSServer, err = DNSServerAddress(spec.DNSServer); err != nil {
		return scheduler.Check{}, fmt.Errorf("invalid target: %w", err)
	}
	switch spec.IPFamily {
	case webcheckerv1alpha1.IPFamilyIPv4:
		target.IPFamily = probing.IPFamilyIPv4
	case webcheckerv1alpha1.IPFamilyIPv6:
		target.IPFamily = probing.IPFamilyIPv6
	}
	if target.Addresses, err = addressModeOf(spec.Addresses); err != nil {
		return scheduler.Check{}, fmt.Errorf("invalid target: %w", err)
	}
	if err := setKindOptions(kind, &spec, &target); err != nil {
		return scheduler.Check{}, fmt.Errorf("invalid target: %w", err)
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
		target.CertExpiryWarning = durationOr(o.CertExpiryWarning, webcheckerv1alpha1.DefaultCertExpiryWarning)
	}
	if target.Judge, err = b.Judges.judge(kind, spec.Conditions); err != nil {
		return scheduler.Check{}, err
	}
	if err := resolveSecrets(wc, secrets, &target); err != nil {
		return scheduler.Check{}, err
	}
	if spec.Proxy == nil && kind != probing.KindDNS {
		target.Proxy = b.Proxy.For(url)
	}
	if target.EgressAllow, err = EgressAllowanceOf(ns); err != nil {
		return scheduler.Check{}, err
	}
	if check.Target, err = b.Targets.target(check.Key, target); err != nil {
		return scheduler.Check{}, err
	}
	return check, nil
}

// ScheduleFor is the part of wc's Check that places it on a schedule: its
// key, generation, interval, vantage points and thresholds, with the zero
// Target. It is what a replica that does not probe the checker keeps (see
// scheduler.Scheduler.SetBuilder), and costs what reading those fields
// does: no Secret is read, no target built, no condition compiled. A field
// the API server rejects is an error, as in CheckFor.
func ScheduleFor(wc *webcheckerv1alpha1.WebChecker) (scheduler.Check, error) {
	interval := durationOr(wc.Spec.Interval, webcheckerv1alpha1.DefaultInterval)
	if interval < time.Second {
		return scheduler.Check{}, fmt.Errorf("invalid target: interval %s must be at least 1s", interval)
	}
	thresholds, err := ThresholdsFor(wc)
	if err != nil {
		return scheduler.Check{}, err
	}
	return scheduler.Check{
		Key:           types.NamespacedName{Namespace: wc.Namespace, Name: wc.Name},
		Generation:    wc.Generation,
		Interval:      interval,
		VantagePoints: VantagePointsOf(wc),
		Thresholds:    thresholds,
	}, nil
}

// durationOr returns d's duration, or def when d is not set.
func durationOr(d *metav1.Duration, def time.Duration) time.Duration {
	if d == nil {
		return def
	}
	return d.Duration
}

// ThresholdsFor resolves a WebChecker's spec.failureThreshold and
// spec.successThreshold, a missing one to the default declared in
// api/v1alpha1, and its spec.failureWindow. What the API server rejects
// is an error: a threshold outside 1..MaxThreshold, a window outside its
// bounds or beside a threshold other than 1.
func ThresholdsFor(wc *webcheckerv1alpha1.WebChecker) (scheduler.Thresholds, error) {
	failure := ptr.Deref(wc.Spec.FailureThreshold, webcheckerv1alpha1.DefaultFailureThreshold)
	success := ptr.Deref(wc.Spec.SuccessThreshold, webcheckerv1alpha1.DefaultSuccessThreshold)
	for _, f := range []struct {
		name  string
		value int32
	}{{"failureThreshold", failure}, {"successThreshold", success}} {
		if f.value < 1 || f.value > webcheckerv1alpha1.MaxThreshold {
			return scheduler.Thresholds{}, fmt.Errorf("invalid target: %s %d must be between 1 and %d", f.name, f.value, webcheckerv1alpha1.MaxThreshold)
		}
	}
	t := scheduler.Thresholds{Failure: int(failure), Success: int(success)}
	w, err := windowFor(wc.Spec.FailureWindow, t)
	if err != nil {
		return scheduler.Thresholds{}, err
	}
	t.Window = w
	return t, nil
}

// VantagePointsOf is wc's spec.vantagePoints, resolved to its default when
// missing and clamped to the range the API server enforces.
func VantagePointsOf(wc *webcheckerv1alpha1.WebChecker) int {
	k := ptr.Deref(wc.Spec.VantagePoints, webcheckerv1alpha1.DefaultVantagePoints)
	return int(min(max(k, 1), webcheckerv1alpha1.MaxVantagePoints))
}

// addressModeOf is the probing.AddressMode of spec.addresses (empty is
// First, the default).
func addressModeOf(mode webcheckerv1alpha1.AddressMode) (probing.AddressMode, error) {
	switch mode {
	case "", webcheckerv1alpha1.AddressesFirst:
		return probing.AddressesFirst, nil
	case webcheckerv1alpha1.AddressesAny:
		return probing.AddressesAny, nil
	case webcheckerv1alpha1.AddressesAll:
		return probing.AddressesAll, nil
	case webcheckerv1alpha1.AddressesMajority:
		return probing.AddressesMajority, nil
	}
	return "", fmt.Errorf("unknown addresses %q (expected First, Any, All or Majority)", string(mode))
}
