// Package timeline draws the recorded history of a groupd run as an SVG
// picture, so that a partition, a merge or a failover can be seen at a
// glance.
//
// The input is what the network lab (scripts/netem/) records:
//
//   - events: newline-delimited JSON, one group.Event per line, as printed
//     by `groupd watch --json` and read with group's own decoder, so the
//     timeline reads whatever the daemon writes. Lines from several nodes
//     may be mixed in any order.
//   - faults (optional): newline-delimited JSON, one Fault per line,
//     {"time":RFC3339Nano,"kind":"partition|oneway|loss|delay|heal|kill|restart","spec":"..."}.
//
// The picture has one row per node and time on the x axis, labelled in
// seconds from the start of the recording; the axis runs on past the last
// event far enough for every row's final group to be labelled, since the
// state a run ends in is what a reader looks for. A row is coloured by the
// group the node is in: every group number gets its own colour. Election is drawn grey and hatched; Reorganization (waiting for
// Ready) is hatched over the colour of the group being joined. A node is
// drawn as a thin dashed line while it is down, that is from a kill or
// restart fault until its next event. The coordinator's own row carries a
// dark bar and a ★ while it coordinates. Fault windows (partition, one-way
// cut, loss, delay) are shaded from their start to the next heal and
// labelled above the rows (a heal with spec "partitions" ends only
// partitions and one-way cuts; a new partition, loss or delay replaces the
// previous one of its kind); kills, restarts and heals are vertical marks.
// A white tick at the bottom of a row is a change of the member list. The
// legend has an entry for every kind of mark drawn, and for no other.
//
// Reading is forgiving: malformed lines are skipped and counted (reported
// through Options.Warn and in a note under the picture). Render fails only
// when no event at all could be read.
//
// The `groupd timeline` command is a thin wrapper around Render.
package timeline
