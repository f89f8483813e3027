package history

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/groupd/groupd/wire"
)

// ParseIDs reads a node list: "3", "1,2,5", "3-5", "1,4-6". IDs are
// positive; a list may not name a node twice.
func ParseIDs(spec string) ([]wire.NodeID, error) {
	var out []wire.NodeID
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.ParseUint(strings.TrimSpace(lo), 10, 64)
		b, err2 := a, error(nil)
		if isRange {
			b, err2 = strconv.ParseUint(strings.TrimSpace(hi), 10, 64)
		}
		if err1 != nil || err2 != nil || a == 0 || b < a || b-a > 1<<16 {
			return nil, fmt.Errorf("bad node list %q (want e.g. 1,2,4-6)", spec)
		}
		for i := a; i <= b; i++ {
			if slices.Contains(out, wire.NodeID(i)) {
				return nil, fmt.Errorf("node list %q names node %d twice", spec, i)
			}
			out = append(out, wire.NodeID(i))
		}
	}
	return out, nil
}

// FormatIDs writes a node list as ParseIDs reads it, with runs of three or
// more as ranges: [1 2 3 5] is "1-3,5".
func FormatIDs(ids []wire.NodeID) string {
	var b strings.Builder
	for i := 0; i < len(ids); {
		j := i
		for j+1 < len(ids) && ids[j+1] == ids[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		switch {
		case j-i >= 2:
			fmt.Fprintf(&b, "%d-%d", ids[i], ids[j])
		case j > i:
			fmt.Fprintf(&b, "%d,%d", ids[i], ids[j])
		default:
			fmt.Fprintf(&b, "%d", ids[i])
		}
		i = j + 1
	}
	return b.String()
}
