package report

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// Scale names how an axis maps values to pixels; the chart's root <svg> declares it so a reader can
// recompute every point's position (the report test does).
type Scale string

const (
	// ScaleLinear maps v linearly.
	ScaleLinear Scale = "linear"
	// ScaleLog10 maps log10(v).
	ScaleLog10 Scale = "log10"
	// ScaleNines maps a percentile p to -log10(1 - p/100) (90 -> 1, 99 -> 2, 99.9 -> 3); 100 maps to
	// one more than the largest finite percentile plotted.
	ScaleNines Scale = "nines"
)

// Plot area geometry, in SVG user units; the chart grows downwards with its legend.
const (
	chartWidth = 640
	plotLeft   = 72
	plotTop    = 32
	plotWidth  = 540
	plotHeight = 270
)

type point struct {
	// X and Y are in axis units before scaling (for ScaleNines, X is already in nines).
	X, Y float64
	// RawX is written to data-x (a size, a rate, a percentile string).
	RawX string
	// Open draws a hollow marker (e.g. a rate that was not sustained).
	Open  bool
	Title string
}

type series struct {
	Name   string
	Class  int
	Dashed bool
	Points []point
}

type tick struct {
	V     float64
	Label string
}

type axis struct {
	Label    string
	Scale    Scale
	Min, Max float64
	Ticks    []tick
}

type chart struct {
	ID     string
	Title  string
	X, Y   axis
	Series []series
	// Categories, when set, makes a bar chart: X is the category index and each series is one bar
	// per category.
	Categories []string
}

func (a axis) t(v float64) float64 {
	if a.Scale == ScaleLog10 {
		return math.Log10(v)
	}
	return v
}

// frac returns v's position along the axis, 0..1.
func (a axis) frac(v float64) float64 {
	lo, hi := a.t(a.Min), a.t(a.Max)
	if hi == lo {
		return 0.5
	}
	return (a.t(v) - lo) / (hi - lo)
}

func (c chart) px(x float64) float64 { return plotLeft + c.X.frac(x)*plotWidth }
func (c chart) py(y float64) float64 { return plotTop + plotHeight - c.Y.frac(y)*plotHeight }

func dashAttr(dashed bool) string {
	if dashed {
		return ` stroke-dasharray="5 4"`
	}
	return ""
}

func f2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

func fnum(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// nines is ScaleNines' transform for a finite percentile (< 100).
func nines(p float64) float64 { return -math.Log10(1 - p/100) }

// usLabel renders nanoseconds as a short microsecond label.
func usLabel(ns float64) string {
	us := ns / 1000
	switch {
	case ns == 0:
		return "0"
	case us >= 1000:
		return strconv.FormatFloat(us/1000, 'g', 3, 64) + " ms"
	case us >= 1:
		return strconv.FormatFloat(us, 'g', 3, 64) + " µs"
	default:
		return strconv.FormatFloat(us*1000, 'g', 3, 64) + " ns"
	}
}

// logAxis spans whole decades around [lo, hi] with ticks at 1, 2 and 5.
func logAxis(label string, lo, hi float64, fmtTick func(float64) string) axis {
	if lo <= 0 {
		lo = 1
	}
	if hi < lo {
		hi = lo
	}
	min := math.Pow(10, math.Floor(math.Log10(lo)))
	max := math.Pow(10, math.Ceil(math.Log10(hi)))
	if max <= min {
		max = min * 10
	}
	a := axis{Label: label, Scale: ScaleLog10, Min: min, Max: max}
	for d := min; d <= max*1.0001; d *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if v := d * m; v <= max*1.0001 {
				a.Ticks = append(a.Ticks, tick{V: v, Label: fmtTick(v)})
			}
		}
	}
	return a
}

// linearAxis spans [0 or lo, hi] rounded to a 1-2-5 step with about five ticks.
func linearAxis(label string, lo, hi float64, fromZero bool, fmtTick func(float64) string) axis {
	if fromZero {
		lo = 0
	}
	if hi <= lo {
		hi = lo + 1
	}
	raw := (hi - lo) / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	a := axis{Label: label, Scale: ScaleLinear, Min: math.Floor(lo/step) * step, Max: math.Ceil(hi/step) * step}
	for v := a.Min; v <= a.Max+step/1000; v += step {
		a.Ticks = append(a.Ticks, tick{V: v, Label: fmtTick(v)})
	}
	return a
}

