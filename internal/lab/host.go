package lab

import (
	"os"
	"slices"
	"strconv"
)

// HostStats are machine-wide counters that explain a failure the daemons
// are not to blame for.
type HostStats struct {
	BacklogDrops uint64 // /proc/net/softnet_stat: packets dropped for a full per-CPU backlog
	NeighFull    uint64 // /proc/net/stat/arp_cache table_fulls: neighbour table overflows
}

// ReadHostStats reads HostStats (zero where /proc does not say).
func ReadHostStats() HostStats {
	var h HostStats
	if b, err := os.ReadFile("/proc/net/softnet_stat"); err == nil {
		for _, f := range lines(b) {
			if len(f) > 1 {
				v, _ := strconv.ParseUint(f[1], 16, 64)
				h.BacklogDrops += v
			}
		}
	}
	if b, err := os.ReadFile("/proc/net/stat/arp_cache"); err == nil {
		ls := lines(b)
		if len(ls) > 1 {
			col := slices.Index(ls[0], "table_fulls")
			for _, f := range ls[1:] {
				if col >= 0 && col < len(f) {
					v, _ := strconv.ParseUint(f[col], 16, 64)
					h.NeighFull += v
				}
			}
		}
	}
	return h
}

// Load returns the 1-minute load average and the whole line of
// /proc/loadavg.
func Load() (float64, string) {
	b, _ := os.ReadFile("/proc/loadavg")
	f := lines(b)
	if len(f) == 0 || len(f[0]) < 3 {
		return 0, ""
	}
	v, _ := strconv.ParseFloat(f[0][0], 64)
	return v, f[0][0] + " " + f[0][1] + " " + f[0][2]
}
