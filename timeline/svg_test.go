package timeline

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"
)

// node is an element of a parsed SVG.
type node struct {
	name     string
	attr     map[string]string
	text     string
	children []*node
	parent   *node
}

// parseSVG reads an SVG document into a tree.
func parseSVG(t *testing.T, svg string) *node {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	root := &node{name: "#document"}
	cur := root
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return root
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			n := &node{name: tok.Name.Local, attr: map[string]string{}, parent: cur}
			for _, a := range tok.Attr {
				n.attr[a.Name.Local] = a.Value
			}
			cur.children = append(cur.children, n)
			cur = n
		case xml.EndElement:
			cur = cur.parent
		case xml.CharData:
			cur.text += string(tok)
		}
	}
}

// walk calls fn for n and every element below it.
func (n *node) walk(fn func(*node)) {
	fn(n)
	for _, c := range n.children {
		c.walk(fn)
	}
}

// inherited returns attribute a of n or of its nearest ancestor with it.
func (n *node) inherited(a string) (string, bool) {
	for m := n; m != nil; m = m.parent {
		if v, ok := m.attr[a]; ok {
			return v, true
		}
	}
	return "", false
}

func (n *node) num(t *testing.T, a string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(n.attr[a], 64)
	if err != nil {
		t.Fatalf("<%s %s=%q>: %v", n.name, a, n.attr[a], err)
	}
	return v
}

// render draws events and faults (NDJSON, faults may be "") and parses
// the SVG.
func render(t *testing.T, events, faults string, opts Options) (*node, string) {
	t.Helper()
	var f io.Reader
	if faults != "" {
		f = strings.NewReader(faults)
	}
	var buf bytes.Buffer
	if err := Render(&buf, strings.NewReader(events), f, opts); err != nil {
		t.Fatal(err)
	}
	return parseSVG(t, buf.String()), buf.String()
}

// visual elements: what a reader sees (titles are tooltips, defs are not
// drawn by themselves).
var visual = map[string]bool{"rect": true, "line": true, "text": true, "path": true, "circle": true, "polyline": true}

// marks returns the data-mark keys drawn outside the legend and the keys
// of the legend's entries, and fails on a visual element that is neither
// a mark, nor chrome, nor in the legend.
func marks(t *testing.T, root *node) (drawn, legend map[string]*node) {
	t.Helper()
	drawn, legend = map[string]*node{}, map[string]*node{}
	root.walk(func(n *node) {
		if n.name == "g" && n.attr["class"] == "legend-item" {
			legend[n.attr["data-mark"]] = n
			return
		}
		if !visual[n.name] {
			return
		}
		inLegend := false
		for m := n; m != nil; m = m.parent {
			if m.attr["class"] == "legend" {
				inLegend = true
			}
			if m.name == "defs" {
				return
			}
		}
		if inLegend {
			return
		}
		if key, ok := n.inherited("data-mark"); ok {
			if _, seen := drawn[key]; !seen {
				drawn[key] = n
			}
			return
		}
		if _, ok := n.inherited("data-chrome"); !ok {
			t.Errorf("<%s %v> %q is neither a mark with a legend entry nor chrome", n.name, n.attr, n.text)
		}
	})
	return drawn, legend
}

