package timeline

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/groupd/groupd/invitation"
	"github.com/groupd/groupd/schema"
	"github.com/groupd/groupd/wire"
)

// Options shape the picture. The zero value is usable.
type Options struct {
	// Title is printed at the top; default "groupd timeline".
	Title string
	// Width is the picture's width in pixels; default 1000, at least 400.
	Width int
	// RowHeight is the height of one node's row in pixels; default 24, at
	// least 12.
	RowHeight int
	// Start and End fix the time axis; zero means from the data (the first
	// and last event or fault, plus a small margin after the last).
	Start, End time.Time
	// Warn, if set, is called once per kind of skipped input, e.g.
	// "timeline: skipped 3 malformed event lines".
	Warn func(msg string)
}

// ErrNoEvents is returned (wrapped) by Render when the events input holds
// no valid event.
var ErrNoEvents = errors.New("timeline: no valid event in the input")

const (
	marginL   = 72.0 // room for "node 12"
	marginR   = 24.0
	rowGap    = 6.0
	laneH     = 16.0
	maxLanes  = 6
	axisH     = 34.0
	legendH   = 20.0
	charW     = 6.4 // estimated width of one character at font-size 11
	digitW    = 7.0 // and of a digit
	fontSize  = 11
	fontStack = "system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif"
)

// palette holds distinct colours for the first group numbers; later ones
// get golden-angle hues. Greys are avoided: grey means Election.
var palette = []string{
	"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948",
	"#b07aa1", "#ff9da7", "#9c755f", "#17becf", "#bcbd22", "#1f3a93",
}

// faultColour is the shading of each kind of fault window or mark.
var faultColour = map[string]string{
	"partition": "#d62728",
	"oneway":    "#ff7f0e",
	"loss":      "#9467bd",
	"delay":     "#8c564b",
	"heal":      "#2ca02c",
	"kill":      "#d62728",
	"restart":   "#1f77b4",
}

func colourOfFault(kind string) string {
	if c, ok := faultColour[kind]; ok {
		return c
	}
	return "#7f7f7f"
}

// isWindow reports whether a fault kind lasts until the next heal.
func isWindow(kind string) bool {
	switch kind {
	case "partition", "oneway", "loss", "delay", "degrade":
		return true
	}
	return false
}

// heals reports whether fault h ends a window of the given kind: a heal
// with spec "partitions" (heal.sh --partitions) removes only partitions and
// one-way cuts; any other heal removes every fault.
func heals(h Fault, kind string) bool {
	if h.Kind != "heal" {
		return false
	}
	if strings.TrimSpace(h.Spec) == "partitions" {
		return kind == "partition" || kind == "oneway"
	}
	return true
}

// replacedBySameKind reports whether a new fault of the same kind ends the
// previous window (a new partition replaces the old one; one-way cuts add up).
func replacedBySameKind(kind string) bool {
	return kind == "partition" || kind == "loss" || kind == "delay" || kind == "degrade"
}

