package sharding

import "k8s.io/apimachinery/pkg/types"

// Ownership answers, for this replica, whether it is responsible for a
// checker right now. Implementations must be safe for concurrent use and
// cheap: Owns is called before every probe and every status write.
type Ownership interface {
	// ShardID is the identity of this replica, as written to status.shard.
	ShardID() string
	// Owns reports whether this replica probes the checker and writes its
	// status.
	Owns(key types.NamespacedName) bool
}

// Static is an Ownership that owns every checker. It is correct for a single
// replica.
type Static struct {
	// ID is this replica's shard identity.
	ID string
}

var _ Ownership = Static{}

// ShardID returns s.ID.
func (s Static) ShardID() string { return s.ID }

// Owns returns true for every key.
func (Static) Owns(types.NamespacedName) bool { return true }