// every fault kind, and every state, on three nodes.
const (
	allEvents = `{"time":"2026-11-21T10:00:00Z","node":1,"reason":"snapshot","new":{"id":1,"state":"normal","role":"participant","group":"0.0","coordinator":0,"members":[]}}
{"time":"2026-11-21T10:00:00.5Z","node":1,"reason":"recovery","new":{"id":1,"state":"normal","role":"coordinator","group":"1.1","coordinator":1,"members":[1]}}
{"time":"2026-11-21T10:00:00.2Z","node":2,"reason":"recovery","new":{"id":2,"state":"normal","role":"coordinator","group":"1.2","coordinator":2,"members":[2]}}
{"time":"2026-11-21T10:00:00.3Z","node":3,"reason":"recovery","new":{"id":3,"state":"normal","role":"coordinator","group":"1.3","coordinator":3,"members":[3]}}
{"time":"2026-11-21T10:00:01Z","node":3,"reason":"merge","new":{"id":3,"state":"election","role":"coordinator","group":"1.3","coordinator":3,"members":[3]}}
{"time":"2026-11-21T10:00:01.1Z","node":1,"reason":"invited","new":{"id":1,"state":"reorganization","role":"participant","group":"2.3","coordinator":3,"members":[]}}
{"time":"2026-11-21T10:00:01.1Z","node":2,"reason":"invited","new":{"id":2,"state":"reorganization","role":"participant","group":"2.3","coordinator":3,"members":[]}}
{"time":"2026-11-21T10:00:01.3Z","node":3,"reason":"ready","new":{"id":3,"state":"normal","role":"coordinator","group":"2.3","coordinator":3,"members":[1,2,3]}}
{"time":"2026-11-21T10:00:01.4Z","node":1,"reason":"ready","new":{"id":1,"state":"normal","role":"participant","group":"2.3","coordinator":3,"members":[1,2,3]}}
{"time":"2026-11-21T10:00:01.4Z","node":2,"reason":"ready","new":{"id":2,"state":"normal","role":"participant","group":"2.3","coordinator":3,"members":[1,2,3]}}
{"time":"2026-11-21T10:00:06Z","node":3,"reason":"members","new":{"id":3,"state":"normal","role":"coordinator","group":"2.3","coordinator":3,"members":[2,3]}}
{"time":"2026-11-21T10:00:08Z","node":1,"reason":"recovery","new":{"id":1,"state":"normal","role":"coordinator","group":"3.1","coordinator":1,"members":[1]}}
`
	allFaults = `{"time":"2026-11-21T10:00:02Z","kind":"loss","spec":"20%"}
{"time":"2026-11-21T10:00:02.5Z","kind":"delay","spec":"50ms"}
{"time":"2026-11-21T10:00:03Z","kind":"partition","spec":"1|2,3"}
{"time":"2026-11-21T10:00:03.5Z","kind":"oneway","spec":"1>3"}
{"time":"2026-11-21T10:00:04Z","kind":"heal","spec":""}
{"time":"2026-11-21T10:00:05Z","kind":"kill","spec":"1"}
{"time":"2026-11-21T10:00:07Z","kind":"restart","spec":"1"}
`
)

// TestLegendCoversMarks draws every kind of mark and checks that the legend
// has an entry for each one drawn, and none for a mark not drawn.
func TestLegendCoversMarks(t *testing.T) {
	for _, tc := range []struct {
		name, events, faults string
		want                 []string // marks that must be drawn
	}{
		{"everything", allEvents, allFaults, []string{
			"group:1.1", "group:1.2", "group:1.3", "group:2.3", "group:3.1", "no-group", "coordinator",
			"election", "reorganization", "members-changed", "down",
			"fault:loss", "fault:delay", "fault:partition", "fault:oneway", "mark:heal", "mark:kill", "mark:restart"}},
		{"no faults", allEvents, "", []string{"group:2.3", "election", "reorganization"}},
		{"one group", `{"time":"2026-11-21T10:00:00Z","node":1,"reason":"recovery","new":{"id":1,"state":"normal","role":"participant","group":"1.2","coordinator":2,"members":[1,2]}}`, "",
			[]string{"group:1.2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, _ := render(t, tc.events, tc.faults, Options{})
			drawn, legend := marks(t, root)
			for _, key := range tc.want {
				if drawn[key] == nil {
					t.Errorf("mark %s is not drawn", key)
				}
			}
			for key := range drawn {
				if legend[key] == nil {
					t.Errorf("mark %s is drawn but not in the legend", key)
				}
			}
			for key := range legend {
				if drawn[key] == nil {
					t.Errorf("the legend explains %s, which is not drawn", key)
				}
			}
			// A group's swatch has the colour of its segments.
			for key, n := range drawn {
				if !strings.HasPrefix(key, "group:") || legend[key] == nil {
					continue
				}
				var swatch string
				legend[key].walk(func(m *node) {
					if m.name == "rect" && swatch == "" {
						swatch = m.attr["fill"]
					}
				})
				if swatch != n.attr["fill"] {
					t.Errorf("%s: drawn in %s, legend swatch %s", key, n.attr["fill"], swatch)
				}
			}
		})
	}
}