// Render reads events (and faults, which may be nil) and writes the SVG
// timeline to w. Malformed lines are skipped and counted; the only input
// error is an events input without a single valid event.
func Render(w io.Writer, events io.Reader, faults io.Reader, opts Options) error {
	evs, badEvents, err := ReadEvents(events)
	if err != nil {
		return err
	}
	var fs []Fault
	badFaults := 0
	if faults != nil {
		fs, badFaults, err = ReadFaults(faults)
		if err != nil {
			return err
		}
	}
	if len(evs) == 0 {
		if badEvents > 0 {
			return fmt.Errorf("%w (%d malformed lines skipped)", ErrNoEvents, badEvents)
		}
		return ErrNoEvents
	}
	if opts.Warn != nil {
		if badEvents > 0 {
			opts.Warn(fmt.Sprintf("timeline: skipped %d malformed event line%s", badEvents, plural(badEvents)))
		}
		if badFaults > 0 {
			opts.Warn(fmt.Sprintf("timeline: skipped %d malformed fault line%s", badFaults, plural(badFaults)))
		}
	}
	p := newPicture(evs, fs, opts)
	p.badEvents, p.badFaults = badEvents, badFaults
	_, err = io.WriteString(w, p.svg())
	if err != nil {
		return fmt.Errorf("timeline: write: %w", err)
	}
	return nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// segment is a stretch of one node's row.
type segment struct {
	from, to time.Time
	st       schema.Status
	down     bool
	changes  []time.Time // member list changes inside the segment
}

// window is a fault drawn over a stretch of time (to == from for marks).
type window struct {
	f        Fault
	from, to time.Time
	lane     int
	mark     bool
}

type picture struct {
	opts                 Options
	title                string
	width, rowH          float64
	t0, t1               time.Time
	nodes                []wire.NodeID
	rows                 map[wire.NodeID][]segment
	groups               []wire.GroupNumber // sorted, without the zero one
	colour               map[wire.GroupNumber]string
	windows              []window
	lanes                int
	nEvents, nFaults     int
	badEvents, badFaults int

	// Filled while drawing, for the legend.
	used      map[string]bool   // data-mark keys drawn
	usedOrder []string          // in the order first drawn
	markDash  map[string]string // a mark's stroke-dasharray, by fault kind
	reorgFill string            // the fill under the first reorganization hatch
}

func newPicture(evs []schema.Event, fs []Fault, opts Options) *picture {
	p := &picture{
		opts:     opts,
		title:    opts.Title,
		width:    float64(opts.Width),
		rowH:     float64(opts.RowHeight),
		rows:     map[wire.NodeID][]segment{},
		colour:   map[wire.GroupNumber]string{},
		markDash: map[string]string{},
		nEvents:  len(evs),
		nFaults:  len(fs),
	}
	if p.title == "" {
		p.title = "groupd timeline"
	}
	if p.width == 0 {
		p.width = 1000
	}
	p.width = math.Max(p.width, 400)
	if p.rowH == 0 {
		p.rowH = 24
	}
	p.rowH = math.Max(p.rowH, 12)

	// Time axis.
	first, last := evs[0].Time, evs[len(evs)-1].Time
	if len(fs) > 0 {
		if fs[0].Time.Before(first) {
			first = fs[0].Time
		}
		if fs[len(fs)-1].Time.After(last) {
			last = fs[len(fs)-1].Time
		}
	}
	span := last.Sub(first)
	if span < time.Second {
		span = time.Second
	}
	p.t0, p.t1 = first, first.Add(span+span/25)
	if !opts.Start.IsZero() {
		p.t0 = opts.Start
	}
	if !opts.End.IsZero() {
		p.t1 = opts.End
	}
	if !p.t1.After(p.t0) {
		p.t1 = p.t0.Add(time.Second)
	}

	// Nodes: every node with an event or a kill/restart fault.
	byNode := map[wire.NodeID][]schema.Event{}
	for _, e := range evs {
		byNode[e.Node] = append(byNode[e.Node], e)
	}
	downAt := map[wire.NodeID][]time.Time{}
	for _, f := range fs {
		if n := f.Node(); n != 0 {
			downAt[n] = append(downAt[n], f.Time)
			if _, ok := byNode[n]; !ok {
				byNode[n] = nil
			}
		}
	}
	for n := range byNode {
		p.nodes = append(p.nodes, n)
	}
	sort.Slice(p.nodes, func(i, j int) bool { return p.nodes[i] < p.nodes[j] })

	// Segments per node, with the down windows cut out.
	seen := map[wire.GroupNumber]bool{}
	for _, n := range p.nodes {
		es := byNode[n]
		var segs []segment
		for i, e := range es {
			to := p.t1
			if i+1 < len(es) {
				to = es[i+1].Time
			}
			segs = append(segs, segment{from: e.Time, to: to, st: e.New})
			if g := e.New.Group; g != (wire.GroupNumber{}) && !seen[g] {
				seen[g] = true
				p.groups = append(p.groups, g)
			}
		}
		var downs []segment
		for _, t := range downAt[n] {
			end := p.t1
			for _, e := range es {
				if e.Time.After(t) {
					end = e.Time
					break
				}
			}
			downs = append(downs, segment{from: t, to: end, down: true})
		}
		p.rows[n] = cutDown(mergeSame(segs), downs)
	}
	if opts.End.IsZero() {
		p.makeRoomAtEnd()
	}
	sort.Slice(p.groups, func(i, j int) bool { return groupLess(p.groups[i], p.groups[j]) })
	for i, g := range p.groups {
		p.colour[g] = groupColour(i)
	}

	// Fault windows and marks.
	for i, f := range fs {
		w := window{f: f, from: f.Time, to: f.Time, mark: !isWindow(f.Kind)}
		if !w.mark {
			w.to = p.t1
			for _, g := range fs[i+1:] {
				if heals(g, f.Kind) || (g.Kind == f.Kind && replacedBySameKind(f.Kind)) {
					w.to = g.Time
					break
				}
			}
		}
		p.windows = append(p.windows, w)
	}
	p.assignLanes()
	return p
}

// makeRoomAtEnd moves the end of the time axis (p.t1) later, if needed, so
// that the last segment of every row is wide enough for its label: the
// group a node ends in is what a reader looks for. (A fault label that
// would run past the right edge is moved left instead: labelX.) The rows
// are built up to the old end; their last segments are stretched to the
// new one.
func (p *picture) makeRoomAtEnd() {
	type need struct {
		at time.Time
		px float64 // from at's x
	}
	var needs []need
	for _, n := range p.nodes {
		if segs := p.rows[n]; len(segs) > 0 {
			last := segs[len(segs)-1]
			_, px := segmentLabel(last)
			needs = append(needs, need{last.from, px})
		}
	}
	// x(at) + px <= x(t1) holds when (t1-t0) >= (at-t0) / (1 - px/plotW).
	span := p.t1.Sub(p.t0)
	for _, nd := range needs {
		// A label wider than half the plot is not worth the squeeze; one
		// pixel more absorbs the rounding of the comparison in drawSegment.
		px := min(nd.px+1, p.plotW()/2)
		if nd.at.Before(p.t0) {
			continue
		}
		if d := time.Duration(float64(nd.at.Sub(p.t0)) / (1 - px/p.plotW())); d > span {
			span = d
		}
	}
	end := p.t0.Add(span)
	if !end.After(p.t1) {
		return
	}
	for n, segs := range p.rows {
		for i := range segs {
			if segs[i].to.Equal(p.t1) {
				segs[i].to = end
			}
		}
		p.rows[n] = segs
	}
	p.t1 = end
}

// mergeSame joins neighbouring segments that look the same (state, role
// and group), remembering where the member list changed inside them.
func mergeSame(segs []segment) []segment {
	var out []segment
	for _, s := range segs {
		if k := len(out) - 1; k >= 0 {
			last := &out[k]
			if last.st.State == s.st.State && last.st.Role == s.st.Role && last.st.Group == s.st.Group && last.to.Equal(s.from) {
				if ids(last.st.Members) != ids(s.st.Members) {
					last.changes = append(last.changes, s.from)
				}
				last.to = s.to
				last.st.Members = s.st.Members
				continue
			}
		}
		out = append(out, s)
	}
	return out
}

// cutDown removes the down windows from the state segments and returns
// both, sorted by start.
func cutDown(segs, downs []segment) []segment {
	out := make([]segment, 0, len(segs)+len(downs))
	for _, s := range segs {
		parts := []segment{s}
		for _, d := range downs {
			var next []segment
			for _, p := range parts {
				if !d.from.Before(p.to) || !p.from.Before(d.to) {
					next = append(next, p)
					continue
				}
				if p.from.Before(d.from) {
					q := p
					q.to = d.from
					next = append(next, q)
				}
				if d.to.Before(p.to) {
					q := p
					q.from = d.to
					next = append(next, q)
				}
			}
			parts = next
		}
		out = append(out, parts...)
	}
	out = append(out, downs...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].from.Before(out[j].from) })
	return out
}

