package history

import (
	"github.com/groupd/groupd/schema"
	"github.com/groupd/groupd/wire"
)

// ParseIDs reads a node list: "3", "1,2,5", "3-5", "1,4-6" (schema.ParseIDs,
// the format of a mark's spec).
func ParseIDs(spec string) ([]wire.NodeID, error) { return schema.ParseIDs(spec) }

// FormatIDs writes a node list as ParseIDs reads it (schema.FormatIDs).
func FormatIDs(ids []wire.NodeID) string { return schema.FormatIDs(ids) }