// TestLastGroupNotClipped draws a recording that ends right after a merge,
// with a long fault label at the end: the last segment of every row must
// carry its group's label, and nothing may reach past the right edge.
func TestLastGroupNotClipped(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	ev := func(s float64, node int, state, group string, coord int) string {
		role := "participant"
		if coord == node {
			role = "coordinator"
		}
		return fmt.Sprintf(`{"time":%q,"node":%d,"reason":"x","new":{"id":%d,"state":%q,"role":%q,"group":%q,"coordinator":%d,"members":[%d]}}`+"\n",
			t0.Add(time.Duration(s*float64(time.Second))).Format(time.RFC3339Nano), node, node, state, role, group, coord, node)
	}
	events := ev(0, 1, "normal", "1.1", 1) + ev(0, 2, "normal", "1.2", 2) + ev(0, 3, "normal", "1.3", 3) +
		ev(1, 1, "normal", "120.3", 3) + ev(1, 2, "normal", "120.3", 3) + ev(1, 3, "normal", "120.3", 3) +
		ev(9.9, 1, "reorganization", "121.2", 2) + ev(9.95, 2, "election", "121.2", 2) +
		ev(10, 2, "normal", "121.2", 2) + ev(10.02, 1, "normal", "121.2", 2)
	faults := fmt.Sprintf(`{"time":%q,"kind":"partition","spec":"1,2|3,4,5,6,7,8,9,10"}`+"\n", t0.Add(9800*time.Millisecond).Format(time.RFC3339Nano))
	for _, width := range []int{400, 1000} {
		t.Run(strconv.Itoa(width), func(t *testing.T) {
			root, _ := render(t, events, faults, Options{Width: width})
			w := float64(width)
			root.walk(func(n *node) {
				if n.attr["class"] != "node" {
					return
				}
				var last *node
				for _, c := range n.children {
					if c.attr["class"] == "seg" || c.attr["class"] == "down" {
						last = c
					}
				}
				if last == nil {
					t.Fatalf("row %s has no segment", n.attr["data-node"])
				}
				labelled := false
				for _, c := range last.children {
					if c.name == "text" && c.attr["data-label"] == "segment" && c.text == last.attr["data-group"] {
						labelled = true
					}
				}
				if !labelled {
					t.Errorf("node %s: the last segment (group %s) has no label", n.attr["data-node"], last.attr["data-group"])
				}
			})
			root.walk(func(n *node) {
				if n.parent != nil && n.parent.name == "pattern" {
					return // drawn in the pattern's own coordinates
				}
				var right float64
				switch n.name {
				case "rect":
					if n.attr["width"] == "100%" {
						return
					}
					right = n.num(t, "x") + n.num(t, "width")
				case "line":
					right = max(n.num(t, "x1"), n.num(t, "x2"))
				case "text":
					size, _ := n.inherited("font-size")
					px, err := strconv.ParseFloat(size, 64)
					if err != nil {
						t.Fatalf("<text> %q has no font size", n.text)
					}
					x, tw := n.num(t, "x"), textW(n.text)*px/fontSize
					switch anchor, _ := n.inherited("text-anchor"); anchor {
					case "middle":
						right = x + tw/2
					case "end":
						right = x
					default:
						right = x + tw
					}
				default:
					return
				}
				if right > w+0.05 {
					t.Errorf("<%s> %q reaches x=%.1f, past the right edge %v", n.name, n.text, right, w)
				}
			})
		})
	}
}

// TestOptionsShapeThePicture: Width and RowHeight set the picture's width
// and every row's height; Title its title.
func TestOptionsShapeThePicture(t *testing.T) {
	root, _ := render(t, allEvents, "", Options{Title: "t & <x>", Width: 600, RowHeight: 18})
	rows := 0
	root.walk(func(n *node) {
		switch {
		case n.name == "svg" && n.attr["width"] != "600.0":
			t.Errorf("width %s, want 600.0", n.attr["width"])
		case n.name == "title" && n.parent.name == "svg" && n.text != "t & <x>":
			t.Errorf("title %q", n.text)
		case n.name == "rect" && n.attr["data-chrome"] == "row":
			rows++
			if n.attr["height"] != "18.0" {
				t.Errorf("row height %s, want 18.0", n.attr["height"])
			}
		}
	})
	if rows != 3 {
		t.Errorf("%d rows, want 3", rows)
	}
}