// groupLess orders group numbers by seq, then id: the order they were
// created in, as far as numbers tell.
func groupLess(a, b wire.GroupNumber) bool {
	if a.Seq != b.Seq {
		return a.Seq < b.Seq
	}
	return a.ID < b.ID
}

// groupColour returns the i-th group's colour: the palette first, then hues
// spaced by the golden angle so that neighbours stay distinct.
func groupColour(i int) string {
	if i < len(palette) {
		return palette[i]
	}
	h := math.Mod(float64(i-len(palette))*137.508+15, 360)
	return hsl(h, 0.55, 0.55)
}

func hsl(h, s, l float64) string {
	c := (1 - math.Abs(2*l-1)) * s
	x := c * (1 - math.Abs(math.Mod(h/60, 2)-1))
	m := l - c/2
	var r, g, b float64
	switch {
	case h < 60:
		r, g, b = c, x, 0
	case h < 120:
		r, g, b = x, c, 0
	case h < 180:
		r, g, b = 0, c, x
	case h < 240:
		r, g, b = 0, x, c
	case h < 300:
		r, g, b = x, 0, c
	default:
		r, g, b = c, 0, x
	}
	to := func(v float64) int { return int(math.Round((v + m) * 255)) }
	return fmt.Sprintf("#%02x%02x%02x", to(r), to(g), to(b))
}

