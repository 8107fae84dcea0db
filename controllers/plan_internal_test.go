package controllers

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers/checkspec"
)

// fixedOwnership owns and probes every checker, or none.
type fixedOwnership bool

func (o fixedOwnership) ShardID() string                                        { return "replica" }
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