// svg renders the chart. Every data point is a <circle class="pt"> (or a <rect class="bar">) with
// data-series, data-x and data-y (nanoseconds) so its position can be checked against the axis
// declared on the root element.
func (c chart) svg() string {
	var b strings.Builder
	xMin, xMax := c.X.Min, c.X.Max
	legendRows := (len(c.Series) + 2) / 3
	height := plotTop + plotHeight + 48 + legendRows*18
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="%s" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s"`,
		html.EscapeString(c.ID), chartWidth, height, chartWidth, height, html.EscapeString(c.Title))
	fmt.Fprintf(&b, ` data-plot-left="%d" data-plot-top="%d" data-plot-width="%d" data-plot-height="%d"`, plotLeft, plotTop, plotWidth, plotHeight)
	fmt.Fprintf(&b, ` data-x-scale="%s" data-x-min="%s" data-x-max="%s" data-y-scale="%s" data-y-min="%s" data-y-max="%s">`+"\n",
		c.X.Scale, fnum(xMin), fnum(xMax), c.Y.Scale, fnum(c.Y.Min), fnum(c.Y.Max))
	fmt.Fprintf(&b, `<text class="title" x="%d" y="18">%s</text>`+"\n", plotLeft, html.EscapeString(c.Title))
	// Grid and ticks.
	for _, t := range c.Y.Ticks {
		y := c.py(t.V)
		fmt.Fprintf(&b, `<line class="grid" x1="%d" x2="%d" y1="%s" y2="%s"/><text class="tick" x="%d" y="%s" text-anchor="end">%s</text>`+"\n",
			plotLeft, plotLeft+plotWidth, f2(y), f2(y), plotLeft-6, f2(y+4), html.EscapeString(t.Label))
	}
	if c.Categories != nil {
		for i, cat := range c.Categories {
			x := c.px(float64(i))
			fmt.Fprintf(&b, `<text class="tick" x="%s" y="%d" text-anchor="middle">%s</text>`+"\n", f2(x), plotTop+plotHeight+16, html.EscapeString(cat))
		}
	} else {
		for _, t := range c.X.Ticks {
			x := c.px(t.V)
			fmt.Fprintf(&b, `<line class="grid" x1="%s" x2="%s" y1="%d" y2="%d"/><text class="tick" x="%s" y="%d" text-anchor="middle">%s</text>`+"\n",
				f2(x), f2(x), plotTop, plotTop+plotHeight, f2(x), plotTop+plotHeight+16, html.EscapeString(t.Label))
		}
	}
	fmt.Fprintf(&b, `<rect class="frame" x="%d" y="%d" width="%d" height="%d"/>`+"\n", plotLeft, plotTop, plotWidth, plotHeight)
	fmt.Fprintf(&b, `<text class="axis" x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", plotLeft+plotWidth/2, plotTop+plotHeight+34, html.EscapeString(c.X.Label))
	fmt.Fprintf(&b, `<text class="axis" transform="translate(14 %d) rotate(-90)" text-anchor="middle">%s</text>`+"\n", plotTop+plotHeight/2, html.EscapeString(c.Y.Label))
	// Data.
	if c.Categories != nil {
		n := len(c.Series)
		slot := float64(plotWidth) / float64(max(len(c.Categories), 1))
		barW := slot * 0.7 / float64(max(n, 1))
		for si, s := range c.Series {
			for _, p := range s.Points {
				x := c.px(p.X) - slot*0.35 + float64(si)*barW
				y := c.py(p.Y)
				fmt.Fprintf(&b, `<rect class="bar s%d" x="%s" y="%s" width="%s" height="%s" data-series="%s" data-x="%s" data-y="%s"><title>%s</title></rect>`+"\n",
					s.Class, f2(x), f2(y), f2(barW), f2(c.py(c.Y.Min)-y), html.EscapeString(s.Name), html.EscapeString(p.RawX), fnum(p.Y), html.EscapeString(p.Title))
			}
		}
	} else {
		for _, s := range c.Series {
			var pts []string
			for _, p := range s.Points {
				pts = append(pts, f2(c.px(p.X))+","+f2(c.py(p.Y)))
			}
			fmt.Fprintf(&b, `<polyline class="line s%d" points="%s"%s/>`+"\n", s.Class, strings.Join(pts, " "), dashAttr(s.Dashed))
			for _, p := range s.Points {
				cls := fmt.Sprintf("pt s%d", s.Class)
				if p.Open {
					cls += " open"
				}
				fmt.Fprintf(&b, `<circle class="%s" cx="%s" cy="%s" r="3.5" data-series="%s" data-x="%s" data-y="%s"><title>%s</title></circle>`+"\n",
					cls, f2(c.px(p.X)), f2(c.py(p.Y)), html.EscapeString(s.Name), html.EscapeString(p.RawX), fnum(p.Y), html.EscapeString(p.Title))
			}
		}
	}
	// Legend, below the plot: the line style and marker of each series.
	for i, s := range c.Series {
		x := plotLeft + (i%3)*180
		y := plotTop + plotHeight + 56 + (i/3)*18
		key := fmt.Sprintf(`<line class="line s%d" x1="%d" x2="%d" y1="%d" y2="%d"%s/>`, s.Class, x, x+22, y-4, y-4, dashAttr(s.Dashed))
		if c.Categories != nil {
			key = fmt.Sprintf(`<rect class="key s%d" x="%d" y="%d" width="12" height="10"/>`, s.Class, x+5, y-9)
		}
		fmt.Fprintf(&b, `<g class="legend">%s<text x="%d" y="%d">%s</text></g>`+"\n", key, x+28, y, html.EscapeString(s.Name))
	}
	b.WriteString("</svg>")
	return b.String()
}
