// Package timeline draws the recorded history of a groupd run as an SVG
// picture, so that a partition, a merge or a failover can be seen at a
// glance.
//
// The input is what the network lab (scripts/netem/) records:
//
//   - events: newline-delimited JSON, one schema.Event per line, as printed
//     by `groupd watch --json` and read with the schema's own decoder, so
//     the timeline reads whatever the daemon writes. Lines from several
//     nodes may be mixed in any order.
//   - faults (optional): newline-delimited JSON, one schema.Mark per line,
//     {"time":RFC3339Nano,"kind":"partition|oneway|loss|delay|heal|kill|restart|...","spec":"..."}.
//
// It works in two steps. Build turns the records into a Model: for every
// node, segments of one state, role and group (or down), and the marks as
// windows or instants. The drawing (draw.go) lays a model out as SVG; it
// decides nothing about the history, only where and how to draw it.
// Render reads the records, builds the model and draws it.
//
// The model: a node has a row if it has an event or a mark takes it down.
// Neighbouring views with the same state, role and group make one segment,
// with a tick where the member list changed. A node is down from a mark
// that takes its process away (kill, stop, restart: schema.Mark.Down)
// until its next event. A fault window (partition, one-way cut, loss,
// delay) lasts from its mark to the next heal (a heal with spec
// "partitions" ends only partitions and one-way cuts; a new partition,
// loss or delay replaces the previous one of its kind); every other mark
// is an instant.
//
// The picture has one row per node and time on the x axis, labelled in
// seconds from the start of the recording; the axis runs on past the last
// event far enough for every row's final group to be labelled, since the
// state a run ends in is what a reader looks for. A row is coloured by the
// group the node is in: every group number gets its own colour. Election
// is drawn grey and hatched; Reorganization (waiting for Ready) is hatched
// over the colour of the group being joined; a node down is a thin dashed
// line. The coordinator's own row carries a dark bar and a ★ while it
// coordinates. Fault windows are shaded and labelled above the rows;
// instants are vertical marks, on one row when they take one node down. A
// white tick at the bottom of a row is a change of the member list. The
// legend has an entry for every kind of mark drawn, and for no other.
//
// Reading is forgiving: malformed lines are skipped and counted (reported
// through Options.Warn and in a note under the picture). Render fails only
// when no event at all could be read.
//
// The `groupd timeline` command is a thin wrapper around Render.
package timeline
