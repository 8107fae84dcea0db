package checkspec_test

import (
	"testing"
	"time"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers/checkspec"
	"github.com/networkio/webchecker/probing/probetest"
)

// BenchmarkCheckFor measures what one reconcile spends on the check of an
// https checker with a CA bundle from a Secret: in full (CheckFor, its
// target built, as on the replicas that probe it) and on the grid only
// (ScheduleFor, as on every other replica).
func BenchmarkCheckFor(b *testing.B) {
	wc := newChecker("ns", "api", "https://api.example", "/healthz")
	ca := string(probetest.NewCertificate(b, "ca.test", time.Now(), time.Now().Add(time.Hour)).PEM)
	secrets := fakeSecrets(map[string]map[string]string{"ca": {"ca.crt": ca}})
	wc.Spec.TLS = &webcheckerv1alpha1.TLSOptions{CASecretRef: &webcheckerv1alpha1.SecretKeySelector{Name: "ca", Key: "ca.crt"}}
	b.Run("full", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := checkspec.CheckFor(wc, secrets); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("grid only", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := checkspec.ScheduleFor(wc); err != nil {
				b.Fatal(err)
			}
		}
	})
}
