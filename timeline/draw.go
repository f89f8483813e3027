package timeline

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/groupd/groupd/wire"
)

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

// picture lays a Model out as an SVG: the model's data, the picture's
// geometry, and what the drawing used (for the legend).
type picture struct {
	m                    Model
	title                string
	width, rowH          float64
	t0, t1               time.Time // the drawn axis: the model's, t1 maybe later (makeRoomAtEnd)
	colour               map[wire.GroupNumber]string
	lanes                []int // the label lane of each of the model's windows
	nLanes               int
	badEvents, badFaults int

	// Filled while drawing, for the legend.
	used      map[string]bool   // data-mark keys drawn
	usedOrder []string          // in the order first drawn
	markDash  map[string]string // a mark's stroke-dasharray, by fault kind
	reorgFill string            // the fill under the first reorganization hatch
}

func newPicture(m Model, opts Options) *picture {
	p := &picture{
		m:        m,
		title:    opts.Title,
		width:    float64(opts.Width),
		rowH:     float64(opts.RowHeight),
		t0:       m.Start,
		t1:       m.End,
		colour:   map[wire.GroupNumber]string{},
		markDash: map[string]string{},
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
	if opts.End.IsZero() {
		p.makeRoomAtEnd()
	}
	for i, g := range m.Groups {
		p.colour[g] = groupColour(i)
	}
	p.assignLanes()
	return p
}

// end is where something that ends at t ends in the picture: a segment or
// window that lasts to the end of the model's axis lasts to the end of the
// drawn one (an instant there is drawn only when Options.End fixed the
// axis, and then the two ends are the same).
func (p *picture) end(t time.Time) time.Time {
	if t.Equal(p.m.End) {
		return p.t1
	}
	return t
}

// makeRoomAtEnd moves the end of the drawn time axis (p.t1) later, if
// needed, so that the last segment of every row is wide enough for its
// label: the group a node ends in is what a reader looks for. (A fault
// label that would run past the right edge is moved left instead: labelX.)
// The segments that ran to the model's end stretch to the new one (to).
func (p *picture) makeRoomAtEnd() {
	// x(at) + px <= x(t1) holds when (t1-t0) >= (at-t0) / (1 - px/plotW).
	span := p.t1.Sub(p.t0)
	for _, n := range p.m.Nodes {
		segs := p.m.Rows[n]
		if len(segs) == 0 {
			continue
		}
		last := segs[len(segs)-1]
		_, px := segmentLabel(last)
		// A label wider than half the plot is not worth the squeeze; one
		// pixel more absorbs the rounding of the comparison in drawSegment.
		px = min(px+1, p.plotW()/2)
		if last.From.Before(p.t0) {
			continue
		}
		if d := time.Duration(float64(last.From.Sub(p.t0)) / (1 - px/p.plotW())); d > span {
			span = d
		}
	}
	if end := p.t0.Add(span); end.After(p.t1) {
		p.t1 = end
	}
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

// labelX is where a window's label starts: just after its line, or as far
// right as it fits when that would run past the picture's right edge.
func (p *picture) labelX(w Window) float64 {
	return math.Max(marginL, math.Min(p.x(w.From)+3, p.width-2-textW(w.Label())))
}

// assignLanes places the windows' labels in lanes above the rows so that
// they do not overlap; past maxLanes, the least crowded lane is reused.
func (p *picture) assignLanes() {
	var right []float64
	p.lanes = make([]int, len(p.m.Windows))
	for i, w := range p.m.Windows {
		x0 := math.Min(p.x(w.From), p.labelX(w)-3)
		x1 := math.Max(p.x(p.end(w.To)), p.labelX(w)+textW(w.Label())+3)
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
		p.lanes[i] = lane
	}
	p.nLanes = len(right)
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

// geometry is where the picture's parts sit, top to bottom: the title,
// the band of fault labels, the rows, the axis, the legend.
type geometry struct {
	bandTop, rowsTop, pitch, rowsH, axisTop float64
}

func (p *picture) geometry() geometry {
	const titleH = 44.0
	g := geometry{bandTop: titleH, pitch: p.rowH + rowGap}
	bandH := float64(p.nLanes) * laneH
	if p.nLanes > 0 {
		bandH += 4
	}
	g.rowsTop = g.bandTop + bandH
	g.rowsH = float64(len(p.m.Nodes))*g.pitch - rowGap
	g.axisTop = g.rowsTop + g.rowsH
	return g
}

// write writes the picture to w.
func (p *picture) write(w io.Writer) error {
	if _, err := io.WriteString(w, p.svg()); err != nil {
		return fmt.Errorf("timeline: write: %w", err)
	}
	return nil
}

func (p *picture) svg() string {
	p.used = map[string]bool{}
	g := p.geometry()
	var body strings.Builder
	p.drawTitle(&body)
	p.drawAxis(&body, g)
	for i, n := range p.m.Nodes {
		p.drawRow(&body, n, g.rowsTop+float64(i)*g.pitch)
	}
	for i, w := range p.m.Windows {
		p.drawWindow(&body, w, p.lanes[i], g)
	}

	// The legend: what was drawn, in a fixed order.
	legend := p.legendItems()
	legendLines := p.layoutLegend(legend)
	legendTop := g.axisTop + axisH
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

// drawTitle draws the title and the subtitle, shortened to the picture's
// width.
func (p *picture) drawTitle(b *strings.Builder) {
	pr := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	room := p.width - marginL - 2
	pr(`<g data-chrome="title">`)
	pr(`<text x="%s" y="18" font-size="15" font-weight="bold" fill="#111">%s</text>`, f1(marginL), esc(fit(p.title, room*11/15)))
	nodes, events, marks := len(p.m.Nodes), p.m.Events, p.m.Marks
	sub := fmt.Sprintf("%.1f s · %d node%s · %d event%s · %d fault%s",
		p.t1.Sub(p.t0).Seconds(), nodes, plural(nodes), events, plural(events), marks, plural(marks))
	if start := "start " + p.t0.UTC().Format("2006-01-02 15:04:05.000") + " UTC · "; textW(start+sub) <= room {
		sub = start + sub
	}
	pr(`<text x="%s" y="35" fill="#555">%s</text>`, f1(marginL), esc(fit(sub, room)))
	pr("</g>\n")
}

// drawAxis draws the grid over the rows and the ticks below them.
func (p *picture) drawAxis(b *strings.Builder, g geometry) {
	pr := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	span := p.t1.Sub(p.t0).Seconds()
	step := niceStep(span)
	pr(`<g data-chrome="grid" stroke="#e6e6e6" stroke-width="1">` + "\n")
	for i := 0; float64(i)*step <= span+1e-9; i++ {
		x := marginL + float64(i)*step/span*p.plotW()
		pr(`<line x1="%s" y1="%s" x2="%s" y2="%s"/>`+"\n", f1(x), f1(g.rowsTop), f1(x), f1(g.axisTop+4))
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
		pr(`<text x="%s" y="%s">%s</text>`+"\n", f1(x), f1(g.axisTop+17), lbl)
	}
	pr(`<text x="%s" y="%s" fill="#777" text-anchor="end">seconds from start</text>`+"\n", f1(p.width-marginR), f1(g.axisTop+28))
	pr("</g>\n")
}

// drawRow draws node n's row at y: its label, its background and its
// segments.
func (p *picture) drawRow(b *strings.Builder, n wire.NodeID, y float64) {
	pr := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	pr(`<g class="node" data-node="%d">`+"\n", n)
	pr(`<text data-chrome="row" x="%s" y="%s" text-anchor="end" fill="#222">node %d</text>`+"\n", f1(marginL-8), f1(y+p.rowH/2+4), n)
	pr(`<rect data-chrome="row" x="%s" y="%s" width="%s" height="%s" fill="#f6f6f6"/>`+"\n", f1(marginL), f1(y), f1(p.plotW()), f1(p.rowH))
	for _, s := range p.m.Rows[n] {
		p.drawSegment(b, n, s, y)
	}
	pr("</g>\n")
}

// drawWindow draws a fault window (shading over the rows, its label in
// the band above them) or an instant (a line over the rows, or over its
// node's row).
func (p *picture) drawWindow(b *strings.Builder, w Window, lane int, g geometry) {
	pr := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	kind := w.Mark.Kind
	c := colourOfFault(kind)
	x0, x1 := p.x(w.From), p.x(p.end(w.To))
	ly := g.bandTop + float64(lane)*laneH
	lbl := w.Label()
	tip := fmt.Sprintf("%s at %s", lbl, p.secs(w.From))
	if !w.Instant {
		tip += " until " + p.secs(p.end(w.To))
		pr(`<g class="fault" data-kind="%s"%s><title>%s</title>`+"\n", esc(kind), p.use("fault:"+kind), esc(tip))
		pr(`<rect x="%s" y="%s" width="%s" height="%s" fill="#000" fill-opacity="0.08"/>`+"\n",
			f1(x0), f1(g.rowsTop-2), f1(math.Max(x1-x0, 1)), f1(g.rowsH+4))
		pr(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1" stroke-dasharray="2 2"/>`+"\n",
			f1(x1), f1(ly+1), f1(x1), f1(g.axisTop), c)
		pr(`<rect x="%s" y="%s" width="%s" height="%s" fill="%s" fill-opacity="0.25"/>`+"\n",
			f1(x0), f1(ly+1), f1(math.Max(x1-x0, 1)), f1(laneH-3), c)
		pr(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1.5"/>`+"\n",
			f1(x0), f1(ly+1), f1(x0), f1(g.axisTop), c)
		pr(`<text x="%s" y="%s" fill="%s">%s</text>`+"\n", f1(p.labelX(w)), f1(ly+laneH-5), darker(c), esc(lbl))
		pr("</g>\n")
		return
	}
	y0, y1 := g.rowsTop-2, g.axisTop
	dash := ` stroke-dasharray="4 3"`
	if i := p.rowIndex(w.Node); w.Node != 0 && i >= 0 {
		y0 = g.rowsTop + float64(i)*g.pitch - 2
		y1 = y0 + p.rowH + 4
		dash = ""
	}
	if _, seen := p.markDash[kind]; !seen {
		p.markDash[kind] = dash
	}
	pr(`<g class="fault" data-kind="%s"%s><title>%s</title>`+"\n", esc(kind), p.use("mark:"+kind), esc(tip))
	pr(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"%s/>`+"\n", f1(x0), f1(y0), f1(x0), f1(y1), c, dash)
	pr(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1" stroke-opacity="0.5"/>`+"\n", f1(x0), f1(ly+1), f1(x0), f1(y0), c)
	pr(`<text x="%s" y="%s" fill="%s">%s</text>`+"\n", f1(p.labelX(w)), f1(ly+laneH-5), darker(c), esc(lbl))
	pr("</g>\n")
}

func (p *picture) rowIndex(n wire.NodeID) int {
	return slices.Index(p.m.Nodes, n)
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

// noGroupFill is the colour of a node that has no group yet.
const noGroupFill = "#e0e0e0"

// segmentLabel is the text drawn in a segment, and the room it needs from
// the segment's start (with the coordinator's star).
func segmentLabel(s Segment) (string, float64) {
	if s.Down {
		return "down", textW("down") + 8
	}
	lbl := s.Group.String()
	if s.State == wire.StateElection {
		lbl = "election"
	}
	need := textW(lbl) + 8
	if s.Coordinating() {
		need += 12
	}
	return lbl, need
}

func (p *picture) drawSegment(b *strings.Builder, n wire.NodeID, s Segment, y float64) {
	pr := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	to := p.end(s.To)
	x0, x1 := p.x(s.From), p.x(to)
	w := x1 - x0
	if w <= 0 {
		return
	}
	mid := y + p.rowH/2
	lbl, need := segmentLabel(s)
	if s.Down {
		pr(`<g class="down"%s><title>node %d down %s–%s</title>`, p.use("down"), n, p.secs(s.From), p.secs(to))
		pr(`<rect x="%s" y="%s" width="%s" height="%s" fill="#fff"/>`, f1(x0), f1(y), f1(w), f1(p.rowH))
		pr(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#999" stroke-width="1.2" stroke-dasharray="3 3"/>`, f1(x0), f1(mid), f1(x1), f1(mid))
		if w >= need {
			pr(`<text x="%s" y="%s" fill="#888" font-size="10">%s</text>`, f1(x0+4), f1(mid-3), lbl)
		}
		pr("</g>\n")
		return
	}
	fill, key := noGroupFill, "no-group"
	if c, ok := p.colour[s.Group]; ok {
		fill, key = c, "group:"+s.Group.String()
	}
	state := s.State.String()
	tip := fmt.Sprintf("node %d %s %s group %s [%s] %s–%s", n, state, s.Role, s.Group, ids(s.Members), p.secs(s.From), p.secs(to))
	pr(`<g class="seg" data-state="%s" data-group="%s"><title>%s</title>`, esc(state), s.Group, esc(tip))
	switch s.State {
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
	for _, c := range s.Changes {
		cx := p.x(c)
		pr(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#fff" stroke-width="1.5"%s/>`, f1(cx), f1(y+p.rowH-6), f1(cx), f1(y+p.rowH), p.use("members-changed"))
	}
	tx := x0 + 4
	if s.Coordinating() {
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
		if s.State == wire.StateElection {
			tc = "#222"
		}
		lk := key
		if s.State == wire.StateElection {
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
	for _, g := range p.m.Groups {
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