// textColour picks black or white text for a background colour.
func textColour(bg string) string {
	if len(bg) != 7 || bg[0] != '#' {
		return "#111"
	}
	v, err := strconv.ParseUint(bg[1:], 16, 32)
	if err != nil {
		return "#111"
	}
	r, g, b := float64(v>>16&0xff), float64(v>>8&0xff), float64(v&0xff)
	if 0.299*r+0.587*g+0.114*b > 150 {
		return "#111"
	}
	return "#fff"
}

func (p *picture) plotW() float64 { return p.width - marginL - marginR }

func (p *picture) x(t time.Time) float64 {
	f := float64(t.Sub(p.t0)) / float64(p.t1.Sub(p.t0))
	f = math.Max(0, math.Min(1, f))
	return marginL + f*p.plotW()
}

func (p *picture) label(w window) string {
	if w.f.Spec == "" {
		return w.f.Kind
	}
	return w.f.Kind + " " + w.f.Spec
}

// labelX is where a fault's label starts: just after its line, or as far
// right as it fits when that would run past the picture's right edge.
func (p *picture) labelX(w window) float64 {
	return math.Max(marginL, math.Min(p.x(w.from)+3, p.width-2-textW(p.label(w))))
}

// assignLanes places fault labels in lanes above the rows so that they do
// not overlap; past maxLanes, the least crowded lane is reused.
func (p *picture) assignLanes() {
	var right []float64
	for i := range p.windows {
		w := &p.windows[i]
		x0 := p.x(w.from)
		x0 = math.Min(x0, p.labelX(*w)-3)
		x1 := math.Max(p.x(w.to), p.labelX(*w)+textW(p.label(*w))+3)
		lane := -1
		for l, r := range right {
			if r+2 <= x0 {
				lane = l
				break
			}
		}
		if lane < 0 {
			if len(right) < maxLanes {
				right = append(right, 0)
				lane = len(right) - 1
			} else {
				lane = 0
				for l, r := range right {
					if r < right[lane] {
						lane = l
					}
				}
			}
		}
		right[lane] = math.Max(right[lane], x1)
		w.lane = lane
	}
	p.lanes = len(right)
}

// textW estimates the width of s at fontSize. Digits are wider than the
// average letter in the usual sans-serif fonts (DejaVu Sans: 7.0 px
// against 5.7 at 11 px), and labels are mostly digits.
func textW(s string) float64 {
	w := 0.0
	for _, r := range s {
		if r >= '0' && r <= '9' {
			w += digitW
		} else {
			w += charW
		}
	}
	return w
}

// fit shortens s with an ellipsis to at most width pixels.
func fit(s string, width float64) string {
	if textW(s) <= width {
		return s
	}
	r := []rune(s)
	for len(r) > 0 && textW(string(r))+charW > width {
		r = r[:len(r)-1]
	}
	return string(r) + "…"
}

