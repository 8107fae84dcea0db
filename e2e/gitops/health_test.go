package gitops

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/networkio/webchecker/e2e/framework"
	"github.com/networkio/webchecker/probing/probetest"
)

// progressing is what every tool must say of a checker without a result
// of its current generation.
var progressing = verdicts{kstatus: status.InProgressStatus, flux: status.InProgressStatus, argo: ArgoProgressing}

// TestGitOpsHealthOfDecidedCheckers: what kstatus, Flux with the shipped
// healthCheckExprs and Argo CD with the shipped health Lua say of
// WebCheckers that the built manager decided: up, down, suspended, and
// unprobeable as written. Flux deploys all but the last (a down server is
// the checker's finding, not a failed deployment); Argo CD shows down and
// unprobeable ones Degraded. kstatus alone reads a down or suspended
// checker as InProgress (its generic rules read Ready=False and
// Ready=Unknown so, and no condition it knows says otherwise): that is why
// the tools' own checks are shipped.
func TestGitOpsHealthOfDecidedCheckers(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "gitops-decided")
	up := probetest.NewTarget()
	t.Cleanup(up.Close)
	closed, err := framework.FreeLoopbackAddr() // nothing listens there
	require.NoError(t, err)

	tests := map[string]struct {
		spec map[string]any
		// reached tells the state the test judges.
		reached func(u *unstructured.Unstructured) bool
		want    verdicts
	}{
		"up": {
			spec:    map[string]any{"host": up.URL(), "interval": "1s", "timeout": "500ms"},
			reached: readyIs("True", "ProbeSucceeded"),
			want:    verdicts{kstatus: status.CurrentStatus, flux: status.CurrentStatus, argo: ArgoHealthy},
		},
		"down": {
			spec:    map[string]any{"host": "http://" + closed, "interval": "1s", "timeout": "500ms"},
			reached: readyIs("False", "ConnectionFailed"),
			want:    verdicts{kstatus: status.InProgressStatus, flux: status.CurrentStatus, argo: ArgoDegraded},
		},
		"suspended": {
			spec:    map[string]any{"host": up.URL(), "suspend": true},
			reached: readyIs("Unknown", "Suspended"),
			want:    verdicts{kstatus: status.InProgressStatus, flux: status.CurrentStatus, argo: ArgoSuspended},
		},
		"unprobeable as written": {
			spec:    map[string]any{"host": up.URL(), "bearerTokenSecretRef": map[string]any{"name": "absent", "key": "token"}},
			reached: readyIs("False", "SecretUnavailable"),
			want:    verdicts{kstatus: status.InProgressStatus, flux: status.FailedStatus, argo: ArgoDegraded},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			obj := fmt.Sprintf("decided-%d", time.Now().UnixNano())
			require.NoError(t, f.c.Create(context.Background(), checker(f.ns, obj, tc.spec)))
			u := f.waitFor(t, obj, tc.reached)
			assert.Equal(t, tc.want, f.judge(t, u), "status: %v", u.Object["status"])
			reconciling, _ := condition(u, "Reconciling")
			assert.Empty(t, reconciling, "a Reconciling condition on a decided checker")
		})
	}
}

// TestGitOpsHealthAwaitingAResult: every tool says "in progress" of a
// checker the built manager has no result of the current generation for:
// just created (the status not written yet, or Pending already if the read
// comes after the 2 s grace: the verdicts are the same), Pending with
// Reconciling, and a spec change whose first probe has not answered.
func TestGitOpsHealthAwaitingAResult(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "gitops-awaiting")
	slow := probetest.NewTarget()
	t.Cleanup(slow.Close)
	slow.SetDelay(40 * time.Second)
	changing := probetest.NewTarget()
	t.Cleanup(changing.Close)

	require.NoError(t, f.c.Create(ctx, checker(f.ns, "new", map[string]any{"host": slow.URL(), "interval": "60s", "timeout": "50s"})))
	fresh, err := get(ctx, f.c, f.ns, "new")
	require.NoError(t, err)
	assert.Equal(t, progressing, f.judge(t, fresh), "just created: %v", fresh.Object["status"])
	t.Logf("just created, read back with status %v", fresh.Object["status"])

	pending := f.waitFor(t, "new", func(u *unstructured.Unstructured) bool {
		_, reason := condition(u, "Ready")
		s, _ := condition(u, "Reconciling")
		return reason == "Pending" && s == "True"
	})
	assert.Equal(t, progressing, f.judge(t, pending), "Pending: %v", pending.Object["status"])

	changed := checker(f.ns, "changed", map[string]any{"host": changing.URL(), "path": "/v1", "interval": "60s", "timeout": "50s"})
	require.NoError(t, f.c.Create(ctx, changed))
	decided := f.waitFor(t, "changed", readyIs("True", "ProbeSucceeded"))
	require.Equal(t, status.CurrentStatus, f.judge(t, decided).flux)
	changing.SetDelay(40 * time.Second)
	require.NoError(t, f.c.Patch(ctx, changed, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"path":"/v2"}}`))))
	// The manager reconciles the change within these 3 s (its probe of
	// generation 2 takes 40 s): nothing it writes, if anything, may read as
	// decided.
	behind := f.holds(t, "changed", progressing, 3*time.Second)
	require.EqualValues(t, 2, behind.GetGeneration())
}
