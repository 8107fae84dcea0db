package main

import (
	"runtime"
	"testing"
	"unsafe"

	"k8s.io/apimachinery/pkg/runtime/serializer"
	toolscache "k8s.io/client-go/tools/cache"

	webcheckerv1alpha1 "github.com/networkio/webchecker/api/v1alpha1"
)

// appliedChecker is a WebChecker as the API server sends it to a replica's
// informer: created by kubectl apply (client-side, so with its
// last-applied annotation and two managedFields entries), every default
// applied, and a status written by its owner. Its name and path are those
// of the benchmarks' checkers.
const appliedChecker = `{"apiVersion":"test.network.io/v1alpha1","kind":"WebChecker",
"metadata":{"name":"wc-01234","namespace":"bench","uid":"6a1f3e2b-7c44-4d1e-9f0a-1234567890ab",
"resourceVersion":"123456789","generation":1,"creationTimestamp":"2026-12-07T10:00:00Z",
"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"apiVersion\":\"test.network.io/v1alpha1\",\"kind\":\"WebChecker\",\"metadata\":{\"annotations\":{},\"name\":\"wc-01234\",\"namespace\":\"bench\"},\"spec\":{\"host\":\"http://127.0.0.17:8080\",\"interval\":\"10s\",\"path\":\"/ok/01234\",\"timeout\":\"4s\"}}\n"},
"managedFields":[
{"manager":"kubectl-client-side-apply","operation":"Update","apiVersion":"test.network.io/v1alpha1","time":"2026-12-07T10:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}}},"f:spec":{".":{},"f:host":{},"f:interval":{},"f:path":{},"f:timeout":{}}}},
{"manager":"manager","operation":"Update","apiVersion":"test.network.io/v1alpha1","time":"2026-12-07T10:00:05Z","fieldsType":"FieldsV1","fieldsV1":{"f:status":{"f:conditions":{".":{},"k:{\"type\":\"Ready\"}":{".":{},"f:lastTransitionTime":{},"f:message":{},"f:observedGeneration":{},"f:reason":{},"f:status":{},"f:type":{}}},"f:httpStatusCode":{},"f:observedGeneration":{},"f:shard":{}}},"subresource":"status"}]},
"spec":{"host":"http://127.0.0.17:8080","path":"/ok/01234","interval":"10s","timeout":"4s","method":"GET",
"addresses":"First","ipFamily":"Any","suspend":false,"followRedirects":true,"vantagePoints":1,
"failureThreshold":1,"successThreshold":1},
"status":{"observedGeneration":1,"httpStatusCode":200,"shard":"replica-a",
"conditions":[{"type":"Ready","status":"True","reason":"ProbeSucceeded","message":"HTTP 200",
"observedGeneration":1,"lastTransitionTime":"2026-12-07T10:00:05Z"}]}}`

// BenchmarkCachedCheckerBytes measures what a replica's informer cache
// holds per WebChecker, the part of a replica's memory that grows with
// every checker of the cluster, probed here or not: 100,000 copies of
// appliedChecker decoded as the informer decodes them, each passed through
// the replica's cache transform ("stripped", as a replica keeps them) or
// not ("decoded"), and kept. It reports the live heap per checker; the
// struct alone ("struct-B") is the WebChecker type's size, which no
// transform can shrink.
//
//	go test ./cmd/manager -run '^$' -bench CachedCheckerBytes -benchtime 3x
func BenchmarkCachedCheckerBytes(b *testing.B) {
	for _, tc := range []struct {
		name      string
		transform func() toolscache.TransformFunc
	}{
		{"decoded", func() toolscache.TransformFunc { return func(in any) (any, error) { return in, nil } }},
		{"stripped", stripUnread},
	} {
		b.Run(tc.name, func(b *testing.B) {
			decoder := serializer.NewCodecFactory(newScheme()).UniversalDeserializer()
			raw := []byte(appliedChecker)
			const checkers = 100_000
			var perChecker float64
			for b.Loop() {
				transform := tc.transform()
				kept := make([]any, checkers)
				before := liveHeap()
				for i := range kept {
					obj, _, err := decoder.Decode(raw, nil, nil)
					if err != nil {
						b.Fatal(err)
					}
					if kept[i], err = transform(obj); err != nil {
						b.Fatal(err)
					}
				}
				perChecker = (float64(liveHeap()) - float64(before)) / checkers
				runtime.KeepAlive(kept)
			}
			b.ReportMetric(perChecker, "B/checker")
			b.ReportMetric(float64(unsafe.Sizeof(webcheckerv1alpha1.WebChecker{})), "struct-B")
		})
	}
}

// liveHeap returns the bytes of live heap objects after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
