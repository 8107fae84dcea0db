package controllers

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
	"github.com/networkio/webchecker/controllers/checkspec"
)

// SecretNamesField is the WebChecker field index (in the manager's cache)
// of the names of the Secrets a checker refers to. It maps a Secret event to
// the checkers that use the Secret.
const SecretNamesField = "spec.secretNames"

// secretNamesIndex is the index function of SecretNamesField.
func secretNamesIndex(obj client.Object) []string {
	wc, ok := obj.(*webcheckerv1alpha1.WebChecker)
	if !ok {
		return nil
	}
	return checkspec.SecretNames(&wc.Spec)
}

// checkersUsingSecret maps a Secret to the WebCheckers in its namespace
// that refer to it.
func checkersUsingSecret(reader client.Reader) func(context.Context, *corev1.Secret) []reconcile.Request {
	return func(ctx context.Context, secret *corev1.Secret) []reconcile.Request {
		return checkerRequests(ctx, reader, client.InNamespace(secret.Namespace), client.MatchingFields{SecretNamesField: secret.Name})
	}
}
