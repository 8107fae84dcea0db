package metrics

import (
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// BuildInfo describes the running binary, as webchecker_build_info's
// labels.
type BuildInfo struct {
	// Version is the release (the chart's appVersion, set at build time),
	// else the main module's version, else "unknown".
	Version string
	// Revision is the VCS commit the binary was built from (the vcs.revision
	// build setting), "unknown" when the build recorded none.
	Revision string
	// GoVersion is the Go release that built the binary.
	GoVersion string
}

// ReadBuildInfo returns the BuildInfo of the running binary. version and
// revision, when not empty, are the release version and the commit given
// at build time (with -ldflags -X by the Makefile and the Dockerfile, whose
// build context has no .git); otherwise they come from the build
// information Go records in the binary (the main module's version and the
// vcs.revision setting), and are "unknown" when it has none.
func ReadBuildInfo(version, revision string) BuildInfo {
	info := BuildInfo{Version: version, Revision: revision, GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if info.Version == "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && info.Revision == "" {
				info.Revision = s.Value
			}
		}
	}
	if info.Version == "" {
		info.Version = "unknown"
	}
	if info.Revision == "" {
		info.Revision = "unknown"
	}
	return info
}

// Collector returns webchecker_build_info, a gauge that is always 1 with
// the build's version, revision and goversion as labels (the convention of
// Prometheus' own *_build_info metrics), to join on in queries and to tell
// replicas of different releases apart during a rollout.
func (b BuildInfo) Collector() prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace:   Namespace,
		Name:        "build_info",
		Help:        "A metric with a constant 1 value labelled by the version, the VCS revision and the Go version that built the webchecker manager.",
		ConstLabels: prometheus.Labels{"version": b.Version, "revision": b.Revision, "goversion": b.GoVersion},
	})
	g.Set(1)
	return g
}
