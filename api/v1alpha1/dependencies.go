package v1alpha1

// Dependencies between WebCheckers (spec.dependsOn).
const (
	// ReasonDependencyDown is the Ready reason (status False) of a checker
	// whose own probes fail while one of the checkers it depends on is
	// down (Ready False): the message names that dependency, then gives
	// the checker's own failure. The shipped alerts do not page for it
	// (webchecker_dependency_down).
	ReasonDependencyDown = "DependencyDown"
	// ReasonInvalidDependency is the Ready reason (status False) of a
	// checker that depends on a checker that does not exist, or on one
	// that depends back on it (a cycle through at most MaxDependencyDepth
	// checkers): it is not probed until the spec or the other checker
	// changes, and the message names it.
	ReasonInvalidDependency = "InvalidDependency"
)

// MaxDependencies is how many checkers a WebChecker depends on at most, and
// MaxDependencyDepth how many checkers are read, following dependsOn, to
// find a cycle: a longer one goes unnoticed (each checker on it then reads
// DependencyDown while the others are down).
const (
	MaxDependencies    = 8
	MaxDependencyDepth = 32
)
