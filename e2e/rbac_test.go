package e2e_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/e2e/framework"
)

// TestAggregatedRoles applies config/rbac/aggregate_roles.yaml to the real
// API server and checks, impersonating users bound to nothing but a
// built-in role in one namespace, what kubectl users expect: view reads
// WebCheckers and cannot create one; edit and admin create, change and
// delete them; none of them writes a status; a user bound to nothing can do
// nothing.
//
// The test control plane has no kube-controller-manager, whose
// clusterrole-aggregation controller fills the built-in roles' rules from
// the ClusterRoles their aggregationRule selects: aggregateClusterRoles does
// its work, reading the selectors from the roles the API server
// bootstrapped, so what is tested is that our labels match them and that
// the result grants what it should.
func TestAggregatedRoles(t *testing.T) {
	const ns = "e2e-rbac"
	ctx := context.Background()
	root, err := framework.RepoRoot()
	require.NoError(t, err)
	_, err = cp.Kubectl("", "apply", "-f", filepath.Join(root, "config", "rbac", "aggregate_roles.yaml"))
	require.NoError(t, err)
	clientset, err := kubernetes.NewForConfig(cp.Config)
	require.NoError(t, err)
	aggregateClusterRoles(t, ctx, clientset)

	if _, err := clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	for _, role := range []string{"view", "edit", "admin"} {
		_, err := clientset.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "rbac-" + role},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "rbac-" + role}},
		}, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
	}
	scheme, err := framework.NewScheme()
	require.NoError(t, err)
	as := func(user string) client.Client {
		cfg := rest.CopyConfig(cp.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
		c, err := client.New(cfg, client.Options{Scheme: scheme})
		require.NoError(t, err)
		return c
	}
	checker := func(name string) *webcheckerv1alpha1.WebChecker {
		return &webcheckerv1alpha1.WebChecker{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       webcheckerv1alpha1.WebCheckerSpec{Host: "example.invalid", Suspend: ptr.To(true)},
		}
	}
	admin := as("rbac-admin")
	require.NoError(t, admin.Create(ctx, checker("existing")))

	tests := map[string]struct {
		user                           string
		read, write, writeStatus, list bool
	}{
		"view":          {user: "rbac-view", read: true, list: true},
		"edit":          {user: "rbac-edit", read: true, list: true, write: true},
		"admin":         {user: "rbac-admin", read: true, list: true, write: true},
		"bound to none": {user: "rbac-nobody"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := as(tc.user)
			allowed := func(want bool, what string, err error) {
				t.Helper()
				if want {
					assert.NoError(t, err, "%s %s", tc.user, what)
					return
				}
				assert.True(t, apierrors.IsForbidden(err), "%s %s: want Forbidden, got %v", tc.user, what, err)
			}
			var list webcheckerv1alpha1.WebCheckerList
			allowed(tc.list, "lists WebCheckers", c.List(ctx, &list, client.InNamespace(ns)))
			existing := &webcheckerv1alpha1.WebChecker{}
			allowed(tc.read, "gets a WebChecker", c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "existing"}, existing))

			mine := checker(tc.user)
			allowed(tc.write, "creates a WebChecker", c.Create(ctx, mine))
			if tc.write {
				patch := client.MergeFrom(mine.DeepCopy())
				mine.Spec.Path = "/healthz"
				allowed(true, "patches its WebChecker", c.Patch(ctx, mine, patch))
				status := client.MergeFrom(mine.DeepCopy())
				mine.Status.Shard = "forged"
				allowed(false, "patches a status", c.Status().Patch(ctx, mine, status))
				allowed(true, "deletes its WebChecker", c.Delete(ctx, mine))
			}
			allowed(tc.write, "deletes a WebChecker of another (dry run)", c.Delete(ctx, checker("existing"), client.DryRunAll))
		})
	}
	// In another namespace a namespaced binding grants nothing.
	var list webcheckerv1alpha1.WebCheckerList
	assert.True(t, apierrors.IsForbidden(as("rbac-edit").List(ctx, &list, client.InNamespace("default"))), "a RoleBinding grants in its namespace only")
}

// aggregateClusterRoles does, once, what kube-controller-manager's
// clusterrole-aggregation controller does continuously: the rules of every
// ClusterRole with an aggregationRule become the union of the rules of the
// ClusterRoles its selectors match (sorted by name, without duplicates). It
// repeats until nothing changes, since the built-in roles aggregate each
// other (view into edit, edit into admin).
func aggregateClusterRoles(t *testing.T, ctx context.Context, clientset kubernetes.Interface) {
	t.Helper()
	for range 5 {
		roles, err := clientset.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		changed := false
		for _, role := range roles.Items {
			if role.AggregationRule == nil {
				continue
			}
			var rules []rbacv1.PolicyRule
			for _, selector := range role.AggregationRule.ClusterRoleSelectors {
				s, err := metav1.LabelSelectorAsSelector(&selector)
				require.NoError(t, err)
				matched := slices.DeleteFunc(slices.Clone(roles.Items), func(r rbacv1.ClusterRole) bool {
					return r.Name == role.Name || !s.Matches(labels.Set(r.Labels))
				})
				slices.SortFunc(matched, func(a, b rbacv1.ClusterRole) int { return strings.Compare(a.Name, b.Name) })
				for _, m := range matched {
					for _, rule := range m.Rules {
						if !slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool { return equality.Semantic.DeepEqual(r, rule) }) {
							rules = append(rules, rule)
						}
					}
				}
			}
			if equality.Semantic.DeepEqual(rules, role.Rules) {
				continue
			}
			role.Rules = rules
			_, err := clientset.RbacV1().ClusterRoles().Update(ctx, &role, metav1.UpdateOptions{})
			require.NoError(t, err, "aggregating into %s", role.Name)
			changed = true
		}
		if !changed {
			// RBAC authorizes from an informer: give it a moment.
			time.Sleep(500 * time.Millisecond)
			return
		}
	}
	t.Fatal("the ClusterRole aggregation did not settle")
}
