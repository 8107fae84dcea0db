package ring

import (
	"fmt"
	"testing"
)

// BenchmarkOwner measures one lookup in a ring of 10 members with the given
// virtual nodes per member.
func BenchmarkOwner(b *testing.B) {
	keys := testKeys(numKeys)
	for _, vnodes := range []int{DefaultVirtualNodes, 1000} {
		b.Run(fmt.Sprintf("members=10/vnodes=%d", vnodes), func(b *testing.B) {
			r := New(podNames(10), vnodes)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				_ = r.Owner(keys[i%len(keys)])
				i++
			}
		})
	}
}

// BenchmarkNew measures building a ring of 10 members.
func BenchmarkNew(b *testing.B) {
	members := podNames(10)
	for _, vnodes := range []int{DefaultVirtualNodes, 1000} {
		b.Run(fmt.Sprintf("members=10/vnodes=%d", vnodes), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = New(members, vnodes)
			}
		})
	}
}