// niceStep returns a tick step (in seconds) giving about ten ticks.
func niceStep(span float64) float64 {
	raw := span / 10
	for _, s := range []float64{0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600} {
		if s >= raw {
			return s
		}
	}
	return math.Ceil(raw/3600) * 3600
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func esc(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '"':
			b.WriteString("&quot;")
		case '\'':
			b.WriteString("&#39;")
		default:
			if r < 0x20 && r != '\t' {
				continue // not allowed in XML 1.0
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}

func ids(ms []wire.NodeID) string {
	s := make([]string, len(ms))
	for i, m := range ms {
		s[i] = strconv.FormatUint(uint64(m), 10)
	}
	return strings.Join(s, " ")
}

func (p *picture) secs(t time.Time) string {
	return strconv.FormatFloat(t.Sub(p.t0).Seconds(), 'f', 2, 64) + "s"
}

// The drawing marks every element it draws with data-mark="KEY", and the
// legend has one entry per key drawn, with the same data-mark, so that the
// two cannot drift apart (TestLegendCoversMarks reads the SVG back). Keys:
//
//	group:SEQ.ID      a segment in that group's colour
//	no-group          a segment before the node's first group
//	coordinator       the bar and star of a coordinating node
//	election          grey hatching
//	reorganization    white hatching over the group being joined
//	members-changed   the tick where a member list changed
//	down              a node down after a kill or restart
//	fault:KIND        a fault window (partition, loss, ...)
//	mark:KIND         a fault at one instant (kill, restart, heal)
//
// Everything else (title, grid, axis, row labels) is data-chrome.

// use records that key is drawn and returns its attribute.
func (p *picture) use(key string) string {
	if !p.used[key] {
		p.used[key] = true
		p.usedOrder = append(p.usedOrder, key)
	}
	return ` data-mark="` + esc(key) + `"`
}

func (p *picture) svg() string {
	p.used = map[string]bool{}
	var body strings.Builder
	pr := func(format string, a ...any) { fmt.Fprintf(&body, format, a...) }

	titleH := 44.0
	bandTop := titleH
	bandH := float64(p.lanes) * laneH
	if p.lanes > 0 {
		bandH += 4
	}
	rowsTop := bandTop + bandH
	pitch := p.rowH + rowGap
	rowsH := float64(len(p.nodes))*pitch - rowGap
	axisTop := rowsTop + rowsH

	// Title and subtitle, shortened to the picture's width.
	room := p.width - marginL - 2
	pr(`<g data-chrome="title">`)
	pr(`<text x="%s" y="18" font-size="15" font-weight="bold" fill="#111">%s</text>`, f1(marginL), esc(fit(p.title, room*11/15)))
	sub := fmt.Sprintf("%.1f s · %d node%s · %d event%s · %d fault%s",
		p.t1.Sub(p.t0).Seconds(), len(p.nodes), plural(len(p.nodes)), p.nEvents, plural(p.nEvents), p.nFaults, plural(p.nFaults))
	if start := "start " + p.t0.UTC().Format("2006-01-02 15:04:05.000") + " UTC · "; textW(start+sub) <= room {
		sub = start + sub
	}
	pr(`<text x="%s" y="35" fill="#555">%s</text>`, f1(marginL), esc(fit(sub, room)))
	pr("</g>\n")

	// Grid and ticks.
	span := p.t1.Sub(p.t0).Seconds()
	step := niceStep(span)
	pr(`<g data-chrome="grid" stroke="#e6e6e6" stroke-width="1">` + "\n")
	for i := 0; float64(i)*step <= span+1e-9; i++ {
		x := marginL + float64(i)*step/span*p.plotW()
		pr(`<line x1="%s" y1="%s" x2="%s" y2="%s"/>`+"\n", f1(x), f1(rowsTop), f1(x), f1(axisTop+4))
	}
	pr("</g>\n")
	pr(`<g data-chrome="axis" fill="#444" text-anchor="middle">` + "\n")
	for i := 0; float64(i)*step <= span+1e-9; i++ {
		x := marginL + float64(i)*step/span*p.plotW()
		v := float64(i) * step
		lbl := strconv.FormatFloat(v, 'f', -1, 64) + "s"
		if step < 1 {
			lbl = strconv.FormatFloat(v, 'f', 1, 64) + "s"
		}
		pr(`<text x="%s" y="%s">%s</text>`+"\n", f1(x), f1(axisTop+17), lbl)
	}
	pr(`<text x="%s" y="%s" fill="#777" text-anchor="end">seconds from start</text>`+"\n", f1(p.width-marginR), f1(axisTop+28))
	pr("</g>\n")

	// Rows.
	for i, n := range p.nodes {
		y := rowsTop + float64(i)*pitch
		pr(`<g class="node" data-node="%d">`+"\n", n)
		pr(`<text data-chrome="row" x="%s" y="%s" text-anchor="end" fill="#222">node %d</text>`+"\n", f1(marginL-8), f1(y+p.rowH/2+4), n)
		pr(`<rect data-chrome="row" x="%s" y="%s" width="%s" height="%s" fill="#f6f6f6"/>`+"\n", f1(marginL), f1(y), f1(p.plotW()), f1(p.rowH))
		for _, s := range p.rows[n] {
			p.drawSegment(&body, n, s, y)
		}
		pr("</g>\n")
	}

	// Fault windows: shading over the rows, labels in the band above.
	for _, w := range p.windows {
		c := colourOfFault(w.f.Kind)
		x0, x1 := p.x(w.from), p.x(w.to)
		ly := bandTop + float64(w.lane)*laneH
		lbl := p.label(w)
		tip := fmt.Sprintf("%s at %s", lbl, p.secs(w.from))
		if !w.mark {
			tip += " until " + p.secs(w.to)
			pr(`<g class="fault" data-kind="%s"%s><title>%s</title>`+"\n", esc(w.f.Kind), p.use("fault:"+w.f.Kind), esc(tip))
			pr(`<rect x="%s" y="%s" width="%s" height="%s" fill="#000" fill-opacity="0.08"/>`+"\n",
				f1(x0), f1(rowsTop-2), f1(math.Max(x1-x0, 1)), f1(rowsH+4))
			pr(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1" stroke-dasharray="2 2"/>`+"\n",
				f1(x1), f1(ly+1), f1(x1), f1(axisTop), c)
			pr(`<rect x="%s" y="%s" width="%s" height="%s" fill="%s" fill-opacity="0.25"/>`+"\n",
				f1(x0), f1(ly+1), f1(math.Max(x1-x0, 1)), f1(laneH-3), c)
			pr(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1.5"/>`+"\n",
				f1(x0), f1(ly+1), f1(x0), f1(axisTop), c)
			pr(`<text x="%s" y="%s" fill="%s">%s</text>`+"\n", f1(p.labelX(w)), f1(ly+laneH-5), darker(c), esc(lbl))
			pr("</g>\n")
			continue
		}
		y0, y1 := rowsTop-2, axisTop
		dash := ` stroke-dasharray="4 3"`
		if n := w.f.Node(); n != 0 {
			if i := p.rowIndex(n); i >= 0 {
				y0 = rowsTop + float64(i)*pitch - 2
				y1 = y0 + p.rowH + 4
				dash = ""
			}
		}
		if _, seen := p.markDash[w.f.Kind]; !seen {
			p.markDash[w.f.Kind] = dash
		}
		pr(`<g class="fault" data-kind="%s"%s><title>%s</title>`+"\n", esc(w.f.Kind), p.use("mark:"+w.f.Kind), esc(tip))
		pr(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"%s/>`+"\n", f1(x0), f1(y0), f1(x0), f1(y1), c, dash)
		pr(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1" stroke-opacity="0.5"/>`+"\n", f1(x0), f1(ly+1), f1(x0), f1(y0), c)
		pr(`<text x="%s" y="%s" fill="%s">%s</text>`+"\n", f1(p.labelX(w)), f1(ly+laneH-5), darker(c), esc(lbl))
		pr("</g>\n")
	}

	// The legend: what was drawn, in a fixed order.
	legend := p.legendItems()
	legendLines := p.layoutLegend(legend)
	legendTop := axisTop + axisH
	height := legendTop + float64(legendLines)*legendH + 8
	if p.badEvents > 0 || p.badFaults > 0 {
		height += 16
	}

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="%s" font-size="%d">`+"\n",
		f1(p.width), f1(height), f1(p.width), f1(height), fontStack, fontSize)
	fmt.Fprintf(&b, "<title>%s</title>\n", esc(p.title))
	b.WriteString(`<defs>
<pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="2.5" height="6" fill="#fff" fill-opacity="0.6"/></pattern>
<pattern id="hatch-dark" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(-45)"><rect width="2" height="6" fill="#555" fill-opacity="0.55"/></pattern>
</defs>
`)
	b.WriteString(`<rect data-chrome="background" width="100%" height="100%" fill="#fff"/>` + "\n")
	b.WriteString(body.String())
	p.drawLegend(&b, legend, legendTop)
	if p.badEvents > 0 || p.badFaults > 0 {
		fmt.Fprintf(&b, `<text data-chrome="note" x="%s" y="%s" fill="#a33">note: skipped %d malformed event line%s and %d malformed fault line%s</text>`+"\n",
			f1(marginL), f1(height-8), p.badEvents, plural(p.badEvents), p.badFaults, plural(p.badFaults))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func (p *picture) rowIndex(n wire.NodeID) int {
	for i, m := range p.nodes {
		if m == n {
			return i
		}
	}
	return -1
}

// darker returns a darker shade of a #rrggbb colour for text.
func darker(c string) string {
	v, err := strconv.ParseUint(strings.TrimPrefix(c, "#"), 16, 32)
	if err != nil || len(c) != 7 {
		return "#333"
	}
	r, g, b := v>>16&0xff, v>>8&0xff, v&0xff
	return fmt.Sprintf("#%02x%02x%02x", r*7/10, g*7/10, b*7/10)
}

// isCoordinator reports whether st shows its node coordinating: a node
// merging as coordinator (Election) is drawn as electing instead.
func isCoordinator(st schema.Status) bool {
	return st.State != wire.StateElection && st.Role == invitation.Coordinator
}

// noGroupFill is the colour of a node that has no group yet.
const noGroupFill = "#e0e0e0"

// segmentLabel is the text drawn in a segment, and the room it needs from
// the segment's start (with the coordinator's star).
func segmentLabel(s segment) (string, float64) {
	if s.down {
		return "down", textW("down") + 8
	}
	lbl := s.st.Group.String()
	if s.st.State == wire.StateElection {
		lbl = "election"
	}
	need := textW(lbl) + 8
	if isCoordinator(s.st) {
		need += 12
	}
	return lbl, need
}

func (p *picture) drawSegment(b *strings.Builder, n wire.NodeID, s segment, y float64) {
	pr := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	x0, x1 := p.x(s.from), p.x(s.to)
	w := x1 - x0
	if w <= 0 {
		return
	}
	mid := y + p.rowH/2
	lbl, need := segmentLabel(s)
	if s.down {
		pr(`<g class="down"%s><title>node %d down %s–%s</title>`, p.use("down"), n, p.secs(s.from), p.secs(s.to))
		pr(`<rect x="%s" y="%s" width="%s" height="%s" fill="#fff"/>`, f1(x0), f1(y), f1(w), f1(p.rowH))
		pr(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#999" stroke-width="1.2" stroke-dasharray="3 3"/>`, f1(x0), f1(mid), f1(x1), f1(mid))
		if w >= need {
			pr(`<text x="%s" y="%s" fill="#888" font-size="10">%s</text>`, f1(x0+4), f1(mid-3), lbl)
		}
		pr("</g>\n")
		return
	}
	st := s.st
	fill, key := noGroupFill, "no-group"
	if c, ok := p.colour[st.Group]; ok {
		fill, key = c, "group:"+st.Group.String()
	}
	state := st.State.String()
	tip := fmt.Sprintf("node %d %s %s group %s [%s] %s–%s", n, state, st.Role, st.Group, ids(st.Members), p.secs(s.from), p.secs(s.to))
	pr(`<g class="seg" data-state="%s" data-group="%s"><title>%s</title>`, esc(state), st.Group, esc(tip))
	switch st.State {
	case wire.StateElection:
		pr(`<rect x="%s" y="%s" width="%s" height="%s" fill="#c8c8c8"%s/>`, f1(x0), f1(y), f1(w), f1(p.rowH), p.use("election"))
		pr(`<rect x="%s" y="%s" width="%s" height="%s" fill="url(#hatch-dark)"%s/>`, f1(x0), f1(y), f1(w), f1(p.rowH), p.use("election"))
	case wire.StateReorganization:
		if p.reorgFill == "" {
			p.reorgFill = fill
		}
		pr(`<rect x="%s" y="%s" width="%s" height="%s" fill="%s"%s/>`, f1(x0), f1(y), f1(w), f1(p.rowH), fill, p.use(key))
		pr(`<rect x="%s" y="%s" width="%s" height="%s" fill="url(#hatch)"%s/>`, f1(x0), f1(y), f1(w), f1(p.rowH), p.use("reorganization"))
	default:
		pr(`<rect x="%s" y="%s" width="%s" height="%s" fill="%s"%s/>`, f1(x0), f1(y), f1(w), f1(p.rowH), fill, p.use(key))
	}
	for _, c := range s.changes {
		cx := p.x(c)
		pr(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#fff" stroke-width="1.5"%s/>`, f1(cx), f1(y+p.rowH-6), f1(cx), f1(y+p.rowH), p.use("members-changed"))
	}
	tx := x0 + 4
	if isCoordinator(st) {
		pr(`<g%s>`, p.use("coordinator"))
		pr(`<rect x="%s" y="%s" width="%s" height="4" fill="#222"/>`, f1(x0), f1(y), f1(w))
		if w >= 12 {
			pr(`<text x="%s" y="%s" fill="#222" font-size="12">★</text>`, f1(x0+2), f1(mid+6))
			tx += 12
		}
		pr(`</g>`)
	}
	if x0+need <= x1 {
		tc := textColour(fill)
		if st.State == wire.StateElection {
			tc = "#222"
		}
		lk := key
		if st.State == wire.StateElection {
			lk = "election"
		}
		pr(`<text x="%s" y="%s" fill="%s" data-label="segment"%s>%s</text>`, f1(tx), f1(mid+6), tc, p.use(lk), esc(lbl))
	}
	pr("</g>\n")
}

// legendItem is one entry of the legend.
type legendItem struct {
	key   string // the data-mark it explains
	label string
	x, y  float64
}

// legendItems returns an entry for every mark drawn: groups in order, then
// states and marks, then faults in the order they first appear.
func (p *picture) legendItems() []legendItem {
	var items []legendItem
	add := func(key, label string) {
		if p.used[key] {
			items = append(items, legendItem{key: key, label: label})
		}
	}
	for _, g := range p.groups {
		add("group:"+g.String(), "group "+g.String())
	}
	add("no-group", "no group yet")
	add("coordinator", "coordinator")
	add("election", "election")
	add("reorganization", "reorganization")
	add("members-changed", "member list changed")
	add("down", "down")
	for _, key := range p.usedOrder {
		if kind, ok := strings.CutPrefix(key, "fault:"); ok {
			add(key, kind)
		}
	}
	for _, key := range p.usedOrder {
		if kind, ok := strings.CutPrefix(key, "mark:"); ok {
			add(key, kind)
		}
	}
	return items
}

// layoutLegend positions the items (relative to the legend's top) and
// returns the number of lines used.
func (p *picture) layoutLegend(items []legendItem) int {
	x, line := marginL, 0
	for i := range items {
		w := 18 + textW(items[i].label) + 14
		if x+w > p.width-marginR && x > marginL {
			x = marginL
			line++
		}
		items[i].x, items[i].y = x, float64(line)*legendH
		x += w
	}
	return line + 1
}

func (p *picture) drawLegend(b *strings.Builder, items []legendItem, top float64) {
	pr := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	pr(`<g class="legend">` + "\n")
	for _, it := range items {
		x, y := it.x, top+it.y
		pr(`<g class="legend-item"%s>`, ` data-mark="`+esc(it.key)+`"`)
		sw := func(extra string) { pr(`<rect x="%s" y="%s" width="14" height="12" %s/>`, f1(x), f1(y), extra) }
		switch kind, arg, _ := strings.Cut(it.key, ":"); kind {
		case "group":
			g, _ := wire.ParseGroupNumber(arg)
			sw(`fill="` + p.colour[g] + `"`)
		case "no-group":
			sw(`fill="` + noGroupFill + `"`)
		case "coordinator":
			sw(`fill="#f6f6f6" stroke="#bbb"`)
			pr(`<rect x="%s" y="%s" width="14" height="4" fill="#222"/>`, f1(x), f1(y))
			pr(`<text x="%s" y="%s" font-size="10" fill="#222">★</text>`, f1(x+2), f1(y+12))
		case "election":
			sw(`fill="#c8c8c8"`)
			sw(`fill="url(#hatch-dark)"`)
		case "reorganization":
			sw(`fill="` + p.reorgFill + `"`)
			sw(`fill="url(#hatch)"`)
		case "members-changed":
			sw(`fill="#9a9a9a"`)
			pr(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#fff" stroke-width="1.5"/>`, f1(x+7), f1(y+6), f1(x+7), f1(y+12))
		case "down":
			pr(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#999" stroke-width="1.2" stroke-dasharray="3 3"/>`, f1(x), f1(y+6), f1(x+14), f1(y+6))
		case "fault":
			sw(`fill="` + colourOfFault(arg) + `" fill-opacity="0.25"`)
		case "mark":
			pr(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"%s/>`, f1(x+7), f1(y), f1(x+7), f1(y+12), colourOfFault(arg), p.markDash[arg])
		}
		pr(`<text x="%s" y="%s" fill="#333">%s</text></g>`+"\n", f1(x+18), f1(y+10), esc(it.label))
	}
	pr("</g>\n")
}
