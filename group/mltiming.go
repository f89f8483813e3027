package group

import (
	"math"
	"time"

	"github.com/hashicorp/memberlist"
)

// memberlistDeadAfter returns how long memberlist, configured by mc,
// takes to declare a stopped node dead in a cluster of n nodes, counted
// from the first probe the node misses: that probe's ProbeInterval
// (ProbeTimeout, then indirect probes until the interval ends; only then
// is the node suspect), then the suspicion timeout, SuspicionMult ×
// max(1, log10 n) × ProbeInterval, computed as memberlist's
// suspicionTimeout does. With SuspicionMaxTimeoutMult 1 the timeout is
// not shortened by other nodes' confirmations (memberlistConfig sets it).
//
// The first missed probe comes about a ProbeInterval after the stop on
// average, at most n−1 ProbeIntervals after it: every node probes the
// others in turn, one per ProbeInterval. Lifeguard stretches the probe
// interval of a node that finds itself slow.
func memberlistDeadAfter(mc *memberlist.Config, n int) time.Duration {
	scale := math.Max(1, math.Log10(math.Max(1, float64(n))))
	suspicion := time.Duration(mc.SuspicionMult) * time.Duration(scale*1000) * mc.ProbeInterval / 1000
	return mc.ProbeInterval + suspicion
}
