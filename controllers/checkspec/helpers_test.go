package checkspec_test

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
)

// newChecker is a WebChecker of namespace ns probing host and path every
// second, with a timeout of half a second (as the controllers suite's).
func newChecker(ns, name, host, path string) *webcheckerv1alpha1.WebChecker {
	return &webcheckerv1alpha1.WebChecker{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: webcheckerv1alpha1.WebCheckerSpec{
			Host:     host,
			Path:     path,
			Interval: &metav1.Duration{Duration: time.Second},
			Timeout:  &metav1.Duration{Duration: 500 * time.Millisecond},
		},
	}
}
