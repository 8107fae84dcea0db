package controllers

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers/checkspec"
	"github.com/networkio/webchecker/probing"
	"github.com/networkio/webchecker/probing/scheduler"
)

// fixedOwnership owns and probes every checker, or none.
type fixedOwnership bool

func (o fixedOwnership) ShardID() string                                        { return "replica" }
func (o fixedOwnership) Paused() bool                                           { return false }
func (o fixedOwnership) Owns(types.NamespacedName) bool                         { return bool(o) }
func (o fixedOwnership) Probes(types.NamespacedName, int) bool                  { return bool(o) }
func (o fixedOwnership) VantagePoints(types.NamespacedName, int) []VantagePoint { return nil }

// oneChecker is a client.Client whose Get finds one WebChecker (the
// informer cache's answer is not what these tests look at).
type oneChecker struct {
	client.Client
	wc *webcheckerv1alpha1.WebChecker
}

func (c oneChecker) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if c.wc == nil || client.ObjectKeyFromObject(c.wc) != key {
		return apierrors.NewNotFound(schema.GroupResource{Group: webcheckerv1alpha1.GroupVersion.Group, Resource: "webcheckers"}, key.Name)
	}
	c.wc.DeepCopyInto(obj.(*webcheckerv1alpha1.WebChecker))
	return nil
}

// TestPlanBuildsTargetsOnlyWhereProbed: a replica that neither owns nor
// probes a checker schedules it without its target (the memory a target
// costs is spent by the replicas that probe it); one that owns it builds
// it, and so does the scheduler's Builder, which a turn that finds the
// checker owned calls, whatever the plan said. A checker that is gone
// cannot be built.
func TestPlanBuildsTargetsOnlyWhereProbed(t *testing.T) {
	wc := &webcheckerv1alpha1.WebChecker{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api", Generation: 3},
		Spec:       webcheckerv1alpha1.WebCheckerSpec{Host: "https://api.example", Path: "/healthz"},
	}
	key := client.ObjectKeyFromObject(wc)
	for name, tc := range map[string]struct {
		owns  bool
		built bool
	}{
		"owned":     {owns: true, built: true},
		"not owned": {owns: false, built: false},
	} {
		t.Run(name, func(t *testing.T) {
			r := &WebCheckerReconciler{
				Client:    oneChecker{wc: wc},
				Ownership: fixedOwnership(tc.owns),
				Checks:    checkspec.CheckBuilder{Targets: checkspec.NewTargetCache()},
			}
			p, err := r.plan(context.Background(), key, wc, false)
			require.NoError(t, err)
			require.NotNil(t, p.check, "scheduled, owned or not")
			assert.Equal(t, !tc.built, p.check.Target.IsZero(), "target built")
			assert.Equal(t, int64(3), p.check.Generation)

			c, ok := r.buildCheck(context.Background(), key)
			require.True(t, ok)
			assert.Equal(t, "https://api.example/healthz", c.Target.URL())
			want := *p.check
			want.Target = c.Target
			assert.Equal(t, want, c, "the Builder's check is the plan's, its target built")

			_, ok = r.buildCheck(context.Background(), types.NamespacedName{Namespace: "shop", Name: "gone"})
			assert.False(t, ok, "a checker that is gone was built")
		})
	}
}

// countingSecrets is a client.Reader of Secrets that counts its reads and
// finds one Secret, basic-auth, with a username and a password.
type countingSecrets struct {
	client.Reader
	reads *int
}

func (c countingSecrets) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	*c.reads++
	if key.Name != "basic-auth" {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, key.Name)
	}
	obj.(*corev1.Secret).Data = map[string][]byte{"username": []byte("u"), "password": []byte("p")}
	return nil
}

// TestPlanReadsNothingForCheckersProbedElsewhere: a replica that neither
// owns nor probes a checker keeps it on its grid from the spec alone. It
// reads none of the Secrets the probe needs and builds no target (every
// replica reconciles every checker, and a ring change reconciles each
// one it moves), even when the Secret is missing; the check it keeps is
// the owner's, but for the target. The owner reads the Secret.
func TestPlanReadsNothingForCheckersProbedElsewhere(t *testing.T) {
	for name, tc := range map[string]struct {
		owns      bool
		secret    string
		wantReads bool
		wantCheck bool
	}{
		"owned":                         {owns: true, secret: "basic-auth", wantReads: true, wantCheck: true},
		"owned, its Secret missing":     {owns: true, secret: "missing", wantReads: true, wantCheck: false},
		"not owned":                     {owns: false, secret: "basic-auth", wantCheck: true},
		"not owned, its Secret missing": {owns: false, secret: "missing", wantCheck: true},
	} {
		t.Run(name, func(t *testing.T) {
			wc := &webcheckerv1alpha1.WebChecker{
				ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api", Generation: 2},
				Spec: webcheckerv1alpha1.WebCheckerSpec{
					Host: "https://api.example", Interval: &metav1.Duration{Duration: 30 * time.Second},
					FailureThreshold:   ptr.To[int32](3),
					BasicAuthSecretRef: &webcheckerv1alpha1.SecretReference{Name: tc.secret},
				},
			}
			reads := 0
			r := &WebCheckerReconciler{
				Client:    oneChecker{wc: wc},
				Secrets:   countingSecrets{reads: &reads},
				Ownership: fixedOwnership(tc.owns),
				Checks:    checkspec.CheckBuilder{Targets: checkspec.NewTargetCache()},
			}
			p, err := r.plan(context.Background(), client.ObjectKeyFromObject(wc), wc, false)
			require.NoError(t, err)
			assert.Equal(t, tc.wantReads, reads > 0, "Secret reads: %d", reads)
			if !tc.wantCheck {
				assert.Nil(t, p.check)
				require.NotNil(t, p.notProbed, "why it is not probed")
				return
			}
			require.NotNil(t, p.check)
			assert.Equal(t, tc.owns, !p.check.Target.IsZero(), "target built")
			want, err := checkspec.ScheduleFor(wc)
			require.NoError(t, err)
			got := *p.check
			got.Target = probing.Target{}
			assert.Equal(t, want, got, "the check but for its target")
			assert.Equal(t, scheduler.Thresholds{Failure: 3, Success: 1}, got.Thresholds)
			assert.Equal(t, 30*time.Second, got.Interval)
		})
	}
}
