package controllers

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
)

// DefaultTriggerBuffer is the capacity of a Trigger made by NewTrigger.
const DefaultTriggerBuffer = 1024

// Trigger carries requests to reconcile a WebChecker from outside the API
// server (probe outcomes, and ownership changes) into the controller, where
// a source.Channel reads it.
type Trigger chan event.TypedGenericEvent[*webcheckerv1alpha1.WebChecker]

// NewTrigger makes a Trigger with a buffer of size (DefaultTriggerBuffer
// when size is not positive).
func NewTrigger(size int) Trigger {
	if size <= 0 {
		size = DefaultTriggerBuffer
	}
	return make(Trigger, size)
}

// Notify asks for key to be reconciled. It blocks while the channel is full
// and gives up when ctx is done. It matches the scheduler's Notify option.
func (t Trigger) Notify(ctx context.Context, key types.NamespacedName) {
	ev := event.TypedGenericEvent[*webcheckerv1alpha1.WebChecker]{
		Object: &webcheckerv1alpha1.WebChecker{},
	}
	ev.Object.Namespace, ev.Object.Name = key.Namespace, key.Name
	select {
	case t <- ev:
	case <-ctx.Done():
	}
}
