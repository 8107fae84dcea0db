package main

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/networkio/webchecker/controllers"
	"github.com/networkio/webchecker/sharding"
)

// ownership is the reconciler's view (controllers.Ownership) of the
// replica's Assigner: the same answers, with the vantage points in the
// reconciler's own type, so that the controllers package does not depend
// on sharding.
type ownership struct {
	*sharding.Assigner
}

var _ controllers.Ownership = ownership{}

// VantagePoints implements controllers.Ownership.
func (o ownership) VantagePoints(key types.NamespacedName, vantagePoints int) []controllers.VantagePoint {
	set := o.Assigner.VantagePoints(key, vantagePoints)
	out := make([]controllers.VantagePoint, len(set))
	for i, vp := range set {
		out[i] = controllers.VantagePoint{Shard: vp.Shard, Zone: vp.Zone}
	}
	return out
}
