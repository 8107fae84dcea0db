package scheduler

import (
	"math"

	"github.com/networkio/webchecker/probing"
)

// The bound on probes in flight: a memory budget, of which every probe in
// flight holds the bytes its kind costs. Pure functions; the figures are
// measured by TestProbeInFlightMemory (inflight_memory_test.go), which
// fails when a kind costs more than its figure here.

const (
	// DefaultMemoryBudget is the memory the probes in flight of a replica
	// may hold when no memory limit is known (Options.MemoryLimit zero or
	// math.MaxInt64): 64 MiB, what MemoryShare gives of the chart's
	// default limit of 256 MiB. It holds about 2,700 plain HTTP probes in
	// flight, or 860 https ones.
	DefaultMemoryBudget int64 = 64 << 20
	// MemoryShare is the share of the process's memory limit (GOMEMLIMIT)
	// that the probes in flight may hold; the rest is the checks' (their
	// schedule, and the targets of those this replica probes), the
	// informer cache and the runtime's: about 5.7 MiB per 1,000 checkers
	// when one replica probes them all (e2e/bench/README.md#memory).
	MemoryShare = 0.25
	// MinMemoryBudget is the least budget a memory limit gives: 8 MiB, at
	// least 64 https probes in flight.
	MinMemoryBudget int64 = 8 << 20
)

// Bytes one probe in flight holds, by kind, on the prober's side
// (connection, buffers, TLS state, goroutine stack) plus the server's
// side of a loopback socket: 200 probes held against servers that never
// answer measured, in live heap and stacks after a collection, over ten
// runs: http 10-17 KiB fresh and 3-13 KiB reused, https 50-61 KiB, tcp
// 8-19 KiB, tls 31-38 KiB, dns (udp) 71-77 KiB, grpc 93-101 KiB, grpcs
// 104-120 KiB (go1.26, linux/amd64). Each figure is the highest measured
// plus about a quarter, rounded up to 4 KiB.
const (
	httpInFlightBytes  = 24 << 10
	httpsInFlightBytes = 76 << 10
	tcpInFlightBytes   = 24 << 10
	tlsInFlightBytes   = 48 << 10
	dnsInFlightBytes   = 96 << 10
	grpcInFlightBytes  = 128 << 10
	grpcsInFlightBytes = 152 << 10
)

// InFlightBytes returns the bytes one probe of target holds while it is
// in flight, by its kind and whether it speaks TLS: what it takes of the
// memory budget. A target that probes every address of its name
// (probing.AddressMode other than First) holds one probe per address, as
// many as probing.MaxAddresses: how many its name has is known only once
// the probe resolved it. A target that was not built (which the prober
// refuses at once) costs what the costliest kind does.
func InFlightBytes(target probing.Target) int64 {
	if target.AddressMode() != probing.AddressesFirst {
		return probing.MaxAddresses * kindInFlightBytes(target)
	}
	return kindInFlightBytes(target)
}

// kindInFlightBytes is what one connection's probe of target holds, by its
// kind.
func kindInFlightBytes(target probing.Target) int64 {
	tls := target.UsesTLS()
	switch target.Kind() {
	case probing.KindHTTP:
		if tls {
			return httpsInFlightBytes
		}
		return httpInFlightBytes
	case probing.KindTCP:
		return tcpInFlightBytes
	case probing.KindTLS:
		return tlsInFlightBytes
	case probing.KindDNS:
		return dnsInFlightBytes
	case probing.KindGRPC:
		if tls {
			return grpcsInFlightBytes
		}
		return grpcInFlightBytes
	default:
		return grpcsInFlightBytes
	}
}

// MemoryBudget returns the bytes the probes in flight may hold given the
// process's memory limit (as debug.SetMemoryLimit(-1) reports GOMEMLIMIT):
// MemoryShare of it, at least MinMemoryBudget; DefaultMemoryBudget when
// limit is not positive or math.MaxInt64 (no limit set).
func MemoryBudget(limit int64) int64 {
	if limit <= 0 || limit == math.MaxInt64 {
		return DefaultMemoryBudget
	}
	return max(MinMemoryBudget, int64(float64(limit)*MemoryShare))
}
