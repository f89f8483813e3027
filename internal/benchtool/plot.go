//go:build linux

package main

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Point is one x position of a series: the p50 and the p95 of a sample.
type Point struct {
	X        float64
	P50, P95 float64
	Count    int
}

// Series is one line of a plot.
type Series struct {
	Name   string
	Color  string
	Dashed bool // draw the connecting line dashed (e.g. simulator, virtual time)
	Points []Point
}

// Chart is a p50-with-p95-whiskers chart over N, x on a log2 scale.
type Chart struct {
	Title    string
	Subtitle string
	YLabel   string
	XLabel   string
	Series   []Series
	// HLines are horizontal reference lines (targets), value -> label.
	HLines map[float64]string
	// YClip, when > 0, caps the y axis: a value above it is drawn at the
	// top edge with an arrow and its value written next to it.
	YClip float64
}

const (
	plotW     = 760.0
	plotH     = 430.0
	mLeft     = 64.0
	mRight    = 200.0
	mTop      = 56.0
	mBottom   = 50.0
	fontStack = "system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif"
)

// Palette: the timeline package's style (muted, readable on white).
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"}

func esc(s string) string {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")
	return r.Replace(s)
}

func f1(v float64) string { return fmt.Sprintf("%.1f", v) }

// niceStep picks a tick step of 1, 2 or 5 × 10^k giving about n ticks.
func niceStep(span float64, n int) float64 {
	if span <= 0 {
		return 1
	}
	raw := span / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// SVG renders the chart.
func (c Chart) SVG() string {
	var b strings.Builder
	pr := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	// Domains.
	var xs []float64
	ymax := 0.0
	for _, s := range c.Series {
		for _, p := range s.Points {
			xs = append(xs, p.X)
			ymax = math.Max(ymax, math.Max(p.P50, p.P95))
		}
	}
	for v := range c.HLines {
		ymax = math.Max(ymax, v)
	}
	if ymax == 0 {
		ymax = 1
	}
	if c.YClip > 0 && ymax > c.YClip {
		ymax = c.YClip
	}
	step := niceStep(ymax*1.08, 6)
	ytop := math.Ceil(ymax*1.08/step) * step
	sort.Float64s(xs)
	xmin, xmax := 1.0, 2.0
	if len(xs) > 0 {
		xmin, xmax = xs[0], xs[len(xs)-1]
	}
	lx0, lx1 := math.Log2(xmin)-0.35, math.Log2(xmax)+0.35
	if lx1-lx0 < 1 {
		lx1 = lx0 + 1
	}
	iw, ih := plotW-mLeft-mRight, plotH-mTop-mBottom
	X := func(x float64) float64 { return mLeft + (math.Log2(x)-lx0)/(lx1-lx0)*iw }
	Y := func(y float64) float64 { return mTop + ih - math.Min(y, ytop)/ytop*ih }

	pr(`<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="%s" font-size="11">`+"\n",
		f1(plotW), f1(plotH), f1(plotW), f1(plotH), fontStack)
	pr(`<rect width="100%%" height="100%%" fill="#fff"/>` + "\n")
	pr(`<text x="%s" y="20" font-size="15" font-weight="bold" fill="#111">%s</text>`+"\n", f1(mLeft), esc(c.Title))
	if c.Subtitle != "" {
		pr(`<text x="%s" y="38" fill="#555">%s</text>`+"\n", f1(mLeft), esc(c.Subtitle))
	}
	// Grid and y ticks.
	pr(`<g stroke="#e6e6e6" stroke-width="1">` + "\n")
	for y := 0.0; y <= ytop+step/2; y += step {
		pr(`<line x1="%s" y1="%s" x2="%s" y2="%s"/>`+"\n", f1(mLeft), f1(Y(y)), f1(mLeft+iw), f1(Y(y)))
	}
	pr("</g>\n")
	pr(`<g fill="#444" text-anchor="end">` + "\n")
	for y := 0.0; y <= ytop+step/2; y += step {
		pr(`<text x="%s" y="%s">%s</text>`+"\n", f1(mLeft-6), f1(Y(y)+4), trimFloat(y))
	}
	pr("</g>\n")
	// x ticks at the data's N values.
	seen := map[float64]bool{}
	pr(`<g fill="#444" text-anchor="middle">` + "\n")
	for _, x := range xs {
		if seen[x] {
			continue
		}
		seen[x] = true
		pr(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#bbb"/>`+"\n", f1(X(x)), f1(mTop+ih), f1(X(x)), f1(mTop+ih+5))
		pr(`<text x="%s" y="%s">%s</text>`+"\n", f1(X(x)), f1(mTop+ih+18), trimFloat(x))
	}
	pr("</g>\n")
	pr(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#888"/>`+"\n", f1(mLeft), f1(mTop+ih), f1(mLeft+iw), f1(mTop+ih))
	pr(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#888"/>`+"\n", f1(mLeft), f1(mTop), f1(mLeft), f1(mTop+ih))
	pr(`<text x="%s" y="%s" fill="#555" text-anchor="middle">%s</text>`+"\n", f1(mLeft+iw/2), f1(plotH-10), esc(c.XLabel))
	pr(`<text transform="translate(16 %s) rotate(-90)" fill="#555" text-anchor="middle">%s</text>`+"\n", f1(mTop+ih/2), esc(c.YLabel))
	// Reference lines.
	var hs []float64
	for v := range c.HLines {
		hs = append(hs, v)
	}
	sort.Float64s(hs)
	for _, v := range hs {
		pr(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#999" stroke-dasharray="6 4"/>`+"\n", f1(mLeft), f1(Y(v)), f1(mLeft+iw), f1(Y(v)))
		pr(`<text x="%s" y="%s" fill="#777" text-anchor="end">%s</text>`+"\n", f1(mLeft+iw-4), f1(Y(v)-4), esc(c.HLines[v]))
	}
	// Series: offset each a little along x so whiskers do not overlap.
	ns := len(c.Series)
	for k, s := range c.Series {
		color := s.Color
		if color == "" {
			color = palette[k%len(palette)]
		}
		off := (float64(k) - float64(ns-1)/2) * 7
		pts := append([]Point(nil), s.Points...)
		sort.Slice(pts, func(i, j int) bool { return pts[i].X < pts[j].X })
		if len(pts) > 1 {
			var path strings.Builder
			for i, p := range pts {
				cmd := "L"
				if i == 0 {
					cmd = "M"
				}
				fmt.Fprintf(&path, "%s%s %s ", cmd, f1(X(p.X)+off), f1(Y(p.P50)))
			}
			dash := ""
			if s.Dashed {
				dash = ` stroke-dasharray="5 3"`
			}
			pr(`<path d="%s" fill="none" stroke="%s" stroke-width="1.6" stroke-opacity="0.8"%s/>`+"\n", strings.TrimSpace(path.String()), color, dash)
		}
		for _, p := range pts {
			x := X(p.X) + off
			if p.P95 > p.P50 {
				pr(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1.3"/>`+"\n", f1(x), f1(Y(p.P50)), f1(x), f1(Y(p.P95)), color)
				pr(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1.3"/>`+"\n", f1(x-4), f1(Y(p.P95)), f1(x+4), f1(Y(p.P95)), color)
			}
			pr(`<circle cx="%s" cy="%s" r="3.6" fill="%s"><title>%s N=%s: p50 %.3f s, p95 %.3f s (%d runs)</title></circle>`+"\n",
				f1(x), f1(Y(p.P50)), color, esc(s.Name), trimFloat(p.X), p.P50, p.P95, p.Count)
			if p.P95 > ytop || p.P50 > ytop {
				// Off the chart: an arrow at the top and the values.
				pr(`<path d="M%s %s l-5 8 h10 z" fill="%s"/>`+"\n", f1(x), f1(mTop-2), color)
				pr(`<text x="%s" y="%s" fill="%s" font-size="10" text-anchor="end">off the chart: p50 %s s, p95 %s s ↑</text>`+"\n",
					f1(x-8), f1(mTop+10+float64(k)*12), color, trimFloat(math.Round(p.P50*10)/10), trimFloat(math.Round(p.P95*10)/10))
			}
		}
		// Legend.
		ly := mTop + 8 + float64(k)*20
		lx := mLeft + iw + 18
		pr(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"%s/>`+"\n", f1(lx), f1(ly), f1(lx+22), f1(ly), color,
			map[bool]string{true: ` stroke-dasharray="5 3"`, false: ""}[s.Dashed])
		pr(`<circle cx="%s" cy="%s" r="3.6" fill="%s"/>`+"\n", f1(lx+11), f1(ly), color)
		pr(`<text x="%s" y="%s" fill="#222">%s</text>`+"\n", f1(lx+28), f1(ly+4), esc(s.Name))
	}
	ly := mTop + 8 + float64(ns)*20 + 6
	pr(`<text x="%s" y="%s" fill="#777">dot: p50; whisker: up to p95</text>`+"\n", f1(mLeft+iw+18), f1(ly))
	pr("</svg>\n")
	return b.String()
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.3f", v)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}
