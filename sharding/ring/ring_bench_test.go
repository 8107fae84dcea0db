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

// BenchmarkVantagePoints measures one VantagePoints call in a ring of 100
// members with 100 virtual nodes each, for k = 1, 3 and 5, without zones and
// with the members spread round-robin over three zones (a map lookup, as a
// caller with the zones of the replicas' Leases would do).
func BenchmarkVantagePoints(b *testing.B) {
	keys := testKeys(numKeys)
	members := make([]string, 100)
	zones := make(map[string]string, len(members))
	for i := range members {
		members[i] = fmt.Sprintf("webchecker-%d", i)
		zones[members[i]] = []string{"zone-a", "zone-b", "zone-c"}[i%3]
	}
	r := New(members, DefaultVirtualNodes)
	zoneOfs := map[string]func(string) string{
		"nozones": nil,
		"3zones":  func(m string) string { return zones[m] },
	}
	for _, name := range []string{"nozones", "3zones"} {
		for _, k := range []int{1, 3, 5} {
			b.Run(fmt.Sprintf("members=100/vnodes=100/%s/k=%d", name, k), func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					_ = r.VantagePoints(keys[i%len(keys)], k, zoneOfs[name])
					i++
				}
			})
		}
	}
}
