package controllers

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
)

// listRecorder is a client.Reader whose List returns items and records
// the options it was given (the cache's own behaviour is not what these
// tests look at: only what checkerRequests asks of it).
type listRecorder struct {
	client.Reader
	items []webcheckerv1alpha1.WebChecker
	err   error
	opts  client.ListOptions
}

func (r *listRecorder) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	r.opts.ApplyOptions(opts)
	if r.err != nil {
		return r.err
	}
	list.(*webcheckerv1alpha1.WebCheckerList).Items = r.items
	return nil
}

// TestCheckerRequestsListsWithoutCopies: the map functions' list asks the
// cache for its own objects (no deep copy of every checker of a Namespace
// or Secret), keeps the caller's options, and returns a request per
// checker, none when the list fails.
func TestCheckerRequestsListsWithoutCopies(t *testing.T) {
	checker := func(name string) webcheckerv1alpha1.WebChecker {
		return webcheckerv1alpha1.WebChecker{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}}
	}
	for name, tc := range map[string]struct {
		reader *listRecorder
		want   []reconcile.Request
	}{
		"two checkers": {
			reader: &listRecorder{items: []webcheckerv1alpha1.WebChecker{checker("a"), checker("b")}},
			want: []reconcile.Request{
				{NamespacedName: types.NamespacedName{Namespace: "shop", Name: "a"}},
				{NamespacedName: types.NamespacedName{Namespace: "shop", Name: "b"}},
			},
		},
		"none":        {reader: &listRecorder{}, want: []reconcile.Request{}},
		"failed list": {reader: &listRecorder{err: errors.New("index missing")}, want: nil},
	} {
		t.Run(name, func(t *testing.T) {
			got := checkerRequests(context.Background(), tc.reader, client.InNamespace("shop"), client.MatchingFields{SecretNamesField: "ca"})
			assert.Equal(t, tc.want, got)
			assert.Equal(t, ptr.To(true), tc.reader.opts.UnsafeDisableDeepCopy)
			assert.Equal(t, "shop", tc.reader.opts.Namespace)
			assert.NotNil(t, tc.reader.opts.FieldSelector)
		})
	}
}
